"""A plan: which metric families, at which cut-offs, with which options -- evaluated from one ranking."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.functional._kernels import (
    EMPTY_TARGET_ACTIONS,
    KERNELS,
    apply_empty_target_action,
    check_k,
    check_option,
    counted_values,
)
from torchrec_eval.inputs import Batch, RankedTargets, prepare_batch

INPUT_KWARGS = ("indexes", "target_ids", "target_gains", "ranked_ids", "mask", "exclude_ids")


@dataclass(frozen=True)
class Entry:
    """One metric family evaluated at one or more cut-offs (``None`` = no cut-off, R-Precision only)."""

    name: str
    ks: tuple[int | None, ...]
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def keys(self) -> list[str]:
        return [self.name if k is None else f"{self.name}@{k}" for k in self.ks]


def make_entry(name: str, k: int | Sequence[int] | None, options: dict[str, Any]) -> Entry:
    """Validate a metric family, its cut-offs and options."""
    if name not in KERNELS:
        raise ValueError(f"Unknown metric {name!r}; known metrics: {sorted(KERNELS)}")
    kernel = KERNELS[name]
    ks = tuple(k) if isinstance(k, (list, tuple)) else (k,)
    if not ks:
        raise ValueError(f"`k` must be an int or a non-empty sequence of ints, got {k!r}")
    ks = tuple(check_k(one, optional=kernel.optional_k) for one in ks)
    if len(set(ks)) != len(ks):
        raise ValueError(f"`k` has repeated cut-offs: {k!r}")
    options = {option: value for option, value in options.items() if value is not None}
    for option, value in options.items():
        if option not in kernel.options:
            raise ValueError(f"{name} has no option {option!r}; its options are {sorted(kernel.options)}")
        check_option(name, option, value)
    if options.get("ideal", "cut") != "cut" and options.get("gain") != "binary":
        raise ValueError(
            f"`ideal={options['ideal']!r}` is defined for binary relevance: pass gain='binary' "
            f"(got gain={options.get('gain', 'linear')!r})"
        )
    return Entry(name, ks, tuple(sorted(options.items())))


class Plan:
    """Top-k metric entries sharing one ranking of each batch; values come out as [B, P] in ``keys`` order.

    As a member of a :class:`~torchrec_eval.metrics.base.RankingMetric` its state is ``stats``
    [G, 2P + 1]: the sum of each value, the sum of its square, and the number of counted queries.
    """

    needs_candidates = False
    supports_weights = True  # per-query weights: every value is a mean over queries

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = list(entries)
        self.keys = [key for entry in self.entries for key in entry.keys]
        if len(set(self.keys)) != len(self.keys):
            raise ValueError(f"A metric is requested twice: {self.keys}")
        kernels = [KERNELS[entry.name] for entry in self.entries]
        self.depth = max([k for entry in self.entries for k in entry.ks if k is not None], default=1)
        self.needs_ideal = any(
            kernel.needs_ideal and dict(entry.options).get("gain", "linear") != "binary"
            for kernel, entry in zip(kernels, self.entries, strict=False)
        )
        self.to_num_relevant = any(
            kernel.to_num_relevant and None in entry.ks
            for kernel, entry in zip(kernels, self.entries, strict=False)
        )
        self.needs_average = any(dict(entry.options).get("average_ties") for entry in self.entries)

    def evaluate(self, ranked: RankedTargets) -> Tensor:
        columns = []
        for entry in self.entries:
            options = dict(entry.options)
            averaged = options.pop("average_ties", False) and ranked.averaged is not None  # ranked form: no ties
            view = ranked.averaged if averaged else ranked
            columns.append(KERNELS[entry.name].fn(view, list(entry.ks), **options))
        return torch.cat(columns, dim=1)

    def per_query(self, ranked: RankedTargets, empty_target_action: str) -> tuple[Tensor, Tensor]:
        """Per-query values [B, P] (0 where not counted) and the counted mask [B]."""
        return apply_empty_target_action(self.evaluate(ranked), ranked.num_relevant, empty_target_action)

    # member protocol of RankingMetric
    def add_states(self, metric: Any, num_groups: int) -> None:
        default = torch.zeros(num_groups, 2 * len(self.keys) + 1, dtype=torch.float64)
        metric.add_state("stats", default=default, dist_reduce_fx="sum")

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        """Compute the batch's statistics (may raise); the returned call adds them to the state."""
        values, counted = counted_values(self.evaluate(batch.ranked), batch.ranked.relevant_column,
                                         metric.empty_target_action)
        rows = torch.cat([values, values * values, counted], dim=1)
        return lambda: accumulate(metric.stats, rows, batch.groups, batch.weights)

    def compute(self, metric: Any) -> dict[str, Tensor]:
        num_values = len(self.keys)
        stats = metric.stats
        means = stats[:, :num_values] / stats[:, 2 * num_values : 2 * num_values + 1]
        return {key: means[:, i] for i, key in enumerate(self.keys)}


def accumulate(state: Tensor, rows: Tensor, groups: Tensor | None, weights: Tensor | None = None) -> None:
    """Add per-query rows [B, C] into a [G, C] state, by group (G = 1 without groups); with ``weights``
    [B], each row times its query's weight (a weighted sum, numerators and denominators alike)."""
    if weights is not None:
        rows = rows * weights.unsqueeze(1)
    if groups is None:
        state += rows.sum(0, keepdim=True)
    else:
        state.index_add_(0, groups, rows)


def prepare(
    members: Sequence[Any],
    preds: Tensor | None,
    target: Tensor | None,
    *,
    ties: str,
    relevance_threshold: float | None,
    validate_args: bool,
    groups: Tensor | None = None,
    **inputs: Tensor | None,
) -> Batch:
    """Validate and rank a batch once for every member (the deepest top-k any of them needs)."""
    return prepare_batch(
        preds,
        target,
        groups=groups,
        ties=ties,
        relevance_threshold=relevance_threshold,
        validate_args=validate_args,
        k=max([0, *(member.depth for member in members)]),  # (no `default=`: torch.compile traces this)
        need_ideal=any(member.needs_ideal for member in members),
        to_num_relevant=any(member.to_num_relevant for member in members),
        need_candidates=any(member.needs_candidates for member in members),
        average_view=any(getattr(member, "needs_average", False) for member in members),
        **inputs,
    )


def check_common(empty_target_action: str, relevance_threshold: float | None) -> None:
    if empty_target_action not in EMPTY_TARGET_ACTIONS:
        raise ValueError(
            f"`empty_target_action` must be one of {EMPTY_TARGET_ACTIONS}, got {empty_target_action!r}"
        )
    if relevance_threshold is not None and (
        isinstance(relevance_threshold, bool) or not isinstance(relevance_threshold, (int, float))
    ):
        raise ValueError(f"`relevance_threshold` must be a number or None, got {relevance_threshold!r}")
