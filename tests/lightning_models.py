"""A tiny matrix-factorisation ``LightningModule`` validated with a suite, its data and the plain loop it must
equal: shared by the Lightning tests (import it after ``pytest.importorskip("lightning")``)."""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import torchrec_eval as tre
from torchrec_eval.data import generate_interactions, padded_item_lists, temporal_split

NUM_USERS, NUM_ITEMS, BATCH = 48, 60, 8  # 6 validation batches; 3 per process under 2-process DDP


SUITE: dict[str, Any] = {
    "metrics": ["ndcg@5", "recall@10", "precision@5", "hitrate@5", "map@10", "mrr@10", "rprecision"]
}


TRAINER_KWARGS: dict[str, Any] = dict(
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    num_sanity_val_steps=0,
)


def interaction_datasets() -> tuple[TensorDataset, TensorDataset]:
    data = generate_interactions(NUM_USERS, NUM_ITEMS, (4, 12), seed=3)
    train, test = temporal_split(data, 0.25)
    val = TensorDataset(torch.arange(NUM_USERS), padded_item_lists(test), padded_item_lists(train))
    return TensorDataset(train.user, train.item), val


class TinyMF(L.LightningModule):
    """Matrix factorisation validated with a suite; ``log_objects`` logs the suite object itself."""

    def __init__(self, suite: dict[str, Any] = SUITE, log_objects: bool = False) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.user = nn.Parameter(torch.randn(NUM_USERS, 8, generator=gen))
        self.item = nn.Parameter(torch.randn(NUM_ITEMS, 8, generator=gen))
        self.log_objects = log_objects
        self.suite = tre.RankingMetrics.from_config(suite)
        self.logged_epochs: list[dict[str, float]] = []

    def score_all(self, users: torch.Tensor) -> torch.Tensor:
        return self.user[users] @ self.item.T

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        users, items = batch
        return nn.functional.cross_entropy(self.score_all(users), items)

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        users, target_ids, exclude_ids = batch
        self.suite.update(self.score_all(users), target_ids=target_ids, exclude_ids=exclude_ids)
        if self.log_objects:
            self.log_dict(self.suite, on_epoch=True)

    def on_validation_epoch_end(self) -> None:
        if not self.log_objects:
            self.log_dict(self.suite.compute())
            self.suite.reset()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.5)


@torch.no_grad()
def plain_loop(model: TinyMF, loader: DataLoader) -> dict[str, float]:
    suite = tre.RankingMetrics.from_config(SUITE)
    for users, target_ids, exclude_ids in loader:
        suite.update(model.score_all(users), target_ids=target_ids, exclude_ids=exclude_ids)
    return {key: float(value) for key, value in suite.compute().items()}
