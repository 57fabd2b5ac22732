"""The entropy of the categories in each list: CategoryEntropy and RankBiasedEntropy (LensKit's ``entropy`` and
``rank_biased_entropy``), thin classes over the beyond registry's formulas, as :mod:`~torchrec_eval.metrics.beyond`'s."""

from __future__ import annotations

from typing import Unpack

from torch import Tensor

from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.beyond import IntOrSeq, _Beyond

__all__ = ["CategoryEntropy", "RankBiasedEntropy"]


class CategoryEntropy(_Beyond):
    r"""CategoryEntropy@k: the entropy in bits of the categories of each list, averaged over non-empty lists
    (LensKit's ``entropy``).

    .. math:: c_j = \sum_{i \in L_u} C_{i j}, \quad p_j = \frac{c_j + s}{\sum_l (c_l + s)}, \quad
        \mathrm{CategoryEntropy@k} = \operatorname{mean}_{u : |L_u| > 0} -\sum_j p_j \log_2 p_j

    Args:
        k: cut-off(s).
        item_categories: ``[num_items, categories]`` memberships (one-hot or multi-hot) or weights >= 0.
        smoothing: s, added to every category's count (0 by default; LensKit adds 1e-6, and its preset
            sets it).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_categories`` or ``smoothing``, an item id out of range, and bad
            input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import CategoryEntropy
        >>> genres = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
        >>> metric = CategoryEntropy(k=3, item_categories=genres)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1, 2], [0, 2, -1]]), target_ids=torch.tensor([[0], [3]]))
        >>> metric.compute()  # (H(2/3, 1/3) + 0) / 2
        tensor(0.4591, dtype=torch.float64)
    """

    family = "category_entropy"

    def __init__(
        self, k: IntOrSeq = 10, *, item_categories: Tensor, smoothing: float | None = None,
        **kwargs: Unpack[MetricArguments],
    ) -> None:
        options: dict[str, object] = {"item_categories": item_categories}
        if smoothing is not None:
            options["smoothing"] = smoothing
        super().__init__(k, options, **kwargs)


class RankBiasedEntropy(_Beyond):
    r"""RankBiasedEntropy@k: :class:`CategoryEntropy` with the item at rank r weighted :math:`p^{r-1}` (LensKit's
    ``rank_biased_entropy``, its ``GeometricRankWeight``).

    Args:
        k: cut-off(s).
        item_categories: ``[num_items, categories]`` memberships or weights >= 0.
        patience: p in (0, 1), 0.85 by default (LensKit's).
        smoothing: as in :class:`CategoryEntropy`.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_categories``, ``patience`` or ``smoothing``, an item id out of
            range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import RankBiasedEntropy
        >>> genres = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
        >>> metric = RankBiasedEntropy(k=3, item_categories=genres, patience=0.5)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1, 2]]), target_ids=torch.tensor([[0]]))
        >>> metric.compute()  # H(1.25 / 1.75, 0.5 / 1.75)
        tensor(0.8631, dtype=torch.float64)
    """

    family = "rank_biased_entropy"

    def __init__(
        self, k: IntOrSeq = 10, *, item_categories: Tensor, patience: float | None = None,
        smoothing: float | None = None, **kwargs: Unpack[MetricArguments],
    ) -> None:
        options: dict[str, object] = {"item_categories": item_categories}
        options.update({name: value for name, value in (("patience", patience), ("smoothing", smoothing))
                        if value is not None})
        super().__init__(k, options, **kwargs)
