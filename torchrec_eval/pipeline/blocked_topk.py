"""The best scores of each row on the CPU, read through the maxima of blocks of the row.

On the CPU ``torch.topk`` selects with data-dependent branches; on rows shorter than 64 x k it takes an
``nth_element`` over the whole row, about 7 ns a score on rows of 1,000 items (12 ns on rows of 100),
where a vectorised maximum costs under 1 ns (longer rows take a heap pass, cheaper, which the blocks
still beat for lists of 16 items or more). :func:`top_scores` reads such rows in two stages: the
maximum of each of ``blocks`` blocks of 8 scores (item j in block j mod ``blocks``, so that the maxima
are taken over contiguous columns), the ``take`` blocks of the highest maxima, and ``torch.topk`` over
their ``8 x take`` scores and the row's last items that fill no block. On 100 x 1,000 that is 0.48x a
``torch.topk`` and on 1024 x 20,000 0.63x (``benchmarks/bench_compile.py``, one thread).

It is exact: the ``take`` chosen blocks hold ``take`` scores >= m, the smallest chosen maximum, so the
``take``-th best score of the row is >= m, and every score outside them is <= m. So the values of the
``take`` best scores are those ``torch.topk`` returns; a score left outside can only equal m and then
ties with the ``take``-th best, the case where ``torch.topk``'s choice among tied items is unspecified
too, and where :func:`~torchrec_eval.pipeline.topk.top_indices` repairs the cut from the whole row.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.tensor_cache import constant

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
        >>> from torchrec_eval.pipeline.blocked_topk import top_scores
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
