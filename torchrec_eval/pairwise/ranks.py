r"""Per query: the number R of relevant items and the sum A of their ascending mid-ranks (AUC, GAUC, MPR), and
the (relevant, non-relevant) pairs ordered strictly right (AUC's tie credit other than 1/2).

The mid-rank of an item is its 1-based rank among the valid candidates by ascending score, the mean
rank of its tie group when scores are tied. AUC, GAUC and MPR are closed forms of R and A
(Mann-Whitney: :math:`U = A - R (R + 1) / 2`), so no [N, N] pair is ever formed.

Two paths, same sums (exactly): the relevant items are looked up in the sorted row with
``torch.searchsorted`` (items below and items below or equal), O(R log N) per query on top of the
sort: in the ids form the target ids as given (no [B, N] target is ever built), in the dense form on
the CPU after gathering them (a host sync). For the dense form on other devices and under
``torch.compile`` (no host sync) the sums come from int32 cumulative counts and running maxima along
the sorted row (O(N), no float64 [B, N] tensor).
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pairwise.compaction import compact
from torchrec_eval.pairwise.tie_groups import SortedCandidates
from torchrec_eval.pipeline import count_true
from torchrec_eval.pipeline.syncs import host_reads_free


def rank_sums(rows: SortedCandidates, relevant: Tensor, sparse: bool | None = None) -> tuple[Tensor, Tensor]:
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
        width, (queries,), keep = compact(relevant, num_relevant, (candidates.scores, 0.0))
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


def _mid_rank_sums(rows: SortedCandidates, queries: Tensor, keep: Tensor) -> Tensor:
    """Float64 [B] sums of the mid-ranks among the valid candidates of the scores ``queries`` [B, W]
    where ``keep``: items below + (items tied, itself included, + 1) / 2, exact integers halved."""
    below = torch.searchsorted(rows.values, queries, side="left")
    through = torch.searchsorted(rows.values, queries, side="right")
    # 2 x the 1-based mid-rank among all N positions: below + through + 1
    twice = torch.where(keep, below + through + 1, 0).sum(1)
    return twice.to(torch.float64) / 2 - keep.sum(1).to(torch.float64) * rows.skipped.to(torch.float64)


def strict_wins(rows: SortedCandidates, relevant: Tensor, sparse: bool | None = None) -> Tensor:
    """Per query (float64 [B]): the (relevant, non-relevant) candidate pairs whose relevant item scores strictly
    higher, the Mann-Whitney U without its tied pairs (cornac's AUC counts a tied pair 0).

    Each relevant item counts the candidates strictly below it, less the relevant ones: the ids form and the
    dense form on the CPU look them up in the sorted row and in the sorted relevant scores; elsewhere
    (no host sync) the counts at each tie group's start along the sorted row. Call it before
    :func:`rank_sums`, which frees the sort permutation the cumulative path reads.
    """
    candidates = rows.candidates
    skipped = rows.skipped.to(torch.float64)
    if candidates.target_ids is not None:
        return _strictly_below(rows, candidates.target_scores, relevant, skipped)
    if sparse is None:
        sparse = host_reads_free(rows.values)
    if sparse:
        width, (queries,), keep = compact(relevant, None, (candidates.scores, 0.0))
        return _strictly_below(rows, queries, keep, skipped) if width else torch.zeros_like(skipped)
    hits = relevant.gather(1, rows.order)  # bool, in sorted order
    num_relevant = hits.sum(1).to(torch.float64)
    positions = torch.arange(hits.shape[1], dtype=torch.int32, device=hits.device)
    below = rows.at_group_start(positions.expand_as(hits))  # every candidate strictly below (skipped included)
    relevant_below = hits.cumsum(1, dtype=torch.int32)
    relevant_below -= hits.view(torch.uint8)
    relevant_below = rows.at_group_start(relevant_below, overwrite=True)  # relevant ones strictly below
    return _masked_sum(below.sub_(relevant_below), hits) - num_relevant * skipped


def _strictly_below(rows: SortedCandidates, queries: Tensor, keep: Tensor, skipped: Tensor) -> Tensor:
    """Σ over the kept scores ``queries`` [B, W] of the candidates strictly below each, less the kept ones."""
    below = torch.searchsorted(rows.values, queries, side="left").to(torch.float64) - skipped.unsqueeze(1)
    kept = torch.sort(queries.masked_fill(~keep, float("inf")), dim=1).values
    kept_below = torch.searchsorted(kept, queries, side="left").to(torch.float64)
    return torch.where(keep, below - kept_below, 0.0).sum(1)
