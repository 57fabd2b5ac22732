r"""FCP, the fraction of concordant pairs (Koren & Sill 2011), pooled over queries.

.. math:: \mathrm{FCP} = \frac{\sum_q n_c(q)}{\sum_q n_c(q) + \sum_q n_d(q)}

over the pairs of valid candidates of a query with different grades: concordant when the higher grade
has the higher score, discordant when it has the lower score, neither when the scores are equal
(counted by :mod:`~torchrec_eval.pairwise.pairs`).
"""

from __future__ import annotations

from torch import Tensor


def fcp_columns(concordant: Tensor, discordant: Tensor) -> tuple[Tensor, Tensor]:
    """Numerator and denominator per query (float64 [B]): n_c and n_c + n_d."""
    return concordant, concordant + discordant
