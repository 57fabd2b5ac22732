"""A plan: which metric families, at which cut-offs, with which options -- evaluated from one ranking."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.constants import constant
from torchrec_eval.functional._kernels import (
    EMPTY_TARGET_ACTIONS,
    KERNELS,
    PLAN_OPTIONS,
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


# Options that did not exist before the count columns (a plan without them keeps its old state
# layout and name): dropped from the entries to name the configuration state of an old checkpoint.
_NEWER_OPTIONS = {"empty_list_action": None, "no_hit_action": None, "denominator": "rprecision", "empty_mean": None}


@functools.lru_cache(maxsize=256)
def count_layout(entries: tuple[Entry, ...]) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """Which count column divides each value, and what each count column counts.

    Column 0 counts the queries kept by ``empty_target_action`` (every value's count by default);
    ``"listed"`` those of them with a non-empty list (``empty_list_action="skip"``); ``("hit", j)``
    those with a relevant item in the top min(k, R) of value ``j`` (R-Precision,
    ``no_hit_action="skip"``). Returns (the count column of each value, the kind of each column).
    """
    kinds: list[Any] = ["all"]
    columns = []
    for entry in entries:
        options = dict(entry.options)
        for _ in entry.ks:
            if options.get("no_hit_action") == "skip":  # an empty list has no hit: "listed" is implied
                kind: Any = ("hit", len(columns))
            elif options.get("empty_list_action") == "skip":
                kind = "listed"
            else:
                kind = "all"
            if kind not in kinds:
                kinds.append(kind)
            columns.append(kinds.index(kind))
    for _, kind in zero_kinds(entries):
        if kind not in kinds:
            kinds.append(kind)
    return tuple(columns), tuple(kinds)


def zero_kinds(entries: tuple[Entry, ...]) -> list[tuple[int, Any]]:
    """(value index, count kind) of each value with ``empty_mean="zero"``: the value is 0.0 where that
    count is 0. Its own count, except R-Precision with ``no_hit_action="skip"``, whose own count
    (hits in the top min(k, R)) may be 0 while the top k has hits (MS Recommenders: NaN): there the
    kind ``("top_hit", j)`` counts the kept queries with a relevant item in the top k."""
    out: list[tuple[int, Any]] = []
    j = 0
    for entry in entries:
        options = dict(entry.options)
        for _ in entry.ks:
            if options.get("empty_mean") == "zero":
                if options.get("no_hit_action") == "skip":
                    out.append((j, ("top_hit", j)))
                elif options.get("empty_list_action") == "skip":
                    out.append((j, "listed"))
                else:
                    out.append((j, "all"))
            j += 1
    return out


class Plan:
    """Top-k metric entries sharing one ranking of each batch; values come out as [B, P] in ``keys`` order.

    As a member of a :class:`~torchrec_eval.metrics.base.RankingMetric` its state is ``stats``
    [G, 2P + C]: the sum of each value, the sum of its square, and C counts of counted queries: the
    queries kept by ``empty_target_action`` (C = 1 unless an entry has ``empty_list_action="skip"``
    or ``no_hit_action="skip"``, which count a subset of them in a column of their own; see
    :func:`count_layout`). A checkpoint of the [G, 2P + 1] layout loads (:meth:`adapt_loaded`).
    """

    needs_candidates = False
    supports_weights = True  # per-query weights: every value is a mean over queries

    def __init__(self, entries: Sequence[Entry]) -> None:
        # (no attribute beyond these: they name the configuration state, see RankingMetric)
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

    def _count_layout(self) -> tuple[tuple[int, ...], tuple[Any, ...]]:
        entries = tuple(self.entries)
        # torch.compile traces past a cache wrapper (and warns that it does): it gets the function itself
        return count_layout.__wrapped__(entries) if torch.compiler.is_compiling() else count_layout(entries)

    @property
    def count_columns(self) -> tuple[int, ...]:
        """The count column (0..C-1) of each value."""
        return self._count_layout()[0]

    @property
    def count_kinds(self) -> tuple[Any, ...]:
        return self._count_layout()[1]

    def check_ties(self, ties: str) -> None:
        """``no_hit_action="skip"`` needs one order of the items (whether a query has a hit is not an
        expectation over orders)."""
        if ties == "average" and any(isinstance(kind, tuple) for kind in self.count_kinds):
            raise ValueError("`no_hit_action='skip'` (R-Precision) leaves out the queries without a hit, which "
                             "differ between orders of tied scores: it takes one order, not ties='average' "
                             f"(got ties={ties!r})")

    def previous(self) -> Plan:
        """The plan as it was before ``empty_mean`` alone (self if it has none)."""
        entries = [replace(entry, options=tuple((name, value) for name, value in entry.options if name != "empty_mean"))
                   for entry in self.entries]
        return self if entries == self.entries else Plan(entries)

    def legacy(self) -> Plan:
        """The plan as it was before the options of ``_NEWER_OPTIONS`` (self if it has none of them)."""
        entries = []
        for entry in self.entries:
            kept = tuple((name, value) for name, value in entry.options
                         if name not in _NEWER_OPTIONS or _NEWER_OPTIONS[name] not in (None, entry.name))
            entries.append(replace(entry, options=kept))
        return self if entries == self.entries else Plan(entries)

    def evaluate(self, ranked: RankedTargets) -> Tensor:
        columns = []
        for entry in self.entries:
            options = {name: value for name, value in entry.options if name not in PLAN_OPTIONS}
            averaged = options.pop("average_ties", False) and ranked.averaged is not None  # ranked form: no ties
            view = ranked.averaged if averaged else ranked
            columns.append(KERNELS[entry.name].fn(view, list(entry.ks), **options))
        return torch.cat(columns, dim=1)

    def _counted(self, ranked: RankedTargets, empty_target_action: str) -> tuple[Tensor, Tensor]:
        """Per-query values [B, P] (0 where not counted) and counts [B, C] (float64 0 or 1)."""
        raw = self.evaluate(ranked)
        values, counted = counted_values(raw, ranked.relevant_column, empty_target_action)
        kinds = self.count_kinds
        if len(kinds) == 1:
            return values, counted
        if ranked.tie_size is not None:
            self.check_ties("average")
        columns = [counted]
        cutoffs = [k for entry in self.entries for k in entry.ks]
        for kind in kinds[1:]:
            if kind == "listed":
                kept = ranked.num_candidates > 0
            elif kind[0] == "top_hit":  # a relevant item in the top k (the whole list without a cut-off)
                k = cutoffs[kind[1]]
                kept = ranked.cum_hits[:, (ranked.depth if k is None else min(k, ranked.depth)) - 1] > 0
            else:
                kept = raw[:, kind[1]] > 0
            columns.append(counted * kept.unsqueeze(1))
        counts = torch.cat(columns, dim=1)
        index = self.count_columns
        device = counts.device
        which = constant(("count_columns", index, device), lambda: torch.tensor(index, device=device))
        return values * counts.index_select(1, which), counts

    def per_query(self, ranked: RankedTargets, empty_target_action: str) -> tuple[Tensor, Tensor]:
        """Per-query values [B, P] (0 where not counted) and the counted mask [B, P]."""
        values, counts = self._counted(ranked, empty_target_action)
        counted = counts[:, list(self.count_columns)] > 0
        return values, counted

    # member protocol of RankingMetric
    def add_states(self, metric: Any, num_groups: int) -> None:
        default = torch.zeros(num_groups, 2 * len(self.keys) + len(self.count_kinds), dtype=torch.float64)
        metric.add_state("stats", default=default, dist_reduce_fx="sum")

    def adapt_loaded(self, metric: Any, state_dict: dict[str, Any], prefix: str) -> None:
        """A checkpoint's ``stats`` of the one-count layout [G, 2P + 1], in this plan's [G, 2P + C]: every
        count column starts as the one count (the checkpoint's queries keep the means they had)."""
        loaded = state_dict.get(prefix + "stats")
        width = 2 * len(self.keys)
        kinds = self.count_kinds
        if not isinstance(loaded, Tensor) or len(kinds) == 1 or loaded.ndim != 2:
            return
        if loaded.shape[1] == width + 1:
            state_dict[prefix + "stats"] = torch.cat([loaded, loaded[:, width:].expand(-1, len(kinds) - 1)], dim=1)
            return
        # the layout before `empty_mean`: its count columns, and each ("top_hit", j) starts as its
        # ("hit", j) column (queries with a hit in the top min(k, R) have one in the top k)
        older = count_layout(tuple(self.previous().entries))[1]
        if older == kinds or loaded.shape[1] != width + len(older):
            return
        counts = [loaded[:, width + older.index(("hit", kind[1]) if kind[0] == "top_hit" else kind)]
                  if isinstance(kind, tuple) else loaded[:, width + older.index(kind)] for kind in kinds]
        state_dict[prefix + "stats"] = torch.cat([loaded[:, :width], torch.stack(counts, dim=1)], dim=1)

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        """Compute the batch's statistics (may raise); the returned call adds them to the state."""
        values, counts = self._counted(batch.ranked, metric.empty_target_action)
        rows = torch.cat([values, values * values, counts], dim=1)
        return lambda: accumulate(metric.stats, rows, batch.groups, batch.weights)

    def moments(self, metric: Any) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        """key -> (sum [G], sum of squares [G], count [G]) of each value."""
        p, stats = len(self.keys), metric.stats
        return {key: (stats[:, i], stats[:, p + i], stats[:, 2 * p + column])
                for i, (key, column) in enumerate(zip(self.keys, self.count_columns, strict=True))}

    def compute(self, metric: Any) -> dict[str, Tensor]:
        p, stats = len(self.keys), metric.stats
        means = self.means(stats[:, :p], stats[:, 2 * p:])
        return {key: means[:, i] for i, key in enumerate(self.keys)}

    def means(self, totals: Tensor, counts: Tensor) -> Tensor:
        """[G, P] means from the sums [G, P] and the counts [G, C]: NaN over no query, or 0.0 for a value
        with ``empty_mean="zero"`` where its zero count (:func:`zero_kinds`) is 0."""
        means = totals / counts[:, list(self.count_columns)]
        kinds = self.count_kinds
        for j, kind in zero_kinds(tuple(self.entries)):
            means[:, j] = torch.where(counts[:, kinds.index(kind)] == 0, 0.0, means[:, j])
        return means


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
