r"""Coverage, Gini index and entropy of the item recommendation counts of a catalogue.

Each formula reads ``counts`` [G, N]: per group, ``c_i`` = the number of top-k lists that contain
item ``i`` of the ``N``-item catalogue, and returns one float64 value per group [G]:

.. math::
    \mathrm{Coverage} = \frac{|\{i : c_i > 0\}|}{N}, \quad
    \mathrm{Gini} = \frac{\sum_{j=1}^{N} (2j - N - 1)\, c_{(j)}}{N \sum_i c_i}, \quad
    H = -\sum_i p_i \log_b p_i, \; p_i = \frac{c_i}{\sum_j c_j}

A group without any recommendation gives NaN.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

ENTROPY_NORMALIZATIONS = ("none", "log_num_items", "distinct")


def coverage_from_counts(counts: Tensor) -> Tensor:
    """Share of the catalogue recommended at least once, per group (NaN for a group without any).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.concentration import coverage_from_counts
        >>> coverage_from_counts(torch.tensor([[1.0, 2.0, 0.0, 1.0, 0.0]], dtype=torch.float64))
        tensor([0.6000], dtype=torch.float64)
    """
    num_items = counts.shape[1]
    value = (counts > 0).sum(1).to(torch.float64) / num_items
    return torch.where(counts.sum(1) > 0, value, torch.full_like(value, float("nan")))


def gini_from_counts(counts: Tensor) -> Tensor:
    """Gini index of the counts sorted ascending, items never recommended counting 0 (RecBole GiniIndex).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.concentration import gini_from_counts
        >>> gini_from_counts(torch.tensor([[2.0, 1.0, 1.0, 0.0]], dtype=torch.float64))
        tensor([0.3750], dtype=torch.float64)
    """
    num_items = counts.shape[1]
    ascending = counts.sort(dim=1).values
    j = torch.arange(1, num_items + 1, dtype=torch.float64, device=counts.device)
    return ((2 * j - num_items - 1) * ascending).sum(1) / (num_items * counts.sum(1))


def entropy_from_counts(counts: Tensor, base: float, normalization: str) -> Tensor:
    """Shannon entropy of the share of recommendations of each item, in base ``base``.

    ``normalization``: ``"none"``; ``"log_num_items"`` divides the entropy in nats by ``ln N`` (and
    ignores ``base``); ``"distinct"`` divides by the number of distinct recommended items (RecBole
    ShannonEntropy), then converts to base ``base``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.concentration import entropy_from_counts
        >>> entropy_from_counts(torch.ones(1, 4, dtype=torch.float64), 2.0, "none")
        tensor([2.], dtype=torch.float64)
    """
    num_items = counts.shape[1]
    p = counts / counts.sum(1).unsqueeze(1)
    nats = -torch.special.xlogy(p, p).sum(1)
    if normalization == "log_num_items":
        return nats / math.log(num_items) if num_items > 1 else nats * 0
    if normalization == "distinct":
        nats = nats / (counts > 0).sum(1)
    return nats / math.log(base)
