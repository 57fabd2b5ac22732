"""Pointwise metrics as functions of one batch: the same formulas and checks as the classes.

Each takes ``preds`` and ``target`` [B] (a 0-d float64 result) or [B, T] (T tasks: a [T] result), and
``sample_weight`` [B] or of the shape of ``preds``. Formulas: :mod:`~torchrec_eval.pointwise.entropy`
(NE, log loss, after TorchRec), :mod:`~torchrec_eval.pointwise.rates` (calibration, CTR, MSE, RMSE,
MAE) and :mod:`~torchrec_eval.pointwise.curves` (AUC, AUPRC: exact and binned).

The arguments every function takes:

* ``preds``: [B] or [B, T] predictions (probabilities in [0, 1] where a function says so);
* ``target``: labels of the shape of ``preds`` (in [0, 1], soft labels allowed, where a function says so);
* ``sample_weight``: [B] or the shape of ``preds``, >= 0; default 1;
* ``validate_args``: check values; False skips the checks that need a host sync.

Each raises a ``ValueError`` naming the argument, on a wrong type, shape, dtype or value.
"""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor

from torchrec_eval.pointwise.curves import sample_areas
from torchrec_eval.pointwise.entropy import ETA
from torchrec_eval.pointwise.inputs import prepare_pointwise
from torchrec_eval.pointwise.members import DEFAULT_BINS, build_members

__all__ = ["binary_auc", "binary_auprc", "binned_auc", "binned_auprc", "calibration", "ctr", "log_loss",
           "mae", "mse", "ne", "rmse"]


def _batch(preds: Any, target: Any, sample_weight: Any, validate_args: bool, probabilities: bool,
           binary_target: bool) -> Any:
    tasks = preds.shape[1] if isinstance(preds, Tensor) and preds.ndim == 2 else None
    return prepare_pointwise(preds, target, sample_weight, None, num_tasks=tasks, num_groups=None,
                             probabilities=probabilities, binary_target=binary_target, validate_args=validate_args)


def _evaluate(key: str, options: dict[str, Any], preds: Any, target: Any, sample_weight: Any,
              validate_args: bool) -> Tensor:
    (member,) = build_members([key], {key: options})
    batch = _batch(preds, target, sample_weight, validate_args, member.probabilities, member.binary_target)
    value = member.values(member.statistics(batch, None)[0])[key]
    return value if preds.ndim == 2 else value[0]


def _exact(preds: Any, target: Any, sample_weight: Any, validate_args: bool) -> tuple[Tensor, Tensor]:
    batch = _batch(preds, target, sample_weight, validate_args, False, True)
    auc, ap = sample_areas(batch.preds, batch.target, batch.weight)
    return (auc[0], ap[0]) if preds.ndim == 2 else (auc[0, 0], ap[0, 0])


def ne(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, eta: float = ETA,
       validate_args: bool = True) -> Tensor:
    """Normalized entropy, TorchRec's formula (:mod:`torchrec_eval.pointwise.entropy`); lower is better.

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds`` in [0, 1], ``target`` in [0, 1] (soft labels allowed).
        eta: the clamp of predictions and base rate (TorchRec: 1e-12).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import ne
        >>> ne(torch.tensor([0.9, 0.2, 0.3, 0.6]), torch.tensor([1, 0, 0, 1]))
        tensor(0.4314, dtype=torch.float64)
    """
    return _evaluate("ne", {"eta": eta}, preds, target, sample_weight, validate_args)


def log_loss(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, log_base: float = math.e,
             eta: float = ETA, validate_args: bool = True) -> Tensor:
    """Weighted log loss (binary cross entropy) of predicted probabilities.

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds`` in [0, 1], ``target`` in [0, 1] (soft labels allowed).
        log_base: base of the logarithm: e (default, ``sklearn.metrics.log_loss``) or 2 (TorchRec's bits).
        eta: the clamp of predictions (TorchRec: 1e-12).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import log_loss
        >>> log_loss(torch.tensor([0.5, 0.5]), torch.tensor([1, 0]), log_base=2)
        tensor(1., dtype=torch.float64)
    """
    return _evaluate("log_loss", {"log_base": log_base, "eta": eta}, preds, target, sample_weight, validate_args)


def calibration(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """Calibration, sum w p / sum w y (TorchRec's); NaN / inf without positives.

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds``, ``target`` in [0, 1] (soft labels allowed).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import calibration
        >>> calibration(torch.tensor([0.75, 0.5, 0.5, 0.75]), torch.tensor([1, 0, 0, 1]))
        tensor(1.2500, dtype=torch.float64)
    """
    return _evaluate("calibration", {}, preds, target, sample_weight, validate_args)


def ctr(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """Weighted CTR of the labels, sum w y / sum w (TorchRec's CTR).

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds`` (not used), ``target`` in [0, 1] (soft labels allowed).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import ctr
        >>> ctr(torch.zeros(4), torch.tensor([1, 0, 0, 1]), torch.tensor([3.0, 1.0, 1.0, 1.0]))
        tensor(0.6667, dtype=torch.float64)
    """
    return _evaluate("ctr", {}, preds, target, sample_weight, validate_args)


def mse(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """Weighted mean squared error, sum w (p - y)^2 / sum w.

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds``, ``target`` (any real values).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import mse
        >>> mse(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]), torch.tensor([1.0, 3.0]))
        tensor(1., dtype=torch.float64)
    """
    return _evaluate("mse", {}, preds, target, sample_weight, validate_args)


def rmse(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """Weighted root mean squared error, sqrt(sum w (p - y)^2 / sum w).

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds``, ``target`` (any real values).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import rmse
        >>> rmse(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]), torch.tensor([1.0, 3.0]))
        tensor(1., dtype=torch.float64)
    """
    return _evaluate("rmse", {}, preds, target, sample_weight, validate_args)


def mae(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """Weighted mean absolute error, sum w |p - y| / sum w.

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds``, ``target`` (any real values).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import mae
        >>> mae(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]), torch.tensor([1.0, 3.0]))
        tensor(0.5000, dtype=torch.float64)
    """
    return _evaluate("mae", {}, preds, target, sample_weight, validate_args)


def binary_auc(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """Exact weighted ROC AUC, ties 1/2: ``sklearn.metrics.roc_auc_score(..., sample_weight=w)``; NaN
    without a positive or a negative weight.

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds`` (any real scores), ``target`` in [0, 1] (soft labels allowed).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import binary_auc
        >>> binary_auc(torch.tensor([0.9, 0.2, 0.4, 0.4, 0.6]), torch.tensor([1, 0, 1, 0, 0]))
        tensor(0.7500, dtype=torch.float64)
    """
    return _exact(preds, target, sample_weight, validate_args)[0]


def binary_auprc(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, validate_args: bool = True) -> Tensor:
    """Exact weighted average precision: ``sklearn.metrics.average_precision_score(..., sample_weight=w)``.

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds`` (any real scores), ``target`` in [0, 1] (soft labels allowed).

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import binary_auprc
        >>> binary_auprc(torch.tensor([0.9, 0.2, 0.4, 0.6]), torch.tensor([1, 0, 1, 0]))
        tensor(0.8333, dtype=torch.float64)
    """
    return _exact(preds, target, sample_weight, validate_args)[1]


def binned_auc(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, bins: int = DEFAULT_BINS,
               validate_args: bool = True) -> Tensor:
    """Weighted ROC AUC of the predictions rounded down to K bins over [0, 1] (ties 1/2).

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds`` in [0, 1], ``target`` in [0, 1] (soft labels allowed).
        bins: K bins over [0, 1]; the error bound is in :mod:`torchrec_eval.pointwise.curves`.

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import binned_auc
        >>> binned_auc(torch.tensor([0.91, 0.22, 0.35, 0.62, 0.25]), torch.tensor([1, 0, 1, 0, 1]), bins=10)
        tensor(0.5833, dtype=torch.float64)
    """
    return _evaluate("auc", {"bins": bins}, preds, target, sample_weight, validate_args)


def binned_auprc(preds: Tensor, target: Tensor, sample_weight: Tensor | None = None, *, bins: int = DEFAULT_BINS,
                 validate_args: bool = True) -> Tensor:
    """Weighted average precision of the predictions rounded down to K bins over [0, 1].

    Args:
        preds, target, sample_weight, validate_args: see :mod:`torchrec_eval.pointwise.functional`;
            ``preds`` in [0, 1], ``target`` in [0, 1] (soft labels allowed).
        bins: K bins over [0, 1]; the error bound is in :mod:`torchrec_eval.pointwise.curves`.

    Raises:
        ValueError: naming the argument, on a wrong type, shape, dtype or value.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.functional import binned_auprc
        >>> binned_auprc(torch.tensor([0.91, 0.22, 0.35, 0.62, 0.05]), torch.tensor([1, 0, 1, 0, 1]), bins=10)
        tensor(0.7556, dtype=torch.float64)
    """
    return _evaluate("auprc", {"bins": bins}, preds, target, sample_weight, validate_args)
