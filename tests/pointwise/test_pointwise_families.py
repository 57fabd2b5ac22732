"""Pointwise metrics through the one harness (``tests/harness.py``): weighted NE, log loss and calibration
against their formulas in plain Python (TorchRec's definitions), the exact AUC and AUPRC against the
pair-by-pair references of ``tests/reference/pointwise.py``."""

from __future__ import annotations

import math

import pytest
import torch

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import pointwise as ref


def _batches(seed: int) -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for rows in (7, 1, 12):
        preds = torch.rand(rows, generator=gen) * 0.9 + 0.05
        labels = (torch.rand(rows, generator=gen) < preds).double()
        weights = torch.rand(rows, generator=gen) + 0.5
        batches.append({"preds": preds, "target": labels, "sample_weight": weights})
    return batches


def _log_loss(p: list[float], y: list[float], w: list[float]) -> float:
    return -sum(wi * (yi * math.log(pi) + (1 - yi) * math.log(1 - pi)) for pi, yi, wi in zip(p, y, w, strict=True)) / sum(w)


def _expected(name: str, p: list[float], y: list[float], w: list[float]) -> float:
    rate = sum(wi * yi for yi, wi in zip(y, w, strict=True)) / sum(w)
    if name == "ne":  # log loss over the entropy of the base rate
        return _log_loss(p, y, w) / -(rate * math.log(rate) + (1 - rate) * math.log(1 - rate))
    if name == "log_loss":
        return _log_loss(p, y, w)
    if name == "calibration":  # predicted over observed clicks
        return sum(pi * wi for pi, wi in zip(p, w, strict=True)) / sum(yi * wi for yi, wi in zip(y, w, strict=True))
    if name == "auc":
        return ref.auc(p, y, w)
    return ref.average_precision(p, y, w)


CLASSES = {"ne": tre.NE, "log_loss": tre.LogLoss, "calibration": tre.Calibration, "auc": tre.BinaryAUC,
           "auprc": tre.BinaryAUPRC}


def build(name: str) -> MetricCase:
    """The case of one metric (module level: spawned processes rebuild it by name)."""
    batches = _batches(seed=len(name))
    columns = {key: torch.cat([b[key] for b in batches]).tolist() for key in batches[0]}
    expected = _expected(name, columns["preds"], columns["target"], columns["sample_weight"])
    return MetricCase(name=name, make=CLASSES[name], batches=batches, expected={name: expected}, atol=1e-9)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_metric(name):
    check_metric(build(name))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, sorted(CLASSES), str(tmp_path))
