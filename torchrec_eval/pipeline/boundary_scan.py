"""Ties at the cut-off, found by scanning: the first items scored exactly at the k-th score, in tie order.

A row whose k-th score ``v`` ties past the cut holds ``g < k`` items scored above ``v`` and must take the
first ``k - g`` items scored ``v``. :func:`resolve_boundary` finds them by scanning column blocks from
the row's start (or end) and stops as soon as every tied row has enough: O(B·k) extra work for constant
scores, at most one compare pass for scattered ties, never a sort over all N. The gain-aware orders scan
the same way one gain level at a time when the gains are a few small integers (:func:`gain_levels`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.tie_order import TieRule, gains_of, order_ties

# The first column block scanned for boundary ties, and the largest: a constant row finishes in the
# first block; scattered ties are scanned in blocks of at most this many columns (bounded memory).
_FIRST_BLOCK, _MAX_BLOCK = 1 << 10, 1 << 14
_MAX_LEVELS = 16  # gain levels scanned one at a time; more distinct gains take the sort


def gain_levels(tie_gains: Tensor, rows: Tensor, ties: str) -> list[int] | None:
    """The gain levels 0, 1, ..., max of the tied rows in tie order, if the gains are small integers."""
    if tie_gains.dtype == torch.bool:
        high = 1
    elif tie_gains.is_floating_point():
        return None  # float gains: any value may occur
    else:
        high = int(tie_gains.amax(dim=1)[rows].max())
    if high > _MAX_LEVELS:
        return None
    levels = list(range(high + 1))
    return levels if ties == "pessimistic" else levels[::-1]


def resolve_boundary(
    scores: Tensor, rows: Tensor, top: tuple[Tensor, Tensor], k: int, rule: TieRule, levels: list[int] | None = None
) -> Tensor:
    """The exact top k [b, k] of ``rows`` (tied at the cut-off), ties ordered by ``rule`` (its exclusions unused).

    ``top`` = (values, idx) [b, k + 1] are the rows' ``torch.topk`` result: it holds every item scored above
    the boundary value. The rest of the list is the first ``k - g`` items scored exactly at it, in tie
    order: by index, or level by level of the gains (``levels``, in tie order) and by index within one.
    """
    (values, idx), ties, tie_gains = top, rule.ties, rule.gains
    boundary = values[:, k - 1]
    above = values > boundary.unsqueeze(1)
    need = k - above.sum(1)
    if levels is None or tie_gains is None:
        equal = _first_equal(scores, rows, boundary, need, reverse=ties == "reverse_index")
    else:
        parts = []
        for level in levels:  # each level takes what the levels before it left
            part = _first_equal(scores, rows, boundary, need, reverse=False, gain_level=(tie_gains, level))
            parts.append(part)
            need = need - (part >= 0).sum(1)
            if not bool((need > 0).any()):
                break
        equal = torch.cat(parts, dim=1)
    minus_inf = torch.tensor(float("-inf"), dtype=values.dtype, device=values.device)
    candidates = torch.cat([idx, equal], dim=1)
    candidate_values = torch.cat(
        [torch.where(above, values, minus_inf), torch.where(equal >= 0, boundary.unsqueeze(1), minus_inf)], dim=1
    )
    return order_ties(candidate_values, candidates, ties, gains_of(tie_gains, rows, candidates))[:, :k]


def _first_equal(
    scores: Tensor,
    rows: Tensor,
    value: Tensor,
    need: Tensor,
    reverse: bool,
    gain_level: tuple[Tensor, float] | None = None,
) -> Tensor:
    """[b, max(need)] column indices: per row of ``rows``, the first ``need`` columns (the last with
    ``reverse``) whose score equals ``value`` (and, with ``gain_level`` = (gains, level), whose gain equals
    ``level``), in that order; -1 past ``need``.

    Column blocks are scanned from the start (or end), growing from ``_FIRST_BLOCK`` to ``_MAX_BLOCK``
    columns, until every row has found enough; each block is compared in place (a view of all rows,
    NaN wanted where a row is not searched), so the memory is one bool block.
    """
    num_items = scores.shape[1]
    width = max(int(need.max()), 1)
    nan = torch.tensor(float("nan"), dtype=scores.dtype, device=scores.device)
    wanted = torch.full((scores.shape[0],), float("nan"), dtype=scores.dtype, device=scores.device)
    wanted_need = torch.zeros(scores.shape[0], dtype=torch.long, device=scores.device)
    wanted_need[rows] = need
    wanted[rows] = torch.where(need > 0, value.to(scores.dtype), nan)  # a row that needs nothing: NaN
    out = torch.full((scores.shape[0], width), -1, dtype=torch.long, device=scores.device)
    found = torch.zeros_like(wanted_need)
    done, block = 0, _FIRST_BLOCK
    if not bool((need > 0).any()):
        done = num_items  # nothing to find
    while done < num_items:
        size = min(block, num_items - done)
        start = num_items - done - size if reverse else done
        equal = scores[:, start : start + size] == wanted.unsqueeze(1)
        if gain_level is not None:
            gains, level = gain_level
            equal &= gains[:, start : start + size] == level
        if reverse:
            equal = equal.flip(1)
        row, column = equal.nonzero(as_tuple=True)
        if row.numel():
            counts = torch.bincount(row, minlength=scores.shape[0])
            first = counts.cumsum(0) - counts  # where each row's hits start in `row`
            rank = found[row] + torch.arange(row.numel(), device=row.device) - first[row]
            keep = rank < wanted_need[row]
            position = start + size - 1 - column if reverse else start + column
            out[row[keep], rank[keep]] = position[keep]
            found += counts
            complete = found >= wanted_need
            wanted = torch.where(complete, nan, wanted)
            if bool(complete.all()):
                break
        done += size
        block = min(block * 4, _MAX_BLOCK)
    return out[rows]
