"""Evaluate a recommender in Lightning's ``validation_step`` with a ``torchrec_eval.RankingMetrics`` suite.

The data is the synthetic implicit-feedback set of :mod:`torchrec_eval.data.interactions`, split per user by time:
each user's latest 20% of interactions are the validation targets, and the items they saw in training
are excluded from their ranking. The model is matrix factorisation with an item bias,
``score(u, i) = <p_u, q_i> + b_i``, trained with a full softmax over the items (``loss="softmax"``) or
with BPR and one uniform negative per positive (``loss="bpr"``).

In ``validation_step`` every user of the batch is scored against every item and the suite is updated,
one top-k for all its metrics, and logged as metric objects with ``self.log_dict(suite, on_epoch=True)``:
Lightning computes it at the end of the epoch (which syncs its state across processes under DDP) and
resets it. The suite comes from a config:
a dict, a YAML file, or a ready-made suite by name (``"recsys"``, ``"trec"``, ``"beyond"``; see
:mod:`torchrec_eval.suites.config`).

Run it (from the repository root)::

    python examples/lightning_validation.py                  # 2 epochs on CPU, prints the final metrics
    python examples/lightning_validation.py --loss bpr --epochs 5 --metrics trec
    python examples/lightning_validation.py fit --config configs/lightning_validation.yaml   # LightningCLI
    python examples/lightning_validation.py fit --config configs/lightning_validation.yaml \\
        --data.init_args.num_users 2000 --trainer.max_epochs 5

Lightning is an optional extra: ``pip install torchrec_eval[lightning]``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning as L
except ImportError:  # pragma: no cover - the message is the point
    sys.exit("This example needs Lightning: pip install 'torchrec_eval[lightning]'")

try:
    import torchrec_eval as tre
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torchrec_eval as tre

from torchrec_eval.data import generate_interactions, padded_item_lists, temporal_split
from torchrec_eval.demo import BPRMF

if __name__ == "__main__":
    # One module object whether it is run as a script or imported as `lightning_validation` (the
    # class_path that LightningCLI configs use), so that its classes are defined once.
    sys.modules.setdefault("lightning_validation", sys.modules[__name__])

# Lightning suggests DataLoader worker processes; the data here is a few in-memory tensors.
warnings.filterwarnings("ignore", ".*does not have many workers.*")

#: The suite used when the model is given no ``metrics`` config (the "recsys" suite at k=10).
DEFAULT_SUITE: dict[str, Any] = {
    "metrics": ["ndcg@10", "recall@10", "precision@10", "hitrate@10", "map@10", "mrr@10"]
}
CLI_SUBCOMMANDS = ("fit", "validate", "test", "predict")


class InteractionData(L.LightningDataModule):
    """Synthetic interactions split by time: (user, item) training pairs, and per-user validation targets.

    Training batches are ``(users [B], items [B])``; validation batches are
    ``(users [B], target_ids [B, T], exclude_ids [B, S])``, ``-1`` padded, one row per user, in user order.
    """

    def __init__(
        self,
        num_users: int = 500,
        num_items: int = 1000,
        min_interactions: int = 10,
        max_interactions: int = 40,
        test_fraction: float = 0.2,
        batch_size: int = 512,
        eval_batch_size: int = 128,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.num_users, self.num_items = num_users, num_items
        self.per_user = (min(min_interactions, num_items), min(max_interactions, num_items))
        self.test_fraction, self.seed = test_fraction, seed
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size

    def setup(self, stage: str | None = None) -> None:
        data = generate_interactions(self.num_users, self.num_items, self.per_user, seed=self.seed)
        self.train, self.test = temporal_split(data, self.test_fraction)
        self.val_set = TensorDataset(
            torch.arange(self.num_users), padded_item_lists(self.test), padded_item_lists(self.train)
        )

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            TensorDataset(self.train.user, self.train.item), batch_size=self.batch_size, shuffle=True
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.eval_batch_size)


class MFRecommender(L.LightningModule):
    """Matrix factorisation with an item bias, validated with a torchrec_eval metric suite.

    Args:
        num_users: the number of users (linked from the data module by the CLI).
        num_items: the number of items (linked from the data module by the CLI).
        dim: the embedding dimension.
        loss: ``"softmax"`` (cross-entropy over all items) or ``"bpr"`` (one uniform negative per positive).
        lr: the Adam learning rate.
        weight_decay: L2 penalty on the embeddings of each batch.
        metrics: the metric suite: a ready-made suites name (``"recsys"``), a YAML file or a dict with the keys of
            :func:`torchrec_eval.suites.config.suite_kwargs`; ``None`` for :data:`DEFAULT_SUITE`.
    """

    def __init__(
        self,
        num_users: int = 500,
        num_items: int = 1000,
        dim: int = 32,
        loss: str = "softmax",
        lr: float = 0.01,
        weight_decay: float = 1e-4,
        metrics: str | dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if loss not in ("softmax", "bpr"):
            raise ValueError(f"`loss` must be 'softmax' or 'bpr', got {loss!r}")
        self.save_hyperparameters()
        self.model = BPRMF(num_users, num_items, dim)  # the demo's model: <p_u, q_i> + b_i
        # A Metric attribute: Lightning moves it to the model's device; it is never trained.
        self.val_metrics = tre.RankingMetrics.from_config(DEFAULT_SUITE if metrics is None else metrics)

    def score_all(self, users: torch.Tensor) -> torch.Tensor:
        """``[B, num_items]`` scores of the given users against every item."""
        return self.model.score_all(users)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        users, items = batch
        if self.hparams.loss == "softmax":
            loss = nn.functional.cross_entropy(self.score_all(users), items)
            squares = self.model.user(users).pow(2) + self.model.item(items).pow(2)
        else:
            negatives = torch.randint(0, self.hparams.num_items, items.shape, device=items.device)
            diff = self.model(users, items) - self.model(users, negatives)
            loss = -nn.functional.logsigmoid(diff).mean()
            squares = self.model.user(users).pow(2) + self.model.item(items).pow(2) + self.model.item(negatives).pow(2)
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss + self.hparams.weight_decay * squares.sum(-1).mean()

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        users, target_ids, exclude_ids = batch
        self.val_metrics.update(self.score_all(users), target_ids=target_ids, exclude_ids=exclude_ids)
        # Logging the metric objects: Lightning computes the suite once at the end of the epoch (one sync
        # of its state over all processes, so every rank logs the full-data values) and then resets it.
        self.log_dict(self.val_metrics, on_epoch=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class PrintMetrics(L.Callback):
    """Print the validation metrics after each validation epoch (on rank 0)."""

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        logged = {
            name: value for name, value in trainer.callback_metrics.items() if not name.startswith("train_")
        }
        print(f"epoch {trainer.current_epoch + 1}: " + format_metrics(logged), flush=True)


def format_metrics(metrics: dict[str, Any]) -> str:
    return " ".join(f"{name}={float(value):.4f}" for name, value in metrics.items())


def run_cli(argv: list[str] | None = None) -> dict[str, float]:
    """``fit``/``validate``/... with a LightningCLI config (class_path/init_args); ``None``: sys.argv."""
    try:
        from lightning.pytorch.cli import LightningCLI
    except ImportError as error:  # LightningCLI needs jsonargparse
        sys.exit(f"The LightningCLI needs jsonargparse: pip install 'torchrec_eval[lightning]' ({error})")

    class RecommenderCLI(LightningCLI):
        """LightningCLI whose model takes the number of users and items from the data module."""

        def add_arguments_to_parser(self, parser: Any) -> None:
            parser.link_arguments("data.num_users", "model.init_args.num_users", apply_on="instantiate")
            parser.link_arguments("data.num_items", "model.init_args.num_items", apply_on="instantiate")

    cli = RecommenderCLI(
        MFRecommender, InteractionData, subclass_mode_model=True, subclass_mode_data=True, args=argv
    )
    metrics = {name: float(value) for name, value in cli.trainer.callback_metrics.items()}
    if cli.trainer.is_global_zero:
        print("final: " + format_metrics(metrics), flush=True)
    return metrics


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="For the LightningCLI: lightning_validation.py fit --config configs/lightning_validation.yaml",
    )
    parser.add_argument("--epochs", type=int, default=2, help="training epochs (default 2)")
    parser.add_argument("--users", type=int, default=500, help="number of users (default 500)")
    parser.add_argument("--items", type=int, default=1000, help="number of items (default 1000)")
    parser.add_argument("--dim", type=int, default=32, help="embedding dimension (default 32)")
    parser.add_argument("--loss", choices=("softmax", "bpr"), default="softmax", help="training loss")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    parser.add_argument("--batch-size", type=int, default=512, help="training batch size (default 512)")
    parser.add_argument(
        "--metrics",
        default=None,
        help="a metric suite: a YAML file or a ready-made suite (recsys, trec, beyond) (default: ndcg, recall, "
        "precision, hitrate, map and mrr at 10)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the model and the sampling")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.users < 1 or args.items < 2:
        parser.error("--epochs and --users must be >= 1 and --items >= 2")
    return args


def run_plain(argv: list[str]) -> dict[str, float]:
    """The default run: a Trainer on CPU, validation after each epoch, no logger or checkpoints."""
    args = parse_args(argv)
    L.seed_everything(args.seed, verbose=False)
    data = InteractionData(args.users, args.items, batch_size=args.batch_size, seed=args.seed)
    model = MFRecommender(
        args.users, args.items, dim=args.dim, loss=args.loss, lr=args.lr, metrics=args.metrics
    )
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=args.epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[PrintMetrics()],
    )
    trainer.fit(model, datamodule=data)
    metrics = {name: float(value) for name, value in trainer.callback_metrics.items()}
    print("final: " + format_metrics(metrics), flush=True)
    return metrics


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run the example; returns the final logged values as ``{"ndcg@10": float, ..., "train_loss": float}``.

    ``argv`` (default ``sys.argv[1:]``) starting with ``fit``, ``validate``, ``test`` or ``predict`` goes
    to the LightningCLI; anything else is the plain run's options.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in CLI_SUBCOMMANDS:
        return run_cli(argv if argv is None else args)
    return run_plain(args)


if __name__ == "__main__":
    main()
