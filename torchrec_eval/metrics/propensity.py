"""Propensity-scored precision and NDCG (pyxclib's ``psprecision`` and ``psndcg``), thin classes over the beyond
registry's formulas (:mod:`torchrec_eval.beyond.propensity`), as :mod:`~torchrec_eval.metrics.beyond`'s."""

from __future__ import annotations

from typing import Unpack

from torch import Tensor

from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.beyond import IntOrSeq, _Beyond

__all__ = ["PSP", "PSnDCG"]


class _PropensityScored(_Beyond):
    """A family that weighs each relevant item by its ``inverse_propensity``."""

    def __init__(self, k: IntOrSeq = 5, *, inverse_propensity: Tensor, **kwargs: Unpack[MetricArguments]) -> None:
        super().__init__(k, {"inverse_propensity": inverse_propensity}, **kwargs)


class PSP(_PropensityScored):
    r"""PSP@k, propensity-scored precision (Jain, Prabhu and Varma, KDD 2016), normalised as pyxclib's
    ``psprecision``: the relevant items of each top k weighted by their inverse propensities, over the most
    the queries' relevant items reach in k slots, both summed over queries.

    .. math:: \mathrm{PSP@k} = \frac{\sum_q \sum_{j \le k} r_{q,j} w_{q,j}}{\sum_q \sum_{j \le k} w^*_{q,j}}

    with :math:`w^*_q` the weights of q's relevant candidates, descending. A tail item found counts more
    than a head item; a query without a relevant item adds nothing. The value is a ratio of sums (as
    pyxclib), not a mean over queries: ``per_query`` gives each query's own ratio, and no interval.

    Args:
        k: cut-off(s) (5 by default, the XML repository's largest).
        inverse_propensity: ``[num_items]`` weights >= 0: :func:`~torchrec_eval.beyond.inverse_propensity`
            of the training counts, or your own.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``inverse_propensity``, an item id out of its range, and bad input in
            ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import PSP
        >>> weights = torch.tensor([1.0, 4.0, 2.0, 3.0])  # item 1 is the rarest
        >>> metric = PSP(k=2, inverse_propensity=weights)
        >>> metric.update(torch.tensor([[0.9, 0.1, 0.8, 0.2]]), torch.tensor([[1, 1, 0, 1]]))
        >>> metric.compute()  # found item 0 (1.0) of the best 4.0 + 3.0
        tensor(0.1429, dtype=torch.float64)
    """

    family = "psp"


class PSnDCG(_PropensityScored):
    r"""PSnDCG@k, propensity-scored NDCG, normalised as pyxclib's ``psndcg``: :class:`PSP`'s weights discounted
    by 1 / log2(j + 1), each query's sums divided by its binary ideal DCG of min(R, k) items, then the ratio of
    the queries' sums.

    .. math:: \mathrm{PSnDCG@k} = \frac{\sum_q \mathrm{DCG}_w(q) / \mathrm{IDCG}_{\min(R_q, k)}}
        {\sum_q \mathrm{DCG}_{w^*}(q) / \mathrm{IDCG}_{\min(R_q, k)}}

    Args:
        k: cut-off(s).
        inverse_propensity: ``[num_items]`` weights >= 0, as :class:`PSP`'s.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``inverse_propensity``, an item id out of its range, and bad input in
            ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import PSnDCG
        >>> weights = torch.tensor([1.0, 4.0, 2.0, 3.0])
        >>> metric = PSnDCG(k=2, inverse_propensity=weights)
        >>> metric.update(torch.tensor([[0.9, 0.1, 0.8, 0.2]]), torch.tensor([[1, 1, 0, 1]]))
        >>> metric.compute()  # 1.0 / (4.0 + 3.0 / log2(3))
        tensor(0.1697, dtype=torch.float64)
    """

    family = "psndcg"
