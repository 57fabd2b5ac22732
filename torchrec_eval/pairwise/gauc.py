r"""GAUC: the per-query AUC weighted by R, the query's number of relevant items (RecBole).

.. math:: \mathrm{GAUC} = \sum_q R_q\, \mathrm{AUC}_q \Big/ \sum_q R_q

A query with R = 0 weighs nothing, whatever ``empty_target_action`` gave its AUC.
"""

from __future__ import annotations

from torch import Tensor


def gauc_columns(auc: Tensor, counted: Tensor, relevant_count: Tensor) -> tuple[Tensor, Tensor]:
    """Numerator and denominator per query (float64 [B]) from :func:`~torchrec_eval.pairwise.auc.auc_columns`."""
    return auc * relevant_count, counted * relevant_count
