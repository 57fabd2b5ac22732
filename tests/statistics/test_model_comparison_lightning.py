"""``ModelComparison`` in a real ``lightning.Trainer``: a ``validation_step`` that scores the model, a
popularity baseline and random scores for each batch of users, ``log_dict`` of the p-values at the epoch's
end; the logged values equal a plain loop over the same batches, and two validations do not accumulate."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

L = pytest.importorskip("lightning")

import torchrec_eval as tre  # noqa: E402
from tests.lightning_models import BATCH, NUM_ITEMS, TRAINER_KWARGS, TinyMF, interaction_datasets  # noqa: E402

KEYS = ["ndcg@5", "recall@10"]


def _scores(model: TinyMF, users: torch.Tensor) -> list[torch.Tensor]:
    popularity = torch.linspace(1.0, 0.0, NUM_ITEMS).expand(users.shape[0], -1)
    noise = torch.rand(users.shape[0], NUM_ITEMS, generator=torch.Generator().manual_seed(int(users[0])))
    return [model.score_all(users), popularity, noise]


class ComparedMF(TinyMF):
    def __init__(self) -> None:
        super().__init__()
        self.compare = tre.ModelComparison(KEYS, models=["mf", "pop", "random"], test="fisher", replicates=500,
                                           correction="holm")

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        users, held_out, _ = batch
        self.compare.update(_scores(self, users), target_ids=held_out, query_ids=users)

    def on_validation_epoch_end(self) -> None:
        self.log_dict(self.compare.compute())
        self.compare.reset()


def test_the_trainer_logs_what_a_plain_loop_computes():
    _, val = interaction_datasets()
    loader = DataLoader(val, batch_size=BATCH)
    model = ComparedMF()
    plain = tre.ModelComparison(KEYS, models=["mf", "pop", "random"], test="fisher", replicates=500,
                                correction="holm")
    with torch.no_grad():
        for users, held_out, _ in reversed(list(loader)):  # another order: the same p-values
            plain.update(_scores(model, users), target_ids=held_out, query_ids=users)
    expected = {key: float(value) for key, value in plain.compute().items()}
    assert "ndcg@5/mf_vs_random/p_adjusted" in expected
    trainer = L.Trainer(**TRAINER_KWARGS)
    for _ in range(2):
        logged = trainer.validate(model, dataloaders=loader, verbose=False)[0]
        assert logged == pytest.approx(expected, abs=1e-9)
    assert float(model.compare.counts.sum()) == 0.0
