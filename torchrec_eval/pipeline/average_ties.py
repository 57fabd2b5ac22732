"""``ties="average"``: the statistics of each tie group that the expected value of every metric needs.

Over all orderings of tied items, the expected value of a metric at a rank depends on the tie group
holding that rank: its size n, its relevant items m, their gain sum, and the rank's offset in the
group (McSherry & Najork, ECIR 2008). :func:`tie_statistics` reads them off the top-k list, and
counts over the whole row only the last group of the rows where it goes on past the cut.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.tensor_cache import count_true, positions
from torchrec_eval.pipeline.topk import TopK


def tie_statistics(
    scores: Tensor, top: TopK, target: Tensor, relevant_all: Tensor, ranked: tuple[Tensor, Tensor]
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """For each ranked position: (tie group size n, relevant items in it m, their gain sum, offset o), from
    the ranked list ``top`` and the (gains, relevant) [B, k] of its items.

    A tie group is the set of candidates sharing a score. Groups inside the list are read off the list.
    The last one goes on past the cut only in rows whose best score left out (``following``) equals
    it: only those rows are counted over the whole row, a few at a time (bounded memory).
    Positions past the candidates get n = 1, m = 0 (they hold nothing).
    """
    idx, following, (gains, relevant) = top.indices, top.following, ranked
    values = scores.gather(1, idx)
    depth = values.shape[1]
    places = positions(depth, idx.device).expand_as(idx)
    starts = torch.ones_like(idx, dtype=torch.bool)
    starts[:, 1:] = values[:, 1:] != values[:, :-1]
    group = starts.long().cumsum(1) - 1
    offset = places - torch.where(starts, places, 0).cummax(1).values
    in_list = values > float("-inf")
    ones = in_list.to(torch.float64)
    size = torch.zeros_like(ones).scatter_add_(1, group, ones).gather(1, group)
    hits = torch.zeros_like(ones).scatter_add_(1, group, relevant.to(torch.float64)).gather(1, group)
    gain_sum = torch.zeros_like(ones).scatter_add_(1, group, gains.to(torch.float64)).gather(1, group)
    last = values[:, -1]
    continues = (following == last) & (last > float("-inf"))
    if host_reads_free(scores):  # a host check is free here: count only the rows that need it
        rows = continues.nonzero().squeeze(1)
    else:  # no host sync on an accelerator: every row, the others masked out below
        rows = torch.arange(scores.shape[0], device=scores.device)
    if rows.numel():
        in_last = ((values == last.unsqueeze(1)) & in_list & continues.unsqueeze(1))[rows]
        totals = _row_group_totals(scores, rows, last[rows], target, relevant_all)
        for stat, total in zip((size, hits, gain_sum), totals, strict=True):
            stat[rows] = torch.where(in_last, total.unsqueeze(1), stat[rows])
    return size.clamp(min=1), hits, gain_sum, offset.to(torch.float64)


def _row_group_totals(
    scores: Tensor, rows: Tensor, value: Tensor, target: Tensor, relevant_all: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Over the whole of each row in ``rows``: items scored ``value``, the relevant ones, their gain sum.

    Rows are taken a few at a time, so that the temporaries stay near 1/8 of the scores' memory.
    """
    chunk = max(1, scores.shape[0] // 8)
    totals: list[list[Tensor]] = [[], [], []]
    for part, part_value in zip(torch.split(rows, chunk), torch.split(value, chunk), strict=True):
        tied = scores[part] == part_value.unsqueeze(1)
        tied_relevant = tied & relevant_all[part]
        totals[0].append(count_true(tied, torch.float64))
        totals[1].append(count_true(tied_relevant, torch.float64))
        if target.dtype == torch.bool:
            totals[2].append(totals[1][-1])
        else:
            totals[2].append(torch.where(tied, target[part], 0).sum(1, dtype=torch.float64))
    size, hits, gain_sum = (torch.cat(parts) for parts in totals)
    return size, hits, gain_sum
