"""Full-ranking, pairwise and click metrics: AUC, GAUC, MPR, FCP and CTR@k.

AUC, GAUC, MPR and FCP look at every candidate of a query, not at a top-k list, so they need a score
for every candidate (the dense, ids or flat input form; not ``ranked_ids``). They share one ascending
``torch.sort`` of each row of scores; non-candidates (``mask`` False, ``exclude_ids``) hold ``-inf``
and sort first, and are left out of every count. Tied scores are handled exactly and do not depend
on ``ties``: a tied (relevant, non-relevant) pair counts 1/2 in AUC, tied items share their mean rank
in MPR, and a pair with equal scores is neither concordant nor discordant in FCP.

How (no [N, N] tensor, no loop over queries):

* AUC, GAUC and MPR need, per query, the sum ``A`` of the ascending mid-ranks (1 = lowest score
  among the valid candidates, ties at their mean rank) of its relevant items. The relevant items are
  looked up in the sorted row with ``torch.searchsorted`` (items below and items below or equal),
  which costs O(R log N) per query on top of the sort: in the ids form the target ids as given (no
  [B, N] target is ever built), in the dense form on the CPU after gathering them (a host sync). For
  the dense form on other devices and under ``torch.compile`` (no host sync) the same sums come from
  int32 cumulative counts and running maxima along the sorted row (O(N), no float64 [B, N] tensor).
  Mann-Whitney: ``U = A - R (R + 1) / 2`` and ``AUC = U / (R (N_valid - R))``.
* FCP counts, for each item, the items with a strictly lower score and a lower (concordant) or higher
  (discordant) grade: the items of grade 0 through ``torch.searchsorted``, the graded items among
  themselves by one cumulative count per grade level, O(N log N + W * grades) per query (W = items
  of grade > 0, gathered in their own dtype: no float64 [B, N] copy of the gains). Finding the grade
  levels costs one host sync per batch.

Memory: besides the sort's values and permutation (the permutation is freed at once where it is not
read), an update holds only [B, W] tensors of the relevant or graded items.
* CTR@k reads the shared top-k ranking like the top-k metrics (it works with every input form).

Every metric is a ratio of two sums (a numerator and a denominator per query), so a metric object
keeps two float64 columns per value, whatever the number of queries.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.constants import constant, row
from torchrec_eval.forms.common import is_relevant
from torchrec_eval.functional._kernels import check_k
from torchrec_eval.functional._plan import accumulate, check_common, prepare
from torchrec_eval.inputs import Batch, Candidates, RankedTargets, count_true
from torchrec_eval.syncs import host_reads_free

#: families of this module -> "k" if they need "@k", "none" if they take no cut-off
FAMILIES: dict[str, str] = {"auc": "none", "gauc": "none", "mpr": "none", "fcp": "none", "ctr": "k"}
FULL_RANKING = ("auc", "gauc", "mpr", "fcp")
OPTIONS: dict[str, dict[str, tuple]] = {"mpr": {"average": ("pooled", "query")}, "ctr": {"unlogged": ("drop", "rank")}}
#: ``unlogged="rank"`` reads the top k of a target encoded by :func:`encode_unlogged` (this threshold)
UNLOGGED_THRESHOLD = 2.0


# ----------------------------------------------------------------------------------------------
# kernels
# ----------------------------------------------------------------------------------------------
class TieGroups:
    """Groups of equal values along each row of an ascending [B, N] tensor."""

    def __init__(self, values: Tensor) -> None:
        self.values = values
        self._starts: Tensor | None = None
        self._group_start: Tensor | None = None

    @property
    def starts(self) -> Tensor:
        """[B, N] bool: the position opens a new group of equal values."""
        if self._starts is None:
            starts = torch.ones(self.values.shape, dtype=torch.bool, device=self.values.device)
            if torch.compiler.is_compiling():  # compile refuses a strided `out=`
                starts[:, 1:] = self.values[:, 1:] != self.values[:, :-1]
            else:  # no temporary [B, N] mask
                torch.ne(self.values[:, 1:], self.values[:, :-1], out=starts[:, 1:])
            self._starts = starts
        return self._starts

    def at_group_start(self, running: Tensor, overwrite: bool = False) -> Tensor:
        """The value of a non-decreasing [B, N] tensor at the first position of each position's group
        (``overwrite``: ``running`` is scratch space, which saves a [B, N] temporary)."""
        if overwrite:
            return running.mul_(self.starts).cummax(1).values
        zero = torch.zeros((), dtype=running.dtype, device=running.device)
        return torch.where(self.starts, running, zero).cummax(1).values

    @property
    def group_start(self) -> Tensor:
        """[B, N] float64: the first position of each position's group = the number of values below it."""
        if self._group_start is None:
            positions = torch.arange(self.values.shape[1], dtype=torch.float64, device=self.values.device)
            self._group_start = self.at_group_start(positions.expand_as(self.values))
        return self._group_start


class SortedRows(TieGroups):
    """One ascending sort of each row of candidate scores, shared by AUC, GAUC, MPR and FCP.

    Attributes:
        values: [B, N] sorted scores (non-candidates, ``-inf``, first).
        num_valid: [B] int64 number of candidates of each row.
        skipped: [B] int64 number of non-candidates (they fill the first ``skipped`` positions).
    """

    def __init__(self, candidates: Candidates) -> None:
        scores = candidates.scores
        values, order = torch.sort(scores, dim=1)
        super().__init__(values)
        self.candidates = candidates
        # only the cumulative-sum path of `rank_sums` reads the permutation: elsewhere its [B, N] int64
        # (twice the scores' bytes) is freed at once, before any other temporary
        dense_path = candidates.target_ids is None and not host_reads_free(values)
        self._order = order if dense_path else None
        del order
        rows, num_items = scores.shape
        if candidates.valid is None:
            self.num_valid = torch.full((rows,), num_items, dtype=torch.int64, device=scores.device)
        else:
            self.num_valid = count_true(candidates.valid)
        self.skipped = num_items - self.num_valid

    @property
    def order(self) -> Tensor:
        """[B, N] the sort permutation (sorted again if it was not kept)."""
        if self._order is None:
            self._order = torch.sort(self.candidates.scores, dim=1).indices
        return self._order

    def take_order(self) -> Tensor:
        """The sort permutation, no longer held here: its reader frees it as soon as it is done."""
        order, self._order = self.order, None
        return order

    def rank_sums(self) -> tuple[Tensor, Tensor]:
        return rank_sums(self, self.candidates.relevant)

    def pair_counts(self) -> tuple[Tensor, Tensor]:
        return pair_counts(self, self.candidates.gains)


def _compact(flags: Tensor, counts: Tensor | None,
             *sources: tuple[Tensor, float]) -> tuple[int, list[Tensor], Tensor]:
    """Gather the flagged entries of each row to the front of a [B, W] tensor (W = max count; host sync).

    ``flags`` [B, N]: the nonzero entries are flagged (bool or any dtype: no [B, N] comparison needed);
    ``counts`` [B] their number per row (None: counted here). ``sources`` are (tensor [B, N], padding
    value) pairs, compacted in their own dtype. Returns W, the compacted tensors and the [B, W] bool
    mask of real (non-padding) entries.
    """
    rows, cols = flags.nonzero(as_tuple=True)
    if counts is None:
        counts = torch.bincount(rows, minlength=flags.shape[0])
    width = int(counts.max()) if rows.numel() else 0
    starts = counts.cumsum(0) - counts
    column = torch.arange(rows.numel(), device=flags.device) - starts[rows]
    out = []
    for source, pad in sources:
        compact = torch.full((flags.shape[0], width), pad, dtype=source.dtype, device=flags.device)
        compact[rows, column] = source[rows, cols]
        out.append(compact)
    keep = torch.arange(width, device=flags.device) < counts.unsqueeze(1)
    return width, out, keep


def rank_sums(rows: SortedRows, relevant: Tensor, sparse: bool | None = None) -> tuple[Tensor, Tensor]:
    """Per query: R (float64 [B]) and A, the sum of the ascending mid-ranks of its relevant items.

    The mid-rank of an item is its 1-based rank among the valid candidates by ascending score, the
    mean rank of its tie group when scores are tied. ``relevant`` is [B, N], or [B, T] in the ids form,
    whose target items are always looked up in the sorted rows with ``searchsorted`` (no host sync).
    In the dense form ``sparse`` (default: on the CPU) gathers the relevant items first and looks them
    up the same way (a host sync); otherwise cumulative sums along the sorted rows are used.
    """
    candidates = rows.candidates
    if candidates.target_ids is not None:
        num_relevant = relevant.sum(1)
        return num_relevant.to(torch.float64), _mid_rank_sums(rows, candidates.target_scores, relevant)
    if sparse is None:
        sparse = host_reads_free(rows.values)
    num_relevant = count_true(relevant) if relevant.is_contiguous() else relevant.sum(1)
    skipped = rows.skipped.to(torch.float64)
    if sparse:
        width, (queries,), keep = _compact(relevant, num_relevant, (candidates.scores, 0.0))
        if width == 0:
            return num_relevant.to(torch.float64), torch.zeros_like(skipped)
        return num_relevant.to(torch.float64), _mid_rank_sums(rows, queries, keep)
    hits = relevant.gather(1, rows.take_order())  # bool, in sorted order
    relevant_count = num_relevant.to(torch.float64)
    # sum over relevant items of their group start s and group end e (0-based sorted positions):
    #   sum s = sum_p hit_p * s_p;  sum e = R (N - 1) - sum_q (relevant items strictly below q)
    # in exact int32 [B, N] steps (N < 2^31) summed in int64, one [B, N] temporary at a time
    num_items = rows.values.shape[1]
    positions = torch.arange(num_items, dtype=torch.int32, device=hits.device)
    sum_start = _masked_sum(rows.at_group_start(positions.expand_as(hits)), hits)
    below = hits.cumsum(1, dtype=torch.int32)
    below -= hits.view(torch.uint8)  # the exclusive count (a bool tensor cannot be subtracted)
    sum_below = _masked_sum(rows.at_group_start(below, overwrite=True), None)
    sum_end = relevant_count * (num_items - 1) - sum_below
    return relevant_count, (sum_start + sum_end) / 2 + relevant_count * (1 - skipped)


def _masked_sum(values: Tensor, mask: Tensor | None) -> Tensor:
    """Float64 [B] row sums of an integer [B, N] tensor (where ``mask``), accumulated in int64."""
    if mask is not None:
        values = values.mul_(mask)
    return values.sum(1, dtype=torch.int64).to(torch.float64)


def _mid_rank_sums(rows: SortedRows, queries: Tensor, keep: Tensor) -> Tensor:
    """Float64 [B] sums of the mid-ranks among the valid candidates of the scores ``queries`` [B, W]
    where ``keep``: items below + (items tied, itself included, + 1) / 2, exact integers halved."""
    below = torch.searchsorted(rows.values, queries, side="left")
    through = torch.searchsorted(rows.values, queries, side="right")
    # 2 x the 1-based mid-rank among all N positions: below + through + 1
    twice = torch.where(keep, below + through + 1, 0).sum(1)
    return twice.to(torch.float64) / 2 - keep.sum(1).to(torch.float64) * rows.skipped.to(torch.float64)


def _graded_pairs(values: Tensor, grades: Tensor, skipped: Tensor, levels: Tensor) -> tuple[Tensor, Tensor]:
    """Concordant and discordant pairs of each sorted row among items with different grades.

    ``values`` [B, W] ascending scores with ``skipped`` [B] non-items (grade <= every level) first;
    ``grades`` [B, W] float64 in sorted order; ``levels`` the distinct grades (ascending).
    """
    rows = TieGroups(values)
    below = rows.group_start  # items strictly below = the start of the own tie group
    concordant = torch.zeros(values.shape[0], dtype=torch.float64, device=values.device)
    discordant = torch.zeros_like(concordant)
    for level in range(levels.numel() - 1):
        at_most = (grades <= levels[level]).to(torch.float64)
        at_most_below = rows.at_group_start(at_most.cumsum(1) - at_most)
        # an item of this level: the items strictly below it with a higher grade are discordant pairs
        discordant += torch.where(grades == levels[level], below - at_most_below, 0.0).sum(1)
        # an item of the next level: the items strictly below it with a grade <= this level are concordant
        above_skipped = at_most_below - skipped.unsqueeze(1)
        concordant += torch.where(grades == levels[level + 1], above_skipped, 0.0).sum(1)
    return concordant, discordant


def _graded_items(candidates: Candidates, gains: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The items of gain != 0 of each row: their scores [B, W] (``-inf`` padding), float64 gains
    [B, W] (0 padding), the [B, W] mask of real entries and their number [B] (int64).

    Dense form: gathered to the front of each row (a host sync), without a [B, N] mask or float64
    copy of the gains; ids form: the target columns as they are."""
    if candidates.target_ids is not None:
        graded = gains != 0  # 0 for padding and non-candidates already
        scores = candidates.target_scores.masked_fill(~graded, float("-inf"))
        return scores, gains.to(torch.float64), graded, graded.sum(1)
    _, (scores, grades), keep = _compact(gains, None, (candidates.scores, float("-inf")), (gains, 0))
    return scores, grades.to(torch.float64), keep, keep.sum(1)


def pair_counts(rows: SortedRows, gains: Tensor) -> tuple[Tensor, Tensor]:
    """FCP's concordant and discordant pair counts per query (float64 [B] each).

    A pair of candidates with different gains is concordant when the higher gain has the higher
    score, discordant when it has the lower score, and neither when the scores are equal. ``gains``
    [B, N], or [B, T] in the ids form.
    """
    queries, grades, keep, num_graded = _graded_items(rows.candidates, gains)
    zeros = torch.zeros(queries.shape[0], dtype=torch.float64, device=queries.device)
    if queries.shape[1] == 0:
        return zeros, zeros.clone()
    skipped, num_valid = rows.skipped.to(torch.float64), rows.num_valid.to(torch.float64)
    queries, order = torch.sort(queries, dim=1)
    grades = grades.gather(1, order)
    keep = keep.gather(1, order)
    padding = (queries.shape[1] - num_graded).to(torch.float64)
    # pairs of a graded item with the candidates of grade 0 (graded items have a grade > 0)
    def count(sorted_values: Tensor, side: str, offset: Tensor) -> Tensor:
        found = torch.searchsorted(sorted_values, queries, side=side)
        return found.to(torch.float64) - offset.unsqueeze(1)

    below_all, through_all = count(rows.values, "left", skipped), count(rows.values, "right", skipped)
    below_graded, through_graded = count(queries, "left", padding), count(queries, "right", padding)
    zero_below = below_all - below_graded
    graded_above = num_graded.to(torch.float64).unsqueeze(1) - through_graded
    zero_above = (num_valid.unsqueeze(1) - through_all) - graded_above
    concordant = torch.where(keep, zero_below, 0.0).sum(1)
    discordant = torch.where(keep, zero_above, 0.0).sum(1)
    # pairs among the graded items, one cumulative count per grade level
    levels = torch.unique(grades[keep])
    if levels.numel() > 1:
        more_c, more_d = _graded_pairs(queries, grades, padding, levels)
        concordant, discordant = concordant + more_c, discordant + more_d
    return concordant, discordant


def ctr_counts(ranked: RankedTargets, ks: Sequence[int], unlogged: str = "drop") -> tuple[Tensor, Tensor]:
    """Clicks among the top k and logged items shown in the top k, [B, len(ks)].

    ``unlogged="drop"``: the unlogged items are not candidates, so the logged ones shown are
    min(k, candidates). ``"rank"``: the target is :func:`encode_unlogged`'s (0 unlogged, 1 logged, 2
    clicked; relevant from 2), so the gains in the top k sum to logged + clicked items."""
    device, columns = ranked.cum_hits.device, tuple(min(k, ranked.depth) - 1 for k in ks)
    # cached per device: a list index or torch.tensor(ks) would copy from the host (a sync) every update
    index = constant(("ctr-columns", columns, device), lambda: torch.tensor(columns, device=device))
    clicks = ranked.cum_hits.index_select(1, index)
    if unlogged == "rank":
        return clicks, ranked.gains.cumsum(1).index_select(1, index) - clicks
    shown = torch.minimum(row(tuple(float(k) for k in ks), device), ranked.num_candidates.unsqueeze(1))
    return clicks, shown


def encode_unlogged(target: Tensor | None, mask: Tensor | None, ignore_index: int | float,
                    relevance_threshold: float | None) -> Tensor:
    """The target of ``unlogged="rank"``: 0 for an unlogged item (``target == ignore_index``, which stays
    a candidate), 1 logged and not clicked, 2 clicked (relevant under ``relevance_threshold``)."""
    plain, logged = apply_ignore_index(target, mask, ignore_index)
    clicked = logged & is_relevant(plain, relevance_threshold)
    dtype = torch.float32 if plain.dtype == torch.bool or plain.dtype.is_complex else plain.dtype
    return logged.to(dtype) + clicked.to(dtype)


def apply_ignore_index(target: Tensor | None, mask: Tensor | None,
                       ignore_index: int | float | None) -> tuple[Tensor | None, Tensor | None]:
    """Turn ``target == ignore_index`` into non-candidates (``mask`` False) with a target of 0."""
    if ignore_index is None:
        return target, mask
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, float)):
        raise ValueError(f"`ignore_index` must be a number or None, got {ignore_index!r}")
    if target is None:
        raise ValueError(f"`ignore_index` ({ignore_index!r}) marks unobserved items in `target`; pass `target` "
                         "(dense or flat form), or use `mask` with the other forms; got no `target`")
    observed = target != ignore_index
    target = target.masked_fill(~observed, 0)
    if mask is not None:
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.shape != observed.shape:
            raise ValueError(f"`mask` must be a bool tensor of the shape of `target` "
                             f"{tuple(observed.shape)}, got {mask!r:.80}")
        observed = observed & mask
    return target, observed


# ----------------------------------------------------------------------------------------------
# the member: every family of this module, from one sort per batch
# ----------------------------------------------------------------------------------------------
def _check_empty(bad: Tensor, what: str) -> None:
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        raise ValueError(f"Query {row} of the batch has {what} and `empty_target_action` is 'error'")


class PairwiseMember:
    """AUC, GAUC, MPR, FCP and CTR@k of one :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Every value is a ratio of two sums: the state is [G, 3P] float64 (numerator, denominator and the sum
    of squared numerators of each of the P keys, the last for confidence intervals), reduced with ``"sum"``.

    Args:
        requests: (family, cut-off) pairs: ``("auc", None)``, ``("ctr", 10)``, ...
        options: per-family options: ``{"mpr": {"average": "query"}}``.
    """

    needs_ideal = False
    to_num_relevant = False
    supports_weights = True  # every value is a ratio of sums over queries

    ctr_unlogged = "drop"  # an instance value only for "rank": the other members keep their state names

    def __init__(self, requests: Sequence[tuple[str, int | None]],
                 options: dict[str, dict[str, Any]] | None = None, *, marks_unlogged: bool = False) -> None:
        options = options or {}
        self.ctr_ks: list[int] = []
        self.families: list[str] = []
        self.keys: list[str] = []
        for family, k in requests:
            if family not in FAMILIES:
                raise ValueError(f"Unknown metric {family!r}; this module has {sorted(FAMILIES)}")
            if FAMILIES[family] == "none":
                if k is not None:
                    raise ValueError(f"{family} ranks every candidate and takes no cut-off; "
                                     f"got '{family}@{k}'")
                if family in self.families:
                    raise ValueError(f"Metric {family!r} is requested twice")
                self.families.append(family)
                self.keys.append(family)
            else:
                if k is None:
                    raise ValueError(f"{family} needs a cut-off: write '{family}@10' or pass `k`")
                k = check_k(k)
                if k in self.ctr_ks:
                    raise ValueError(f"Metric '{family}@{k}' is requested twice")
                self.ctr_ks.append(k)
                self.keys.append(f"{family}@{k}")
        for family, values in options.items():
            if family not in FAMILIES:
                raise ValueError(f"Unknown metric {family!r} in `options`; "
                                 f"this module has {sorted(FAMILIES)}")
            allowed = OPTIONS.get(family, {})
            for name, value in values.items():
                if name not in allowed:
                    raise ValueError(f"{family} has no option {name!r}; its options are {sorted(allowed)}")
                if value not in allowed[name]:
                    raise ValueError(f"`{name}` of {family} must be one of {allowed[name]}, got {value!r}")
        self.mpr_average = options.get("mpr", {}).get("average", "pooled")
        # `unlogged="rank"` changes something only where unlogged items are marked (CTR's `ignore_index`,
        # whose target then comes encoded); a suite has no such mark: every candidate is logged
        if marks_unlogged and options.get("ctr", {}).get("unlogged") == "rank":
            self.ctr_unlogged = "rank"
        self.depth = max(self.ctr_ks, default=0)
        self.needs_candidates = any(family in FULL_RANKING for family in self.families)
        self.state_name = "pairwise_" + "_".join(key.replace("@", "_at_") for key in self.keys)

    def ratios(self, batch: Batch, empty_target_action: str) -> tuple[Tensor, Tensor]:
        """Numerators and denominators [B, P] (float64) of every key for one batch."""
        columns: dict[str, tuple[Tensor, Tensor]] = {}
        if self.needs_candidates:
            # a catalogue streamed in chunks brings its counts (TargetRanks) instead of every candidate
            rows = batch.candidates if hasattr(batch.candidates, "rank_sums") else SortedRows(batch.candidates)
            if {"auc", "gauc", "mpr"} & set(self.families):
                columns.update(self._rank_columns(rows, empty_target_action))
            if "fcp" in self.families:
                concordant, discordant = rows.pair_counts()
                columns["fcp"] = (concordant, concordant + discordant)
        if self.ctr_ks:
            clicks, shown = ctr_counts(batch.ranked, self.ctr_ks, self.ctr_unlogged)
            for i, k in enumerate(self.ctr_ks):
                columns[f"ctr@{k}"] = (clicks[:, i], shown[:, i])
        numerators = torch.stack([columns[key][0] for key in self.keys], dim=1)
        denominators = torch.stack([columns[key][1] for key in self.keys], dim=1)
        return numerators, denominators

    def _rank_columns(self, rows: Any, action: str) -> dict[str, tuple[Tensor, Tensor]]:
        relevant_count, rank_sum = rows.rank_sums()
        num_valid = rows.num_valid.to(torch.float64)
        out: dict[str, tuple[Tensor, Tensor]] = {}
        one = torch.ones_like(relevant_count)
        if "auc" in self.families or "gauc" in self.families:
            negatives = num_valid - relevant_count
            defined = (relevant_count > 0) & (negatives > 0)
            if action == "error":
                _check_empty(~defined, "no relevant or no non-relevant candidate (AUC is undefined)")
            pairs = relevant_count * negatives
            wins = rank_sum - relevant_count * (relevant_count + 1) / 2
            auc = torch.where(defined, wins / pairs.clamp(min=1), 0.0)
            if action == "pos":
                auc = torch.where(defined, auc, 1.0)
            counted = defined.to(torch.float64) if action == "skip" else one
            out["auc"] = (auc, counted)
            out["gauc"] = (auc * relevant_count, counted * relevant_count)
        if "mpr" in self.families:
            has_relevant = relevant_count > 0
            if action == "error":
                _check_empty(~has_relevant, "no relevant item")
            # sum over the relevant items of 100 (rank from the top - 1) / (N_valid - 1)
            percent = torch.where(num_valid > 1, 100 * (relevant_count * num_valid - rank_sum)
                                  / (num_valid - 1).clamp(min=1), 0.0)
            if self.mpr_average == "pooled":
                out["mpr"] = (percent, relevant_count)
            else:
                mean = torch.where(has_relevant, percent / relevant_count.clamp(min=1), 0.0)
                if action in ("neg", "pos"):  # a failed query ranks its (absent) items last: 100
                    mean = torch.where(has_relevant, mean, 100.0 if action == "neg" else 0.0)
                out["mpr"] = (mean, has_relevant.to(torch.float64) if action == "skip" else one)
        return out

    def legacy(self) -> PairwiseMember:
        """The member as it was before ``unlogged`` (self without it): names an older checkpoint's state."""
        if "ctr_unlogged" not in self.__dict__:
            return self
        older = copy.copy(self)
        del older.__dict__["ctr_unlogged"]
        return older

    # member protocol of RankingMetric
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
        """(sum, sum of squares, count) of the per-query means (AUC; MPR with ``average="query"``), for
        :func:`torchrec_eval.uncertainty.confidence_interval`. Pooled ratios (GAUC, pooled MPR, FCP,
        CTR) are not means of independent per-query values and get no interval here."""
        state = getattr(metric, self.state_name)
        count = len(self.keys)
        per_query = {"auc"} | ({"mpr"} if self.mpr_average == "query" else set())
        return {key: (state[:, i], state[:, 2 * count + i], state[:, count + i])
                for i, key in enumerate(self.keys) if key in per_query}


# ----------------------------------------------------------------------------------------------
# functional API
# ----------------------------------------------------------------------------------------------
_INPUT_ARGS = """
        validate_args: check values (NaN/inf scores, negative relevance, ids out of range); ``False``
            skips the checks that need a host sync.
        **inputs: the other input forms of :mod:`torchrec_eval.inputs`: ``indexes`` (flat form),
            ``target_ids`` and ``target_gains`` (ids form), and ``mask``, ``exclude_ids``
            (non-candidates are left out of every count)."""

_FULL_RAISES = """
    Raises:
        ValueError: on a bad ``reduction`` or ``empty_target_action``, with ``ranked_ids`` (these
            metrics need a score for every candidate), on mismatched shapes or dtypes and (with
            ``validate_args``) NaN/inf scores or negative relevance."""


def _document(args: str, raises: str = _FULL_RAISES) -> Any:
    def wrap(fn: Any) -> Any:
        fn.__doc__ = fn.__doc__.replace("{args}", args + _INPUT_ARGS).replace("{raises}", raises)
        return fn

    return wrap


def evaluate(requests: list[tuple[str, int | None]], options: dict[str, dict[str, Any]],
             preds: Tensor | None, target: Tensor | None, reduction: str, empty_target_action: str,
             relevance_threshold: float | None, ties: str, validate_args: bool,
             inputs: dict[str, Tensor | None], marks_unlogged: bool = False) -> dict[str, Tensor]:
    """Shared body of the functional metrics of this module: {key: 0-d mean or [B] per query}."""
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    check_common(empty_target_action, relevance_threshold)
    member = PairwiseMember(requests, options, marks_unlogged=marks_unlogged)
    batch = prepare([member], preds, target, ties=ties, relevance_threshold=relevance_threshold,
                    validate_args=validate_args, **inputs)
    numerators, denominators = member.ratios(batch, empty_target_action)
    if reduction == "none":
        values = torch.where(denominators > 0, numerators / denominators.clamp(min=1e-300), float("nan"))
    else:
        values = numerators.sum(0) / denominators.sum(0)  # 0/0 = NaN when nothing is counted
    return {key: values[..., i] for i, key in enumerate(member.keys)}


_EMPTY = """
        empty_target_action: a query {what} is ``"skip"``-ped (default), scores ``"neg"`` (0) or
            ``"pos"`` (1), or raises (``"error"``)."""
_THRESHOLD = """
        relevance_threshold: a target >= this is relevant; default: target > 0."""
_REDUCTION = """
        reduction: ``"mean"`` over counted queries (a 0-d float64 tensor, NaN if none is counted) or
            ``"none"`` for per-query values [B] (NaN for skipped queries)."""


_BOTH_CLASSES = "without a relevant or without a non-relevant candidate"


@_document(_REDUCTION + _EMPTY.format(what=_BOTH_CLASSES) + _THRESHOLD)
def auc(preds=None, target=None, *, reduction="mean", empty_target_action="skip", relevance_threshold=None,
        validate_args=True, **inputs):
    r"""AUC per query: the share of (relevant, non-relevant) candidate pairs ranked right, ties counting 1/2.

    .. math:: \mathrm{AUC}_q = \frac{1}{R\,(N-R)} \sum_{i\,\mathrm{rel}} \sum_{j\,\mathrm{non\text{-}rel}}
        \left(\mathbb{1}[s_i > s_j] + \tfrac12 \mathbb{1}[s_i = s_j]\right)
        = \frac{A - R(R+1)/2}{R\,(N-R)}

    over the N valid candidates of the query, R of them relevant, A the sum of the ascending mean
    ranks of the relevant ones (Mann-Whitney). Equal to ``sklearn.metrics.roc_auc_score`` of each
    query. ``reduction="mean"`` averages over the queries (``GAUC`` weights them by R).

    Shapes: ``preds`` [B, N] float scores, ``target`` [B, N] relevance (bool, int or float >= 0), or
    1-D with ``indexes``, or ``target_ids`` [B, T]. Not ``ranked_ids``: every candidate needs a score.

    Args:
        preds: scores; any real values.
        target: relevance.{args}
    {raises}

    Example:
        >>> import torch
        >>> from torchrec_eval.functional.pairwise import auc
        >>> preds = torch.tensor([[0.9, 0.5, 0.5, 0.1], [0.2, 0.8, 0.4, 0.6]])
        >>> target = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])
        >>> auc(preds, target, reduction="none")
        tensor([0.8750, 0.0000], dtype=torch.float64)
        >>> auc(preds, target)
        tensor(0.4375, dtype=torch.float64)
    """
    return evaluate([("auc", None)], {}, preds, target, reduction, empty_target_action, relevance_threshold,
                    "index", validate_args, inputs)["auc"]


@_document(_EMPTY.format(what=_BOTH_CLASSES)
           + "\n            (with ``\"neg\"``/``\"pos\"`` still weighs R: a query with R = 0 adds nothing)."
           + _THRESHOLD)
def gauc(preds=None, target=None, *, empty_target_action="skip", relevance_threshold=None, validate_args=True,
         **inputs):
    r"""GAUC: the per-query AUC averaged with weights R, the query's number of relevant items (RecBole).

    .. math:: \mathrm{GAUC} = \sum_q R_q\, \mathrm{AUC}_q \Big/ \sum_q R_q

    over the counted queries (see :func:`auc` for :math:`\mathrm{AUC}_q` and the shapes). For the
    per-query values use ``auc(..., reduction="none")``.

    Args:
        preds: scores; any real values.
        target: relevance.{args}
    {raises}

    Example:
        >>> import torch
        >>> from torchrec_eval.functional.pairwise import gauc
        >>> preds = torch.tensor([[0.9, 0.5, 0.5, 0.1], [0.2, 0.8, 0.4, 0.6]])
        >>> target = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])
        >>> gauc(preds, target)  # (2 * 0.875 + 1 * 0) / 3
        tensor(0.5833, dtype=torch.float64)
    """
    return evaluate([("gauc", None)], {}, preds, target, "mean", empty_target_action, relevance_threshold,
                    "index", validate_args, inputs)["gauc"]


@_document("""
        average: ``"pooled"`` (default, Hu et al. 2008): the mean over all relevant items of the batch;
            ``"query"``: the mean over queries of each query's mean.
        reduction: ``"mean"`` (the ``average`` above, a 0-d float64 tensor) or ``"none"``: each
            query's mean percentile rank [B] (NaN for a query without a relevant item).
        empty_target_action: only with ``average="query"``: a query without a relevant item is
            ``"skip"``-ped (default), scores ``"neg"`` (100, the worst) or ``"pos"`` (0, the best);
            ``"error"`` raises with either ``average``. Pooled, such a query adds nothing."""
           + _THRESHOLD)
def mpr(preds=None, target=None, *, average="pooled", reduction="mean", empty_target_action="skip",
        relevance_threshold=None, validate_args=True, **inputs):
    r"""MPR: the mean percentile rank of the relevant items, 0 = top, 100 = bottom. Lower is better.

    The percentile rank of a candidate among the N valid candidates of its query is

    .. math:: \mathrm{pr} = 100 \cdot \frac{\mathrm{rank} - 1}{N - 1}

    with rank the 1-based rank by descending score, the mean rank of its tie group when scores are
    tied (so constant scores give 50), and pr = 0 when N = 1. Random scores give 50 in expectation.

    Shapes: as :func:`auc` (not ``ranked_ids``).

    Args:
        preds: scores; any real values.
        target: relevance.{args}
    {raises}

    Example:
        >>> import torch
        >>> from torchrec_eval.functional.pairwise import mpr
        >>> preds = torch.tensor([[0.9, 0.7, 0.5, 0.1, 0.0], [0.2, 0.8, 0.4, 0.6, 0.0]])
        >>> target = torch.tensor([[1, 0, 1, 0, 0], [0, 0, 0, 0, 1]])
        >>> mpr(preds, target, reduction="none")  # (0 + 50) / 2 and 100
        tensor([ 25., 100.], dtype=torch.float64)
        >>> mpr(preds, target), mpr(preds, target, average="query")  # 150 / 3 and (25 + 100) / 2
        (tensor(50., dtype=torch.float64), tensor(62.5000, dtype=torch.float64))
    """
    if average not in ("pooled", "query"):
        raise ValueError(f"`average` must be 'pooled' or 'query', got {average!r}")
    return evaluate([("mpr", None)], {"mpr": {"average": average}}, preds, target, reduction,
                    empty_target_action, relevance_threshold, "index", validate_args, inputs)["mpr"]


@_document("""
        reduction: ``"mean"``: pooled over the batch, a 0-d float64 tensor (NaN without any pair);
            ``"none"``: each query's n_c / (n_c + n_d) [B] (NaN for a query without a pair).""")
def fcp(preds=None, target=None, *, reduction="mean", validate_args=True, **inputs):
    r"""FCP, the fraction of concordant pairs (Koren & Sill 2011), for graded relevance.

    .. math:: \mathrm{FCP} = \frac{\sum_q n_c(q)}{\sum_q n_c(q) + \sum_q n_d(q)}

    where, over the pairs of valid candidates of query q with different target values, n_c counts
    those whose higher target has the higher score and n_d those whose higher target has the lower
    score; a pair with equal scores is neither. The target values are used as they are (no
    ``relevance_threshold``); a query with no such pair adds nothing. Cost: one sort per row plus one
    pass per distinct target value > 0 over the items with a target > 0, and one host sync per batch.

    Shapes: as :func:`auc` (not ``ranked_ids``); ``target_gains`` give the grades in the ids form.

    Args:
        preds: scores; any real values.
        target: graded relevance (>= 0).{args}

    Raises:
        ValueError: on a bad ``reduction``, with ``ranked_ids``, on mismatched shapes or dtypes and
            (with ``validate_args``) NaN/inf scores or negative relevance.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional.pairwise import fcp
        >>> # true order A > B > C, predicted B, A, C: A>C and B>C concordant, A>B discordant
        >>> fcp(torch.tensor([[0.8, 0.9, 0.1]]), torch.tensor([[3, 2, 1]]))
        tensor(0.6667, dtype=torch.float64)
    """
    return evaluate([("fcp", None)], {}, preds, target, reduction, "skip", None, "index", validate_args,
                    inputs)["fcp"]


@_document("""
        k: cut-off, an int >= 1 or a sequence of them (then a dict ``{"ctr@k": value}`` is returned).
        reduction: ``"mean"``: pooled clicks / pooled shown items over the batch (a 0-d float64
            tensor) or ``"none"``: per query [B] (NaN for a query with no observed item).
        ignore_index: a ``target`` value that marks unobserved items (e.g. -1); same as ``mask``
            False there (with the default ``unlogged``).
        unlogged: how the items with ``target == ignore_index`` (no logged response) count in the cut:
            ``"drop"`` (default) removes them before the top k is taken; ``"rank"`` ranks them with
            the others, so they take places in the top k, and then counts only the logged items
            there (Jurity's CTR@k: top k of every recommended item, then the logged ones). ``mask``
            False stays a non-candidate either way.""" + _THRESHOLD + """
        ties: how equal scores are ordered at the cut-off, any mode of :mod:`torchrec_eval.inputs`:
            ``"index"`` (default: lower item index first), ``"pessimistic"`` (clicked items last),
            ``"average"`` (the expected value over all orders of the tied items), ...""",
           """
    Raises:
        ValueError: on a bad ``k``, ``reduction``, ``ignore_index`` or ``unlogged``, on mismatched
            shapes or dtypes and (with ``validate_args``) NaN/inf scores or negative relevance.""")
def ctr(preds=None, target=None, *, k=10, reduction="mean", ignore_index=None, unlogged="drop",
        relevance_threshold=None, ties="index", validate_args=True, **inputs):
    r"""CTR@k: clicks over observed (shown) items among the top k, pooled over queries.

    .. math:: \mathrm{CTR@}k = \frac{\sum_q \sum_{i \le k} c_{q,i}}{\sum_q \min(k, N_q)}

    The target is 1 for a click and 0 for an item shown but not clicked; unobserved items are marked
    with ``mask`` False (or ``target == ignore_index``) and are not candidates: they are removed from
    the ranking, so the top k are the k best-scored *observed* items, and N_q is the number of observed
    items of the query. ``empty_target_action`` does not apply: a query without a click adds its shown
    items to the denominator. With ``ranked_ids`` the list is what was shown and ``target_ids`` the
    clicked items.

    With ``unlogged="rank"`` (Jurity's cut) the items with ``target == ignore_index`` stay in the
    ranking: the top k are taken over every candidate, and the logged ones among them count,

    .. math:: \mathrm{CTR@}k = \frac{\sum_q \sum_{i \le k} c_{q,i}}{\sum_q \sum_{i \le k} o_{q,i}}

    with :math:`o_{q,i}` = 1 for a logged item at rank i (0/0 = NaN when no logged item is in any top k).

    Shapes: any input form of :mod:`torchrec_eval.inputs`.

    Args:
        preds: scores; any real values.
        target: 1 clicked, 0 shown and not clicked (or ``ignore_index``: not shown).{args}
    {raises}

    Example:
        >>> import torch
        >>> from torchrec_eval.functional.pairwise import ctr
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4]])
        >>> target = torch.tensor([[1, -1, 0, 1], [-1, -1, 1, -1]])  # -1: not shown
        >>> ctr(preds, target, k=2, ignore_index=-1)  # (1 + 1) / (2 + 1)
        tensor(0.6667, dtype=torch.float64)
        >>> ctr(preds, target, k=2, ignore_index=-1, unlogged="rank")  # top 2 of all: (1 + 0) / (1 + 0)
        tensor(1., dtype=torch.float64)
    """
    check_unlogged(unlogged)
    ks = list(k) if isinstance(k, (list, tuple)) else [k]
    if not ks:
        raise ValueError(f"`k` must be an int or a non-empty sequence of ints, got {k!r}")
    mask = inputs.pop("mask", None)
    ranks_unlogged = unlogged == "rank" and ignore_index is not None
    if ranks_unlogged:
        check_common("skip", relevance_threshold)
        target = encode_unlogged(target, mask, ignore_index, relevance_threshold)
        relevance_threshold = UNLOGGED_THRESHOLD
    else:
        target, mask = apply_ignore_index(target, mask, ignore_index)
    results = evaluate([("ctr", one) for one in ks], {"ctr": {"unlogged": unlogged}}, preds, target, reduction,
                       "skip", relevance_threshold, ties, validate_args, {**inputs, "mask": mask},
                       marks_unlogged=ranks_unlogged)
    return results if isinstance(k, (list, tuple)) else results[f"ctr@{k}"]


def check_unlogged(unlogged: Any) -> None:
    """``unlogged`` of CTR: ``"drop"`` or ``"rank"``."""
    if not isinstance(unlogged, str) or unlogged not in OPTIONS["ctr"]["unlogged"]:
        raise ValueError(f"`unlogged` must be one of {OPTIONS['ctr']['unlogged']}, got {unlogged!r}")
