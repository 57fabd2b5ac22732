r"""MPR: the mean percentile rank of the relevant items, 0 = top, 100 = bottom (Hu et al. 2008).

.. math:: \mathrm{pr} = 100 \cdot \frac{\mathrm{rank} - 1}{N - 1}

rank: 1-based among the N valid candidates by descending score, the mean rank of its tie group for
tied scores; pr = 0 when N = 1. Summed over the relevant items of a query it is
:math:`100\,(R N - A) / (N - 1)` with A their ascending rank sum (:mod:`~torchrec_eval.pairwise.ranks`).
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
from torch import Tensor

from torchrec_eval.pairwise.empty_queries import raise_for_empty

#: ``average`` of MPR: over every relevant item of the batch, or over queries of each query's mean
MPRAverage = Literal["pooled", "query"]
AVERAGES: tuple[MPRAverage, ...] = get_args(MPRAverage)


def mpr_columns(relevant_count: Tensor, rank_sum: Tensor, num_valid: Tensor, action: str,
                average: str) -> tuple[Tensor, Tensor]:
    """Numerator and denominator per query (float64 [B]).

    ``average="pooled"``: the sum of the percentile ranks over the count of relevant items (a query
    without one adds nothing). ``"query"``: the query's mean, counted once; a query without a relevant
    item follows ``action`` (``empty_target_action``: skipped, ``"neg"`` 100, ``"pos"`` 0).
    """
    has_relevant = relevant_count > 0
    if action == "error":
        raise_for_empty(~has_relevant, "no relevant item")
    # sum over the relevant items of 100 (rank from the top - 1) / (N_valid - 1)
    percent = torch.where(num_valid > 1, 100 * (relevant_count * num_valid - rank_sum)
                          / (num_valid - 1).clamp(min=1), 0.0)
    if average == "pooled":
        return percent, relevant_count
    mean = torch.where(has_relevant, percent / relevant_count.clamp(min=1), 0.0)
    if action in ("neg", "pos"):  # a failed query ranks its (absent) items last: 100
        mean = torch.where(has_relevant, mean, 100.0 if action == "neg" else 0.0)
    return mean, has_relevant.to(torch.float64) if action == "skip" else torch.ones_like(relevant_count)
