"""What a pointwise metric accumulates: weighted sums, or score histograms, per group and task.

A *member* is a family of metric values sharing one layout of float64 sufficient statistics, S numbers
per (group, task): :class:`SumsMember` (NE, log loss, calibration, CTR, MSE, RMSE, MAE: one column per
weighted sum they need, each column computed once however many values use it) and
:class:`HistogramMember` (binned AUC and AUPRC: 2 K bins). A member turns a
:class:`~torchrec_eval.pointwise.inputs.PointwiseBatch` into statistics [G, T, S] (no host sync) and
statistics [..., S] into values [...]; the metric classes only add them up.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int
from torchrec_eval.pointwise.curves import histogram, histogram_areas, histogram_error_bounds
from torchrec_eval.pointwise.entropy import ETA, cross_entropy_bits, log_loss_from_sums, ne_from_sums
from torchrec_eval.pointwise.inputs import PointwiseBatch, group_sum
from torchrec_eval.pointwise.rates import calibration_from_sums, mean_from_sums, rmse_from_sums

#: weighted per-sample quantities that the sum metrics add up; "cross_entropy" takes the clamp eta
COLUMNS: dict[str, Callable[..., Tensor]] = {
    "weight": lambda b: b.weight,
    "positive": lambda b: b.weight * b.target,
    "prediction": lambda b: b.weight * b.preds,
    "cross_entropy": lambda b, eta: cross_entropy_bits(b.preds, b.target, b.weight, eta),
    "squared_error": lambda b: b.weight * (b.preds - b.target).square(),
    "absolute_error": lambda b: b.weight * (b.preds - b.target).abs(),
}


@dataclass(frozen=True)
class SumFormula:
    """A value as a function of column sums: which columns, the formula, what the inputs must be."""

    columns: tuple[str, ...]
    value: Callable[..., Tensor]
    probabilities: bool  # preds must lie in [0, 1]
    binary_target: bool  # target must lie in [0, 1]
    options: tuple[str, ...] = ()  # accepted options ("eta" also sets the cross-entropy column's clamp)
    value_options: tuple[str, ...] = ()  # the options that ``value`` takes


SUM_FORMULAS: dict[str, SumFormula] = {
    "ne": SumFormula(("cross_entropy", "weight", "positive"), ne_from_sums, True, True, ("eta",), ("eta",)),
    "log_loss": SumFormula(("cross_entropy", "weight"), log_loss_from_sums, True, True, ("eta", "log_base"),
                           ("log_base",)),
    "calibration": SumFormula(("prediction", "positive"), calibration_from_sums, False, True),
    "ctr": SumFormula(("positive", "weight"), mean_from_sums, False, True),
    "mse": SumFormula(("squared_error", "weight"), mean_from_sums, False, False),
    "rmse": SumFormula(("squared_error", "weight"), rmse_from_sums, False, False),
    "mae": SumFormula(("absolute_error", "weight"), mean_from_sums, False, False),
}
HISTOGRAM_KEYS = ("auc", "auprc")
#: every value a pointwise suite can hold
KNOWN = (*SUM_FORMULAS, *HISTOGRAM_KEYS)
DEFAULT_BINS = 10_000


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_option(key: str, option: str, value: Any) -> None:
    """Raise a ValueError naming ``option`` unless ``value`` is valid for it."""
    if option == "eta" and not (_is_number(value) and 0 < value < 0.5):
        raise ValueError(f"`eta` of {key} must be a number in (0, 0.5), got {value!r}")
    if option == "log_base" and not (_is_number(value) and value > 0 and value != 1):
        raise ValueError(f"`log_base` of {key} must be a number > 0 other than 1, got {value!r}")
    if option == "bins":
        check_int("bins", value, 1, of=key)


class SumsMember:
    """NE, log loss, calibration, CTR, MSE, RMSE and MAE from one column per weighted sum they need.

    Args:
        requests: ``{key: options}``, e.g. ``{"ne": {"eta": 1e-12}, "calibration": {}}``.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        self.keys = list(requests)
        self.formulas: dict[str, tuple[SumFormula, dict[str, Any], list[int]]] = {}
        self.columns: list[tuple[str, tuple[Any, ...]]] = []
        for key, options in requests.items():
            formula = SUM_FORMULAS[key]
            unknown = sorted(set(options) - set(formula.options))
            if unknown:
                raise ValueError(f"{key} has no option {unknown[0]!r}; its options: {list(formula.options) or 'none'}")
            for option, value in options.items():
                check_option(key, option, value)
            options = {**{"eta": ETA, "log_base": math.e}, **options}
            indexes = []
            for name in formula.columns:
                column = (name, (options["eta"],) if name == "cross_entropy" else ())
                if column not in self.columns:
                    self.columns.append(column)
                indexes.append(self.columns.index(column))
            self.formulas[key] = (formula, {option: options[option] for option in formula.value_options}, indexes)
        self.size = len(self.columns)
        self.probabilities = any(formula.probabilities for formula, _, _ in self.formulas.values())
        self.binary_target = any(formula.binary_target for formula, _, _ in self.formulas.values())

    def configuration(self) -> dict[str, Any]:
        """Its keys, the options of their values and the columns of its sums: what names its state."""
        return {"kind": "sums", "keys": self.keys, "columns": [[name, list(params)] for name, params in self.columns],
                "options": {key: options for key, (_, options, _) in self.formulas.items()}}

    def statistics(self, batch: PointwiseBatch, num_groups: int | None) -> Tensor:
        rows = torch.stack([COLUMNS[name](batch, *params) for name, params in self.columns], dim=-1)
        return group_sum(rows, batch.groups, num_groups)

    def values(self, stats: Tensor) -> dict[str, Tensor]:
        return {key: formula.value(*(stats[..., i] for i in indexes), **options)
                for key, (formula, options, indexes) in self.formulas.items()}


class HistogramMember:
    """Binned AUC and AUPRC from the weights of positives and negatives in K score bins over [0, 1].

    Args:
        keys: ``"auc"`` and/or ``"auprc"``.
        bins: K; memory is 2 K float64 per group and task, the error bound shrinks about as 1/K
            (:mod:`torchrec_eval.pointwise.curves`).
    """

    probabilities = True
    binary_target = True

    def __init__(self, keys: list[str], bins: int = DEFAULT_BINS) -> None:
        bins = check_int("bins", bins, 1, of="/".join(keys))
        self.keys, self.bins, self.size = list(keys), bins, 2 * bins

    def configuration(self) -> dict[str, Any]:
        """Its keys and number of bins: what names its state."""
        return {"kind": "histogram", "keys": self.keys, "bins": self.bins}

    def statistics(self, batch: PointwiseBatch, num_groups: int | None) -> Tensor:
        return histogram(batch.preds, batch.target, batch.weight, batch.groups, num_groups, self.bins)

    def values(self, stats: Tensor) -> dict[str, Tensor]:
        auc, ap = histogram_areas(stats)
        return {key: auc if key == "auc" else ap for key in self.keys}

    def error_bounds(self, stats: Tensor) -> dict[str, Tensor]:
        auc, ap = histogram_error_bounds(stats)
        return {key: auc if key == "auc" else ap for key in self.keys}


def build_members(keys: list[str], options: dict[str, dict[str, Any]]) -> list[Any]:
    """Members for a list of value keys (``"ne"``, ``"auc"``, ...) with per-key options.

    AUC and AUPRC with the same ``bins`` share one histogram.

    Raises:
        ValueError: on an unknown key (the message lists the known ones), a repeated key, an option
            for a key that is not requested, or a bad option.
    """
    for key in keys:
        if key not in KNOWN:
            raise ValueError(f"Unknown pointwise metric {key!r}; known: {list(KNOWN)}")
    if len(set(keys)) != len(keys):
        raise ValueError(f"A metric is requested twice: {keys}")
    for key in options:
        if key not in keys:
            raise ValueError(f"`options` names {key!r}, which is not among the metrics {keys}")
    sums = {key: dict(options.get(key, {})) for key in keys if key in SUM_FORMULAS}
    members: list[Any] = [SumsMember(sums)] if sums else []
    by_bins: dict[int, list[str]] = {}
    for key in keys:
        if key in HISTOGRAM_KEYS:
            extra = sorted(set(options.get(key, {})) - {"bins"})
            if extra:
                raise ValueError(f"{key} has no option {extra[0]!r}; its options: ['bins']")
            if "bins" in options.get(key, {}):
                check_option(key, "bins", options[key]["bins"])
            by_bins.setdefault(options.get(key, {}).get("bins", DEFAULT_BINS), []).append(key)
    members += [HistogramMember(group, bins) for bins, group in by_bins.items()]
    return members
