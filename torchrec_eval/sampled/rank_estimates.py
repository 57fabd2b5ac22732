r"""Per-query rank estimates, where one transition matrix :math:`P(s \mid r)` does not hold for every query.

The corrections and EM of :mod:`~torchrec_eval.sampled.estimators` assume that every query's negatives come
from one catalogue of n items, uniformly. Two common settings break that, and there each query's own rank
estimate :math:`\hat r` still holds, with the metric taken at it (:math:`M(\hat r)`, a per-query value):

* **a catalogue size per query** (n_q: the items a user has not interacted with), uniform draws:
  :math:`\hat r = 1 + (n_q - 1)(s - 1) / m`, unbiased for r since (s - 1) / m is for p;
* **popularity-sampled negatives** (RecBole's ``popNNN``: each negative drawn with replacement with a known
  probability :math:`q_j`): :math:`\hat r = 1 + \frac{1}{m} \sum_{i \le m,\ j_i \text{ above}} 1 / q_{j_i}`,
  Horvitz-Thompson's estimate of the number of items above, unbiased for r - 1 whatever the probabilities.

Ties follow ``ties`` as in the histogram: under ``"average"`` the uniform estimate is averaged over the
ranks the tie spans, and the popularity estimate counts each tied negative half (its mean over the tie's
orders; the metric is then taken at that mean). The popularity estimate is not capped at n_q: a query that
drew a rare item above its held-out one can estimate a rank beyond the catalogue (its AUC below 0), and
capping it would bias the mean, which is unbiased as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.sampled.rank_metrics import rank_metric

__all__ = ["popularity_values", "uniform_values"]


def uniform_values(requests: Sequence[tuple[str, int | None]], mass: Tensor, num_items: Tensor,
                   num_negatives: int) -> Tensor:
    """[B, K] each query's value of each (family, k): the metric at :math:`1 + (n_q - 1)(s - 1) / m` under
    each query's distribution of sampled ranks ``mass`` [B, m + 1] (a 1, a tie's spread, its held-out
    items' shares: :func:`~torchrec_eval.sampled.ranks.rank_mass`); ``num_items`` [B] is n_q.

    Example:
        >>> import torch
        >>> mass = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]], dtype=torch.float64)  # s = 1; s = 2 or 3
        >>> uniform_values([("recall", 11)], mass, torch.tensor([1000, 21]), num_negatives=2)
        tensor([[1.0000],
                [0.5000]], dtype=torch.float64)
    """
    s = torch.arange(num_negatives + 1, device=mass.device, dtype=torch.float64)  # s - 1
    n = num_items.to(torch.float64).unsqueeze(1)
    ranks = 1 + (n - 1) * s / num_negatives  # [B, m + 1]: s = 2 of n = 21 is rank 11
    return torch.stack([(mass * rank_metric(family, ranks, k, n)).sum(1) for family, k in requests], dim=1)


def popularity_values(requests: Sequence[tuple[str, int | None]], above: Tensor, tied: Tensor, share: Tensor,
                      num_items: Tensor, num_negatives: int) -> Tensor:
    """[B, K] each query's value of each (family, k) at Horvitz-Thompson's rank estimate
    :math:`1 + (\\text{above} + \\text{tied}) / m`, where ``above`` and ``tied`` [B, P] are the sums of
    :math:`1 / q_j` over the negatives above each held-out item and over its tied negatives counted by the
    tie rule; weighted by ``share`` [B, P]; ``num_items`` [B] is n_q.

    Example:
        >>> import torch
        >>> one = torch.ones(1, 1, dtype=torch.float64)
        >>> popularity_values([("mrr", None)], torch.tensor([[40.0]]), torch.zeros(1, 1, dtype=torch.float64),
        ...                   one, torch.tensor([1000]), num_negatives=20)  # 2 items above: rank 3
        tensor([[0.3333]], dtype=torch.float64)
    """
    n = num_items.to(torch.float64).unsqueeze(1)
    ranks = 1 + (above + tied) / num_negatives  # [B, P]
    return torch.stack([(share * rank_metric(family, ranks, k, n)).sum(1) for family, k in requests], dim=1)
