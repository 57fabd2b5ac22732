r"""Intra-list diversity over item features or an item similarity, inter-list diversity over the lists.

Intra-list diversity of a list ``L_u`` is the mean over its pairs of ``1 - sim(i, j)``. With unit-normalised
item features ``f^`` it uses ``2 sum_{i<j} cos(f_i, f_j) = ||sum_i f^_i||^2 - sum_i ||f^_i||^2``, O(k d) per
query; with a similarity matrix it reads the list's ``k x k`` block.

Inter-list diversity is the mean over pairs of lists ``u < v`` of ``1 - |L_u & L_v| / sqrt(m_u m_v)``,
exact from two weighted item-count vectors ``s_i = sum_{u ∋ i} a_u`` and ``t_i = sum_{u ∋ i} a_u^2``
(``a_u = 1 / sqrt(m_u)``) and the number ``n`` of non-empty lists (see :mod:`torchrec_eval.beyond`).
"""

from __future__ import annotations

import torch
from torch import Tensor

SINGLE_ITEM = ("skip", "zero")
FEATURELESS = ("error", "nan")


def cooccurrence_similarity(interactions: Tensor) -> Tensor:
    r"""Item-item cosine similarity of co-occurrence in a training interaction matrix.

    .. math:: \mathrm{sim}(i, j) = \frac{\mathrm{count}(i, j)}{\sqrt{c_i \, c_j}}

    where ``count(i, j)`` is the number of users who interacted with both items and ``c_i`` the
    number who interacted with ``i`` (MS Recommenders' diversity similarity). Items nobody
    interacted with have similarity 0 to every item. Pass the result to
    :class:`IntraListDiversity` as ``item_similarity``.

    Args:
        interactions: ``[num_users, num_items]`` bool or 0/1 tensor (e.g.
            :func:`torchrec_eval.data.interactions.interaction_matrix` of the training split); other
            non-negative values are used as weights.

    Returns:
        ``[num_items, num_items]`` float64 similarity, 1 on the diagonal of interacted items.

    Raises:
        ValueError: if ``interactions`` is not a 2-D tensor of non-negative values.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import cooccurrence_similarity
        >>> train = torch.tensor([[1, 1, 0], [1, 0, 1], [1, 1, 0]], dtype=torch.bool)
        >>> cooccurrence_similarity(train)
        tensor([[1.0000, 0.8165, 0.5774],
                [0.8165, 1.0000, 0.0000],
                [0.5774, 0.0000, 1.0000]], dtype=torch.float64)
    """
    if not isinstance(interactions, Tensor) or interactions.ndim != 2 or interactions.is_complex():
        got = (
            f"shape {tuple(interactions.shape)}"
            if isinstance(interactions, Tensor)
            else type(interactions).__name__
        )
        raise ValueError(f"`interactions` must be a 2-D tensor [num_users, num_items], got {got}")
    matrix = interactions.to(torch.float64)
    if bool((matrix < 0).any()):
        raise ValueError(f"`interactions` must be >= 0, got a minimum of {float(matrix.min())}")
    counts = matrix.T @ matrix
    norm = counts.diagonal().sqrt()
    norm = torch.where(norm > 0, norm, torch.ones_like(norm))
    return counts / norm.unsqueeze(0) / norm.unsqueeze(1)


def unit_rows(features: Tensor, featureless: bool) -> Tensor:
    """``features`` [num_items, d] as float64 unit rows (a zero row stays 0); with ``featureless``, a row
    holding a NaN becomes all NaN (the item has no features, as in RecTools).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.diversity import unit_rows
        >>> unit_rows(torch.tensor([[3.0, 4.0], [0.0, 0.0], [1.0, float("nan")]]), True)
        tensor([[0.6000, 0.8000],
                [0.0000, 0.0000],
                [   nan,    nan]], dtype=torch.float64)
    """
    features = features.to(torch.float64)
    norm = features.norm(dim=1, keepdim=True)
    table = features / torch.where(norm > 0, norm, torch.ones_like(norm))
    if featureless:
        table[torch.isnan(table).any(1)] = float("nan")
    return table


def _feature_pairs(unit: Tensor, ids: Tensor, skip_unknown: bool) -> tuple[Tensor, Tensor]:
    present = ids >= 0
    rows = unit[ids.clamp(min=0)]
    if skip_unknown:  # an item with a NaN row has no features: it is left out of the list's pairs
        present = present & ~torch.isnan(rows).any(2)
        vectors = torch.where(present.unsqueeze(2), rows, torch.zeros((), dtype=rows.dtype, device=rows.device))
    else:
        vectors = rows * present.unsqueeze(2)
    summed = vectors.sum(1)
    m = present.sum(1).to(torch.float64)
    return (summed * summed).sum(1) - (vectors * vectors).sum((1, 2)), m * (m - 1)


def _similarity_pairs(similarity: Tensor, ids: Tensor, skip_unknown: bool) -> tuple[Tensor, Tensor]:
    present = ids >= 0
    safe = ids.clamp(min=0)
    block = similarity[safe.unsqueeze(2), safe.unsqueeze(1)]
    both = present.unsqueeze(2) & present.unsqueeze(1)
    both &= ~torch.eye(ids.shape[1], dtype=torch.bool, device=ids.device)
    if skip_unknown:  # a NaN similarity is unknown: the pair is left out
        known = both & ~torch.isnan(block)
        pair_sum = torch.where(known, block, torch.zeros((), dtype=block.dtype, device=block.device)).sum((1, 2))
        return pair_sum, known.sum((1, 2)).to(torch.float64)
    m = present.sum(1).to(torch.float64)
    return (block * both).sum((1, 2)), m * (m - 1)


def intra_list_diversity(
    table: Tensor, ids: Tensor, mode: str, skip_unknown: bool = False
) -> tuple[Tensor, Tensor]:
    """Mean pairwise distance ``1 - sim`` within each list of ``ids`` [B, k] (float64 [B], 0 without a pair)
    and the number of ordered pairs it averages [B].

    Args:
        table: float64 unit feature rows [num_items, d] (``mode="features"``, see :func:`unit_rows`) or a
            similarity matrix [num_items, num_items] (``mode="similarity"``).
        ids: item ids, ``-1`` past a short list.
        mode: ``"features"`` or ``"similarity"``.
        skip_unknown: leave out the pairs whose similarity is NaN (``featureless="nan"``).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.diversity import intra_list_diversity, unit_rows
        >>> unit = unit_rows(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), False)
        >>> intra_list_diversity(unit, torch.tensor([[0, 1, 2], [0, 2, -1]]), "features")
        (tensor([0.5286, 0.2929], dtype=torch.float64), tensor([6., 2.], dtype=torch.float64))
    """
    pairs_of = _feature_pairs if mode == "features" else _similarity_pairs
    pair_sum, pairs = pairs_of(table.to(torch.float64), ids, skip_unknown)
    return 1.0 - pair_sum / pairs.clamp(min=1), pairs


def inter_list_diversity_from_counts(weights: Tensor, squared_weights: Tensor, lists: Tensor) -> Tensor:
    """Mean cosine distance over the pairs of non-empty lists, per group [G], from ``s`` = ``weights``
    [G, N], ``t`` = ``squared_weights`` [G, N] and ``n`` = ``lists`` [G] (NaN with fewer than 2 lists).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.diversity import inter_list_diversity_from_counts
        >>> a = 2 ** -0.5  # two lists of 2 items sharing item 1
        >>> s = torch.tensor([[a, 2 * a, a]], dtype=torch.float64)
        >>> t = torch.tensor([[0.5, 1.0, 0.5]], dtype=torch.float64)
        >>> inter_list_diversity_from_counts(s, t, torch.tensor([2.0], dtype=torch.float64))
        tensor([0.5000], dtype=torch.float64)
    """
    value = 1.0 - (weights * weights - squared_weights).sum(1) / (lists * (lists - 1))
    return torch.where(lists >= 2, value, torch.full_like(value, float("nan")))
