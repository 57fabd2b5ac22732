"""The settings of a sampled evaluation, checked together: which estimators hold for how the negatives were
drawn and for one catalogue size or a size per query (docs/sampled.md says why the others are refused)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from torchrec_eval.sampled.rank_metrics import FAMILIES
from torchrec_eval.sampled.transitions import check_sampling

__all__ = ["ESTIMATORS", "Estimator", "SampledSettings", "Sampling", "checked_settings"]

#: how the full-catalogue value is estimated from the sampled ranks
Estimator = Literal["naive", "rank_estimate", "bias_variance", "constrained", "em"]
ESTIMATORS: tuple[Estimator, ...] = get_args(Estimator)
#: how the negatives were drawn: uniformly, or by popularity with known per-draw probabilities
Sampling = Literal["uniform", "popularity"]


@dataclass(frozen=True)
class SampledSettings:
    """A checked combination of settings (:func:`checked_settings`).

    Attributes:
        requests: (family, cut-off or None) pairs; metric_keys: their result keys; cutoffs: their cut-offs.
        num_items: n, or None for a size per query; num_negatives: m.
        per_query_ranks: whether each query takes its own value (a size per query, or popularity draws, with any
            estimator but the naive one): one P(s | r) does not hold for every query.
    """

    requests: list[tuple[str, int | None]]
    num_items: int | None
    num_negatives: int
    estimator: str
    gamma: float
    replacement: bool
    audit: bool
    sampling: str
    per_query_ranks: bool
    metric_keys: list[str]
    cutoffs: tuple[int, ...]


def checked_settings(requests: Sequence[tuple[str, int | None]], num_items: int | None, num_negatives: int,
                     estimator: str, gamma: float, replacement: bool, audit: bool, sampling: str) -> SampledSettings:
    """The settings of :class:`~torchrec_eval.sampled.member.SampledMember`, checked.

    Raises:
        ValueError: on a bad n or m, an unknown estimator, sampling or family, a metric requested twice, a
            ``replacement`` or ``audit`` that is no bool, and an estimator, audit or draw without replacement
            that the sampling or a size per query does not support (saying why).

    Example:
        >>> checked_settings([("ndcg", 10)], None, 100, "bias_variance", 0.01, True, False, "uniform").per_query_ranks
        True
    """
    if num_items is None:  # one catalogue size per query: m is checked against each in update
        num_negatives = check_sampling(num_negatives + 1, num_negatives)[1]
    else:
        num_items, num_negatives = check_sampling(num_items, num_negatives)
    if estimator not in ESTIMATORS:
        raise ValueError(f"`estimator` must be one of {ESTIMATORS}, got {estimator!r}")
    if sampling not in get_args(Sampling):
        raise ValueError(f"`sampling` must be one of {get_args(Sampling)}, got {sampling!r}")
    per_query_ranks = (num_items is None or sampling == "popularity") and estimator != "naive"
    served = ("rank_estimate",) if sampling == "popularity" else ("rank_estimate", "bias_variance", "constrained")
    if per_query_ranks and estimator not in served:
        setting = "popularity-sampled negatives" if sampling == "popularity" else "a catalogue size per query"
        raise ValueError(
            f"`estimator`: with {setting}, only {['naive', *served]} apply (EM fits one distribution of true "
            "ranks to one histogram; popularity draws make P(s | r) depend on which items rank above: "
            f"docs/sampled.md), got {estimator!r}")
    if (num_items is None or sampling == "popularity") and audit:
        raise ValueError("`audit` needs one catalogue size and uniform draws (num_items an int, sampling='uniform'), "
                         f"got audit={audit!r}, num_items={num_items!r}, sampling={sampling!r}")
    if sampling == "popularity" and not replacement:
        raise ValueError("`replacement=False`: popularity draws are drawn with replacement here (the rank estimate "
                         "weighs a negative by 1 / its draw probability, which draws without replacement do not "
                         f"keep), got replacement={replacement!r}")
    if not isinstance(replacement, bool):
        raise ValueError(f"`replacement` must be True or False, got {replacement!r}")
    if not isinstance(audit, bool):
        raise ValueError(f"`audit` must be True or False, got {audit!r}")
    for family, _ in requests:
        if family not in FAMILIES:
            raise ValueError(f"Unknown sampled metric {family!r}; known: {list(FAMILIES)}")
    metric_keys = [family if k is None else f"{family}@{k}" for family, k in requests]
    if len(set(metric_keys)) != len(metric_keys):
        raise ValueError(f"A metric is requested twice: {metric_keys}")
    return SampledSettings(list(requests), num_items, num_negatives, estimator, gamma, replacement, audit, sampling,
                           per_query_ranks, metric_keys, tuple(k for _, k in requests if k is not None))
