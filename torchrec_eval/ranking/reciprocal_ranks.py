"""Formulas weighted by the reciprocal rank: MRR, ARHR and NCRR, and the averages over ranks MAP and MAR."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.pipeline.batch import TieGroups
from torchrec_eval.pipeline.tensor_cache import ranks
from torchrec_eval.ranking.hit_counts import hits_within, listed_within
from torchrec_eval.ranking.rank_sums import at_cutoffs, best_sums, rank_weights, summed
from torchrec_eval.ranking.ratios import Ratio, as_row, per_capped_count, per_count


def mrr(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # 1 / the rank of the first relevant item within each cut-off, 0 without one. Under averaged ties its
    # expectation (the first hit's probability at each rank over the rank); with 0/1 hits the largest h_i / i up to
    # each cut-off, bit for bit what that sum picks (1 / i decreases), with no first-hit tensor
    if rt.tie_groups is not None:
        return summed(rt.first_hit, ks, "reciprocal")
    depth = min(max(ks), rt.depth)
    weighted = rt.hits[:, :depth] * rank_weights(depth, "reciprocal", 2.0, rt.hits.device)
    return weighted.amax(1, keepdim=True) if len(ks) == 1 else at_cutoffs(weighted.cummax(1).values, ks)


def arhr(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return summed(rt.hits, ks, "reciprocal")


def ncrr(rt: RankedTargets, ks: Sequence[int]) -> Ratio:
    # ARHR over its most with the query's relevant items, sum_{i <= min(R, k, list length)} 1 / i (cornac)
    return Ratio(arhr(rt, ks), best_sums(rt, ks, "reciprocal"))


def average_precision(rt: RankedTargets, ks: Sequence[int], normalizer: str = "min_k_r",
                      tie_rank: str = "position") -> Ratio:
    groups = rt.tie_groups  # None in the ranked form: every item has a rank of its own
    if tie_rank == "group_max" and groups is not None:
        return _average(rt, ks, _precision_at_group_end(rt, groups), normalizer)
    return _average(rt, ks, rt.hits_before_and_at, normalizer, "reciprocal")


def _precision_at_group_end(rt: RankedTargets, groups: TieGroups) -> Tensor:
    """[B, K] r_i times the precision at the end of rank i's tie group: every tied item takes its group's last
    rank and the hits through it (cornac's MAP), on the view averaged over tie orders (r_i = m / n)."""
    size, group_hits, offset = groups
    hits = rt.hits
    through_group = rt.cum_hits - (offset + 1) * hits + group_hits
    group_end = ranks(rt.depth, hits.device) + size - 1 - offset
    return hits * through_group / group_end


def average_recall(rt: RankedTargets, ks: Sequence[int], normalizer: str = "min_k_r") -> Ratio:
    return _average(rt, ks, per_count(rt.hits_before_and_at, rt.relevant_column), normalizer)


def _average(rt: RankedTargets, ks: Sequence[int], per_rank: Tensor, normalizer: str, weight: str = "one") -> Ratio:
    """sum_{i<=k} per_rank_i w_i / D, where per_rank already carries the relevance of rank i (0 where D is 0)."""
    total = summed(per_rank, ks, weight)
    if normalizer == "min_k_r":
        return per_capped_count(total, rt, ks)
    if normalizer == "r":
        return Ratio(total, rt.relevant_column)
    if normalizer == "hits":  # an expected number of hits under averaged ties may lie in (0, 1)
        return Ratio(total, hits_within(rt, ks))
    if normalizer == "min_list_r":  # LensKit: min(R, the list's length within k)
        return Ratio(total, torch.minimum(rt.relevant_column, listed_within(rt, ks)))
    return Ratio(total, as_row(ks, rt.gains))  # "k"
