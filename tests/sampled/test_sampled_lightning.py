"""``SampledMetrics`` in a real ``lightning.Trainer``: a ``validation_step`` that draws RecBole-style negatives
for each user's first held-out item and updates the metric, ``log_dict`` at the epoch's end; the logged
values equal a plain loop over the same draws, and two validations do not accumulate."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

L = pytest.importorskip("lightning")

import torchrec_eval as tre  # noqa: E402
from tests.lightning_models import BATCH, NUM_ITEMS, TRAINER_KWARGS, TinyMF, interaction_datasets  # noqa: E402
from torchrec_eval.sampled import sample_negatives  # noqa: E402

M = 20
KEYS = ["ndcg@5", "recall@5", "mrr"]


def _rows(model: TinyMF, users: torch.Tensor, held_out: torch.Tensor, seen: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """[B, 1 + M] scores of each user's first held-out item and M negatives drawn by the user's seed."""
    first = held_out[:, :1]
    known = torch.cat([held_out, seen], dim=1)
    negatives = torch.cat([sample_negatives(known[i:i + 1], NUM_ITEMS, M, generator=torch.Generator().manual_seed(
        int(user))) for i, user in enumerate(users.tolist())])
    ids = torch.cat([first, negatives], dim=1)
    scores = (model.user[users].unsqueeze(1) * model.item[ids]).sum(-1)
    target = torch.zeros_like(ids, dtype=torch.bool)
    target[:, 0] = True
    return scores, target


class SampledMF(TinyMF):
    def __init__(self) -> None:
        super().__init__()
        self.sampled = tre.SampledMetrics(KEYS, num_items=NUM_ITEMS, num_negatives=M)

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        users, held_out, seen = batch
        self.sampled.update(*_rows(self, users, held_out, seen))

    def on_validation_epoch_end(self) -> None:
        self.log_dict(self.sampled.compute())
        self.sampled.reset()


def test_the_trainer_logs_what_a_plain_loop_computes():
    _, val = interaction_datasets()
    loader = DataLoader(val, batch_size=BATCH)
    model = SampledMF()
    plain = tre.SampledMetrics(KEYS, num_items=NUM_ITEMS, num_negatives=M)
    with torch.no_grad():
        for users, held_out, seen in loader:
            plain.update(*_rows(model, users, held_out, seen))
    expected = {key: float(value) for key, value in plain.compute().items()}
    trainer = L.Trainer(**TRAINER_KWARGS)
    for _ in range(2):  # reset at each epoch's end: the second validation logs the same
        logged = trainer.validate(model, dataloaders=loader, verbose=False)[0]
        assert logged == pytest.approx(expected, abs=1e-12)
    assert float(model.sampled.sampled_ranks.sum()) == 0.0
