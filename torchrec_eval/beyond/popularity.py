r"""Novelty, average popularity and serendipity: the recommended items against their training popularity.

Per query ``u`` with top-k list ``L_u`` (ids ``-1`` past a short list):

.. math::
    \mathrm{Novelty} = \frac{1}{|L_u|} \sum_{i \in L_u} -\log_2 p_i, \quad
    \mathrm{ARP} = \frac{1}{|L_u|} \sum_{i \in L_u} \mathrm{pop}_i, \quad
    \mathrm{Serendipity} = \frac{1}{k} \big|\{i \in L_u : \text{relevant}, i \notin \mathrm{Pop}_b\}\big|

Novelty and average popularity are the mean of a per-item table over the list
(:func:`mean_over_list` of :func:`self_information` or of the popularity itself); ``Pop_b`` is the
``b`` most popular items (:func:`popularity_rank` ``< b``).
"""

from __future__ import annotations

import torch
from torch import Tensor

COLD_ITEMS = ("least_popular", "one_user")


def self_information(popularity: Tensor, num_users: int | None, cold_items: str = "least_popular") -> Tensor:
    """Self-information ``-log2 p_i`` [num_items] of each item.

    ``p_i = pop_i / num_users`` with ``num_users`` (RecTools), else ``pop_i / sum(pop)`` (MS
    Recommenders). A popularity-0 (cold) item counts as the least popular observed item, or
    (``cold_items="one_user"``, RecTools) as an item one user interacted with.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.popularity import self_information
        >>> self_information(torch.tensor([2.0, 1.0, 1.0, 0.0]), None)
        tensor([1., 2., 2., 2.])
    """
    denominator = float(num_users) if num_users is not None else float(popularity.sum())
    floor = popularity[popularity > 0].min() if cold_items == "least_popular" else popularity.new_ones(())
    return -torch.log2(torch.where(popularity > 0, popularity, floor) / denominator)


def popularity_rank(popularity: Tensor) -> Tensor:
    """Position [num_items] of each item in the most-popular list (0 = most popular; ties: lower id first).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.popularity import popularity_rank
        >>> popularity_rank(torch.tensor([1.0, 5.0, 1.0, 9.0]))
        tensor([2, 1, 3, 0])
    """
    order = torch.sort(-popularity, stable=True).indices
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel())
    return rank


def mean_over_list(table: Tensor, ids: Tensor) -> tuple[Tensor, Tensor]:
    """Mean of ``table`` [num_items] over each list of ``ids`` [B, k] (float64 [B], 0 for an empty
    list) and whether the list is non-empty [B].

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.popularity import mean_over_list
        >>> mean_over_list(torch.tensor([4.0, 2.0, 1.0]), torch.tensor([[0, 1], [2, -1], [-1, -1]]))
        (tensor([3., 1., 0.], dtype=torch.float64), tensor([ True,  True, False]))
    """
    present = ids >= 0
    length = present.sum(1).to(torch.float64)
    total = (table.to(torch.float64)[ids.clamp(min=0)] * present).sum(1)
    return total / length.clamp(min=1), length > 0


def unexpected_hit_share(rank: Tensor, ids: Tensor, relevant: Tensor, k: int, baseline_size: int) -> Tensor:
    """Share of the ``k`` slots [B] (float64) holding a relevant item ranked ``>= baseline_size`` by
    popularity (``rank`` from :func:`popularity_rank`; ``ids`` and ``relevant`` [B, k]).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.popularity import unexpected_hit_share
        >>> rank = torch.tensor([0, 1, 2, 3])
        >>> unexpected_hit_share(rank, torch.tensor([[0, 2]]), torch.tensor([[True, True]]), 2, 2)
        tensor([0.5000], dtype=torch.float64)
    """
    unexpected = rank[ids.clamp(min=0)] >= baseline_size
    return (relevant & unexpected & (ids >= 0)).sum(1).to(torch.float64) / k
