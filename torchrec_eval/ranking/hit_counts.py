"""Formulas over the number of relevant items in the top k: Precision, Recall, F1 and HitRate; and over the
non-relevant ones: FallOut."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.pipeline.batch import once_per_view
from torchrec_eval.ranking.rank_sums import at_cutoffs, summed
from torchrec_eval.ranking.ratios import Ratio, as_row, divide, per_capped_count, quotient


def hits_within(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)] relevant items within each cut-off (read once per batch: several families use it)."""
    return once_per_view(rt, "_hits_within_" + "_".join(map(str, ks)), lambda: at_cutoffs(rt.cum_hits, ks))


def listed_within(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)] the list's length within each cut-off, min(k, candidates)."""
    return torch.minimum(as_row(ks, rt.gains), rt.num_candidates.unsqueeze(1))


def precision(rt: RankedTargets, ks: Sequence[int], denominator: str = "k") -> Ratio:
    hits = hits_within(rt, ks)
    if denominator == "k":
        return Ratio(hits, as_row(ks, rt.gains))
    if denominator == "retrieved":
        return Ratio(hits, listed_within(rt, ks))
    return per_capped_count(hits, rt, ks)  # "min_k_r"


def recall(rt: RankedTargets, ks: Sequence[int], denominator: str = "r") -> Ratio:
    if denominator == "min_k_r":
        return per_capped_count(hits_within(rt, ks), rt, ks)
    return Ratio(hits_within(rt, ks), rt.relevant_column)  # 0 hits where R = 0


def f1(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    p, r = quotient(precision(rt, ks)), quotient(recall(rt, ks))
    return divide(2 * p * r, p + r)


def fallout(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # the non-relevant items of the top k over the query's non-relevant candidates (a query without one is
    # resolved by ``empty_target_action``: its family's registry entry says so)
    listed = listed_within(rt, ks)
    return divide(listed - hits_within(rt, ks), (rt.num_candidates - rt.num_relevant).unsqueeze(1))


def hitrate(rt: RankedTargets, ks: Sequence[int]) -> Tensor | Ratio:
    if rt.tie_groups is not None:  # the probability that a relevant item lies within k
        return summed(rt.first_hit, ks)
    hits = hits_within(rt, ks)  # hits / hits: 1 with a hit, 0 without (divide's rule), with no op of its own
    return Ratio(hits, hits)
