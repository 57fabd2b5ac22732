"""Sums over ranks within each cut-off: the one pass every top-k formula is built on.

Every formula maps the ranked representation and a list of cut-offs to a [B, len(ks)] float64 tensor, from
cumulative sums along the rank axis, so all cut-offs of a metric cost one pass and all metrics of a suite
share the same top-k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.pipeline.batch import once_per_view
from torchrec_eval.pipeline.tensor_cache import constant, geometric, ranks, row


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


# Safe divisions of the top-k formulas: by a cut-off row, a count of relevant items, min(R, k); and the
# :class:`Ratio` a formula returns to leave its division to the member, which divides every family's at once.

def as_row(values: Sequence[float], like: Tensor) -> Tensor:
    """``values`` as a float64 row on ``like``'s device (built once per device)."""
    return row(tuple(float(v) for v in values), like.device)


class Ratio(NamedTuple):
    """A formula's value as ``numerator`` [B, P] / ``denominator`` (broadcast to [B, P]), 0 where the denominator is 0
    (:func:`divide`'s rule: every numerator here is 0 there). The top-k member divides the ratios of all its
    families in one op, where each would divide its own."""

    numerator: Tensor
    denominator: Tensor


def quotient(value: Tensor | Ratio) -> Tensor:
    """A formula's value as a tensor: a :class:`Ratio` divided (as the member divides it), a tensor as it is."""
    return divide(*value) if isinstance(value, Ratio) else value


def divide(numerator: Tensor, denominator: Tensor) -> Tensor:
    """numerator / denominator, with 0 where the denominator is 0: every numerator here is 0 there
    (no gain in the list without an ideal gain, no precision without hits), or its query has R = 0
    and ``empty_target_action`` replaces its value."""
    return numerator / denominator.clamp(min=1e-300)


def per_count(numerator: Tensor, count: Tensor) -> Tensor:
    """numerator / count for a count of relevant items (0, 1, 2, ...) that is 0 only where the
    numerator is 0 too (hits and precision sums need a relevant item): 0 there, as :func:`divide`."""
    return numerator / count.clamp(min=1)


def capped_relevant(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)] float64 min(R, k) for each cut-off, read once per batch (AP divides by it, and the binary ideal
    DCG is tabulated by it)."""
    def capped() -> Tensor:
        relevant = rt.relevant_column
        return relevant.clamp(max=ks[0]) if len(ks) == 1 else torch.minimum(as_row(ks, relevant), relevant)

    return once_per_view(rt, "_capped_relevant_" + "_".join(map(str, ks)), capped)


def per_capped_count(numerator: Tensor, rt: RankedTargets, ks: Sequence[int]) -> Ratio:
    """numerator / min(R, k) for each cut-off; 0 where R = 0, as :func:`per_count`."""
    return Ratio(numerator, capped_relevant(rt, ks))
