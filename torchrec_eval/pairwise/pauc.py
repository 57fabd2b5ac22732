r"""Partial AUC at k (RecTools' ``PartialAUC``, pAUC@k): the AUC of every relevant item against the k
best-ranked non-relevant candidates of a query.

.. math:: \mathrm{pAUC@}k_q = \frac{1}{k\,R} \sum_{i\ \mathrm{rel}} \max(k - c_i, 0)

over the R relevant candidates of the query, :math:`c_i` the non-relevant candidates ranked above the
relevant item i: a relevant item above the first k non-relevant ones wins all k pairs, one below the
k-th wins none (RecTools 0.17 ``rectools/metrics/auc.py``: :math:`(k - \mathrm{fp\_cumsum})` summed
over the true positives ranked before the k-th false positive, over ``n_pos * k``).

Tied scores: the expected value over every order of the tied items. With :math:`a_i` non-relevant
candidates scored strictly above item i and :math:`n_i` tied with it, :math:`c_i` is uniform on
:math:`a_i, \dots, a_i + n_i`, so with :math:`m = \max(k - a_i, 0)`

.. math:: \mathbb{E}\max(k - c_i, 0) = \begin{cases} m - n_i / 2 & m > n_i \\
    \dfrac{m\,(m + 1)}{2\,(n_i + 1)} & m \le n_i \end{cases}

(the first case is a tied pair counting 1/2, as in AUC; the second is the tie group that holds the k-th
non-relevant candidate). Without ties it is RecTools' :math:`\max(k - c_i, 0)`.

Fewer than k non-relevant candidates: RecTools' formula still divides by k, as if the missing ones were
ranked below every relevant item. ``insufficient_handling`` (RecTools' argument) decides: ``"ignore"``
(default) scores the query so, ``"exclude"`` leaves it out of the mean, ``"raise"`` raises. RecTools calls
a user insufficient when its list misses a test positive and holds fewer than k negatives; in a full
ranking every relevant candidate is ranked and the candidates are all the query's items, so here a
query is insufficient when it has fewer than k non-relevant candidates.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
from torch import Tensor

from torchrec_eval.pairwise.empty_queries import raise_for_empty

#: ``insufficient_handling`` of pAUC@k (RecTools' values): a query with fewer than k non-relevant candidates
InsufficientHandling = Literal["ignore", "exclude", "raise"]
INSUFFICIENT_HANDLINGS: tuple[InsufficientHandling, ...] = get_args(InsufficientHandling)


def check_insufficient_handling(value: object) -> None:
    """``insufficient_handling`` of pAUC@k: ``"ignore"``, ``"exclude"`` or ``"raise"``."""
    if not isinstance(value, str) or value not in INSUFFICIENT_HANDLINGS:
        raise ValueError(f"`insufficient_handling` must be one of {INSUFFICIENT_HANDLINGS}, got {value!r}")


def expected_credit(above: Tensor, tied: Tensor, k: int) -> Tensor:
    """E max(k - c, 0) of relevant items (float64, any shape) with ``above`` non-relevant candidates scored
    strictly above and ``tied`` scored equal, c uniform on above..above + tied (every order of the ties)."""
    m = (k - above).clamp(min=0)
    return torch.where(m > tied, m - tied / 2, m * (m + 1) / (2 * (tied + 1)))


def pauc_columns(credit: Tensor, relevant_count: Tensor, num_valid: Tensor, k: int, action: str,
                 insufficient: str) -> tuple[Tensor, Tensor]:
    """Per query (float64 [B] each): pAUC@k and whether it counts in the mean (1) or not (0).

    ``credit``: the sum over the query's relevant items of :func:`expected_credit`. A query without a
    relevant item follows ``action`` (``empty_target_action``: skipped, ``"neg"`` 0, ``"pos"`` 1, ``"error"``
    raises); one with fewer than k non-relevant candidates follows ``insufficient`` (``"ignore"``: scored,
    ``"exclude"``: not counted, ``"raise"``: a ValueError).
    """
    has_relevant = relevant_count > 0
    if action == "error":
        raise_for_empty(~has_relevant, "no relevant item")
    short = has_relevant & (num_valid - relevant_count < k)
    if insufficient == "raise" and bool(short.any()):
        row = int(short.nonzero()[0])
        raise ValueError(f"Query {row} of the batch has {int(num_valid[row] - relevant_count[row])} non-relevant "
                         f"candidates, fewer than k={k} (pauc@{k}), and `insufficient_handling` is 'raise'; "
                         "pass 'ignore' to score it or 'exclude' to leave it out")
    value = torch.where(has_relevant, credit / (k * relevant_count).clamp(min=1), 0.0)
    if action == "pos":
        value = torch.where(has_relevant, value, 1.0)
    counted = has_relevant.to(torch.float64) if action == "skip" else torch.ones_like(relevant_count)
    if insufficient == "exclude":
        counted = torch.where(short, 0.0, counted)
        value = torch.where(short, 0.0, value)
    return value, counted
