"""RankingMetrics in lightning.Trainer on CPU: logged values equal a plain loop, also with ddp_spawn."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

L = pytest.importorskip("lightning")

import torchrec_eval as tre  # noqa: E402
from tests.lightning_models import (  # noqa: E402
    BATCH,
    SUITE,
    TRAINER_KWARGS,
    TinyMF,
    interaction_datasets,
    plain_loop,
)


class RecordLogged(L.Callback):
    def __init__(self) -> None:
        self.epochs: list[dict[str, float]] = []

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.epochs.append({key: float(value) for key, value in trainer.callback_metrics.items()})




def assert_same(got: dict[str, float], expected: dict[str, float], tol: float = 1e-12) -> None:
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=tol), key


@pytest.fixture(scope="module")
def data() -> tuple[DataLoader, DataLoader]:
    train, val = interaction_datasets()
    return DataLoader(train, batch_size=32, shuffle=True), DataLoader(val, batch_size=BATCH)


def test_validate_logs_the_plain_loop_values_and_resets(data):
    _, val_loader = data
    model = TinyMF()
    expected = plain_loop(model, val_loader)
    assert list(expected) == [
        "ndcg@5",
        "recall@10",
        "precision@5",
        "hitrate@5",
        "map@10",
        "mrr@10",
        "rprecision",
    ]
    trainer = L.Trainer(**TRAINER_KWARGS)
    first = trainer.validate(model, dataloaders=val_loader, verbose=False)[0]
    second = trainer.validate(model, dataloaders=val_loader, verbose=False)[0]
    assert_same(first, expected)
    assert_same(second, expected)  # the suite was reset, not accumulated over two runs
    assert float(model.suite.stats.abs().sum()) == 0.0  # left reset after the epoch


def test_fit_logs_each_epoch_from_a_fresh_state(data):
    train_loader, val_loader = data
    L.seed_everything(0, verbose=False)
    model, record = TinyMF(), RecordLogged()
    trainer = L.Trainer(max_epochs=2, limit_train_batches=3, callbacks=[record], **TRAINER_KWARGS)
    trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader)
    assert len(record.epochs) == 2
    assert record.epochs[0] != record.epochs[1]  # the model trained between the two validations
    # The last epoch's values are those of the final weights alone: no state carried over from epoch 1.
    assert_same(record.epochs[1], plain_loop(model, val_loader))


def test_log_dict_of_the_suite_object(data):
    _, val_loader = data
    model = TinyMF(log_objects=True)
    expected = plain_loop(model, val_loader)
    trainer = L.Trainer(**TRAINER_KWARGS)
    assert_same(trainer.validate(model, dataloaders=val_loader, verbose=False)[0], expected)
    assert_same(
        trainer.validate(model, dataloaders=val_loader, verbose=False)[0], expected
    )  # Lightning reset it


def test_log_dict_of_the_suite_object_syncs_once_per_epoch(data):
    """Lightning computes each logged key; the suite syncs its state once for all of them."""
    _, val_loader = data
    synced: list[tuple[int, ...]] = []

    def counting_sync(tensor: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
        synced.append(tuple(tensor.shape))
        return [tensor]  # one process: the gathered list is this state alone

    model = TinyMF(log_objects=True)
    model.suite = tre.RankingMetrics(SUITE["metrics"], dist_sync_fn=counting_sync,
                                     distributed_available_fn=lambda: True)
    expected = plain_loop(model, val_loader)
    trainer = L.Trainer(**TRAINER_KWARGS)
    for epoch in (1, 2):
        assert_same(trainer.validate(model, dataloaders=val_loader, verbose=False)[0], expected)
        assert len(SUITE["metrics"]) == 7 and synced == [tuple(model.suite.stats.shape)] * epoch


@pytest.mark.slow
@pytest.mark.usefixtures("master_port")
def test_ddp_spawn_two_processes_log_the_same_values_as_one(data):
    _, val_loader = data
    model = TinyMF()
    single = L.Trainer(devices=1, **TRAINER_KWARGS).validate(model, dataloaders=val_loader, verbose=False)[0]
    # Each process validates half of the users (Lightning's DistributedSampler); the suite's compute()
    # sums the two states over gloo before the values are logged.
    trainer = L.Trainer(devices=2, strategy="ddp_spawn", **TRAINER_KWARGS)
    double = trainer.validate(model, dataloaders=val_loader, verbose=False)[0]
    assert_same(single, plain_loop(model, val_loader))
    assert_same(double, single)


class _ChunkedCatalogue(L.LightningModule):
    """validation_step scores a 1,000-item catalogue in chunks of 128 into ``metrics.catalogue``."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(5)
        self.users = nn.Parameter(torch.randn(40, 8, generator=gen))
        self.items = nn.Parameter(torch.randn(1_000, 8, generator=gen))
        self.metrics = tre.RankingMetrics(["ndcg@10", "recall@50", "auc", "mpr"])

    def validation_step(self, batch, batch_idx):
        users, targets = batch
        emb = self.users[users]
        target_scores = (emb.unsqueeze(1) * self.items[targets.clamp(min=0)]).sum(-1)
        with self.metrics.catalogue(1_000, target_ids=targets, target_scores=target_scores) as scored:
            for start in range(0, 1_000, 128):
                scored.add(emb @ self.items[start : start + 128].T, offset=start)
        self.log_dict(self.metrics, batch_size=len(users))


def test_catalogue_in_a_validation_step_logs_the_dense_values(tmp_path):
    gen = torch.Generator().manual_seed(6)
    targets = torch.randint(0, 1_000, (40, 3), generator=gen)
    targets[:, 1:] = torch.where(targets[:, 1:] == targets[:, :1], -1, targets[:, 1:])
    targets[:, 2] = torch.where(targets[:, 2] == targets[:, 1], -1, targets[:, 2])
    loader = DataLoader(TensorDataset(torch.arange(40), targets), batch_size=16)
    model = _ChunkedCatalogue()
    logged = L.Trainer(default_root_dir=tmp_path, **TRAINER_KWARGS).validate(model, loader, verbose=False)[0]
    dense = tre.RankingMetrics(["ndcg@10", "recall@50", "auc", "mpr"])
    with torch.no_grad():
        scores = model.users @ model.items.T
        rows = torch.arange(40).unsqueeze(1).expand_as(targets)
        present = targets >= 0
        own = (model.users.unsqueeze(1) * model.items[targets.clamp(min=0)]).sum(-1)
        scores[rows[present], targets[present]] = own[present]  # the target scores stand for these entries
        dense.update(scores, target_ids=targets)
    for key, value in dense.compute().items():
        assert logged[key] == pytest.approx(float(value), abs=1e-6), key  # logged values are float32


LONG_ITEMS, LONG_USERS = 20_000, 48  # rows long enough for the deeper read of coarse (bf16) scores
LONG_SUITE = ["ndcg@10", "recall@20", "mrr@10", "map@10", "err@10", "rbp@20", "sdcg@10", "ncrr@10", "setf@20",
              "interpolated_ap@20"]  # the peers' families too: bf16 ties, a failed update, a checkpoint, 2 processes


class _Bf16Catalogue(L.LightningModule):
    """bf16 logits under autocast over 20,000 items; each validation step first makes a bad update
    (ids out of range: a ValueError the step catches), then the good one, into two suites logged the
    two ways: ``suite``'s values at the epoch's end, ``logged``'s objects at each step (Lightning computes,
    syncs and resets it itself), under ``obj/``."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(9)
        self.user = nn.Parameter(torch.randn(LONG_USERS, 8, generator=gen))
        self.item = nn.Parameter(torch.randn(LONG_ITEMS, 8, generator=gen))
        self.suite = tre.RankingMetrics(LONG_SUITE)
        self.logged = tre.RankingMetrics(LONG_SUITE, prefix="obj/")
        self.dump_to: Any = None  # a folder: each step saves the logits the metric saw (the oracle's input)

    def forward(self, users: torch.Tensor) -> torch.Tensor:
        return self.user[users] @ self.item.T

    def training_step(self, batch, batch_idx):
        users, targets, _ = batch
        return nn.functional.cross_entropy(self(users).float(), targets[:, 0])

    def validation_step(self, batch, batch_idx):
        users, targets, excluded = batch
        scores = self(users)
        assert scores.dtype == torch.bfloat16  # the logits the metric sees are bf16, with many ties
        for suite in (self.suite, self.logged):
            with pytest.raises(ValueError, match="target_ids"):
                suite.update(scores, target_ids=targets + LONG_ITEMS, exclude_ids=excluded)
            suite.update(scores, target_ids=targets, exclude_ids=excluded)
        self.log_dict(self.logged, batch_size=len(users))
        if self.dump_to is not None:
            torch.save((users, scores), self.dump_to / f"{self.global_rank}-{batch_idx}.pt")

    def on_validation_epoch_end(self):
        self.log_dict(self.suite.compute())
        self.suite.reset()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


def _long_data() -> TensorDataset:
    """Targets and excluded items among each user's 60 best under the initial weights (lr = 0 keeps
    them), where bf16 ties at the cut-offs decide which of them are counted."""
    users = torch.arange(LONG_USERS)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        best = _Bf16Catalogue()(users).float().topk(60).indices
    gen = torch.Generator().manual_seed(10)
    picked = best.gather(1, torch.stack([torch.randperm(60, generator=gen) for _ in users])[:, :15])
    return TensorDataset(users, picked[:, :5], picked[:, 5:])


@pytest.mark.slow
@pytest.mark.usefixtures("master_port")
def test_bf16_logits_two_processes_checkpoint_and_a_failed_update(tmp_path):
    """A default Trainer (2 CPU processes, bf16-mixed) fits, checkpoints, and the reloaded model
    validated on 2 processes logs the brute-force values of its own bf16 logits (ties by index), both
    as values it computes and as metric objects Lightning computes."""
    from tests.reference import ranking as ref

    data = _long_data()  # once: its bf16 top-60 depends on the thread count, which Lightning may change
    loader = DataLoader(data, batch_size=8)
    kwargs = dict(accelerator="cpu", devices=2, strategy="ddp_spawn", precision="bf16-mixed",
                  enable_progress_bar=False, enable_model_summary=False, logger=False)
    trainer = L.Trainer(max_epochs=1, default_root_dir=tmp_path, **kwargs)
    trainer.fit(_Bf16Catalogue(), loader, loader)
    checkpoint = next((tmp_path / "checkpoints").glob("*.ckpt"))
    model = _Bf16Catalogue.load_from_checkpoint(checkpoint)
    model.dump_to = tmp_path
    logged = L.Trainer(**kwargs).validate(model, dataloaders=loader, verbose=False)[0]

    # the bf16 logits of every step, as each process computed them (a GEMM's rounding may depend on
    # which users share its batch)
    _, targets, excluded = data.tensors
    scores, seen = torch.zeros(LONG_USERS, LONG_ITEMS), []
    for path in tmp_path.glob("*-*.pt"):
        users, part = torch.load(path)
        scores[users] = part.float()
        seen.append(users)
    assert torch.equal(torch.cat(seen).sort().values, torch.arange(LONG_USERS))  # every user once
    target = torch.zeros(LONG_USERS, LONG_ITEMS).scatter_(1, targets, 1.0)
    keep = torch.ones(LONG_USERS, LONG_ITEMS, dtype=torch.bool).scatter_(1, excluded, False)
    assert (scores.topk(21).values[:, :-1] == scores.topk(21).values[:, 1:]).any()  # ties in the lists
    for key in LONG_SUITE:
        name, k = key.split("@")
        expected = ref.mean(ref.evaluate_dense(name, scores, target, int(k), mask=keep))
        assert logged[key] == pytest.approx(expected, abs=1e-6), key
        assert logged[f"obj/{key}"] == pytest.approx(expected, abs=1e-6), key
