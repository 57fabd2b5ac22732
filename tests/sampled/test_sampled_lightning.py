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


def _unseen_sizes(held_out: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
    """[B] each user's catalogue: its first held-out item and the items the negatives are drawn from (every item
    it has neither seen nor holds out)."""
    known = torch.cat([held_out, seen], dim=1)
    return NUM_ITEMS - (known >= 0).sum(1) + 1


class UnseenSampledMF(TinyMF):
    """The corrections of each user's own catalogue size, ``num_items=None``."""

    def __init__(self, estimator: str) -> None:
        super().__init__()
        self.sampled = tre.SampledMetrics(KEYS, num_items=None, num_negatives=M, estimator=estimator)

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        users, held_out, seen = batch
        self.sampled.update(*_rows(self, users, held_out, seen), num_items=_unseen_sizes(held_out, seen))

    def on_validation_epoch_end(self) -> None:
        self.log_dict(self.sampled.compute())
        self.sampled.reset()


@pytest.mark.parametrize("estimator", ["bias_variance", "constrained"])
def test_a_catalogue_size_per_user_in_the_trainer_is_the_brute_force(estimator):
    """Each user ranked among its own unseen items (9 sizes from 49 to 57 here): the logged value is the mean over the
    users of the exact correction of each one's size at its sampled rank, built size by size
    (``bias_variance_rows`` / ``constrained_rows``), and a second validation logs the same."""
    from torchrec_eval.sampled.constrained import constrained_rows
    from torchrec_eval.sampled.estimators import bias_variance_rows

    _, val = interaction_datasets()
    loader = DataLoader(val, batch_size=BATCH)
    model = UnseenSampledMF(estimator)
    requests = [("ndcg", 5), ("recall", 5), ("mrr", None)]
    build = bias_variance_rows if estimator == "bias_variance" else constrained_rows
    values: list[list[float]] = []
    sizes_seen = set()
    with torch.no_grad():
        for users, held_out, seen in loader:
            scores, _ = _rows(model, users, held_out, seen)
            ranks = 1 + (scores[:, 1:] > scores[:, :1]).sum(1)  # no ties among real-valued scores
            for rank, size in zip(ranks.tolist(), _unseen_sizes(held_out, seen).tolist(), strict=True):
                rows = build(requests, size, M, 0.01)
                values.append([float(rows[p, rank - 1]) for p in range(len(requests))])
                sizes_seen.add(size)
    assert len(sizes_seen) > 5
    expected = dict(zip(KEYS, torch.tensor(values, dtype=torch.float64).mean(0).tolist(), strict=True))
    trainer = L.Trainer(**TRAINER_KWARGS)
    for _ in range(2):
        logged = trainer.validate(model, dataloaders=loader, verbose=False)[0]
        assert logged == pytest.approx(expected, rel=1e-9, abs=1e-12)
