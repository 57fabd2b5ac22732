"""Pointwise metrics through the one harness (``tests/harness.py``): weighted NE, log loss and calibration
against their formulas in plain Python (TorchRec's definitions), the exact AUC and AUPRC against the
pair-by-pair references of ``tests/reference/pointwise.py``, CTR, MSE, RMSE and MAE against scikit-learn, the
binned AUC and AUPRC against scikit-learn on the predictions rounded down to their bin (what the classes
document); every value in one ``PointwiseMetrics`` suite, of two tasks and two groups too; and the suite in
``Windowed`` (lifetime and window, of updates and of samples: TorchRec's ``WindowBuffer``)."""

from __future__ import annotations

import dataclasses
import math
from functools import partial

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, mean_absolute_error, mean_squared_error, roc_auc_score

import torchrec_eval as tre
import torchrec_eval.pointwise.functional as F
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import pointwise as ref
from tests.reference.torchrec_metrics import WindowBuffer

Batch = dict[str, torch.Tensor]
BINS = 8
TASKS = ["click", "buy"]
GROUPS = 2


def _batches(seed: int, tasks: int | None = None) -> list[Batch]:
    """Three uneven batches of probabilities, 0/1 labels and weights: [B], or [B, tasks] with groups."""
    gen = torch.Generator().manual_seed(seed)
    shape = () if tasks is None else (tasks,)
    batches = []
    for rows in (7, 1, 12):
        preds = torch.rand(rows, *shape, generator=gen) * 0.9 + 0.05
        labels = (torch.rand(rows, *shape, generator=gen) < preds).double()
        weights = torch.rand(rows, generator=gen) + 0.5
        batch = {"preds": preds, "target": labels, "sample_weight": weights}
        if tasks is not None:
            batch["groups"] = torch.arange(rows) % GROUPS
        batches.append(batch)
    return batches


def _log_loss(p: list[float], y: list[float], w: list[float]) -> float:
    return -sum(wi * (yi * math.log(pi) + (1 - yi) * math.log(1 - pi)) for pi, yi, wi in zip(p, y, w, strict=True)) / sum(w)


def _binned(p: list[float]) -> np.ndarray:
    """Each prediction's bin, min(floor(p K), K - 1): the predictions rounded down, as the classes document."""
    return np.minimum(np.floor(np.asarray(p) * BINS), BINS - 1)


def _expected(name: str, p: list[float], y: list[float], w: list[float]) -> float:
    rate = sum(wi * yi for yi, wi in zip(y, w, strict=True)) / sum(w)
    if name == "ne":  # log loss over the entropy of the base rate
        return _log_loss(p, y, w) / -(rate * math.log(rate) + (1 - rate) * math.log(1 - rate))
    if name == "log_loss":
        return _log_loss(p, y, w)
    if name == "calibration":  # predicted over observed clicks
        return sum(pi * wi for pi, wi in zip(p, w, strict=True)) / sum(yi * wi for yi, wi in zip(y, w, strict=True))
    if name == "ctr":
        return rate
    if name in ("mse", "rmse"):
        error = float(mean_squared_error(y, p, sample_weight=w))
        return math.sqrt(error) if name == "rmse" else error
    if name == "mae":
        return float(mean_absolute_error(y, p, sample_weight=w))
    if name == "binned_auc":
        return float(roc_auc_score(y, _binned(p), sample_weight=w))
    if name == "binned_auprc":
        return float(average_precision_score(y, _binned(p), sample_weight=w))
    if name == "auc":
        return ref.auc(p, y, w)
    return ref.average_precision(p, y, w)


CLASSES = {"ne": tre.NE, "log_loss": tre.LogLoss, "calibration": tre.Calibration, "auc": tre.BinaryAUC,
           "auprc": tre.BinaryAUPRC, "ctr": tre.PointwiseCTR, "mse": tre.PointwiseMSE, "rmse": tre.PointwiseRMSE,
           "mae": tre.PointwiseMAE, "binned_auc": partial(tre.BinnedAUC, bins=BINS),
           "binned_auprc": partial(tre.BinnedAUPRC, bins=BINS)}
FUNCTIONS = {"ne": F.ne, "log_loss": F.log_loss, "calibration": F.calibration, "auc": F.binary_auc,
             "auprc": F.binary_auprc, "ctr": F.ctr, "mse": F.mse, "rmse": F.rmse, "mae": F.mae,
             "binned_auc": partial(F.binned_auc, bins=BINS), "binned_auprc": partial(F.binned_auprc, bins=BINS)}
# the suite: every value with a fixed state; its binned curves are named "auc" and "auprc" there
SUITE = {"ne": "ne", "log_loss": "log_loss", "calibration": "calibration", "ctr": "ctr", "mse": "mse",
         "rmse": "rmse", "mae": "mae", "auc": "binned_auc", "auprc": "binned_auprc"}  # suite key -> oracle name
SUITE_OPTIONS = {"auc": {"bins": BINS}, "auprc": {"bins": BINS}}
SUITES = ["suite", "suite/tasks_groups", "windowed/updates", "windowed/samples"]


def _columns(batches: list[Batch]) -> dict[str, np.ndarray]:
    return {key: torch.cat([batch[key] for batch in batches]).double().numpy() for key in batches[0]}


def _suite_values(batches: list[Batch]) -> dict[str, float]:
    """Every value of the suite by the oracle (one task, no groups)."""
    columns = _columns(batches)
    p, y, w = (columns[key].tolist() for key in ("preds", "target", "sample_weight"))
    return {key: _expected(name, p, y, w) for key, name in SUITE.items()}


def _grouped_values(batches: list[Batch]) -> dict[str, float]:
    """``{task}/{key}[group]`` by the oracle on each task's column of each group's rows."""
    columns = _columns(batches)
    out = {}
    for key, name in SUITE.items():
        for t, task in enumerate(TASKS):
            for group in range(GROUPS):
                rows = columns["groups"] == group
                p, y, w = columns["preds"][rows, t], columns["target"][rows, t], columns["sample_weight"][rows]
                out[f"{task}/{key}[{group}]"] = _expected(name, p.tolist(), y.tolist(), w.tolist())
    return out


def _per_group(result: dict[str, torch.Tensor]) -> dict[str, float]:
    """A result of [num_groups] tensors as ``{key}[group]`` -> float."""
    return {f"{key}[{group}]": float(value) for key, values in result.items() for group, value in enumerate(values)}


def _in_window(batches: list[Batch], unit: str, window: int) -> list[Batch]:
    """The updates a window holds: the last W, or those of TorchRec's ``WindowBuffer`` of W samples."""
    if unit == "updates":
        return batches[-window:]
    buffer = WindowBuffer(window)
    for batch in batches:
        buffer.aggregate_state([0.0], batch["preds"].shape[0])
    return batches[len(batches) - buffer.updates_in_window():]


def _windowed_values(shares: list[list[Batch]], unit: str, window: int) -> dict[str, float]:
    """Lifetime over every update; window over the union of each process's window (``Windowed``'s sync)."""
    lifetime = _suite_values([batch for share in shares for batch in share])
    recent = _suite_values([batch for share in shares for batch in _in_window(share, unit, window)])
    return ({f"lifetime_{key}": value for key, value in lifetime.items()}
            | {f"window_{key}": value for key, value in recent.items()})


def _suite(**options) -> tre.PointwiseMetrics:
    return tre.PointwiseMetrics(list(SUITE), options=SUITE_OPTIONS, **options)


def _build_suite(name: str) -> MetricCase:
    """``suite``: every value of one task; ``suite/tasks_groups``: of two tasks and two groups;
    ``windowed/updates`` and ``windowed/samples``: the suite in a window of 2 updates or of 13 samples
    (the last two batches, 12 + 1, in one process)."""
    kind, _, form = name.partition("/")
    if form == "tasks_groups":
        batches = _batches(seed=3, tasks=len(TASKS))
        return MetricCase(name=name, make=lambda: _suite(tasks=TASKS, num_groups=GROUPS), batches=batches,
                          expected=_grouped_values(batches), atol=1e-9, flatten=_per_group)
    batches = _batches(seed=4)
    if kind == "suite":
        return MetricCase(name=name, make=_suite, batches=batches, expected=_suite_values(batches), atol=1e-9)
    window = 2 if form == "updates" else 13
    return MetricCase(name=name, make=lambda: tre.Windowed(_suite(), window, unit=form), batches=batches,
                      expected=_windowed_values([batches], form, window), atol=1e-9,
                      split_invariant=False, merges=False,
                      across_processes=lambda shares: _windowed_values(shares, form, window))


def build(name: str) -> MetricCase:
    """The case of one metric or suite (module level: spawned processes rebuild it by name)."""
    if name in SUITES:
        return _build_suite(name)
    batches = _batches(seed=len(name))
    columns = {key: torch.cat([b[key] for b in batches]).tolist() for key in batches[0]}
    expected = _expected(name, columns["preds"], columns["target"], columns["sample_weight"])
    return MetricCase(name=name, make=CLASSES[name], batches=batches, expected={name: expected}, atol=1e-9,
                      functional=FUNCTIONS[name])


@pytest.mark.parametrize("name", sorted(CLASSES) + SUITES)
def test_metric(name):
    check_metric(build(name))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, sorted(CLASSES) + SUITES, str(tmp_path))


def test_the_window_options_are_needed_and_checked():
    """``Windowed``'s options are no blanket skips: without them the harness fails on the window's value over
    another split and on torchmetrics' refused merge; with ``merges=False`` a metric that merges fails."""
    case = build("windowed/updates")
    with pytest.raises(AssertionError, match="in 1 parts"):
        check_metric(dataclasses.replace(case, split_invariant=True))
    with pytest.raises(RuntimeError, match="merge_state"):
        check_metric(dataclasses.replace(case, merges=True))
    with pytest.raises(AssertionError, match="merge_state was expected to be refused"):
        check_metric(dataclasses.replace(build("suite"), merges=False))
