"""The top-k member: which top-k families, at which cut-offs, with which options -- evaluated from one ranking.

The :class:`TopKMember` is the top-k member of a :class:`~torchrec_eval.metrics.base.MemberMetric`; its entries
(family, cut-offs, options) are the configuration its checkpoints name; tables belong to
:mod:`~torchrec_eval.ranking.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import accumulate, counted_values, kept_queries
from torchrec_eval.pipeline import Batch, RankedTargets
from torchrec_eval.pipeline.tensor_cache import constant, filled
from torchrec_eval.ranking.count_layout import BASIS_KINDS, KIND_BASIS, count_layout, zero_kinds
from torchrec_eval.ranking.entries import Entry
from torchrec_eval.ranking.rank_sums import Ratio, divide
from torchrec_eval.ranking.registry import MEMBER_OPTIONS, REGISTRY


class TopKMember(Member):
    """Top-k metric entries sharing one ranking of each batch; values come out as [B, P] in ``keys`` order.

    As a member of a :class:`~torchrec_eval.metrics.base.MemberMetric` its state is ``stats``
    [G, 2P + C]: the sum of each value, the sum of its square, and C counts of counted queries: the
    queries kept by ``empty_target_action`` (C = 1 unless an entry has ``empty_list_action="skip"``
    or ``no_hit_action="skip"``, which count a subset of them in a column of their own; see
    :func:`~torchrec_eval.ranking.count_layout.count_layout`).
    """

    needs_candidates = False
    supports_weights = True  # per-query weights: every value is a mean over queries

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = list(entries)
        self.keys = [key for entry in self.entries for key in entry.keys]
        self.query_keys = list(self.keys)  # every top-k value has a value per query: a mean of them, or a total
        if len(set(self.keys)) != len(self.keys):
            raise ValueError(f"A metric is requested twice: {self.keys}")
        specs = [REGISTRY[entry.name] for entry in self.entries]
        self.total_keys = tuple(key for spec, entry in zip(specs, self.entries, strict=True) if spec.total
                                for key in entry.keys)
        self.depth = max([k for entry in self.entries for k in entry.ks if k is not None], default=1)
        self.needs_ideal = any(
            spec.needs_ideal and dict(entry.options).get("gain", "linear") != "binary"
            for spec, entry in zip(specs, self.entries, strict=False)
        )
        self.to_num_relevant = any(
            spec.cutoff == "k_or_r" and None in entry.ks  # R-Precision without a cut-off ranks down to R
            for spec, entry in zip(specs, self.entries, strict=False)
        )
        self.needs_average = any(spec.reads_averaged(dict(entry.options))
                                 for spec, entry in zip(specs, self.entries, strict=True))
        grades = [dict(entry.options).get("max_grade", spec.max_grade) for spec, entry in zip(specs, self.entries, strict=True)]
        self.max_gain = min([grade for grade in grades if grade is not None], default=None)
        # what makes each value's query empty: no relevant item, but no non-relevant candidate for FallOut and
        # no judged item for Judged@k and NumRet (the counts of the queries they keep are their own)
        self.value_bases = tuple(spec.empty_basis for spec, entry in zip(specs, self.entries, strict=True)
                                 for _ in entry.ks)
        # (R's always: the state's first count column counts the queries with a relevant item)
        self.bases = tuple(basis for basis in BASIS_KINDS if basis == "relevant" or basis in self.value_bases)
        self.needs_non_relevant = any(spec.reads_non_relevant for spec in specs)
        self.needs_judged = any(spec.reads_judged for spec in specs)
        self.needs_pooled = any(spec.reads_pooled for spec in specs)
        self.needs_relevant_items = any(spec.reads_relevant_items for spec in specs)
        # each entry's (kernel, cut-offs, the kernel's options, whether it reads the tie-averaged view), worked
        # out once: an update of a small batch costs its Python as much as its ops
        self._kernel_calls = [_kernel_call(entry) for entry in self.entries]

    def configuration(self) -> dict[str, Any]:
        return {"kind": "top-k", "entries": [[entry.name, list(entry.ks), dict(entry.options)] for entry in self.entries]}

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
        expectation over orders), and so does a family whose formula is not exact on the averaged view."""
        inexact = [entry.name for entry in self.entries if not REGISTRY[entry.name].exact_under_average_ties]
        if ties == "average" and inexact:
            raise ValueError(f"{inexact[0]} has no exact expectation over the orders of tied scores here: it takes "
                             f"one order (ties='index', 'pessimistic', ...), not ties='average' (got ties={ties!r})")
        if ties == "average" and any(isinstance(kind, tuple) for kind in self.count_kinds):
            raise ValueError("`no_hit_action='skip'` (R-Precision) leaves out the queries without a hit, which "
                             "differ between orders of tied scores: it takes one order, not ties='average' "
                             f"(got ties={ties!r})")

    def evaluate(self, ranked: RankedTargets) -> Tensor:
        """[B, P] every entry's values: the families' :class:`~torchrec_eval.ranking.rank_sums.Ratio` divided at once
        (one op for a suite, where each family would divide its own; bit for bit their quotients)."""
        numerators: list[Tensor] = []
        denominators: list[Tensor | None] = []
        for kernel, ks, options, reads_averaged in self._kernel_calls:
            averaged = reads_averaged and ranked.averaged is not None  # ranked form: no ties
            value = kernel(ranked.averaged if averaged else ranked, ks, **options)
            numerator, denominator = value if isinstance(value, Ratio) else (value, None)
            numerators.append(numerator)
            denominators.append(denominator)
        if all(denominator is None for denominator in denominators):
            return torch.cat(numerators, dim=1)  # (a copy even of one: a formula may return a view of the batch's)
        if len(numerators) == 1 and denominators[0] is not None:  # one ratio: its own division, no columns to join
            return divide(numerators[0], _broadcast(denominators[0], numerators[0].shape))
        one = filled((1, 1), 1.0, numerators[0].device)
        return divide(torch.cat(numerators, dim=1),
                      torch.cat([_broadcast(one if denominator is None else denominator, numerator.shape)
                                 for numerator, denominator in zip(numerators, denominators, strict=True)], dim=1))

    def counted(self, ranked: RankedTargets, empty_target_action: str) -> tuple[Tensor, Tensor]:
        """Per-query values [B, P] (0 where not counted) and counts [B, C] (float64 0 or 1)."""
        raw = self.evaluate(ranked)
        kinds = self.count_kinds
        if self.bases == ("relevant",):
            values, counted = counted_values(raw, ranked.relevant_column, empty_target_action,
                                             zero_when_empty=ranked.binary)
            if len(kinds) == 1:
                return values, counted
            kept_by_basis = {"relevant": counted}
        else:  # FallOut's and Judged's values are resolved by their own counts of each query, the others' by R
            counts_by_basis = {basis: self._basis_count(ranked, basis) for basis in self.bases}
            lacking = torch.cat(list(counts_by_basis.values()), dim=1).index_select(1, self._bases_on(raw.device))
            values, _ = counted_values(raw, lacking, empty_target_action, self._empty_query_names())
            kept_by_basis = {basis: kept_queries(count, empty_target_action) for basis, count in counts_by_basis.items()}
        if ranked.tie_groups is not None:
            self.check_ties("average")
        columns = []
        cutoffs = [k for entry in self.entries for k in entry.ks]
        for kind in kinds:
            base = kept_by_basis[KIND_BASIS.get(kind, "relevant")]
            if kind in ("all", "non_relevant", "judged_items"):
                columns.append(base)
                continue
            if kind in ("listed", "listed_non_relevant", "listed_judged_items"):
                kept = ranked.num_candidates > 0
            elif kind[0] == "top_hit":  # a relevant item in the top k (the whole list without a cut-off)
                k = cutoffs[kind[1]]
                kept = ranked.cum_hits[:, (ranked.depth if k is None else min(k, ranked.depth)) - 1] > 0
            else:
                kept = raw[:, kind[1]] > 0
            columns.append(base * kept.unsqueeze(1))
        counts = torch.cat(columns, dim=1)
        return values * counts.index_select(1, self._count_columns_on(counts.device)), counts

    @staticmethod
    def _basis_count(ranked: RankedTargets, basis: str) -> Tensor:
        """[B, 1] float64 the count whose 0 makes a query empty for values of ``basis``: R, the non-relevant
        candidates (FallOut) or the judged items (Judged@k)."""
        if basis == "relevant":
            return ranked.relevant_column
        if basis == "non_relevant":
            return (ranked.num_candidates - ranked.num_relevant).unsqueeze(1)
        if ranked.num_judged is None:
            raise ValueError(f"this ranked view keeps no judgments (Needs.judged), got num_judged={ranked.num_judged}")
        return ranked.num_judged.unsqueeze(1)

    def _empty_query_names(self) -> str:
        """What an empty query lacks, for the error of ``empty_target_action="error"``."""
        lacks = {"non_relevant": "for FallOut: no non-relevant candidate",
                 "judged_items": "for Judged, NumRet and NumQ: no judged item"}
        notes = [lacks[basis] for basis in self.bases if basis in lacks]
        return f"no relevant item ({'; '.join(notes)})" if notes else "no relevant item"

    def _bases_on(self, device: torch.device) -> Tensor:
        """[P] the column of each value's empty basis among :attr:`bases`, built once per device."""
        index = tuple(self.bases.index(basis) for basis in self.value_bases)
        return constant(("value_bases", index, device), lambda: torch.tensor(index, device=device))

    def _count_columns_on(self, device: torch.device) -> Tensor:
        """:attr:`count_columns` as a tensor on ``device``, built once (a list index would copy it from
        the host at every batch: a sync on an accelerator)."""
        index = self.count_columns
        return constant(("count_columns", index, device), lambda: torch.tensor(index, device=device))

    # the member interface (torchrec_eval.members.interface)
    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        """Per-query values [B, P] (0 where not counted) and the counted mask [B, P]."""
        values, counts = self.counted(batch.top_k(), metric.empty_target_action)
        counted = counts.index_select(1, self._count_columns_on(counts.device)) > 0
        return values, counted

    def add_states(self, metric: Any, num_groups: int) -> None:
        default = torch.zeros(num_groups, 2 * len(self.keys) + len(self.count_kinds), dtype=torch.float64)
        metric.add_state("stats", default=default, dist_reduce_fx="sum")

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        """Compute the batch's statistics (may raise); the returned call adds them to the state."""
        values, counts = self.counted(batch.top_k(), metric.empty_target_action)
        rows = [values, values * values, counts]
        return lambda: accumulate(metric.stats, rows, batch.groups, batch.weights)

    def moments(self, metric: Any) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        """key -> (sum [G], sum of squares [G], count [G]) of each value."""
        p, stats = len(self.keys), metric.stats
        return {key: (stats[:, i], stats[:, p + i], stats[:, 2 * p + column])
                for i, (key, column) in enumerate(zip(self.keys, self.count_columns, strict=True))
                if key not in self.total_keys}

    def compute(self, metric: Any) -> dict[str, Tensor]:
        p, stats = len(self.keys), metric.stats
        means = self.means(stats[:, :p], stats[:, 2 * p:])
        return {key: means[:, i] for i, key in enumerate(self.keys)}

    def means(self, totals: Tensor, counts: Tensor) -> Tensor:
        """[G, P] means from the sums [G, P] and the counts [G, C]: NaN over no query, or 0.0 for a value
        with ``empty_mean="zero"`` where its zero count (:func:`zero_kinds`) is 0; a total family's value is
        its sum (:attr:`total_keys`)."""
        means = totals / counts[:, list(self.count_columns)]
        kinds = self.count_kinds
        for j, kind in zero_kinds(tuple(self.entries)):
            means[:, j] = torch.where(counts[:, kinds.index(kind)] == 0, 0.0, means[:, j])
        for j, key in enumerate(self.keys):
            if key in self.total_keys:
                means[:, j] = totals[:, j]
        return means


def _kernel_call(entry: Entry) -> tuple[Callable[..., Tensor | Ratio], list[Any], dict[str, Any], bool]:
    spec = REGISTRY[entry.name]
    options = {name: value for name, value in entry.options if name not in MEMBER_OPTIONS}
    reads_averaged = spec.reads_averaged(options)
    options.pop("average_ties", None)  # the view says it
    return spec.kernel, list(entry.ks), options, reads_averaged


def _broadcast(tensor: Tensor, shape: torch.Size) -> Tensor:
    """``tensor`` as ``shape`` (a view; most denominators already have it, and an expand costs a dispatch)."""
    return tensor if tensor.shape == shape else tensor.expand(shape)
