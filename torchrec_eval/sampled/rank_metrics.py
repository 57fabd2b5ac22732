r"""Each top-k family as a function of the rank r of the one relevant item of an evaluation instance.

With one relevant item per instance (leave-one-out, sampled evaluation): HitRate@k = Recall@k =
:math:`1[r \le k]`, Precision@k = :math:`1[r \le k] / k`, MRR@k = AP@k = :math:`1[r \le k] / r`,
NDCG@k = :math:`1[r \le k] / \log_2(r + 1)` (no cut-off: k = None), and AUC = (N - r) / (N - 1) over the
N candidates of the ranking: n for the full catalogue, m + 1 against m sampled negatives. r may be
real-valued (K&R's rank estimate), so every function is defined for real r >= 1.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["FAMILIES", "rank_metric"]

#: the families that are functions of the rank of one relevant item
FAMILIES = ("hitrate", "recall", "precision", "mrr", "map", "ndcg", "auc")


def rank_metric(family: str, ranks: Tensor, k: int | None, size: int | Tensor) -> Tensor:
    """The value of ``family`` at cut-off ``k`` (None: no cut-off) for relevant items at ``ranks`` (float64,
    any shape) in rankings of ``size`` candidates (an int, or a tensor that broadcasts with ``ranks``).

    Example:
        >>> import torch
        >>> rank_metric("ndcg", torch.tensor([1.0, 3.0, 11.0]), 10, 100)
        tensor([1.0000, 0.5000, 0.0000], dtype=torch.float64)
    """
    if family not in FAMILIES:
        raise ValueError(f"`family` must be one of {FAMILIES} (a function of the rank of one relevant item), "
                         f"got {family!r}")
    if family == "auc" and k is not None:
        raise ValueError(f"`k`: AUC ranks every candidate and takes no cut-off, got k={k!r}")
    if family in ("hitrate", "recall", "precision") and k is None:
        raise ValueError(f"`k`: {family} needs a cut-off, got k={k!r}")
    r = ranks.to(torch.float64)
    if family == "auc":
        return (size - r) / (size - 1)
    within = torch.ones_like(r) if k is None else (r <= k).to(torch.float64)
    if family in ("hitrate", "recall"):
        return within
    if family == "precision":
        return within / float(k or 1)
    if family in ("mrr", "map"):
        return within / r
    return within / torch.log2(r + 1)  # ndcg
