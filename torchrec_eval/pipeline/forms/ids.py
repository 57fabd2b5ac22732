"""The ids form: ``preds`` [B, N] and ``target_ids`` [B, T] (optional ``target_gains``), without a dense target.

The ranked items are found among each row's target ids by comparing every (item, target) pair where a row
holds few (one fused loop compiled), else by a sort and a binary search (no [B, K, T] tensor); the ranked form
reads its lists through the same table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import RankedTargets
from torchrec_eval.pipeline.counted_ranks import TIE_ORDERS, counted_ranks, counting_is_cheaper
from torchrec_eval.pipeline.forms.candidates import (
    CandidateItems,
    count_candidates,
    is_relevant,
    ranking_depth,
)
from torchrec_eval.pipeline.inputs import Needs, Rules
from torchrec_eval.pipeline.tensor_cache import constant, count_true, filled, hit_dtype, positions
from torchrec_eval.pipeline.topk import TopK, ranked_top
from torchrec_eval.pipeline.validation import UNJUDGED_GAIN


def lookup(items: Tensor, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Find ``items`` [B, K] among the row-wise ``ids`` [B, T] (-1 = padding) without a [B, K, T] tensor.

    Returns (found [B, K] bool, position in ``ids`` [B, K], sort order of ``ids``) so that a value
    attached to ``ids`` can be read for each found item as ``values.gather(1, order).gather(1, pos)``.
    An item -1 (padding of the list) is found where ``ids`` hold padding: every value read for it is the
    padding's (0, False), and every caller reads values.
    """
    sorted_ids, order = torch.sort(ids, dim=1, stable=True)  # a repeated id: its first row is found
    pos = torch.searchsorted(sorted_ids, items.contiguous()).clamp_(max=ids.shape[1] - 1)
    return sorted_ids.gather(1, pos) == items, pos, order


def read_found(values: Tensor, found: Tensor, pos: Tensor, order: Tensor) -> Tensor:
    """The ``values`` [B, T] (finite) attached to the ids that :func:`lookup` found; 0 where it found none."""
    read = values.gather(1, order).gather(1, pos)
    return read & found if read.dtype == torch.bool else read * found


def list_reader(items: Tensor, ids: Tensor, repeats: bool = False) -> Callable[..., Tensor]:
    """A read of values [B, T] attached to the row-wise ``ids`` [B, T] at the listed ``items`` [B, K]: the value of
    the id equal to each item, 0 (False) where none is (an item -1 reads the ids' padding, whose values are 0);
    ``read(flags, dtype)`` reads bool flags as ``dtype``, 1 where True (the ids are distinct: checked with
    ``validate_args``).

    Rows of at most ``_COMPARED`` (item, id) pairs compare every pair over [B, K, T] flags (a flag read: the
    ids it holds True for, compared with the items): fewer ops than a sort and a search; compiled, rows of at
    most ``_UNROLLED`` ids compare one id column at a time, one fused loop over [B, K]. Longer rows, and ids that
    may repeat (``repeats``: the first row of an id is read), take :func:`lookup`.
    """
    if repeats or items.shape[1] * ids.shape[1] > _COMPARED:
        found, pos, order = lookup(items, ids)

        def looked_up(values: Tensor, dtype: torch.dtype | None = None) -> Tensor:
            read = read_found(values, found, pos, order)
            return read if dtype is None else read.to(dtype)

        return looked_up
    listed = items.unsqueeze(2)  # [B, K, 1]
    # compiled, a few targets are compared one column at a time: one fused loop over [B, K] (inductor's CPU loop
    # reducing a dimension of a few elements costs 3.5x as much: 0.43 against 0.12 ms on 1024 x 20 x 10,
    # benchmarks/bench_compile.py table 1c)
    columns = range(ids.shape[1]) if torch.compiler.is_compiling() and ids.shape[1] <= _UNROLLED else None

    def compared(values: Tensor, dtype: torch.dtype | None = None) -> Tensor:
        if values.dtype == torch.bool:  # -2 matches no item, not even the list's padding -1
            found = torch.where(values, ids, _no_id(ids.device))
            if columns is not None:
                flags = functools.reduce(torch.logical_or, [items == found[:, t : t + 1] for t in columns])
                return flags if dtype is None else flags.to(dtype)
            matches = listed == found.unsqueeze(1)
            return matches.any(2) if dtype is None else matches.sum(2, dtype=dtype)  # one match at most: 1 or 0
        if columns is not None:  # one id per item, or 0
            return functools.reduce(torch.add, [torch.where(items == ids[:, t : t + 1], values[:, t : t + 1], 0.0)
                                                for t in columns])
        return torch.where(listed == ids.unsqueeze(1), values.unsqueeze(1), 0.0).sum(2)

    return compared


def _no_id(device: torch.device) -> Tensor:
    """-2 as a 0-d id tensor (built once: a Python number would be made into a tensor at every read)."""
    return constant(("no_id", device), lambda: torch.tensor(-2, device=device))


# Rows of at most this many (listed item, target id) pairs find the list's targets by comparing every pair, one
# target column at a time when compiled and the rows hold at most _UNROLLED targets
_COMPARED, _UNROLLED = 1024, 16


@dataclass(frozen=True)
class TargetTable:
    """The targets of a batch as ids: ``ids`` [B, T] (-1 = padding), their float64 ``gains`` [B, T] (0 for
    padding and for items that are not candidates), ``relevant`` [B, T] bool, and the targets' own
    ``scores`` [B, T] where they were read (padding reads item 0's). ``judged`` [B, T] bool: the targets that
    are judgments (not padding, candidates), relevant or not; ``judged_ids``: the ids they are found by where
    ``ids`` hides some rows (ranx's counting lists the relevant rows only), else None (``ids``). ``pooled`` [B, T]
    bool: the targets that are pooled, judged or not (a gain of -1: pooled, not judged), where the table was
    read with ``unjudged`` (else the judged ones)."""

    ids: Tensor
    graded_gains: Tensor | None  # None: a binary table, whose gains are its relevance (:attr:`gains`)
    relevant: Tensor
    scores: Tensor | None = None
    relevance_threshold: float | None = None
    judged: Tensor | None = None
    judged_ids: Tensor | None = None
    pooled: Tensor | None = None
    repeats: bool = False  # ids may repeat: a listed item reads its id's first row (ranx's counting)

    @property
    def binary(self) -> bool:
        """Gains 1.0 exactly for the relevant targets, 0.0 for the others (RankedTargets.binary)."""
        return self.graded_gains is None

    @property
    def gains(self) -> Tensor:
        """[B, T] float64 gains: a binary table's relevance as 1.0 or 0.0, cast where a read needs it (the reads of
        a binary table take the relevance itself)."""
        return self.relevant.to(torch.float64) if self.graded_gains is None else self.graded_gains


def target_table(
    target_ids: Tensor,
    target_gains: Tensor | None,
    valid_target: Tensor | None,
    relevance_threshold: float | None,
    scores: Tensor | None = None,
    unjudged: bool = False,
) -> TargetTable:
    """The table of target ids: their gains (0 for padding and for items that are not candidates) and relevance.

    With ``unjudged`` (a metric reads the judgments), a gain of -1 is a pooled item that is not judged: gain 0,
    not relevant, not judged, but pooled (infAP)."""
    present = target_ids >= 0
    if valid_target is not None:
        present = present & valid_target
    if target_gains is None:  # every present target has gain 1
        if relevance_threshold is None or 0 < relevance_threshold <= 1:  # binary: relevant where present
            return TargetTable(target_ids, None, present, scores, relevance_threshold, judged=present)
        gains = present.to(torch.float64)
        relevant = is_relevant(gains, relevance_threshold) & present
    elif unjudged:
        judged = present & (target_gains != UNJUDGED_GAIN)
        gains = torch.where(judged, target_gains.to(torch.float64), 0.0)
        relevant = is_relevant(gains, relevance_threshold) & judged
        return TargetTable(target_ids, gains, relevant, scores, relevance_threshold, judged=judged, pooled=present)
    else:
        gains = torch.where(present, target_gains.to(torch.float64), 0.0)
        relevant = is_relevant(gains, relevance_threshold) & present
    return TargetTable(target_ids, gains, relevant, scores, relevance_threshold, judged=present)


def candidate_targets(target_ids: Tensor, items: CandidateItems, target_scores: Tensor | None = None) -> Tensor | None:
    """[B, T] whether each target is a candidate (None: all are): inside the mask, not excluded, and not
    scored -inf in ``target_scores`` [B, T] (if given)."""
    valid_target = None
    if items.valid is not None:
        valid_target = items.valid.gather(1, target_ids.clamp(min=0))
    elif items.exclusions is not None:
        valid_target = ~items.exclusions.contains(target_ids)
    if target_scores is not None:
        finite = target_scores > float("-inf")
        valid_target = finite if valid_target is None else valid_target & finite
    return valid_target


def table_ranked(item_ids: Tensor, table: TargetTable, num_candidates: Tensor, needs: Needs) -> RankedTargets:
    """The top-k view of ranked ``item_ids`` [B, K] (-1 = none) read through the target table: each
    item's gain and relevance, R, and the best min(k, T) target gains as the ideal list."""
    num_relevant = table.relevant.sum(1, dtype=torch.float64)
    read = list_reader(item_ids, table.ids, table.repeats)
    relevant: Tensor | None = None
    if table.binary:  # gains 1.0 where relevant, read as such: the view reads its relevance off them if asked
        gains = read(table.relevant, hit_dtype())
    else:
        gains, relevant = read(table.gains), read(table.relevant)
    judged = num_judged = pooled = None
    if needs.judged:  # a listed item is judged where it is found among the target ids, whatever its gain
        flags = _judged_flags(table)
        if table.judged_ids is not None:
            read = list_reader(item_ids, table.judged_ids, repeats=True)
        judged, num_judged = read(flags), flags.sum(1, dtype=torch.float64)
        if needs.pooled:  # (and pooled where found at all: a gain of -1 is pooled, not judged)
            pooled = read(_pooled_flags(table))
    return RankedTargets(gains, relevant, num_relevant, num_candidates, _ideal_gains(table, needs), item_ids,
                         table.ids.shape[1], binary=table.binary, judged=judged, num_judged=num_judged,
                         relevant_items=_relevant_items(table, needs), pooled=pooled,
                         relevant_gains=table.gains if needs.relevant_items else None)


def _relevant_items(table: TargetTable, needs: Needs) -> tuple[Tensor, Tensor] | None:
    """The targets as every relevant candidate of each query, where a family asks (``needs.relevant_items``)."""
    return (table.ids, table.relevant) if needs.relevant_items else None


def _judged_flags(table: TargetTable) -> Tensor:
    """[B, T] the table's judged targets (a table built by hand may leave them out: then the present ids)."""
    return table.judged if table.judged is not None else table.ids >= 0


def _pooled_flags(table: TargetTable) -> Tensor:
    """[B, T] the table's pooled targets: judged or not (without a gain of -1: the judged ones)."""
    return table.pooled if table.pooled is not None else _judged_flags(table)


def _ideal_gains(table: TargetTable, needs: Needs) -> Tensor | None:
    """[B, min(k, T)] the best target gains, descending, where NDCG's graded ideal list is needed: it does not
    depend on the ranked list's width. Binary gains need none: their ideal DCG is tabulated by R in the
    ranking kernels, as the dense form's binary target's."""
    if not needs.ideal or table.binary:
        return None
    take = min(needs.depth, table.gains.shape[1])
    return torch.topk(table.gains, take, dim=1).values if take else table.gains.new_zeros(table.gains.shape[0], 1)


def ids_ranked(preds: Tensor, items: CandidateItems, table: TargetTable, needs: Needs, rules: Rules) -> RankedTargets | None:
    """Top-k of the ids form, read from the targets' side where that is cheap (:func:`_target_ranks`), else by
    looking the ranked items up in the target ids (no dense target either way).

    With ``items.neg_inf`` (scores may hold ``-inf`` and no mask says where), the candidates are counted
    within the ranked list only: -inf and excluded entries sort last, so the list's candidates number
    min(K, candidates), all that a top-k value reads (min(k, candidates) for k <= K). FallOut
    (``needs.non_relevant``) reads every candidate of the row: they are then counted over it.
    """
    if needs.depth == 0:
        return None
    valid, exclusions = items.valid, items.exclusions
    if valid is not None:
        preds = preds.masked_fill(~valid, float("-inf"))
    depth = ranking_depth(needs.depth, preds.shape[1], table.relevant.sum(1) if needs.to_num_relevant else None)
    if _counted(preds, table, needs, rules, exclusions is None):
        return _counted_placed(preds, items, table, needs, rules, depth)
    top = ranked_top(preds, depth, rules.ties, None, exclusions)
    idx = top.indices
    values = top.values if top.values is not None else preds.gather(1, idx)  # the list's scores, read once
    if exclusions is None:  # the list reads its targets, or each target's rank places it
        listed = None if top.distinct else values > float("-inf")  # distinct: no -inf in the list
        if needs.non_relevant:
            num_candidates = count_candidates(preds, valid, exclusions)
        elif listed is None:
            num_candidates = filled((idx.shape[0],), float(depth), preds.device)
        else:
            num_candidates = listed.sum(1, dtype=torch.float64)
        item_ids = idx if listed is None else idx.masked_fill(~listed, -1)
        ranks = _target_ranks(preds, top, values, table)
        if ranks is None:
            return table_ranked(item_ids, table, num_candidates, needs)
        return _placed(ranks, item_ids, depth, table, needs, num_candidates)
    if items.neg_inf:
        listed = values > float("-inf")
        listed &= ~exclusions.contains(idx)
        return table_ranked(idx.masked_fill(~listed, -1), table, count_true(listed, torch.float64), needs)
    num_candidates = count_candidates(preds, valid, exclusions)
    idx = idx.masked_fill(positions(depth, idx.device) >= num_candidates.unsqueeze(1), -1)
    return table_ranked(idx, table, num_candidates, needs)


def _target_ranks(preds: Tensor, top: TopK, values: Tensor, table: TargetTable) -> Tensor | None:
    """[B, T] each target's rank in the list ``top`` of scores ``values`` (K: not listed), where a read from the
    targets' side is the cheapest, else None: the list then reads its targets (:func:`table_ranked`), by
    comparing every pair where a row holds few (:func:`list_reader`), else by a lookup in the sorted targets.

    A target's rank is the number of listed items that precede it, so its gain then lands at its rank with
    one scatter. Short rows read a map of list positions over the row's items; rows of many pairs whose list's
    scores strictly decrease (``TopK.distinct``, known on the CPU) a binary search of each target's score.
    """
    idx, depth = top.indices, top.indices.shape[1]
    pairs, num_items = table.ids.shape[1] * depth, preds.shape[1]
    if num_items <= _MAPPED * pairs:
        return _mapped_ranks(idx, table.ids, num_items)
    if pairs <= _COMPARED or not top.distinct:
        return None
    scores = table.scores if table.scores is not None else preds.gather(1, table.ids.clamp(min=0))
    return depth - torch.searchsorted(values.flip(1), scores.to(values.dtype), right=True)


# Rows of at most _MAPPED x T x K items find their targets' list positions through a map of positions over all
# the row's items ([B, N] bytes: a fast write, where N is small; on the CPU several times cheaper than comparing
# every pair, whose [B, K, T] flags cost a dispatch of broadcast work each)
_MAPPED = 4


def _mapped_ranks(idx: Tensor, target_ids: Tensor, num_items: int) -> Tensor:
    """[B, T] each target's position in the list ``idx`` [B, K] (K: not listed): the positions scattered over
    a [B, N] map of the row's items (one byte each for lists up to 255), read at the targets (padding -1 reads
    item 0's: its gain, relevance and judgment are 0, so whatever rank it gets adds nothing)."""
    rows, depth = idx.shape
    dtype = torch.uint8 if depth < 255 else torch.int32
    positions = constant(("positions", depth, dtype, idx.device),
                         lambda: torch.arange(depth, dtype=dtype, device=idx.device))
    spread = torch.full((rows, num_items), depth, dtype=dtype, device=idx.device)
    spread.scatter_(1, idx, positions.expand(rows, depth))
    return spread.gather(1, target_ids.clamp(min=0)).long()


def _counted(preds: Tensor, table: TargetTable, needs: Needs, rules: Rules, no_exclusions: bool) -> bool:
    """Whether the targets' ranks are counted over their rows (:mod:`counted_ranks`) instead of read from a
    top-k list: where no family reads the list's ids, the tie order is one a count tells, and it is cheaper."""
    return (no_exclusions and not needs.listed_ids and rules.ties in TIE_ORDERS
            and counting_is_cheaper(table.ids.shape[1], preds.shape[1], needs.depth + 1, preds.dtype))


def _counted_placed(preds: Tensor, items: CandidateItems, table: TargetTable, needs: Needs, rules: Rules,
                    depth: int) -> RankedTargets:
    """The top-k view from the targets' ranks counted over their rows; the list's candidates number
    min(depth, candidates) (``-inf`` scores and masked items, already -inf in ``preds``, rank last)."""
    scores = table.scores if table.scores is not None else preds.gather(1, table.ids.clamp(min=0))
    ranks = counted_ranks(preds, table.ids, scores, rules.ties).clamp_(max=depth)
    if needs.non_relevant:
        num_candidates = count_candidates(preds, items.valid, None)
    elif items.neg_inf or items.valid is not None:
        num_candidates = count_true(preds > float("-inf"), torch.float64).clamp_(max=depth)
    else:
        num_candidates = filled((preds.shape[0],), float(depth), preds.device)
    return _placed(ranks, None, depth, table, needs, num_candidates)


def _placed_relevance(gains: Tensor, ranks: Tensor, table: TargetTable, depth: int) -> Tensor:
    """[B, depth] whether the target placed at each rank is relevant, for graded gains (a binary view reads its
    relevance off its gains, 1.0 or 0.0, where a family asks)."""
    threshold = table.relevance_threshold
    if threshold is None or threshold > 0:  # an empty rank (gain 0) is not relevant: read relevance off the gains
        return is_relevant(gains, threshold)
    spread = ranks.new_zeros(ranks.shape[0], depth + 1).scatter_add_(1, ranks, table.relevant.long())
    return spread[:, :depth] > 0


def _placed(ranks: Tensor, item_ids: Tensor | None, depth: int, table: TargetTable, needs: Needs,
            num_candidates: Tensor) -> RankedTargets:
    """The top-k view of the list ``item_ids`` [B, depth] (-1: not a candidate; None: not kept) from the rank
    [B, T] of each target (depth: not listed): each target's gain and relevance land at its rank (padding and
    targets below the list share ranks, so they are added, never written over; their gains are 0)."""
    rows = ranks.shape[0]
    placed = table.relevant.to(hit_dtype()) if table.graded_gains is None else table.graded_gains
    gains = placed.new_zeros(rows, depth + 1).scatter_add_(1, ranks, placed)[:, :depth]
    relevant = None if table.binary else _placed_relevance(gains, ranks, table, depth)
    num_relevant = table.relevant.sum(1, dtype=torch.float64)
    judged = num_judged = pooled = None
    if needs.judged:  # the judged targets land at their ranks as the gains do (padding adds nothing)
        flags = _judged_flags(table)
        spread = ranks.new_zeros(rows, depth + 1).scatter_add_(1, ranks, flags.long())
        judged, num_judged = spread[:, :depth] > 0, flags.sum(1, dtype=torch.float64)
        if needs.pooled:
            spread = ranks.new_zeros(rows, depth + 1).scatter_add_(1, ranks, _pooled_flags(table).long())
            pooled = spread[:, :depth] > 0
    return RankedTargets(gains, relevant, num_relevant, num_candidates, _ideal_gains(table, needs), item_ids,
                         table.ids.shape[1], binary=table.binary, judged=judged, num_judged=num_judged,
                         relevant_items=_relevant_items(table, needs), pooled=pooled,
                         relevant_gains=table.gains if needs.relevant_items else None)
