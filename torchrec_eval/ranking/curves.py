"""The retrieval precision-recall curve over the cut-offs 1..K (torchmetrics'): its points are the means over
queries of Precision@k and Recall@k, the top-k member's own values; here, reading a point off the curve."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int, is_number

#: a top-k request: (family, cut-offs, the family's options)
Request = tuple[str, list[int], dict[str, Any]]


def curve_requests(max_k: object, adaptive_k: object) -> list[Request]:
    """The top-k families of the curve's points: Precision@k and Recall@k for k = 1..``max_k``; precision over
    min(k, candidates) where ``adaptive_k`` (torchmetrics' adaptive k: a query of n < k candidates retrieves
    n), else over k."""
    depth = check_int("max_k", max_k, 1, reason="the curve's cut-offs 1..max_k: its state's size")
    if not isinstance(adaptive_k, bool):
        raise ValueError(f"`adaptive_k` must be True or False, got {adaptive_k!r}")
    ks = list(range(1, depth + 1))
    return [("precision", ks, {"denominator": "retrieved" if adaptive_k else "k"}), ("recall", ks, {})]


def curve_points(values: dict[str, Tensor], max_k: int) -> tuple[Tensor, Tensor, Tensor]:
    """(precision [..., K], recall [..., K], the cut-offs 1..K) from the values ``"precision@k"`` and
    ``"recall@k"`` [...] of :func:`curve_requests`."""
    precision = torch.stack([values[f"precision@{k}"] for k in range(1, max_k + 1)], dim=-1)
    recall = torch.stack([values[f"recall@{k}"] for k in range(1, max_k + 1)], dim=-1)
    return precision, recall, torch.arange(1, max_k + 1, device=precision.device)


def check_min_precision(min_precision: object) -> float:
    if not is_number(min_precision) or not 0 <= min_precision <= 1:
        raise ValueError(f"`min_precision` must be a number in [0, 1], got {min_precision!r}")
    return float(min_precision)


def recall_at_fixed_precision(precision: Tensor, recall: Tensor, min_precision: float) -> tuple[Tensor, Tensor]:
    r"""The most recall the curve reaches at a precision of at least ``min_precision``, and the cut-off that
    reaches it (torchmetrics' ``RetrievalRecallAtFixedPrecision``).

    .. math:: k^* = \max \operatorname{arg\,max}_{k : P@k \ge p} R@k

    the largest such k among equal recalls, as torchmetrics' ``max`` over (recall, k) pairs. Where no point
    reaches ``min_precision``, or the best recall is 0, the recall is 0 and the cut-off K (torchmetrics').

    Args:
        precision: [..., K] mean Precision@k for k = 1..K (NaN: no query counted; it reaches no precision).
        recall: [..., K] mean Recall@k.
        min_precision: p in [0, 1].

    Returns:
        (recall [...] float64, cut-off [...] int64).

    Example:
        >>> import torch
        >>> recall_at_fixed_precision(torch.tensor([1.0, 0.5, 0.67]), torch.tensor([0.5, 0.5, 1.0]), 0.6)
        (tensor(1.), tensor(3))
        >>> recall_at_fixed_precision(torch.tensor([1.0, 0.5, 0.67]), torch.tensor([0.5, 0.5, 1.0]), 0.9)
        (tensor(0.5000), tensor(1))
    """
    depth = recall.shape[-1]
    reached = torch.where(precision >= min_precision, recall, float("-inf"))
    last_best = depth - 1 - reached.flip(-1).argmax(-1, keepdim=True)  # the largest k among equal recalls
    best = reached.gather(-1, last_best).squeeze(-1)
    found = best > 0
    cutoff = torch.where(found, last_best.squeeze(-1) + 1, depth)
    return torch.where(found, best, 0.0).to(recall.dtype), cutoff
