"""Formulas of a user who scans the list from the top and stops: ERR (stops at a satisfying item) and RBP
(goes on to the next rank with probability p)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.ranking.rank_sums import best_sums, summed
from torchrec_eval.ranking.ratios import divide


def err(rt: RankedTargets, ks: Sequence[int], max_grade: float = 4.0) -> Tensor:
    # the item at rank i satisfies the user with probability s_i = (2^g_i - 1) / 2^max_grade (Chapelle et
    # al. 2009, gdeval); the user reaches rank i if no item above did, and stops there with 1 / i utility
    satisfied = (torch.exp2(rt.gains) - 1) / 2.0**max_grade
    unsatisfied = torch.cumprod(1 - satisfied, dim=1)
    reached = torch.cat([torch.ones_like(unsatisfied[:, :1]), unsatisfied[:, :-1]], dim=1)
    return summed(satisfied * reached, ks, "reciprocal")


def rbp(rt: RankedTargets, ks: Sequence[int], p: float = 0.8, normalize: bool = False) -> Tensor:
    # (1 - p) sum_{i<=k} r_i p^(i-1) (Moffat & Zobel 2008); normalize: over the most the query's relevant
    # items reach, sum_{i <= min(R, k, list length)} p^(i-1) (LensKit's normalize=True)
    total = summed(rt.hits, ks, "geometric", p)
    return divide(total, best_sums(rt, ks, "geometric", p)) if normalize else (1 - p) * total
