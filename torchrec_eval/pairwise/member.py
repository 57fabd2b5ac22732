"""The state member of the pairwise family: every requested AUC, GAUC, MPR, FCP, CTR@k and pAUC@k from one batch.

One :class:`PairwiseMember` serves every key of this family in a metric or a suite: the full-ranking
keys (pAUC@k too: it reads every candidate) share one sort per batch
(:class:`~torchrec_eval.pairwise.sorted_rows.SortedRows`), CTR@k reads the shared top-k ranking. Every
value is a ratio of two sums (a numerator and a denominator per query), so a metric keeps float64
columns per key, whatever the number of queries. The member's class name and
instance attributes name its checkpoint state (``config_<sha>``, see
:func:`~torchrec_eval.metrics.base.fingerprint`): tables live at module level, not on the instance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import accumulate
from torchrec_eval.pairwise.auc import auc_columns
from torchrec_eval.pairwise.ctr import ctr_counts
from torchrec_eval.pairwise.fcp import fcp_columns
from torchrec_eval.pairwise.gauc import gauc_columns
from torchrec_eval.pairwise.mpr import mpr_columns
from torchrec_eval.pairwise.pauc import pauc_columns
from torchrec_eval.pairwise.registry import REGISTRY
from torchrec_eval.pairwise.sorted_rows import SortedRows
from torchrec_eval.pipeline import Batch
from torchrec_eval.pipeline.arguments import check_k
from torchrec_eval.pipeline.batch import Candidates

#: families of this module -> "k" if they need "@k", "none" if they take no cut-off (from the registry)
FAMILIES: dict[str, str] = {family: spec.cutoff for family, spec in REGISTRY.items()}


def _parse_requests(requests: Sequence[tuple[str, int | None]]) -> tuple[dict[str, list[int]], list[str], list[str]]:
    """The cut-offs of each family that takes one (CTR, pAUC), the families without one and every key (in
    request order) of ``requests``."""
    cutoffs: dict[str, list[int]] = {}
    families: list[str] = []
    keys: list[str] = []
    for family, k in requests:
        if family not in FAMILIES:
            raise ValueError(f"Unknown metric {family!r}; this module has {sorted(FAMILIES)}")
        if FAMILIES[family] == "none":
            if k is not None:
                raise ValueError(f"{family} ranks every candidate and takes no cut-off; "
                                 f"got '{family}@{k}'")
            if family in families:
                raise ValueError(f"Metric {family!r} is requested twice")
            families.append(family)
            keys.append(family)
        else:
            if k is None:
                raise ValueError(f"{family} needs a cut-off: write '{family}@10' or pass `k`")
            k = check_k(k)
            if k in cutoffs.get(family, []):
                raise ValueError(f"Metric '{family}@{k}' is requested twice")
            cutoffs.setdefault(family, []).append(k)
            keys.append(f"{family}@{k}")
    return cutoffs, families, keys


def _check_options(options: dict[str, dict[str, Any]]) -> None:
    """Every option names a family of this module, one of its options and an allowed value."""
    for family, values in options.items():
        if family not in FAMILIES:
            raise ValueError(f"Unknown metric {family!r} in `options`; "
                             f"this module has {sorted(FAMILIES)}")
        allowed = REGISTRY[family].options
        for name, value in values.items():
            if name not in allowed:
                raise ValueError(f"{family} has no option {name!r}; its options are {sorted(allowed)}")
            if value not in allowed[name]:
                raise ValueError(f"`{name}` of {family} must be one of {allowed[name]}, got {value!r}")


class PairwiseMember(Member):
    """AUC, GAUC, MPR, FCP, CTR@k and pAUC@k of one :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Every value is a ratio of two sums: the state is [G, 3P] float64 (numerator, denominator and the sum
    of squared numerators of each of the P keys, the last for confidence intervals), reduced with ``"sum"``.

    Args:
        requests: (family, cut-off) pairs: ``("auc", None)``, ``("ctr", 10)``, ``("pauc", 10)``, ...
        options: per-family options: ``{"mpr": {"average": "query"}}``,
            ``{"pauc": {"insufficient_handling": "exclude"}}``.
    """

    needs_ideal = False
    to_num_relevant = False
    supports_weights = True  # every value is a ratio of sums over queries
    # a query's ratio n_q / d_q is not what the pooled sum_q n_q / sum_q d_q averages: no paired comparison
    paired = False

    ctr_unlogged = "drop"  # "rank" only where unlogged items are marked (see __init__)

    def __init__(self, requests: Sequence[tuple[str, int | None]],
                 options: dict[str, dict[str, Any]] | None = None, *, marks_unlogged: bool = False) -> None:
        options = options or {}
        cutoffs, self.families, self.keys = _parse_requests(requests)
        self.ctr_ks, self.pauc_ks = cutoffs.get("ctr", []), cutoffs.get("pauc", [])
        self.query_keys = list(self.keys)  # a query's value is its own ratio (see metrics.per_query)
        _check_options(options)
        self.mpr_average = options.get("mpr", {}).get("average", "pooled")
        self.auc_tie_credit = options.get("auc", {}).get("tie_credit", 0.5)
        self.pauc_insufficient = options.get("pauc", {}).get("insufficient_handling", "ignore")
        # "raise" reads the batch on the host to decide whether to raise: no compiled update
        self.raises_on_data = bool(self.pauc_ks) and self.pauc_insufficient == "raise"
        # `unlogged="rank"` changes something only where unlogged items are marked (CTR's `ignore_index`,
        # whose target then comes encoded); a suite has no such mark: every candidate is logged
        if marks_unlogged and options.get("ctr", {}).get("unlogged") == "rank":
            self.ctr_unlogged = "rank"
        self.depth = max(self.ctr_ks, default=0)
        self.needs_candidates = any(REGISTRY[family].full_ranking for family in [*self.families, *cutoffs])
        self.state_name = "pairwise_" + "_".join(key.replace("@", "_at_") for key in self.keys)

    def configuration(self) -> dict[str, Any]:
        tie_credit = {"auc_tie_credit": self.auc_tie_credit} if "auc" in self.families else {}
        insufficient = {"pauc_insufficient": self.pauc_insufficient} if self.pauc_ks else {}
        return {"kind": "pairwise", "keys": self.keys, "mpr_average": self.mpr_average,
                "ctr_unlogged": self.ctr_unlogged, **tie_credit, **insufficient}

    def ratios(self, batch: Batch, empty_target_action: str) -> tuple[Tensor, Tensor]:
        """Numerators and denominators [B, P] (float64) of every key for one batch."""
        columns: dict[str, tuple[Tensor, Tensor]] = {}
        if self.needs_candidates:
            # a catalogue streamed in chunks brings its counts (TargetRanks) instead of every candidate
            candidates = batch.every_candidate()
            rows = SortedRows(candidates) if isinstance(candidates, Candidates) else candidates
            if self.pauc_ks:  # before the rank sums, which free the sort order its cumulative path reads
                columns.update(self._pauc_columns(rows, empty_target_action))
            if {"auc", "gauc", "mpr"} & set(self.families):
                columns.update(self._rank_columns(rows, empty_target_action))
            if "fcp" in self.families:
                columns["fcp"] = fcp_columns(*rows.pair_counts())
        if self.ctr_ks:
            clicks, shown = ctr_counts(batch.top_k(), self.ctr_ks, self.ctr_unlogged)
            for i, k in enumerate(self.ctr_ks):
                columns[f"ctr@{k}"] = (clicks[:, i], shown[:, i])
        numerators = torch.stack([columns[key][0] for key in self.keys], dim=1)
        denominators = torch.stack([columns[key][1] for key in self.keys], dim=1)
        return numerators, denominators

    def _rank_columns(self, rows: Any, action: str) -> dict[str, tuple[Tensor, Tensor]]:
        """AUC, GAUC and MPR columns from one pass of rank sums (``rows``: SortedRows or TargetRanks)."""
        tie_credit = self.auc_tie_credit if "auc" in self.families else 0.5
        strict = rows.strict_wins() if tie_credit != 0.5 else None  # before rank_sums: it frees the sort order
        relevant_count, rank_sum = rows.rank_sums()
        num_valid = rows.num_valid.to(torch.float64)
        out: dict[str, tuple[Tensor, Tensor]] = {}
        if "auc" in self.families or "gauc" in self.families:
            auc, counted = auc_columns(relevant_count, rank_sum, num_valid, action)
            out["auc"] = (auc, counted) if strict is None else \
                auc_columns(relevant_count, rank_sum, num_valid, action, tie_credit, strict)
            out["gauc"] = gauc_columns(auc, counted, relevant_count)  # RecBole's: ties 1/2
        if "mpr" in self.families:
            out["mpr"] = mpr_columns(relevant_count, rank_sum, num_valid, action, self.mpr_average)
        return out

    def _pauc_columns(self, rows: Any, action: str) -> dict[str, tuple[Tensor, Tensor]]:
        """pAUC@k columns for every cut-off, from one pass of partial credits (``rows``: SortedRows or TargetRanks)."""
        relevant_count, credits = rows.partial_credits(self.pauc_ks)
        num_valid = rows.num_valid.to(torch.float64)
        return {f"pauc@{k}": pauc_columns(credits[:, i], relevant_count, num_valid, k, action,
                                          self.pauc_insufficient) for i, k in enumerate(self.pauc_ks)}

    # the member interface (torchrec_eval.members.interface)
    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        """Each query's ratio [B, P] and the counted mask [B, P] (a denominator > 0)."""
        numerators, denominators = self.ratios(batch, metric.empty_target_action)
        return numerators / denominators.clamp(min=1e-300), denominators > 0

    def add_states(self, metric: Any, num_groups: int) -> None:
        default = torch.zeros(num_groups, 3 * len(self.keys), dtype=torch.float64)
        metric.add_state(self.state_name, default=default, dist_reduce_fx="sum")

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        """Compute the batch's sums (may raise); the returned call adds them to the state."""
        numerators, denominators = self.ratios(batch, metric.empty_target_action)
        rows = torch.cat([numerators, denominators, numerators * numerators], dim=1)
        return lambda: accumulate(getattr(metric, self.state_name), rows, batch.groups, batch.weights)

    def compute(self, metric: Any) -> dict[str, Tensor]:
        state = getattr(metric, self.state_name)
        count = len(self.keys)
        return {key: state[:, i] / state[:, count + i] for i, key in enumerate(self.keys)}

    def moments(self, metric: Any) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        """(sum, sum of squares, count) of the per-query means (AUC, pAUC@k; MPR with ``average="query"``), for
        :func:`torchrec_eval.comparison.uncertainty.confidence_interval`. Pooled ratios (GAUC, pooled MPR, FCP,
        CTR) are not means of independent per-query values and get no interval here."""
        state = getattr(metric, self.state_name)
        count = len(self.keys)
        per_query = {"auc", *(f"pauc@{k}" for k in self.pauc_ks)} | ({"mpr"} if self.mpr_average == "query" else set())
        return {key: (state[:, i], state[:, 2 * count + i], state[:, count + i])
                for i, key in enumerate(self.keys) if key in per_query}


def build_member(requests: list[tuple[str, int | None]],
                 options: dict[str, dict[str, Any]]) -> PairwiseMember:
    """One member for every family of this module requested by a suite (they share one sort per batch).

    Args:
        requests: (family, cut-off or None) pairs, e.g. ``[("auc", None), ("ctr", 10), ("pauc", 5)]``.
        options: per-family options, e.g. ``{"mpr": {"average": "query"}}``.
    """
    return PairwiseMember(requests, options)
