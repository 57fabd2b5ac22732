"""MAE, MSE and RMSE (torchmetrics' regression metrics, summed in float64) through the one harness
(``tests/harness.py``) against scikit-learn, one output and several (``num_outputs``); and the float64 sums
that torchmetrics' float32 states lost."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torchmetrics.functional as tmf
from sklearn.metrics import mean_absolute_error, mean_squared_error

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes

CLASSES = {"mae": tre.MAE, "mse": tre.MSE, "rmse": tre.RMSE}
FUNCTIONS = {"mae": tmf.mean_absolute_error, "mse": tmf.mean_squared_error,
             "rmse": lambda preds, target, **options: tmf.mean_squared_error(preds, target, squared=False, **options)}
OUTPUTS = 2


def _batches(seed: int, outputs: int | None) -> list[dict[str, torch.Tensor]]:
    """Ratings in 1..5 and float64 predictions around them: [B], or [B, outputs]."""
    gen = torch.Generator().manual_seed(seed)
    shape = () if outputs is None else (outputs,)
    batches = []
    for rows in (6, 1, 9):
        target = torch.randint(1, 6, (rows, *shape), generator=gen).double()
        batches.append({"preds": target + torch.randn(rows, *shape, generator=gen, dtype=torch.float64),
                        "target": target})
    return batches


def _sklearn(family: str, preds: np.ndarray, target: np.ndarray) -> list[float]:
    """scikit-learn's value of each output (one for 1-D inputs)."""
    if family == "mae":
        errors = mean_absolute_error(target, preds, multioutput="raw_values")
    else:
        errors = mean_squared_error(target, preds, multioutput="raw_values")
    return [math.sqrt(e) if family == "rmse" else float(e) for e in np.atleast_1d(errors)]


def _outputs(result: torch.Tensor) -> dict[str, float]:
    return {f"output {i}": float(value) for i, value in enumerate(result.reshape(-1).tolist())}


def build(name: str) -> MetricCase:
    """``family`` on [B] ratings or ``family/outputs`` on [B, 2] (module level: processes rebuild it by name)."""
    family, _, form = name.partition("/")
    outputs = OUTPUTS if form == "outputs" else None
    batches = _batches(len(name), outputs)
    whole = {key: torch.cat([batch[key] for batch in batches]).numpy() for key in batches[0]}
    errors = _sklearn(family, whole["preds"].reshape(len(whole["preds"]), -1), whole["target"].reshape(len(whole["target"]), -1))
    options = {} if outputs is None else {"num_outputs": outputs}
    return MetricCase(name=name, make=lambda: CLASSES[family](**options), batches=batches,
                      expected={f"output {i}": value for i, value in enumerate(errors)},
                      functional=lambda **batch: FUNCTIONS[family](**batch, **options), flatten=_outputs)


NAMES = [f"{family}{form}" for family in CLASSES for form in ("", "/outputs")]


@pytest.mark.parametrize("name", NAMES)
def test_metric(name):
    check_metric(build(name))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, NAMES, str(tmp_path))


@pytest.mark.parametrize("family", sorted(CLASSES))
def test_a_small_error_after_a_large_one_is_counted(family):
    """One error of 1e4, then 1000 errors of 1: torchmetrics' float32 sum of squares stays at 1e8, each 1 lost
    below its step of 8 (MSE 99900.10 where 99901.10 is right, RMSE 316.0698 for 316.0714; MAE off by 1e-8)."""
    metric = CLASSES[family]()
    metric.update(torch.tensor([1e4]), torch.tensor([0.0]))
    for _ in range(1000):
        metric.update(torch.tensor([1.0]), torch.tensor([0.0]))
    squares = (1e8 + 1000) / 1001
    expected = {"mae": (1e4 + 1000) / 1001, "mse": squares, "rmse": math.sqrt(squares)}[family]
    assert metric.compute().item() == pytest.approx(expected, rel=1e-15)


def test_float64_inputs_keep_their_precision_and_a_dtype_cast_keeps_the_states():
    preds, target = torch.tensor([1.0 + 1e-9, 2.0], dtype=torch.float64), torch.tensor([0.0, 2.0], dtype=torch.float64)
    for cast in (lambda m: m, lambda m: m.to(torch.bfloat16), lambda m: m.half()):
        metric = cast(tre.MAE())
        metric.update(preds, target)
        assert metric.sum_abs_error.dtype == torch.float64
        assert metric.compute().item() == (1.0 + 1e-9) / 2
    assert tre.MSE().set_dtype(torch.float32).sum_squared_error.dtype == torch.float32  # set_dtype still casts


@pytest.mark.parametrize("family", sorted(CLASSES))
def test_a_state_reset_in_inference_mode_takes_the_next_update(family):
    """Lightning validates in ``torch.inference_mode``: a reset there left inference tensors, which the next
    training-time update could not add into (torchmetrics' #1993: RuntimeError)."""
    metric = CLASSES[family]()
    with torch.inference_mode():
        metric.reset()
    metric.update(torch.tensor([3.0, 1.0]), torch.tensor([1.0, 1.0]))
    assert metric.compute().item() == {"mae": 1.0, "mse": 2.0, "rmse": math.sqrt(2.0)}[family]
