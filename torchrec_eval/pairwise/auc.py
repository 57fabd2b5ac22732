r"""AUC per query from its rank sums (Mann-Whitney), and its weight in the mean over queries.

.. math:: \mathrm{AUC}_q = \frac{A - R(R+1)/2}{R\,(N-R)}

over the N valid candidates of the query, R of them relevant, A the sum of the ascending mid-ranks of
the relevant ones (:mod:`~torchrec_eval.pairwise.ranks`): a tied (relevant, non-relevant) pair counts 1/2.
With a tie credit c other than 1/2 (cornac: 0), the pairs W ordered strictly right give the tied ones,
T = 2 (U - W), and the AUC is (W + c T) / (R (N - R)).
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pairwise.empty_queries import raise_for_empty


def auc_columns(relevant_count: Tensor, rank_sum: Tensor, num_valid: Tensor, action: str,
                tie_credit: float = 0.5, strict_wins: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Per query (float64 [B] each): the AUC and whether it counts in the mean (1) or not (0); ``strict_wins``
    (the pairs ordered strictly right) is needed for a ``tie_credit`` other than 1/2.

    AUC is defined where 0 < R < N; elsewhere ``action`` (``empty_target_action``) decides: ``"skip"``
    counts the query 0 times, ``"neg"`` scores it 0 and ``"pos"`` 1 (counted once), ``"error"`` raises.
    """
    negatives = num_valid - relevant_count
    defined = (relevant_count > 0) & (negatives > 0)
    if action == "error":
        raise_for_empty(~defined, "no relevant or no non-relevant candidate (AUC is undefined)")
    pairs = relevant_count * negatives
    wins = rank_sum - relevant_count * (relevant_count + 1) / 2
    if strict_wins is not None:  # the tied pairs, 2 (U - W), count tie_credit each instead of 1/2
        wins = strict_wins + tie_credit * 2 * (wins - strict_wins)
    auc = torch.where(defined, wins / pairs.clamp(min=1), 0.0)
    if action == "pos":
        auc = torch.where(defined, auc, 1.0)
    counted = defined.to(torch.float64) if action == "skip" else torch.ones_like(relevant_count)
    return auc, counted
