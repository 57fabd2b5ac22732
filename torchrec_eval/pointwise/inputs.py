"""One batch of pointwise inputs (one prediction per sample and task), checked and made canonical.

``preds`` and ``target`` are [B] (one task) or [B, T] (T tasks, e.g. click and conversion heads of one
model); ``sample_weight`` is [B] (shared by the tasks) or the shape of ``preds``; ``groups`` [B] gives
each sample's segment. Every metric of :mod:`torchrec_eval.pointwise` reads the canonical form: float64
[B, T] predictions, targets and weights, and int64 groups on the metric's device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class PointwiseBatch:
    """Canonical inputs: ``preds``, ``target``, ``weight`` float64 [B, T]; ``groups`` int64 [B] or None."""

    preds: Tensor
    target: Tensor
    weight: Tensor
    groups: Tensor | None

    @property
    def size(self) -> int:
        """Number of samples B."""
        return self.preds.shape[0]


def _describe(value: object) -> str:
    if isinstance(value, Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r:.60}"


def _tensor(name: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise ValueError(f"`{name}` must be a tensor, got {_describe(value)}")
    return value


def _outside(value: Tensor, low: float | None, high: float | None) -> Tensor:
    """A 0-d bool tensor: some value is NaN, infinite, or outside [low, high] (no host sync)."""
    bad = ~torch.isfinite(value)
    if low is not None:
        bad = bad | (value < low)
    if high is not None:
        bad = bad | (value > high)
    return bad.any()


def _range_error(name: str, value: Tensor, low: float | None, high: float | None) -> ValueError:
    smallest, largest = torch.aminmax(value)
    if name == "groups":
        return ValueError(f"`groups` must lie in [0, {int(high or 0) + 1}), got values from {smallest.item()} "
                          f"to {largest.item()}")
    bounds = "" if low is None else f" in [{low}, {high}]" if high is not None else f" >= {low}"
    nonfinite = " (NaN or inf included)" if not bool(torch.isfinite(value).all()) else ""
    return ValueError(f"`{name}` must hold finite values{bounds}, got values from {smallest.item()} to "
                      f"{largest.item()}{nonfinite}")


def _check_values(checks: list[tuple[str, Tensor, float | None, float | None]]) -> None:
    """Every check on the device, then one host sync; the details are read only to raise."""
    checks = [check for check in checks if check[1].numel()]
    if not checks:
        return
    flags = torch.stack([_outside(value, low, high) for _, value, low, high in checks])
    if bool(flags.any()):
        name, value, low, high = checks[int(flags.nonzero()[0])]
        raise _range_error(name, value, low, high)


def prepare_pointwise(
    preds: object,
    target: object,
    sample_weight: object = None,
    groups: object = None,
    *,
    num_tasks: int | None,
    num_groups: int | None,
    probabilities: bool,
    binary_target: bool,
    validate_args: bool = True,
    device: torch.device | None = None,
) -> PointwiseBatch:
    """Check one batch and return its canonical form.

    Args:
        preds: [B] (``num_tasks`` None) or [B, T] (``num_tasks`` = T) float predictions.
        target: labels of the shape of ``preds``: bool, int or float.
        sample_weight: None (weight 1), [B] or the shape of ``preds``; >= 0.
        groups: [B] integer segment of each sample in [0, num_groups), given exactly when ``num_groups`` is.
        num_tasks: T, or None for one task and 1-D inputs.
        num_groups: number of segments, or None.
        probabilities: ``preds`` must lie in [0, 1] (checked with ``validate_args``).
        binary_target: ``target`` must lie in [0, 1] (soft labels allowed; checked with ``validate_args``).
        validate_args: check values (finite, in range); False skips the checks that need a host sync.
        device: where the canonical tensors go (default: where ``preds`` is).

    Raises:
        ValueError: naming the argument and what it got, on a wrong type, dtype, shape or value.
    """
    preds, target = _tensor("preds", preds), _tensor("target", target)
    expected = "[B]" if num_tasks is None else f"[B, {num_tasks}] (one column per task)"
    if preds.ndim != (1 if num_tasks is None else 2) or (num_tasks is not None and preds.shape[1] != num_tasks):
        raise ValueError(f"`preds` must have shape {expected}, got {_describe(preds)}")
    if not preds.is_floating_point():
        raise ValueError(f"`preds` must be a float tensor, got {_describe(preds)}")
    if target.shape != preds.shape:
        raise ValueError(f"`target` must have the shape of `preds` {tuple(preds.shape)}, got {_describe(target)}")
    if target.is_complex():
        raise ValueError(f"`target` must be a bool, int or float tensor, got {_describe(target)}")
    device = preds.device if device is None else device
    columns = preds.reshape(preds.shape[0], num_tasks or 1)
    if sample_weight is None:
        weight = torch.ones(columns.shape, dtype=torch.float64, device=device)
    else:
        sample_weight = _tensor("sample_weight", sample_weight)
        if sample_weight.shape not in (preds.shape[:1], preds.shape) or sample_weight.dtype == torch.bool:
            raise ValueError(
                f"`sample_weight` must be a number tensor of shape [B] {tuple(preds.shape[:1])} or of the shape "
                f"of `preds` {tuple(preds.shape)}, got {_describe(sample_weight)}"
            )
        weight = sample_weight.to(device=device, dtype=torch.float64)
        weight = (weight.unsqueeze(1) if weight.ndim == 1 else weight.reshape(columns.shape)).expand(columns.shape)
    if (groups is None) != (num_groups is None):
        raise ValueError(
            "`groups` must be given exactly when the metric was built with `num_groups` "
            f"(num_groups={num_groups}, groups {'missing' if groups is None else 'given'})"
        )
    if groups is not None:
        groups = _tensor("groups", groups)
        if groups.shape != preds.shape[:1] or groups.is_floating_point() or groups.dtype == torch.bool:
            raise ValueError(
                f"`groups` must be an integer tensor of shape [B] {tuple(preds.shape[:1])}, got {_describe(groups)}"
            )
        groups = groups.to(device=device, dtype=torch.int64)
    preds = columns.to(device=device, dtype=torch.float64)
    target = target.reshape(columns.shape).to(device=device, dtype=torch.float64)
    if validate_args:
        unit = (0.0, 1.0)
        _check_values([
            ("preds", preds, *(unit if probabilities else (None, None))),
            ("target", target, *(unit if binary_target else (None, None))),
            *([("sample_weight", weight, 0.0, None)] if sample_weight is not None else []),
            *([("groups", groups, 0, num_groups - 1)] if groups is not None and num_groups is not None else []),
        ])
    return PointwiseBatch(preds, target, weight, groups)


def group_sum(rows: Tensor, groups: Tensor | None, num_groups: int | None) -> Tensor:
    """Sum per-sample rows [B, ...] into [G, ...] by group (G = 1 without groups)."""
    if groups is None or num_groups is None:
        return rows.sum(0, keepdim=True)
    out = torch.zeros((num_groups, *rows.shape[1:]), dtype=rows.dtype, device=rows.device)
    return out.index_add_(0, groups, rows)
