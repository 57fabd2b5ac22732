"""The pointwise metrics against TorchRec's own metric classes (``torchrec.metrics``), where torchrec is
installed: lifetime and window values of NE, log loss, calibration, CTR, MSE and MAE for two tasks, with
uneven batches and a window in samples; AUC and AUPRC over TorchRec's window of the last W samples.

Skipped where ``torchrec`` is not installed. Install it without its dependencies (``pip install --no-deps
torchrec``): it must not replace torch. TorchRec's package imports ``fbgemm_gpu`` (embedding kernels,
built for one torch version); where that cannot load, :func:`_torchrec` imports the metric modules with
stand-ins for the four ``torchrec.distributed`` names that ``rec_metric.py`` uses for logging, a multi-rank
broadcast helper and a byte count, none of which takes part in a single-process metric value. TorchRec's
``compute()`` output does not pass torchmetrics' result squeezing in recent versions, so the tests read
``local_compute()`` (the same values without the sync, which one process does not need).
"""

from __future__ import annotations

import enum
import functools
import importlib
import importlib.util
import os
import sys
import types

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.pointwise import functional as F

TASKS = ["click", "buy"]


def _stand_ins() -> None:
    """Import torchrec.metrics without torchrec/__init__ (embedding modules) and torchrec.distributed."""
    spec = importlib.util.find_spec("torchrec")
    package = types.ModuleType("torchrec")
    package.__path__ = [os.path.dirname(spec.origin)]
    distributed = types.ModuleType("torchrec.distributed")
    distributed.__path__ = []
    collective = types.ModuleType("torchrec.distributed.collective_utils")
    collective.invoke_on_rank_and_broadcast_result = lambda group, rank, fn, *args, **kwargs: fn(*args, **kwargs)
    logging_utils = types.ModuleType("torchrec.distributed.logging_utils")
    logging_utils.EventType = enum.Enum("EventType", {"INFO": "info"})
    types_module = types.ModuleType("torchrec.distributed.types")
    types_module.get_tensor_size_bytes = lambda tensor: tensor.numel() * tensor.element_size()
    for module in (package, distributed, collective, logging_utils, types_module):
        sys.modules[module.__name__] = module


@functools.cache
def _torchrec() -> dict[str, types.ModuleType]:
    if "torchrec" not in sys.modules and importlib.util.find_spec("torchrec") is None:
        pytest.skip("torchrec is not installed (pip install --no-deps torchrec)")
    names = ["ne", "calibration", "ctr", "mse", "mae", "auc", "auprc", "metrics_config"]
    try:
        return {name: importlib.import_module(f"torchrec.metrics.{name}") for name in names}
    except Exception:  # fbgemm_gpu missing or built for another torch
        for name in [name for name in sys.modules if name == "torchrec" or name.startswith("torchrec.")]:
            del sys.modules[name]
        _stand_ins()
        return {name: importlib.import_module(f"torchrec.metrics.{name}") for name in names}


def _batches(seed: int, sizes: list[int]):
    gen = torch.Generator().manual_seed(seed)
    for size in sizes:
        preds = torch.rand(size, len(TASKS), generator=gen, dtype=torch.float64) * 0.98 + 0.01
        target = (torch.rand(size, len(TASKS), generator=gen, dtype=torch.float64) < preds).double()
        weight = torch.rand(size, len(TASKS), generator=gen, dtype=torch.float64) * 2
        yield preds, target, weight


def _by_task(tensor: torch.Tensor) -> dict[str, torch.Tensor]:
    return {task: tensor[:, i] for i, task in enumerate(TASKS)}


@pytest.mark.parametrize(
    ("module", "cls", "options", "ours"),
    [
        ("ne", "NEMetric", {"include_logloss": True}, {"ne": "ne", "logloss": "log_loss"}),
        ("calibration", "CalibrationMetric", {}, {"calibration": "calibration"}),
        ("ctr", "CTRMetric", {}, {"ctr": "ctr"}),
        ("mse", "MSEMetric", {}, {"mse": "mse", "rmse": "rmse"}),
        ("mae", "MAEMetric", {}, {"mae": "mae"}),
    ],
)
def test_lifetime_and_window_values_equal_torchrec(module, cls, options, ours):
    modules = _torchrec()
    config = modules["metrics_config"]
    tasks = [config.RecTaskInfo(name=task) for task in TASKS]
    window, sizes = 50, [20, 20, 7, 20, 3, 20, 20, 11, 20]
    theirs = getattr(modules[module], cls)(world_size=1, my_rank=0, batch_size=20, tasks=tasks,
                                            window_size=window, **options)
    options_ours = {"log_loss": {"log_base": 2}} if "log_loss" in ours.values() else None
    mine = tre.Windowed(tre.PointwiseMetrics(list(ours.values()), tasks=TASKS, options=options_ours),
                        window=window, unit="samples")
    for step, (preds, target, weight) in enumerate(_batches(0, sizes)):
        theirs.update(predictions=_by_task(preds), labels=_by_task(target), weights=_by_task(weight))
        mine.update(preds, target, sample_weight=weight)
        if step in (0, 4, len(sizes) - 1):
            expected, got = theirs.local_compute(), mine.compute()
            for task in TASKS:
                for name, key in ours.items():
                    for scope in ("lifetime", "window"):
                        value = expected[f"{module}-{task}|local_{scope}_{name}"]
                        assert got[f"{task}/{scope}_{key}"].item() == pytest.approx(value.item(), rel=1e-9), (
                            step, task, name, scope)


@pytest.mark.parametrize(("module", "cls", "ours"), [("auc", "AUCMetric", F.binary_auc),
                                                     ("auprc", "AUPRCMetric", F.binary_auprc)])
def test_curves_equal_torchrec_over_its_window_of_samples(module, cls, ours):
    modules = _torchrec()
    tasks = [modules["metrics_config"].RecTaskInfo(name=task) for task in TASKS]
    window, sizes = 64, [20, 20, 20, 20, 20]
    theirs = getattr(modules[module], cls)(world_size=1, my_rank=0, batch_size=20, tasks=tasks, window_size=window)
    seen = []
    for preds, target, weight in _batches(1, sizes):
        theirs.update(predictions=_by_task(preds), labels=_by_task(target), weights=_by_task(weight))
        seen.append((preds, target, weight))
    preds, target, weight = (torch.cat(column)[-window:] for column in zip(*seen, strict=True))
    expected = theirs.local_compute()
    values = ours(preds, target, weight)
    for i, task in enumerate(TASKS):  # TorchRec stores float32 samples
        assert values[i].item() == pytest.approx(expected[f"{module}-{task}|local_window_{module}"].item(), rel=1e-5)


def test_functional_states_equal_torchrec():
    modules = _torchrec()
    ((preds, target, weight),) = _batches(2, [200])
    p, y, w = preds.T, target.T, weight.T  # TorchRec's layout: [tasks, samples]
    ne = modules["ne"]
    states = ne.get_ne_states(y, p, w, 1e-12)
    expected = ne.compute_ne(states["cross_entropy_sum"], states["weighted_num_samples"], states["pos_labels"],
                             states["neg_labels"], 1e-12)
    assert F.ne(preds, target, weight).tolist() == pytest.approx(expected.tolist(), rel=1e-12)
    calibration = modules["calibration"]
    expected = calibration.compute_calibration(*calibration.get_calibration_states(y, p, w).values())
    assert F.calibration(preds, target, weight).tolist() == pytest.approx(expected.tolist(), rel=1e-12)
