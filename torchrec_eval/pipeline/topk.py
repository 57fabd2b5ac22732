"""Ranking: the top k of each row of scores, with the documented tie order, exactly, for any batch size.

``torch.topk`` returns the k best scores but no defined order among equal ones, and which of several
items tied at the k-th score it keeps is unspecified. Ties are common in training loops: an
untrained model's constant scores, bf16/fp16 logits under autocast. :func:`top_indices` keeps the
``torch.topk`` result and repairs only what ties leave open:

* **At the cut-off**, a row whose k-th score ``v`` equals its (k+1)-th holds ``g < k`` items scored
  above ``v`` (all inside the top-k result) and must take the first ``k - g`` items scored exactly
  ``v`` in tie order. Coarse scores (bf16/fp16 precision, as logits under autocast) put a few items
  on each value near the cut: long rows of them are read ``_TIE_MARGIN`` columns deeper, so that the
  tie group usually lies whole in the list and its tie order decides, at a few percent of a ``topk``.
  Otherwise, for ``ties="index"`` (lowest item index first) and ``"reverse_index"``,
  :func:`_first_equal` finds them by scanning column blocks from the row's start (or end) and
  stops as soon as every tied row has enough: O(B·k) extra work for constant scores, at most one
  compare pass for scattered ties, never a sort over all N. The gain-aware orders
  (``"pessimistic"``, ``"optimistic"``) scan the same way one gain level at a time (lowest or
  highest first) when the gains are a few small integers (binary or graded relevance); other gains
  re-rank the tied rows with a stable sort.
* **Inside the list**, equal scores are reordered by the tie keys with sorts over k columns.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.syncs import host_reads_free

# The first column block scanned for boundary ties, and the largest: a constant row finishes in the
# first block; scattered ties are scanned in blocks of at most this many columns (bounded memory).
_FIRST_BLOCK, _MAX_BLOCK = 1 << 10, 1 << 14


def tie_keys(ties: str) -> tuple[bool, bool | None]:
    """(index descending?, gain order among equal scores: None, True = descending, False = ascending)."""
    gain_order = {"pessimistic": False, "optimistic": True}.get(ties)
    return ties == "reverse_index", gain_order


class TopK(NamedTuple):
    """The ranked list and what lies just past it.

    Attributes:
        indices: [B, k] item indices in rank order.
        following: [B] the best score left out of the list (-inf if none); where it equals the list's
            last score, the last tie group goes on past the cut.
    """

    indices: Tensor
    following: Tensor


def top_indices(
    scores: Tensor,
    k: int,
    ties: str = "index",
    tie_gains: Tensor | None = None,
    check_boundary: bool = True,
    exclusions: Exclusions | None = None,
) -> TopK:
    """The k best items of each row, in rank order, ties broken as documented.

    ``scores`` may hold ``-inf`` for items that are not candidates; those rank last.

    Args:
        scores: [B, N] float scores.
        k: the depth, 1 <= k <= N.
        ties: ``"index"``, ``"reverse_index"``, ``"pessimistic"``, ``"optimistic"`` (``"average"``
            ranks as ``"index"``; its expectation is computed elsewhere).
        tie_gains: [B, N] gains, for the gain-aware tie orders.
        check_boundary: repair ties at the cut-off (a host sync; CUDA's ``topk`` already keeps the
            lowest indices among boundary ties, so ``"index"`` may skip it there).
        exclusions: items that are not candidates, by id: the top k of the rest is read from the top
            k + S of all (positions past a row's candidates then hold excluded items, at -inf).

    Returns:
        :class:`TopK`: ``indices`` [B, k] and ``following`` [B].

    Example:
        >>> import torch
        >>> from torchrec_eval.pipeline.topk import top_indices
        >>> top_indices(torch.tensor([[0.5, 0.9, 0.5, 0.5, 0.1]]), 3).indices
        tensor([[1, 0, 2]])
        >>> top_indices(torch.tensor([[0.5, 0.9, 0.5, 0.5, 0.1]]), 3, ties="reverse_index").indices
        tensor([[1, 3, 2]])
    """
    num_items = scores.shape[1]
    # one extra column tells whether the k-th score ties past the cut; coarse scores read a few more,
    # so that most tie groups at the cut lie whole inside the list
    take = min(k + 1 + _tie_margin(scores), num_items)
    if exclusions is None:
        values, idx = torch.topk(scores, take, dim=1)
    else:
        values, idx = _topk_excluding(scores, take, exclusions)
    following = values[:, k] if take > k else values.new_full((values.shape[0],), float("-inf"))
    if take <= k or not check_boundary:
        return _ordered(values[:, :k], idx[:, :k], ties, tie_gains, following)
    if torch.compiler.is_compiling():  # no host read: repair every row
        idx = _boundary_without_sync(scores, values, idx, k, ties, tie_gains, exclusions)
        return _ordered(_values_at(scores, idx, exclusions), idx, ties, tie_gains, following)
    repeats = values[:, 1 : k + 1] == values[:, :k]  # [B, k]: a score equal to the next one
    if host_reads_free(values) and not bool(repeats.any()):  # the common case on the CPU: no ties at all
        return TopK(idx[:, :k], following)
    boundary = values[:, k - 1]
    tied = repeats[:, k - 1] & (boundary > float("-inf"))
    if bool(tied.any()):
        rows = tied.nonzero().squeeze(1)
        exact = _tied_rows(scores, values[rows], idx[rows], rows, k, ties, tie_gains, exclusions)
        idx = idx[:, :k].index_copy(0, rows, exact)
        values = _values_at(scores, idx, exclusions)
    return _ordered(values[:, :k], idx[:, :k], ties, tie_gains, following)


# Rows at least this long with coarse scores (bf16/fp16 precision) read ``_TIE_MARGIN`` more columns:
# there a few items share each score near the cut, and reading them costs less than finding them by
# scanning the row. Shorter rows scan cheaply.
_DEEP_FROM, _TIE_MARGIN = 1 << 14, 32
_SAMPLE = 1 << 10  # scores of the first row looked at


def _tie_margin(scores: Tensor) -> int:
    """``_TIE_MARGIN`` for long rows of half-precision scores (or float scores that hold only such
    values: low mantissa bits all zero in a sample, as logits cast up from bf16/fp16), else 0."""
    if scores.shape[1] < _DEEP_FROM or scores.shape[0] == 0 or not host_reads_free(scores):
        return 0
    if scores.dtype in (torch.bfloat16, torch.float16):
        return _TIE_MARGIN
    if scores.dtype not in (torch.float32, torch.float64):
        return 0
    bits = (torch.int32, 13) if scores.dtype == torch.float32 else (torch.int64, 42)  # below fp16's mantissa
    sample = scores[0, :_SAMPLE].view(bits[0])
    return 0 if bool((sample & ((1 << bits[1]) - 1)).any()) else _TIE_MARGIN


def _values_at(scores: Tensor, idx: Tensor, exclusions: Exclusions | None) -> Tensor:
    values = scores.gather(1, idx)
    return values if exclusions is None else values.masked_fill(exclusions.contains(idx), float("-inf"))


def _tied_rows(
    scores: Tensor,
    values: Tensor,
    idx: Tensor,
    rows: Tensor,
    k: int,
    ties: str,
    tie_gains: Tensor | None,
    exclusions: Exclusions | None,
) -> Tensor:
    """The exact top k [b, k] of ``rows``, tied at the cut-off; ``values``/``idx`` [b, take] their top list.

    A row whose list ends below the boundary score holds its whole tie group: the tie order of the list
    decides. Other rows find the first tied items by scanning (or, for float gains, by a stable sort).
    """
    boundary = values[:, k - 1]
    whole = (values[:, -1] < boundary) | (values.shape[1] == scores.shape[1])
    exact = idx[:, :k].clone()
    if bool(whole.any()):
        inside = whole.nonzero().squeeze(1)
        gains = _gains_of(tie_gains, rows[inside], idx[inside])
        exact[inside] = _order_ties(values[inside], idx[inside], ties, gains)[:, :k]
    if bool(whole.all()):
        return exact
    part = (~whole).nonzero().squeeze(1)
    rows, values, idx = rows[part], values[part], idx[part]
    levels = None if tie_gains is None else _gain_levels(tie_gains, rows, ties)
    if exclusions is not None:  # rare (ties and exclusions): mask a copy of those rows
        gains = None if tie_gains is None else tie_gains[rows]
        exact[part] = top_indices(exclusions.masked_rows(scores, rows), k, ties, gains).indices
    elif tie_keys(ties)[1] is None or levels is not None:
        exact[part] = _resolve_boundary(scores, rows, values, idx, k, ties, tie_gains, levels)
    else:
        exact[part] = _exact_top(scores[rows], k, ties, tie_gains[rows])
    return exact


def _ordered(values: Tensor, idx: Tensor, ties: str, tie_gains: Tensor | None, following: Tensor) -> TopK:
    """The list [B, k] with equal scores inside it in tie order."""
    if not host_reads_free(values):
        return TopK(_order_ties(values, idx, ties, _gains_of(tie_gains, None, idx)), following)
    # on the CPU a host check is free: reorder only the rows that hold equal scores
    rows = (values[:, 1:] == values[:, :-1]).any(1).nonzero().squeeze(1)
    if rows.numel() == 0:
        return TopK(idx, following)
    gains = _gains_of(tie_gains, rows, idx[rows])
    return TopK(idx.index_copy(0, rows, _order_ties(values[rows], idx[rows], ties, gains)), following)


def _topk_excluding(scores: Tensor, take: int, exclusions: Exclusions) -> tuple[Tensor, Tensor]:
    """The ``take`` best [B, take] of each row with excluded items last (at -inf), other order kept.

    On the CPU it reads a top list deep enough for ``min(S, max(16, take / 4))`` excluded items among
    the best (a topk's cost grows with its depth: a quarter more columns cost a few percent); rows
    with more excluded items up there are read again, to ``take + S``. On an accelerator it reads
    ``take + S`` at once (deciding would need a host sync).
    """
    num_items = scores.shape[1]

    def read(part: Tensor, excluded: Exclusions, depth: int) -> tuple[Tensor, Tensor, Tensor]:
        values, idx = torch.topk(part, min(depth, num_items), dim=1)
        dropped = excluded.contains(idx)
        values = values.masked_fill(dropped, float("-inf"))
        order = torch.sort(values, dim=1, descending=True, stable=True).indices
        return values.gather(1, order)[:, :take], idx.gather(1, order)[:, :take], dropped.sum(1)

    if not host_reads_free(scores):  # no host sync on an accelerator: read deep enough at once
        return read(scores, exclusions, take + exclusions.width)[:2]
    depth = take + min(exclusions.width, max(16, take // 4))
    values, idx, dropped = read(scores, exclusions, depth)
    # a row whose excluded items filled every extra column holds too few: read it deeper
    short = (depth - dropped < take) & (depth < num_items)
    if bool(short.any()):
        rows = short.nonzero().squeeze(1)
        subset = Exclusions(exclusions.ids[rows], exclusions.count[rows])
        deep_values, deep_idx, _ = read(scores[rows], subset, take + exclusions.width)
        values, idx = values.index_copy(0, rows, deep_values), idx.index_copy(0, rows, deep_idx)
    return values, idx


_MAX_LEVELS = 16  # gain levels scanned one at a time; more distinct gains take the sort


def _gain_levels(tie_gains: Tensor, rows: Tensor, ties: str) -> list[float] | None:
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


def _resolve_boundary(
    scores: Tensor,
    rows: Tensor,
    values: Tensor,
    idx: Tensor,
    k: int,
    ties: str,
    tie_gains: Tensor | None = None,
    levels: list[float] | None = None,
) -> Tensor:
    """The exact top k [b, k] of ``rows`` (tied at the cut-off).

    ``values``/``idx`` [b, k + 1] are the rows' ``torch.topk`` result: it holds every item scored above
    the boundary value. The rest of the list is the first ``k - g`` items scored exactly at it, in tie
    order: by index, or level by level of the gains (``levels``, in tie order) and by index within one.
    """
    boundary = values[:, k - 1]
    above = values > boundary.unsqueeze(1)
    need = k - above.sum(1)
    if levels is None:
        equal = _first_equal(scores, rows, boundary, need, reverse=ties == "reverse_index")
    else:
        parts = []
        for level in levels:  # each level takes what the levels before it left
            part = _first_equal(scores, rows, boundary, need, reverse=False, gains=tie_gains, level=level)
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
    return _order_ties(candidate_values, candidates, ties, _gains_of(tie_gains, rows, candidates))[:, :k]


def _first_equal(
    scores: Tensor,
    rows: Tensor,
    value: Tensor,
    need: Tensor,
    reverse: bool,
    gains: Tensor | None = None,
    level: float | None = None,
) -> Tensor:
    """[b, max(need)] column indices: per row of ``rows``, the first ``need`` columns (the last with
    ``reverse``) whose score equals ``value`` (and whose gain equals ``level``, if given), in that
    order; -1 past ``need``.

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
        if gains is not None:
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


def _boundary_without_sync(
    scores: Tensor, values: Tensor, idx: Tensor, k: int, ties: str, tie_gains: Tensor | None,
    exclusions: Exclusions | None,
) -> Tensor:
    """The exact top k of every row, ties at the cut-off in tie order, without reading anything on the host.

    Masked work over every row instead of a repair of the tied rows: the items scored above the k-th
    score stay, and the first ``k - g`` items scored equal to it (in index order) fill the list.
    """
    if exclusions is not None:
        every_row = torch.arange(scores.shape[0], device=scores.device)
        gains = None if tie_gains is None else tie_gains
        return top_indices(exclusions.masked_rows(scores, every_row), k, ties, gains).indices
    if tie_keys(ties)[1] is not None:  # gain-aware orders: a stable sort of every row
        return _exact_top(scores, k, ties, tie_gains)
    boundary = values[:, k - 1 : k]
    above = values[:, :k] > boundary
    need = k - above.sum(1, keepdim=True)
    equal = scores == boundary
    reverse = ties == "reverse_index"
    rank = equal.flip(1).cumsum(1).flip(1) if reverse else equal.cumsum(1)  # 1 = first in tie order
    positions = torch.arange(scores.shape[1], device=scores.device)
    priority = positions + 1 if reverse else scores.shape[1] - positions  # > 0, larger = earlier
    picked = torch.topk(torch.where(equal & (rank <= need), priority, 0), k, dim=1).indices
    merged = torch.cat([idx[:, :k], picked], dim=1)
    keep = torch.cat([above, torch.arange(k, device=scores.device) < need], dim=1)
    first = torch.sort((~keep).to(torch.uint8), dim=1, stable=True).indices[:, :k]
    return merged.gather(1, first)


def _exact_top(scores: Tensor, k: int, ties: str, tie_gains: Tensor | None) -> Tensor:
    """Top-k indices of each row by score descending, then the tie keys, with stable sorts."""
    index_descending, gain_order = tie_keys(ties)
    order = torch.arange(scores.shape[1], device=scores.device)
    if index_descending:
        order = order.flip(0)
    order = order.expand_as(scores)
    if gain_order is not None:
        order = order.gather(
            1, torch.sort(tie_gains.gather(1, order), dim=1, descending=gain_order, stable=True).indices
        )
    perm = torch.sort(scores.gather(1, order), dim=1, descending=True, stable=True).indices[:, :k]
    return order.gather(1, perm)


def _gains_of(tie_gains: Tensor | None, rows: Tensor | None, idx: Tensor) -> Tensor | None:
    """The gains [b, m] of the items ``idx`` of ``rows`` (all rows if None), without copying rows."""
    if tie_gains is None:
        return None
    if rows is None:
        return tie_gains.gather(1, idx.clamp(min=0))
    return tie_gains[rows.unsqueeze(1), idx.clamp(min=0)]


def _order_ties(values: Tensor, idx: Tensor, ties: str, gains: Tensor | None) -> Tensor:
    """Reorder a top-k list so that equal scores follow the documented tie order (``gains``: of ``idx``)."""
    index_descending, gain_order = tie_keys(ties)
    perm = torch.sort(idx, dim=1, descending=index_descending).indices
    idx, values = idx.gather(1, perm), values.gather(1, perm)
    if gain_order is not None:
        perm = torch.sort(gains.gather(1, perm), dim=1, descending=gain_order, stable=True).indices
        idx, values = idx.gather(1, perm), values.gather(1, perm)
    perm = torch.sort(values, dim=1, descending=True, stable=True).indices
    return idx.gather(1, perm)
