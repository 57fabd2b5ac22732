"""Each target's rank counted over its row, without a top-k: the cheapest ranking where rows hold few targets.

Every top-k value of the ids form reads where its targets stand in the ranking, and the rank of a target
is the number of items ranked above it: scored higher, or scored the same and first in the tie order.
Counted over the whole row, that is T x N comparisons and no list, against a top-k whose CPU cost is 7 to
12 ns per item on rows of 100 to 1,000 items. Sampled evaluation (1 + 100 candidates, one held-out target)
counts 101 pairs a row. Under ``torch.compile`` the comparisons and their sum are one loop, with no
[B, T, N] tensor. In eager mode every pass over [B, T, N] is a kernel of its own: comparing the scores, then
the tie order, takes five. So where rows hold more than a target or two, each item first gets one integer key in
the ranking's order (:func:`ranking_keys`: its score's bits, then its place among equal scores), and a pair
costs one comparison of keys (float64 scores, whose bits leave no room for a tie key, keep the five passes).

The ranks are exact, ties included, so every value equals that of the ranked list, on every device, with
no host read and no repair of the cut-off.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.tensor_cache import constant, count_true, positions
from torchrec_eval.pipeline.topk import ranking_cost

TIE_ORDERS = ("index", "reverse_index")  # the orders a count can tell (the gain-aware ones read every gain)
_KEYED = (torch.float32, torch.float16, torch.bfloat16)  # scores whose float32 bits and a tie key fit in an int64
# ns per (target, item) pair and per item of each way to count, one CPU thread (benchmarks/bench_compile.py table
# 1d): compiled, one fused loop; eager, five passes over the [B, T, N] pairs ("flags"), or the keys' six passes
# over [B, N] and one comparison of the pairs ("keys")
_COSTS = {"fused": (0.2, 0.0), "flags": (1.5, 0.0), "keys": (0.5, 1.5)}


def counting_is_cheaper(num_targets: int, num_items: int, take: int, dtype: torch.dtype = torch.float32) -> bool:
    """Whether counting ``num_targets`` targets' ranks over rows of ``num_items`` scores of ``dtype`` costs less than
    their top ``take`` (one thread on a CPU: ``benchmarks/bench_compile.py``; a top-k on a GPU is no cheaper)."""
    return _cost(counting_way(num_targets, dtype), num_targets, num_items) < ranking_cost(num_items, take)


def counting_way(num_targets: int, dtype: torch.dtype) -> str:
    """The cheapest way to count ``num_targets`` targets' ranks over rows of ``dtype`` scores (:data:`_COSTS`):
    ``"fused"`` compiled, else ``"keys"`` or ``"flags"`` (float64 scores: flags)."""
    if torch.compiler.is_compiling():
        return "fused"
    if dtype not in _KEYED:
        return "flags"
    return min(("flags", "keys"), key=lambda way: _cost(way, num_targets, 1))


def _cost(way: str, num_targets: int, num_items: int) -> float:
    per_pair, per_item = _COSTS[way]
    return num_items * (num_targets * per_pair + per_item)


def counted_ranks(scores: Tensor, target_ids: Tensor, target_scores: Tensor, ties: str) -> Tensor:
    """[B, T] the number of items ranked above each target: scored higher, or scored the same with a lower
    index (``ties="index"``) or a higher one (``"reverse_index"``), in the cheapest way (:func:`counting_way`). A
    padding id (-1) gets a rank of its own that no caller reads: its gain is 0.

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
    way = counting_way(target_ids.shape[1], scores.dtype)
    if way == "keys":
        return keyed_count(scores, target_ids, ties)
    return flagged_count(scores, target_ids, target_scores, ties, fused=way == "fused")


def keyed_count(scores: Tensor, target_ids: Tensor, ties: str) -> Tensor:
    """:func:`counted_ranks` by keys: the items whose :func:`ranking_keys` exceed each target's.

    Rows are padded to whole 8-byte words of flags, which :func:`count_true` adds a word at a time instead of
    copying every flag to an int32 (4x the flags' bytes); a padded column holds the least key, below every item's.
    """
    num_items, pad = scores.shape[1], -scores.shape[1] % 8
    keys = ranking_keys(torch.nn.functional.pad(scores, (0, pad)) if pad else scores, ties)
    if pad:
        keys[:, num_items:] = torch.iinfo(torch.int64).min
    above = keys.unsqueeze(1) > keys.gather(1, target_ids.clamp(min=0)).unsqueeze(2)  # [B, T, N + pad]
    return count_true(above.view(-1, num_items + pad)).view(target_ids.shape)


def flagged_count(scores: Tensor, target_ids: Tensor, target_scores: Tensor, ties: str, fused: bool) -> Tensor:
    """:func:`counted_ranks` by flags: scored higher, or the same and first in the tie order; ``fused`` (compiled):
    one loop that stores no flag (an int64 sum vectorises best there), else flags combined in place and counted
    without a sum's int64 copy of each (twice the float32 scores)."""
    num_items, device = scores.shape[1], scores.device
    items = positions(num_items, device)
    row, own, target = scores.unsqueeze(1), target_scores.unsqueeze(2), target_ids.unsqueeze(2)
    first = items < target if ties == "index" else items > target  # [B, T, N]: ahead of the target among equals
    if fused:
        return ((row > own) | ((row == own) & first)).sum(2)
    above = (row > own).logical_or_((row == own).logical_and_(first))
    return count_true(above.view(-1, num_items)).view(target_ids.shape)


def ranking_keys(scores: Tensor, ties: str) -> Tensor:
    """[B, N] int64 keys of float32, float16 or bfloat16 ``scores`` [B, N], distinct within a row, whose order is the
    ranking's: one item ranks above another where its key is greater. The high 32 bits are the float32 score's
    magnitude bits m, an integer in the order of the magnitudes, negated for a negative score (so -0.0 and 0.0,
    equal scores, share 0); the low 32 the item's place among equal scores, ``ties="index"``: a lower index
    first, ``"reverse_index"``: a higher one.

    Example:
        >>> import torch
        >>> keys = ranking_keys(torch.tensor([[0.5, -1.0, 0.5, float("-inf"), -0.0, 0.0]]), "index")
        >>> keys.argsort(descending=True)
        tensor([[0, 2, 4, 5, 1, 3]])
    """
    num_items, device = scores.shape[1], scores.device
    keys = scores.float().view(torch.int32).long()  # the bits, sign-extended: -2^31 + m for a negative float
    negative = keys < 0
    keys.abs_().add_(negative, alpha=-(1 << 31))  # -m for a negative float of magnitude bits m: -0.0 is 0.0's 0
    keys <<= 32  # in place from the first buffer on: each new [B, N] buffer is an allocation, and page faults
    if ties == "reverse_index":  # a higher index first: the index itself
        return keys.bitwise_or_(positions(num_items, device))
    return keys.bitwise_or_(constant(("reversed_positions", num_items, device),
                                     lambda: positions(num_items, device).flip(0)))
