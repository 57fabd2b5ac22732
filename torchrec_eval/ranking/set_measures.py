"""Formulas of the top k as a set (trec_eval's set measures on a list cut at k): its size, its relevant
items and their F-measure; and the query's relevant items, which no cut-off changes (NumRel)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.ranking.hit_counts import hits_within, listed_within
from torchrec_eval.ranking.ratios import divide


def num_ret(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return listed_within(rt, ks)


def num_rel(rt: RankedTargets, ks: Sequence[int | None]) -> Tensor:
    return rt.relevant_column.expand(-1, len(ks))


def num_rel_ret(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return hits_within(rt, ks)


def setf(rt: RankedTargets, ks: Sequence[int], beta: float = 1.0) -> Tensor:
    # (1 + b^2) P R / (b^2 P + R) with P = h / num_ret, R = h / R: (1 + b^2) h / (b^2 R + num_ret); 0 without hits
    squared = beta * beta
    return divide((1 + squared) * hits_within(rt, ks), squared * rt.relevant_column + listed_within(rt, ks))
