"""Sums over ranks within each cut-off: the one pass every top-k formula is built on.

Every formula maps the ranked representation and a list of cut-offs to a [B, len(ks)] float64 tensor, from
cumulative sums along the rank axis, so all cut-offs of a metric cost one pass and all metrics of a suite
share the same top-k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.pipeline.batch import once_per_view
from torchrec_eval.pipeline.tensor_cache import constant, geometric, ranks, row
from torchrec_eval.ranking.ratios import as_row, capped_relevant


def at_cutoffs(cumulative: Tensor, ks: Sequence[int]) -> Tensor:
    """Columns of a [B, K] cumulative tensor at cut-offs ``ks`` (a cut-off past K reads column K)."""
    depth = cumulative.shape[1]
    if len(ks) == 1:  # a view: no index tensor to build (most metrics have one cut-off)
        column = min(ks[0], depth) - 1
        return cumulative[:, column : column + 1]
    columns = tuple(min(k, depth) - 1 for k in ks)
    index = constant(("columns", columns, cumulative.device), lambda: torch.tensor(columns, device=cumulative.device))
    return cumulative.index_select(1, index)


def summed(
    per_rank: Tensor, ks: Sequence[int], weight: str = "one", parameter: float = 2.0, finite: bool = True
) -> Tensor:
    """[B, len(ks)]: for each cut-off k, the sum over ranks i <= k of ``per_rank`` [B, K] times the rank
    weight (see :func:`rank_weights`; ``parameter``: its log base or patience).

    One matrix product with a cached [K, len(ks)] table of the weights within each cut-off, for every
    cut-off at once: few dispatches, which dominate small batches. Compiled, a product and a sum instead,
    which the graph fuses with what makes ``per_rank`` (a matrix product is an extern kernel whose input is a
    [B, K] buffer). Values that may be infinite (``finite=False``: exponential gains overflow past 1023)
    take a running sum instead, where an infinite gain past a cut-off cannot reach it (inf x 0 would be NaN).
    """
    depth, device = per_rank.shape[1], per_rank.device
    if not finite and len(ks) > 1:
        return at_cutoffs((per_rank * rank_weights(depth, weight, parameter, device)).cumsum(1), ks)
    if len(ks) == 1 and ks[0] < depth:
        per_rank, depth = per_rank[:, : ks[0]], ks[0]

    def build() -> Tensor:
        within = ranks(depth, device).unsqueeze(1) <= row(tuple(float(k) for k in ks), device)
        return rank_weights(depth, weight, parameter, device).unsqueeze(1) * within

    table = constant(("summed", depth, tuple(ks), weight, parameter, device), build)
    if torch.compiler.is_compiling():  # float32 hits (counting.hit_dtype) sum in float64 here
        return (per_rank.unsqueeze(2) * table).sum(1)
    return per_rank @ table


def rank_weights(depth: int, weight: str, parameter: float, device: torch.device) -> Tensor:
    """[depth] weights of ranks i = 1..depth (built once per device): ``"one"``, ``"reciprocal"`` 1 / i,
    ``"discount"`` 1 / log_b(i + 1) and ``"clipped_discount"`` 1 / log_b(max(i, 2)) (``parameter`` = b),
    ``"geometric"`` p^(i - 1) (``parameter`` = p)."""

    def build() -> Tensor:
        if weight == "discount":
            return discounts(depth, parameter, device)
        if weight == "clipped_discount":
            return math.log(parameter) / torch.log(ranks(depth, device).clamp(min=2))
        if weight == "geometric":
            return geometric(depth, parameter, device)
        return ranks(depth, device).reciprocal() if weight == "reciprocal" else torch.ones_like(ranks(depth, device))

    return constant(("weights", depth, weight, parameter, device), build)


def weight_sums(bound: int, weight: str, parameter: float, device: torch.device) -> Tensor:
    """[bound + 1] the sums of the rank weights over ranks 1..n, for n = 0..bound (built once per device)."""

    def build() -> Tensor:
        weights = rank_weights(bound, weight, parameter, device)
        return torch.cat([weights.new_zeros(1), weights.cumsum(0)])

    return constant(("weight_sums", bound, weight, parameter, device), build)


def best_sums(rt: RankedTargets, ks: Sequence[int], weight: str, parameter: float = 2.0,
              within_list: bool = True) -> Tensor:
    """[B, len(ks)]: the sum of the rank weights over ranks 1..min(R, k), and not past the list's length where
    ``within_list``: the most a binary formula ``summed(rt.hits, ks, weight, parameter)`` can reach with the
    query's relevant items (NCRR, normalized RBP; the binary ideal DCG, whose ideal list is not cut at the list)."""
    bound, device = min(max(rt.max_relevant, 1), max(ks)), rt.gains.device
    table = weight_sums(bound, weight, parameter, device)
    if not within_list:  # min(R, k) <= min(max_relevant, k): within the table
        return table[capped_relevant(rt, ks).long()]
    reachable = torch.minimum(rt.num_relevant, rt.num_candidates).long()
    if len(ks) == 1:
        return table[reachable.clamp(max=min(ks[0], bound))].unsqueeze(1)
    capped = tuple(min(k, bound) for k in ks)
    cutoffs = constant(("cutoffs", capped, device), lambda: torch.tensor(capped, device=device))
    return table[torch.minimum(reachable.unsqueeze(1), cutoffs)]


def discounts(length: int, log_base: float, device: torch.device) -> Tensor:
    """[length] discounts 1 / log_b(i + 1) for ranks i = 1..length (built once per device)."""
    return constant(
        ("discounts", length, log_base, device), lambda: math.log(log_base) / torch.log1p(ranks(length, device))
    )


def hits_within(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)] relevant items within each cut-off (read once per batch: several families use it)."""
    return once_per_view(rt, "_hits_within_" + "_".join(map(str, ks)), lambda: at_cutoffs(rt.cum_hits, ks))


def listed_within(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)] the list's length within each cut-off, min(k, candidates)."""
    return torch.minimum(as_row(ks, rt.gains), rt.num_candidates.unsqueeze(1))
