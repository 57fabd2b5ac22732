"""Every class across ``torch.inference_mode`` and normal mode, in a real ``Trainer`` with default settings:
Lightning's evaluation loops (``trainer.validate`` and ``test``; ``fit``'s in older versions) update, compute and
reset the logged metrics inside inference mode, so their states become inference tensors, which torch lets
no one update in place outside that mode ("Inplace update to inference tensor outside InferenceMode",
torchmetrics' #1993). Validate, then fit, then a plain loop: every value equals a fresh metric's. (The
harness, ``tests/harness.py``, checks every case of every family in both modes in any order.)"""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre

L = pytest.importorskip("lightning")

BATCHES = 3


def _inputs(batch_idx: int) -> dict[str, dict[str, torch.Tensor]]:
    """Fixed inputs of one validation batch for each metric (independent of the model, so values are known)."""
    gen = torch.Generator().manual_seed(batch_idx)
    sampled_target = torch.zeros(5, 11, dtype=torch.bool)
    sampled_target[:, 0] = True
    return {
        "ranking": {"preds": torch.randn(5, 20, generator=gen), "target": torch.rand(5, 20, generator=gen) < 0.3},
        "sampled": {"preds": torch.randn(5, 11, generator=gen), "target": sampled_target},
        "pointwise": {"preds": torch.rand(16, generator=gen), "target": torch.rand(16, generator=gen) < 0.4},
    }


def _metrics() -> dict[str, torch.nn.Module]:
    return {
        "ranking": tre.RankingMetrics(["ndcg@5", "map@10", "auc"]),
        "sampled": tre.SampledMetrics(["ndcg@5", "mrr"], num_items=500, num_negatives=10, estimator="em"),
        "pointwise": tre.PointwiseMetrics(["ne", "auc", "calibration"]),
    }


def _expected() -> dict[str, dict[str, torch.Tensor]]:
    fresh = _metrics()
    for batch_idx in range(BATCHES):
        for name, inputs in _inputs(batch_idx).items():
            fresh[name].update(**inputs)
    return {name: metric.compute() for name, metric in fresh.items()}


class Evaluated(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(1))
        self.metrics = torch.nn.ModuleDict(_metrics())
        self.logged: list[dict[str, float]] = []
        self.modes: set[bool] = set()

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        return (self.weight * batch).pow(2).mean()

    def validation_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self.modes.add(torch.is_inference_mode_enabled())
        for name, inputs in _inputs(batch_idx).items():
            self.metrics[name].update(**inputs)

    def on_validation_epoch_end(self) -> None:
        if not self.trainer.sanity_checking:
            self.logged.append({f"{name}/{key}": float(value) for name, metric in self.metrics.items()
                                for key, value in metric.compute().items()})
        for metric in self.metrics.values():
            metric.reset()  # inside inference mode: the states become inference tensors

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_validate_then_fit_then_a_plain_loop(tmp_path):
    from torch.utils.data import DataLoader

    expected = _expected()
    want = {f"{name}/{key}": float(value) for name, values in expected.items() for key, value in values.items()}
    model = Evaluated()
    loader = DataLoader(torch.arange(BATCHES, dtype=torch.float32), batch_size=1)
    trainer = L.Trainer(default_root_dir=tmp_path, max_epochs=2, accelerator="cpu", logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.validate(model, loader)
    assert model.modes == {True}  # trainer.validate runs in inference mode (Lightning's default)
    trainer.fit(model, loader, loader)  # its validation: in inference mode too, or under no_grad (Lightning 2.6)
    assert len(model.logged) == 3  # validate, then each of fit's two epochs (the sanity check not logged)
    for logged in model.logged:
        assert logged.keys() == want.keys()
        for key, value in want.items():
            assert logged[key] == pytest.approx(value, abs=1e-12, nan_ok=True), key
    for batch_idx in range(BATCHES):  # a plain loop, outside inference mode, on the metrics Lightning reset
        for name, inputs in _inputs(batch_idx).items():
            model.metrics[name].update(**inputs)
    for name, metric in model.metrics.items():
        for key, value in metric.compute().items():
            torch.testing.assert_close(value, expected[name][key], rtol=0, atol=1e-12, equal_nan=True)


def _outside_the_harness() -> dict[str, tuple]:
    """Classes whose update is not a harness case: (build, update(metric, seed))."""
    from torchrec_eval.comparison.uncertainty import PairedComparison

    def scores(seed: int, *shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

    def target(seed: int) -> torch.Tensor:
        return torch.rand(6, 30, generator=torch.Generator().manual_seed(seed + 100)) < 0.3

    def catalogue(metric, seed):
        full = scores(seed, 6, 30)
        ids = torch.rand(6, 30, generator=torch.Generator().manual_seed(seed + 200)).argsort(1)[:, :4]
        with metric.catalogue(30, target_ids=ids) as batch:
            batch.add(full[:, :13], offset=0)
            batch.add(full[:, 13:], offset=13)

    return {
        "model_comparison": (lambda: tre.ModelComparison(["ndcg@5"], models=["a", "b"], test="fisher", replicates=32),
                             lambda m, s: m.update(preds=[scores(s, 6, 30), scores(s + 1, 6, 30)], target=target(s),
                                                   query_ids=torch.arange(6) + 6 * s)),
        "paired": (lambda: PairedComparison(["ndcg@5", "mrr@5"]),
                   lambda m, s: m.update(preds_a=scores(s, 6, 30), preds_b=scores(s + 1, 6, 30), target=target(s))),
        "windowed": (lambda: tre.Windowed(tre.NE(), window=2),
                     lambda m, s: m.update(torch.rand(20, generator=torch.Generator().manual_seed(s)),
                                           torch.arange(20) % 3 == 0)),
        "catalogue": (lambda: tre.RankingMetrics(["ndcg@5", "recall@10"]), catalogue),
    }


@pytest.mark.parametrize("name", sorted(_outside_the_harness()))
def test_reset_in_inference_mode_then_update_outside(name):
    build, update = _outside_the_harness()[name]
    fresh = build()
    for seed in range(3):
        update(fresh, seed)
    want = fresh.compute()
    with torch.inference_mode():
        metric = build()
        update(metric, 0)
        metric.compute()
        metric.reset()
        update(metric, 0)
    for seed in (1, 2):
        update(metric, seed)
    got = metric.compute()
    for key, value in (want.items() if isinstance(want, dict) else [("value", want)]):
        torch.testing.assert_close(got[key] if isinstance(got, dict) else got, value, rtol=0, atol=1e-12,
                                   equal_nan=True, msg=key)
