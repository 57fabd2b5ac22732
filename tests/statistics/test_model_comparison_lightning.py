"""``ModelComparison`` in a real ``lightning.Trainer``: a ``validation_step`` that scores the model, a
popularity baseline and random scores for each batch of users (after a failed update), ``log_dict`` of the
p-values at the epoch's end; the logged values equal a plain loop over the same batches, two validations do
not accumulate, and 2 ``ddp_spawn`` processes log what one does."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

L = pytest.importorskip("lightning")

import torchrec_eval as tre  # noqa: E402
from tests.lightning_models import (  # noqa: E402
    BATCH,
    NUM_ITEMS,
    NUM_USERS,
    TRAINER_KWARGS,
    TinyMF,
    interaction_datasets,
)

KEYS = ["ndcg@5", "recall@10"]


NOISE = torch.rand(NUM_USERS, NUM_ITEMS, generator=torch.Generator().manual_seed(4))  # each user's random scores


def _scores(model: TinyMF, users: torch.Tensor) -> list[torch.Tensor]:
    popularity = torch.linspace(1.0, 0.0, NUM_ITEMS).expand(users.shape[0], -1)
    return [model.score_all(users), popularity, NOISE[users]]


class ComparedMF(TinyMF):
    def __init__(self) -> None:
        super().__init__()
        self.compare = tre.ModelComparison(KEYS, models=["mf", "pop", "random"], test="fisher", replicates=500,
                                           correction="holm")

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        users, held_out, _ = batch
        with pytest.raises(ValueError, match="one tensor per model"):  # a bad update first: nothing counted
            self.compare.update(_scores(self, users)[:2], target_ids=held_out, query_ids=users)
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


@pytest.mark.slow
@pytest.mark.usefixtures("master_port")
def test_two_ddp_spawn_processes_log_what_one_does():
    _, val = interaction_datasets()
    loader = DataLoader(val, batch_size=BATCH)
    model = ComparedMF()
    single = L.Trainer(devices=1, **TRAINER_KWARGS).validate(model, dataloaders=loader, verbose=False)[0]
    # each process validates half of the users (the query ids stay the users'): the sums add over gloo
    double = L.Trainer(devices=2, strategy="ddp_spawn", **TRAINER_KWARGS).validate(model, dataloaders=loader,
                                                                                   verbose=False)[0]
    assert double == pytest.approx(single, abs=1e-9)
