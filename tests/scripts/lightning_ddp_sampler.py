"""A real ``lightning.Trainer(accelerator="cpu", devices=2)`` (default strategy: DDP, one process per
device, this script re-launched for rank 1) validating a suite on an odd number of users.

    python lightning_ddp_sampler.py {unpadded,default} OUT.json

Rank 0 writes the logged values and the number of queries each rank evaluated to OUT.json.
"""

from __future__ import annotations

import json
import sys

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import torchrec_eval as tre
from torchrec_eval.data import (
    UnpaddedDistributedSampler,
    generate_interactions,
    padded_item_lists,
    temporal_split,
)

NUM_USERS, NUM_ITEMS, BATCH = 101, 80, 8
METRICS = ["ndcg@10", "map@10", "recall@20", "mrr@10", "auc"]


def validation_data() -> TensorDataset:
    data = generate_interactions(NUM_USERS, NUM_ITEMS, (4, 12), seed=5)
    train, test = temporal_split(data, 0.25)
    return TensorDataset(torch.arange(NUM_USERS), padded_item_lists(test), padded_item_lists(train))


class Recommender(L.LightningModule):
    def __init__(self, sampler: str) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.user = nn.Parameter(torch.randn(NUM_USERS, 8, generator=gen))
        self.item = nn.Parameter(torch.randn(NUM_ITEMS, 8, generator=gen))
        self.sampler = sampler
        self.val_metrics = tre.RankingMetrics(METRICS)
        self.queries = 0

    def score_all(self, users: torch.Tensor) -> torch.Tensor:
        return self.user[users] @ self.item.T

    def training_step(self, batch, batch_idx):
        users, target_ids, _ = batch
        return 0.0 * self.score_all(users).sum()  # weights stay as initialised: one reference value

    def validation_step(self, batch, batch_idx):
        users, target_ids, exclude_ids = batch
        self.queries += len(users)
        self.val_metrics.update(self.score_all(users), target_ids=target_ids, exclude_ids=exclude_ids)
        self.log_dict(self.val_metrics, on_epoch=True)

    def train_dataloader(self):
        return DataLoader(validation_data(), batch_size=BATCH)

    def val_dataloader(self):
        data = validation_data()
        if self.sampler == "unpadded":  # the recipe: Lightning keeps a DistributedSampler as it is
            return DataLoader(data, batch_size=BATCH, sampler=UnpaddedDistributedSampler(data))
        return DataLoader(data, batch_size=BATCH)  # Lightning inserts its padding DistributedSampler

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> None:
    sampler, out = sys.argv[1], sys.argv[2]
    model = Recommender(sampler)
    trainer = L.Trainer(
        accelerator="cpu", devices=2, max_epochs=1, limit_train_batches=2, num_sanity_val_steps=0,
        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(model)
    counts = [torch.zeros((), dtype=torch.long) for _ in range(trainer.world_size)]
    torch.distributed.all_gather(counts, torch.tensor(model.queries))
    if trainer.global_rank == 0:
        logged = {key: float(value) for key, value in trainer.callback_metrics.items()}
        with open(out, "w") as f:
            json.dump({"world_size": trainer.world_size, "logged": logged,
                       "queries": [int(c) for c in counts]}, f)
    # torch.distributed's threads must stop before the interpreter does: a process group left to exit
    # aborts now and then ("terminate called without an active exception", status -6)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
