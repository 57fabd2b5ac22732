"""Each target's rank counted over its row, without a top-k: the cheapest ranking where rows hold few targets.

Every top-k value of the ids form reads where its targets stand in the ranking, and the rank of a target
is the number of items ranked above it: scored higher, or scored the same and first in the tie order.
Counted over the whole row, that is T x N comparisons and no list, against a top-k whose CPU cost is 7 to
12 ns per item on rows of 100 to 1,000 items. Sampled evaluation (1 + 100 candidates, one held-out target)
counts 101 pairs a row. Under ``torch.compile`` the comparisons and their sum are one loop, with no
[B, T, N] tensor; in eager mode each is a pass over [B, T, N].

The ranks are exact, ties included, so every value equals that of the ranked list, on every device, with
no host read and no repair of the cut-off.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.blocked_topk import ranking_cost
from torchrec_eval.pipeline.counting import count_true
from torchrec_eval.pipeline.tensor_cache import constant

# ns per (target, item) pair: one fused loop under torch.compile, six passes over [B, T, N] in eager mode
_PAIR_NS = {True: 0.2, False: 3.0}
TIE_ORDERS = ("index", "reverse_index")  # the orders a count can tell (the gain-aware ones read every gain)


def counting_is_cheaper(num_targets: int, num_items: int, take: int) -> bool:
    """Whether counting ``num_targets`` targets' ranks over rows of ``num_items`` costs less than their top
    ``take`` (one thread on a CPU: ``benchmarks/bench_compile.py``; a top-k on a GPU is no cheaper)."""
    pairs = num_targets * num_items * _PAIR_NS[torch.compiler.is_compiling()]
    return pairs < ranking_cost(num_items, take)


def counted_ranks(scores: Tensor, target_ids: Tensor, target_scores: Tensor, ties: str) -> Tensor:
    """[B, T] the number of items ranked above each target: scored higher, or scored the same with a lower
    index (``ties="index"``) or a higher one (``"reverse_index"``). A padding id (-1) gets a rank of its own
    that no caller reads: its gain is 0.

    Args:
        scores: [B, N] scores (``-inf``: not a candidate, ranked last).
        target_ids: [B, T] long item ids, -1 for padding.
        target_scores: [B, T] the targets' scores, ``scores`` read at ``target_ids``.
        ties: ``"index"`` or ``"reverse_index"``.

    Example:
        >>> import torch
        >>> scores = torch.tensor([[0.5, 0.9, 0.5, 0.1]])
        >>> ids = torch.tensor([[2, 0, -1]])
        >>> counted_ranks(scores, ids, scores.gather(1, ids.clamp(min=0)), "index")[:, :2]
        tensor([[2, 1]])
        >>> counted_ranks(scores, ids, scores.gather(1, ids.clamp(min=0)), "reverse_index")[:, :2]
        tensor([[1, 2]])
    """
    num_items, device = scores.shape[1], scores.device
    items = constant(("item_indices", num_items, device), lambda: torch.arange(num_items, device=device))
    row, own, target = scores.unsqueeze(1), target_scores.unsqueeze(2), target_ids.unsqueeze(2)
    first = items < target if ties == "index" else items > target  # [B, T, N]: ahead of the target among equals
    if torch.compiler.is_compiling():  # one fused loop: no flag is stored (an int64 sum vectorises best there)
        return ((row > own) | ((row == own) & first)).sum(2)
    # eager: flags combined in place, counted without a sum's int64 copy of each (twice the float32 scores)
    above = (row > own).logical_or_((row == own).logical_and_(first))
    return count_true(above.view(-1, num_items)).view(target_ids.shape)
