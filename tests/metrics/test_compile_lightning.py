"""Compiled updates in a real ``lightning.Trainer`` (default settings): the two ways docs/host-syncs.md gives.

1. ``compile_update()`` on the suite a ``LightningModule`` holds: its updates run as the metric's own graph.
2. The module's own ``torch.compile(fullgraph=True)`` of the step that scores a batch and updates the suite:
   the update traces into the user's graph without a break.

Both log the values of the eager module, epoch after epoch (``fit`` trains between two validations).
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
from torch.utils.data import DataLoader

L = pytest.importorskip("lightning")

from tests.lightning_models import BATCH, TRAINER_KWARGS, TinyMF, interaction_datasets  # noqa: E402

# R-Precision without a cut-off reads the batch's largest R on the host: a compiled update refuses it
COMPILABLE = {"metrics": ["ndcg@5", "recall@10", "precision@5", "hitrate@5", "map@10", "mrr@10", "rprecision@5"],
              "validate_args": False}


class SuiteCompiled(TinyMF):
    def __init__(self) -> None:
        super().__init__(COMPILABLE)
        self.suite.compile_update(backend="aot_eager")


class StepCompiled(TinyMF):
    def __init__(self) -> None:
        super().__init__(COMPILABLE)
        self.score_and_update = torch.compile(self._score_and_update, fullgraph=True, backend="aot_eager")

    def _score_and_update(self, users: torch.Tensor, target_ids: torch.Tensor, exclude_ids: torch.Tensor) -> None:
        self.suite.update(self.score_all(users), target_ids=target_ids, exclude_ids=exclude_ids)

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        self.score_and_update(*batch)


class Logged(L.Callback):
    def __init__(self) -> None:
        self.epochs: list[dict[str, float]] = []

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.epochs.append({key: float(value) for key, value in trainer.callback_metrics.items()})


def _fit(model: TinyMF) -> list[dict[str, float]]:
    train, val = interaction_datasets()
    L.seed_everything(0, verbose=False)
    logged = Logged()
    trainer = L.Trainer(max_epochs=2, limit_train_batches=3, callbacks=[logged], **TRAINER_KWARGS)
    trainer.fit(model, train_dataloaders=DataLoader(train, batch_size=32, shuffle=True),
                val_dataloaders=DataLoader(val, batch_size=BATCH))
    return logged.epochs


@pytest.fixture(scope="module")
def expected() -> list[dict[str, float]]:
    return _fit(TinyMF(COMPILABLE))


@pytest.mark.parametrize("make", [SuiteCompiled, StepCompiled])
def test_a_compiled_update_in_a_trainer_logs_the_eager_values(make, expected):
    torch._dynamo.reset()
    got = _fit(make())
    assert len(got) == len(expected) == 2 and expected[0] != expected[1]  # trained between the validations
    for epoch, want in zip(got, expected, strict=True):
        assert list(epoch) == list(want)
        for key, value in want.items():
            assert epoch[key] == pytest.approx(value, abs=1e-12), key
