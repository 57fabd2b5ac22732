"""Per query: R and, for each cut-off k, the sum over its relevant items of their partial-AUC credit
(:func:`~torchrec_eval.pairwise.pauc.expected_credit`), from the non-relevant candidates ranked above
each relevant item and those tied with it.

No [N, N] pair is formed. Two paths, the same values, as in :mod:`~torchrec_eval.pairwise.ranks`: the
relevant items are looked up in the sorted row with ``torch.searchsorted`` (all candidates above and
tied) and in the sorted relevant scores (the relevant ones among them): in the ids form the target ids as
given, in the dense form on the CPU after gathering them (a host sync). For the dense form on other
devices and under ``torch.compile`` (no host sync) the counts come from int32 cumulative counts read at
each tie group's start and end along the sorted row, and the credits from exact integer sums: at most
one tie group per query holds the k-th non-relevant candidate, the only one whose credit is not a half
integer (O(N) per cut-off, no float64 [B, N] tensor).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pairwise.compaction import compact
from torchrec_eval.pairwise.pauc import expected_credit
from torchrec_eval.pairwise.tie_groups import SortedCandidates
from torchrec_eval.pipeline import count_true
from torchrec_eval.pipeline.syncs import host_reads_free


def partial_credits(rows: SortedCandidates, relevant: Tensor, ks: Sequence[int],
                    sparse: bool | None = None) -> tuple[Tensor, Tensor]:
    """R (float64 [B]) and, per cut-off, the sum of the relevant items' expected credit (float64 [B, len(ks)]).

    ``relevant`` is [B, N], or [B, T] in the ids form, whose target items are looked up in the sorted rows
    (no host sync). In the dense form ``sparse`` (default: on the CPU) gathers the relevant items first (a
    host sync); otherwise cumulative counts along the sorted rows are used. Call it before
    :func:`~torchrec_eval.pairwise.ranks.rank_sums`, which frees the sort permutation the cumulative path reads.
    """
    candidates = rows.candidates
    if candidates.target_ids is not None:
        above, tied = _looked_up(rows, candidates.target_scores, relevant)
        return relevant.sum(1).to(torch.float64), _summed(above, tied, relevant, ks)
    if sparse is None:
        sparse = host_reads_free(rows.values)
    num_relevant = count_true(relevant) if relevant.is_contiguous() else relevant.sum(1)
    if sparse:
        width, (queries,), keep = compact(relevant, num_relevant, (candidates.scores, 0.0))
        if width == 0:
            nothing = torch.zeros(relevant.shape[0], len(ks), dtype=torch.float64, device=relevant.device)
            return num_relevant.to(torch.float64), nothing
        above, tied = _looked_up(rows, queries, keep)
        return num_relevant.to(torch.float64), _summed(above, tied, keep, ks)
    return num_relevant.to(torch.float64), _cumulative(rows, relevant, num_relevant, ks)


def _looked_up(rows: SortedCandidates, queries: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
    """Float64 [B, W]: the non-relevant candidates above and tied with each kept score of ``queries`` (the
    relevant ones, ``keep``), from the sorted row and the sorted kept scores."""
    num_items = rows.values.shape[1]
    below = torch.searchsorted(rows.values, queries, side="left")
    through = torch.searchsorted(rows.values, queries, side="right")
    kept = torch.sort(queries.masked_fill(~keep, float("inf")), dim=1).values
    relevant_below = torch.searchsorted(kept, queries, side="left")
    relevant_through = torch.searchsorted(kept, queries, side="right")
    num_relevant = keep.sum(1, keepdim=True)
    above = (num_items - through) - (num_relevant - relevant_through)  # non-candidates (-inf) are never above
    tied = (through - below) - (relevant_through - relevant_below)
    return above.to(torch.float64), tied.to(torch.float64)


def _summed(above: Tensor, tied: Tensor, keep: Tensor, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)]: the expected credits of the kept items, summed per row, for each cut-off."""
    columns = [torch.where(keep, expected_credit(above, tied, k), 0.0).sum(1) for k in ks]
    return torch.stack(columns, dim=1)


def _cumulative(rows: SortedCandidates, relevant: Tensor, num_relevant: Tensor, ks: Sequence[int]) -> Tensor:
    """The credits of the dense form without a host read: int32 counts along the sorted rows."""
    hits = relevant.gather(1, rows.order)  # bool, in ascending score order (non-candidates first)
    num_items = hits.shape[1]
    negatives = (num_items - num_relevant).to(torch.int32).unsqueeze(1)  # non-relevant positions, skipped too
    positions = torch.arange(num_items, dtype=torch.int32, device=hits.device)
    through = hits.cumsum(1, dtype=torch.int32)  # relevant items at or below each position
    flags = hits.view(torch.uint8)
    # non-relevant strictly below a position: p - (relevant below it); read at its group's start
    below = rows.at_group_start(positions - through + flags, overwrite=True)
    # non-relevant strictly above a position: negatives - (non-relevant at or below it); at its group's end
    above = rows.at_group_end(negatives - (positions + 1 - through), overwrite=True)
    tied = negatives - above - below  # the non-relevant candidates of a relevant item's own group
    del through, below
    columns = []
    for k in ks:
        m = (k - above).clamp_(min=0)
        whole = hits & (m > tied)  # credit m - n/2: twice it is an integer
        twice = torch.where(whole, 2 * m - tied, 0).sum(1, dtype=torch.int64)
        crossing = hits & (m > 0) & ~whole  # the one tie group holding the k-th non-relevant candidate
        count = crossing.sum(1).to(torch.float64)
        m_cross = torch.where(crossing, m, 0).amax(1).to(torch.float64)
        tied_cross = torch.where(crossing, tied, 0).amax(1).to(torch.float64)
        columns.append(twice.to(torch.float64) / 2 + count * m_cross * (m_cross + 1) / (2 * (tied_cross + 1)))
    return torch.stack(columns, dim=1)
