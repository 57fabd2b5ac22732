"""How the recommendations spread over popular and unpopular items: LongTailShare (APLT, RecBole's
TailPercentage), LongTailCount (ACLT) and ExposureGini (LensKit), thin classes over the beyond registry's
formulas, as :mod:`~torchrec_eval.metrics.beyond`'s."""

from __future__ import annotations

from typing import Unpack

from torch import Tensor

from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.beyond import IntOrSeq, _Beyond

__all__ = ["ExposureGini", "LongTailCount", "LongTailShare"]


class _OfTheLongTail(_Beyond):
    """A family of the long tail of ``item_popularity`` (by ``head_share`` or ``tail_ratio``)."""

    def __init__(
        self, k: IntOrSeq = 10, *, item_popularity: Tensor, head_share: float | None = None,
        tail_ratio: float | None = None, **kwargs: Unpack[MetricArguments],
    ) -> None:
        options = {"item_popularity": item_popularity, "head_share": head_share, "tail_ratio": tail_ratio}
        super().__init__(k, options, **kwargs)


class LongTailShare(_OfTheLongTail):
    r"""LongTailShare@k: the share of each list that is long-tail items, averaged over non-empty lists (APLT,
    Abdollahpouri et al. 2017; RecBole's TailPercentage).

    .. math:: \mathrm{LongTailShare@k} = \operatorname{mean}_{u : |L_u| > 0}\; \frac{|L_u \cap T|}{|L_u|}

    The tail T: the items outside the short head, the most popular items, in order, until they hold
    ``head_share`` of all interactions (0.8 by default, Elliot's); or RecBole's ``tail_ratio``: a count
    above 1 (the items seen at most that often) or a share in (0, 1] of the seen items, least popular first.

    Args:
        k: cut-off(s).
        item_popularity: ``[num_items]`` training interactions per item.
        head_share: the short head's share of the interactions, in [0, 1].
        tail_ratio: RecBole's ``tail_ratio`` instead (not with ``head_share``); a popularity-0 item is not
            in its tail, as RecBole counts only the items seen in training.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_popularity``, ``head_share`` or ``tail_ratio`` (or both), an item
            id out of range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import LongTailShare
        >>> popularity = torch.tensor([50.0, 30.0, 10.0, 6.0, 4.0, 0.0])  # the head: items 0 and 1
        >>> metric = LongTailShare(k=3, item_popularity=popularity)
        >>> metric.update(ranked_ids=torch.tensor([[0, 2, 5], [1, 3, -1]]), target_ids=torch.tensor([[0], [3]]))
        >>> metric.compute()  # (2/3 + 1/2) / 2
        tensor(0.5833, dtype=torch.float64)
    """

    family = "long_tail_share"


class LongTailCount(_OfTheLongTail):
    r"""LongTailCount@k: the long-tail items in each list, averaged over non-empty lists (ACLT, Abdollahpouri
    et al. 2019); the tail as in :class:`LongTailShare`.

    .. math:: \mathrm{LongTailCount@k} = \operatorname{mean}_{u : |L_u| > 0}\; |L_u \cap T|

    Args:
        k: cut-off(s).
        item_popularity: ``[num_items]`` training interactions per item.
        head_share, tail_ratio: the tail, as in :class:`LongTailShare`.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_popularity``, ``head_share`` or ``tail_ratio`` (or both), an item
            id out of range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import LongTailCount
        >>> popularity = torch.tensor([50.0, 30.0, 10.0, 6.0, 4.0, 0.0])
        >>> metric = LongTailCount(k=3, item_popularity=popularity)
        >>> metric.update(ranked_ids=torch.tensor([[0, 2, 5], [1, 3, -1]]), target_ids=torch.tensor([[0], [3]]))
        >>> metric.compute()
        tensor(1.5000, dtype=torch.float64)
    """

    family = "long_tail_count"


class ExposureGini(_Beyond):
    r"""ExposureGini@k: the Gini index of the exposure the catalogue's items get (LensKit's ``ExposureGini``);
    lower is better.

    .. math:: e_i = \sum_u \sum_{r \le k} p^{r - 1} \mathbb{1}[L_u(r) = i], \qquad
        \mathrm{ExposureGini@k} = \frac{\sum_j (2j - N - 1)\, e_{(j)}}{N \sum_i e_i}

    with the exposures sorted ascending, an item never recommended at 0: :class:`GiniIndex` with each
    recommendation weighted by the attention its rank gets (``patience`` p, LensKit's
    ``GeometricRankWeight``).

    Args:
        k: cut-off(s).
        num_items: the catalogue size N.
        patience: p in (0, 1), 0.85 by default (LensKit's).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``num_items`` or ``patience``, an item id out of range, and bad input in
            ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import ExposureGini
        >>> metric = ExposureGini(k=3, num_items=5)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1, 2], [0, 3, -1]]), target_ids=torch.tensor([[0], [3]]))
        >>> metric.compute()  # exposures 2, 0.85, 0.7225, 0.85, 0
        tensor(0.3733, dtype=torch.float64)
    """

    family = "exposure_gini"

    def __init__(
        self, k: IntOrSeq = 10, *, num_items: int, patience: float | None = None, **kwargs: Unpack[MetricArguments],
    ) -> None:
        options = {"num_items": num_items} if patience is None else {"num_items": num_items, "patience": patience}
        super().__init__(k, options, **kwargs)
