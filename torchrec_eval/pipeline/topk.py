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
  :mod:`~torchrec_eval.pipeline.boundary_scan` finds them by scanning column blocks from the row's
  start (or end) and stops as soon as every tied row has enough: O(B·k) extra work for constant
  scores, at most one compare pass for scattered ties, never a sort over all N. The gain-aware orders
  (``"pessimistic"``, ``"optimistic"``) scan the same way one gain level at a time (lowest or
  highest first) when the gains are a few small integers (binary or graded relevance); other gains
  re-rank the tied rows with a stable sort.
* **Inside the list**, equal scores are reordered by the tie keys with sorts over k columns
  (:mod:`~torchrec_eval.pipeline.tie_order`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from torchrec_eval.pipeline.boundary_scan import gain_levels, resolve_boundary
from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.tensor_cache import constant, positions
from torchrec_eval.pipeline.tie_order import TieRule, exact_top, gains_of, order_ties, tie_keys


class TopK(NamedTuple):
    """The ranked list and what lies just past it.

    Attributes:
        indices: [B, k] item indices in rank order.
        following: [B] the best score left out of the list (-inf if none); where it equals the list's
            last score, the last tie group goes on past the cut.
        values: [B, k] the scores of the list (-inf where excluded), when ``distinct`` or known anyway.
        distinct: known (on the CPU, by a host read) that the scores of the list and ``following`` strictly
            decrease in every row: no tie anywhere in the list or at the cut, and no ``-inf`` in the list. Then an
            item's rank is the number of listed scores above its own.
    """

    indices: Tensor
    following: Tensor
    values: Tensor | None = None
    distinct: bool = False


def top_indices(
    scores: Tensor,
    k: int,
    ties: str = "index",
    tie_gains: Tensor | None = None,
    exclusions: Exclusions | None = None,
    sync_free: bool = False,
) -> TopK:
    """The k best items of each row, in rank order, ties broken as documented.

    ``scores`` may hold ``-inf`` for items that are not candidates; those rank last.

    Args:
        scores: [B, N] float scores.
        k: the depth, 1 <= k <= N.
        ties: ``"index"``, ``"reverse_index"``, ``"pessimistic"``, ``"optimistic"`` (``"average"``
            ranks as ``"index"``; its expectation is computed elsewhere).
        tie_gains: [B, N] gains, for the gain-aware tie orders.
        exclusions: items that are not candidates, by id: the top k of the rest is read from the top
            k + S of all (positions past a row's candidates then hold excluded items, at -inf).
        sync_free: on an accelerator, repair every tie order without a host read (masked work on every
            row), as a compiled update promises; by default ``"pessimistic"`` and ``"optimistic"`` read which
            rows tie there (docs/host-syncs.md). No effect on the CPU, where host reads are free.

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
        values, idx = top_scores(scores, take)
    else:
        values, idx = _topk_excluding(scores, take, exclusions)
    following = values[:, k] if take > k else values.new_full((values.shape[0],), float("-inf"))
    if take <= k:
        return _ordered(values[:, :k], idx[:, :k], ties, tie_gains, following)
    # No device's topk promises which tied items it keeps at the cut (CUDA's does not keep the lowest
    # indices: tests/scripts/topk_tie_order.py). Without a host read, every row is repaired.
    if not host_reads_free(values) and (sync_free or ties in _SYNC_FREE_TIES):
        idx = _boundary_without_sync(scores, values, idx, k, TieRule(ties, tie_gains, exclusions))
        return _ordered(listed_scores(scores, idx, exclusions), idx, ties, tie_gains, following)
    # the common case on the CPU: the k + 1 scores strictly decrease (no tie at all, no -inf in the list). One
    # float reduction of the steps: two equal scores step by 0, -inf to -inf by NaN, and neither is > 0
    if host_reads_free(values) and float((values[:, :k] - values[:, 1 : k + 1]).amin()) > 0:
        return TopK(idx[:, :k], following, values[:, :k], distinct=True)
    repeats = values[:, 1 : k + 1] == values[:, :k]  # [B, k]: a score equal to the next one
    boundary = values[:, k - 1]
    tied = repeats[:, k - 1] & (boundary > float("-inf"))
    if bool(tied.any()):
        rows = tied.nonzero().squeeze(1)
        exact = _tied_rows(scores, (values[rows], idx[rows]), rows, k, TieRule(ties, tie_gains, exclusions))
        idx = idx[:, :k].index_copy(0, rows, exact)
        values = listed_scores(scores, idx, exclusions)
    return _ordered(values[:, :k], idx[:, :k], ties, tie_gains, following)


# Tie orders repaired on an accelerator without a host read; the others read which rows tie and repair
# those (docs/host-syncs.md).
_SYNC_FREE_TIES = ("index", "average")

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


def listed_scores(scores: Tensor, idx: Tensor, exclusions: Exclusions | None) -> Tensor:
    """[B, k] the scores of the items ``idx``, -inf where excluded."""
    values = scores.gather(1, idx)
    return values if exclusions is None else values.masked_fill(exclusions.contains(idx), float("-inf"))


def _tied_rows(scores: Tensor, top: tuple[Tensor, Tensor], rows: Tensor, k: int, rule: TieRule) -> Tensor:
    """The exact top k [b, k] of ``rows``, tied at the cut-off; ``top`` = (values, idx) [b, take] their top list.

    A row whose list ends below the boundary score holds its whole tie group: the tie order of the list
    decides. Other rows find the first tied items by scanning (or, for float gains, by a stable sort).
    """
    (values, idx), ties, tie_gains, exclusions = top, rule.ties, rule.gains, rule.exclusions
    boundary = values[:, k - 1]
    whole = (values[:, -1] < boundary) | (values.shape[1] == scores.shape[1])
    exact = idx[:, :k].clone()
    if bool(whole.any()):
        inside = whole.nonzero().squeeze(1)
        gains = gains_of(tie_gains, rows[inside], idx[inside])
        exact[inside] = order_ties(values[inside], idx[inside], ties, gains)[:, :k]
    if bool(whole.all()):
        return exact
    part = (~whole).nonzero().squeeze(1)
    rows, values, idx = rows[part], values[part], idx[part]
    levels = None if tie_gains is None else gain_levels(tie_gains, rows, ties)
    if exclusions is not None:  # rare (ties and exclusions): mask a copy of those rows
        gains = None if tie_gains is None else tie_gains[rows]
        exact[part] = top_indices(exclusions.masked_rows(scores, rows), k, ties, gains).indices
    elif tie_keys(ties)[1] is None or levels is not None:
        exact[part] = resolve_boundary(scores, rows, (values, idx), k, rule, levels)
    else:  # gain-aware ties with float gains: a stable sort of the tied rows
        exact[part] = exact_top(scores[rows], k, ties, None if tie_gains is None else tie_gains[rows])
    return exact


def _ordered(values: Tensor, idx: Tensor, ties: str, tie_gains: Tensor | None, following: Tensor) -> TopK:
    """The list [B, k] with equal scores inside it in tie order."""
    if not host_reads_free(values):
        return TopK(order_ties(values, idx, ties, gains_of(tie_gains, None, idx)), following)
    # on the CPU a host check is free: reorder only the rows that hold equal scores
    rows = (values[:, 1:] == values[:, :-1]).any(1).nonzero().squeeze(1)
    if rows.numel() == 0:
        return TopK(idx, following)
    gains = gains_of(tie_gains, rows, idx[rows])
    return TopK(idx.index_copy(0, rows, order_ties(values[rows], idx[rows], ties, gains)), following)


def _topk_excluding(scores: Tensor, take: int, exclusions: Exclusions) -> tuple[Tensor, Tensor]:
    """The ``take`` best [B, take] of each row with excluded items last (at -inf), other order kept.

    On the CPU it reads a top list deep enough for ``min(S, max(16, take / 4))`` excluded items among
    the best (a topk's cost grows with its depth: a quarter more columns cost a few percent); rows
    with more excluded items up there are read again, to ``take + S``. On an accelerator it reads
    ``take + S`` at once (deciding would need a host sync).
    """
    num_items = scores.shape[1]

    def read(part: Tensor, excluded: Exclusions, depth: int) -> tuple[Tensor, Tensor, Tensor]:
        values, idx = top_scores(part, min(depth, num_items))
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


def _boundary_without_sync(scores: Tensor, values: Tensor, idx: Tensor, k: int, rule: TieRule) -> Tensor:
    """The exact top k of every row, ties at the cut-off in tie order, without reading anything on the host.

    Masked work over every row instead of a repair of the tied rows: the items scored above the k-th
    score ``v`` stay, and the first ``k - g`` items scored ``v`` (in index order) fill the list. The
    j-th item scored ``v`` is the first column where the running count of such items reaches j: one
    cumulative count over the row and a binary search per list position, no second top-k or sort.
    """
    ties = rule.ties
    if rule.exclusions is not None:
        masked = rule.exclusions.masked_rows(scores, positions(scores.shape[0], scores.device))  # every row
        return top_indices(masked, k, ties, rule.gains, sync_free=True).indices
    if tie_keys(ties)[1] is not None:  # gain-aware orders: a stable sort of every row
        return exact_top(scores, k, ties, rule.gains)
    boundary = values[:, k - 1 : k]
    above = values[:, :k] > boundary
    need = k - above.sum(1, keepdim=True)
    running = (scores == boundary).cumsum(1, dtype=torch.int32)  # [B, N]: items scored v up to each column
    rows, device = scores.shape[0], scores.device
    nth = constant(("nth_tied", rows, k, device),  # 1..k in every row, contiguous for the search (built once)
                   lambda: torch.arange(1, k + 1, device=device, dtype=torch.int32).expand(rows, k).contiguous())
    if ties == "reverse_index":  # the j-th from the row's end
        nth = running[:, -1:] + 1 - nth
    picked = torch.searchsorted(running, nth).clamp_(max=scores.shape[1] - 1)
    merged = torch.cat([idx[:, :k], picked], dim=1)
    keep = torch.cat([above, positions(k, device) < need], dim=1)
    first = torch.sort((~keep).to(torch.uint8), dim=1, stable=True).indices[:, :k]
    return merged.gather(1, first)


# The best scores of each row on the CPU, read through the maxima of blocks of the row.
#
# On the CPU ``torch.topk`` selects with data-dependent branches; on rows shorter than 64 x k it takes an
# ``nth_element`` over the whole row, about 7 ns a score on rows of 1,000 items (12 ns on rows of 100),
# where a vectorised maximum costs under 1 ns (longer rows take a heap pass, cheaper, which the blocks
# still beat for lists of 16 items or more). :func:`top_scores` reads such rows in two stages: the
# maximum of each of ``blocks`` blocks of 8 scores (item j in block j mod ``blocks``, so that the maxima
# are taken over contiguous columns), the ``take`` blocks of the highest maxima, and ``torch.topk`` over
# their ``8 x take`` scores and the row's last items that fill no block. On 100 x 1,000 that is 0.48x a
# ``torch.topk`` and on 1024 x 20,000 0.63x (``benchmarks/bench_compile.py``, one thread).
#
# It is exact: the ``take`` chosen blocks hold ``take`` scores >= m, the smallest chosen maximum, so the
# ``take``-th best score of the row is >= m, and every score outside them is <= m. So the values of the
# ``take`` best scores are those ``torch.topk`` returns; a score left outside can only equal m and then
# ties with the ``take``-th best, the case where ``torch.topk``'s choice among tied items is unspecified
# too, and where :func:`~torchrec_eval.pipeline.topk.top_indices` repairs the cut from the whole row.

_WIDTH = 8  # scores per block: the fastest of 4, 8, 16 and 32 on rows of 1,000 to 20,000 items
_MIN_ELEMENTS = 1 << 15  # smaller batches cost a few dispatches more than the branches they save


def _heap_pass(num_items: int, take: int) -> bool:
    """Whether ``torch.topk`` on the CPU takes its heap pass (``std::partial_sort``) over a row, not its
    ``nth_element``: its own rule, ``k * 64 <= n``."""
    return 64 * take <= num_items


def _blocked(num_items: int, take: int) -> bool:
    """Whether the blocks beat ``torch.topk`` (one CPU thread, ``benchmarks/bench_compile.py`` table 2): always
    where it would take its ``nth_element`` (rows shorter than 64 x take); where it takes its heap pass, for
    lists of 16 items or more or rows of 1,024 x take items or more (a short list's heap pass over a row of a
    few thousand items is as cheap as the blocks' maxima)."""
    if num_items < 2 * _WIDTH * take:  # too few blocks to leave any out
        return False
    return not _heap_pass(num_items, take) or take >= 16 or num_items >= 1024 * take


def ranking_cost(num_items: int, take: int) -> float:
    """About the ns that the top ``take`` of a row of ``num_items`` costs on one CPU thread (by
    :func:`top_scores`): ``torch.topk``'s heap pass of about 1.3 ns per item or its ``nth_element`` of 7-12, or
    a vectorised maximum of each block and two selections on its fraction of the row."""
    if not _blocked(num_items, take):
        return 1.3 * num_items if _heap_pass(num_items, take) else 10.0 * num_items
    return 0.6 * num_items + 7.0 * (num_items / _WIDTH + _WIDTH * take)


def top_scores(scores: Tensor, take: int) -> tuple[Tensor, Tensor]:
    """``torch.topk(scores, take, dim=1)``: the ``take`` best values [B, take], descending, and their items.

    Which of several items tied at the ``take``-th score comes back is unspecified, as with ``torch.topk``.

    Example:
        >>> import torch
        >>> from torchrec_eval.pipeline.topk import top_scores
        >>> scores = torch.arange(40_000.0).remainder(997.0).view(20, 2_000)
        >>> values, items = top_scores(scores, 3)
        >>> torch.equal(values, torch.topk(scores, 3, dim=1).values), torch.equal(scores.gather(1, items), values)
        (True, True)
    """
    rows, num_items = scores.shape
    if scores.device.type != "cpu" or not _blocked(num_items, take) or rows * num_items < _MIN_ELEMENTS:
        return torch.topk(scores, take, dim=1)
    blocks = num_items // _WIDTH
    filled = blocks * _WIDTH
    maxima = scores[:, :filled].reshape(rows, _WIDTH, blocks).amax(1)
    chosen = torch.topk(maxima, take, dim=1, sorted=False).indices
    members = constant(("block_members", blocks, scores.device),
                       lambda: torch.arange(_WIDTH, device=scores.device) * blocks)
    columns = (chosen.unsqueeze(2) + members).view(rows, take * _WIDTH)
    if filled < num_items:  # the last items, which fill no block, are always read
        rest = constant(("block_rest", filled, num_items, scores.device),
                        lambda: torch.arange(filled, num_items, device=scores.device))
        columns = torch.cat([columns, rest.expand(rows, -1)], dim=1)
    values, positions = torch.topk(scores.gather(1, columns), take, dim=1)
    return values, columns.gather(1, positions)


# The ranking as one opaque operator of ``torch.compile``: ``torchrec_eval::top_indices``.
#
# Traced by dynamo, :func:`~torchrec_eval.pipeline.topk.top_indices` would become inductor's own sort and
# top-k, and the tie repair masked work over every row (a traced function cannot ask which rows tie).
# Registered as a custom operator instead, it runs as the library's eager kernel inside the compiled
# graph: ``torch.topk`` and the repair of the rows that tie, exactly as in eager mode, and the graph fuses
# only what comes after it, on [B, k] tensors. Its fake implementation gives the output shapes, so the
# graph has no break.

def ranked_top(
    scores: Tensor,
    k: int,
    ties: str = "index",
    tie_gains: Tensor | None = None,
    exclusions: Exclusions | None = None,
) -> TopK:
    """:func:`~torchrec_eval.pipeline.topk.top_indices`, through the operator while ``torch.compile`` traces.

    Example:
        >>> import torch
        >>> from torchrec_eval.pipeline.topk import ranked_top
        >>> ranked_top(torch.tensor([[0.5, 0.9, 0.5, 0.5, 0.1]]), 3).indices
        tensor([[1, 0, 2]])
    """
    if not torch.compiler.is_compiling():
        return top_indices(scores, k, ties, tie_gains, exclusions)
    # a compiled update reads nothing on the host on an accelerator, whatever the tie order
    excluded = (None, None) if exclusions is None else (exclusions.ids, exclusions.count)
    indices, values, following = top_indices_op(scores, k, ties, tie_gains, *excluded)
    return TopK(indices, following, values)


def _top_indices_kernel(
    scores: Tensor,
    k: int,
    ties: str,
    tie_gains: Tensor | None,
    excluded_ids: Tensor | None,
    excluded_count: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`~torchrec_eval.pipeline.topk.top_indices` as an operator: (indices [B, k] int64, their scores
    [B, k] (-inf where excluded), following [B]), with no host read on an accelerator for any tie order
    (``sync_free=True``). The scores come out of the kernel, so that the graph reads them from memory (a
    gather inside the graph is recomputed in every loop that reads it).

    The exclusions travel as their two tensors (``Exclusions.ids``, ``Exclusions.count``): an operator
    takes tensors, not records.
    """
    exclusions = None if excluded_ids is None or excluded_count is None else Exclusions(excluded_ids, excluded_count)
    top = top_indices(scores, k, ties, tie_gains, exclusions, sync_free=True)
    values = top.values if top.values is not None else listed_scores(scores, top.indices, exclusions)
    # contiguous (the strides the fake implementation promises); the list's scores and `following` are often
    # slices of one top-k result, and an operator's outputs must not share storage: copies of their own
    return (top.indices.contiguous(), values.clone(memory_format=torch.contiguous_format),
            top.following.clone(memory_format=torch.contiguous_format))


# the kernel as an operator of its own (a custom operator's object carries no docstring of the function)
top_indices_op = torch.library.custom_op("torchrec_eval::top_indices", mutates_args=())(_top_indices_kernel)


@top_indices_op.register_fake
def _(
    scores: Tensor,
    k: int,
    ties: str,
    tie_gains: Tensor | None,
    excluded_ids: Tensor | None,
    excluded_count: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    rows = scores.shape[0]
    return scores.new_empty((rows, k), dtype=torch.int64), scores.new_empty((rows, k)), scores.new_empty((rows,))
