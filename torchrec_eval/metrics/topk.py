"""Top-k ranking metrics as torchmetrics ``Metric`` classes (thin wrappers over the functional core).

Every class takes ``k`` (an int, or a sequence of ints for a dict ``{"ndcg@5": ..., "ndcg@10": ...}``)
and the common arguments of :class:`~torchrec_eval.metrics.base.MemberMetric`
(``empty_target_action``, ``relevance_threshold``, ``ties``, ``validate_args``, ``num_groups`` and the
torchmetrics kwargs). ``update`` takes any input form of :mod:`torchrec_eval.pipeline`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from torchrec_eval.members.conventions import resolve_options
from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.ranking.entries import make_entry
from torchrec_eval.ranking.member import TopKMember
from torchrec_eval.ranking.registry import (
    REGISTRY,
    Discount,
    Gain,
    Ideal,
    NoHitAction,
    Normalizer,
    PrecisionDenominator,
    RecallDenominator,
    RPrecisionDenominator,
    TieRank,
)

__all__ = [
    "ARHR", "CG", "DCG", "F1", "HitRate", "IntOrSeq", "MAP", "MAR", "MRR", "NDCG", "Precision", "RPrecision",
    "Recall"
]


IntOrSeq = int | Sequence[int]


class _TopK(MemberMetric):
    """One metric family at one or more cut-offs.

    Every class also takes ``empty_list_action``: a query whose list is empty (no candidate: a
    ``ranked_ids`` row of padding only, or every score ``-inf`` / masked) scores 0 and counts
    (``"neg"``, default), or is left out of the mean (``"skip"``; the ``"jurity"`` and
    ``"recommenders"`` presets set it where those libraries leave such users out). And ``empty_mean``:
    the value of a mean over no query, ``"nan"`` (default) or ``"zero"`` where no query kept has a
    relevant item in its top k (MS Recommenders' 0.0 when no user has a hit; set by
    ``"recommenders"``). For R-Precision with ``no_hit_action="skip"`` that is narrower than "no query
    counted": hits in the top k but none in the top min(k, R) still give NaN, as MS Recommenders'.
    """

    name: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.higher_is_better = REGISTRY[cls.name].higher_is_better  # a class constant in torchmetrics

    def __init__(self, k: IntOrSeq | None = 10, options: dict[str, Any] | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        explicit = {**(options or {}), "empty_list_action": kwargs.pop("empty_list_action", None),
                    "empty_mean": kwargs.pop("empty_mean", None)}
        options = resolve_options(kwargs.get("convention"), self.name, explicit, kwargs.get("ties"))
        member = TopKMember([make_entry(self.name, k, options)])
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self._show(**explicit)


class Precision(_TopK):
    r"""Precision@k: :math:`\sum_{i \le k} r_i / k`, the share of the top k that is relevant.

    Args:
        k: cut-off(s).
        denominator: ``"k"`` (default), ``"retrieved"`` = min(k, candidates) (Jurity), ``"min_k_r"``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.Precision(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.update(torch.tensor([[0.2, 0.3, 0.7, 0.1]]), torch.tensor([[0, 0, 1, 1]]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    name = "precision"

    def __init__(self, k: IntOrSeq = 10, *, denominator: PrecisionDenominator | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"denominator": denominator}, **kwargs)


class Recall(_TopK):
    r"""Recall@k: :math:`\sum_{i \le k} r_i / R`, the share of the relevant items found in the top k.

    Args:
        k: cut-off(s).
        denominator: ``"r"`` (default) or ``"min_k_r"`` = min(k, R) (Liang et al. 2018).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.Recall(k=[1, 3])
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> {key: round(value.item(), 4) for key, value in metric.compute().items()}
        {'recall@1': 0.5, 'recall@3': 1.0}
    """

    name = "recall"

    def __init__(self, k: IntOrSeq = 10, *, denominator: RecallDenominator | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"denominator": denominator}, **kwargs)


class F1(_TopK):
    r"""F1@k: :math:`2 P R / (P + R)` of Precision@k and Recall@k (0 when both are 0).

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.F1(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    name = "f1"


class HitRate(_TopK):
    r"""HitRate@k: :math:`\mathbb{1}[\sum_{i \le k} r_i > 0]`, whether any of the top k is relevant.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.HitRate(k=1)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1], [0.1, 0.2, 0.3]]), torch.tensor([[0, 0, 1], [0, 0, 1]]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    name = "hitrate"


class MRR(_TopK):
    r"""MRR@k: :math:`1 / \mathrm{rank}` of the first relevant item within the top k, else 0.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.MRR(k=5)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]]),
        ...               target_ids=torch.tensor([[0, 2, 4, 5, 6], [1, 3, 6, 7, 0]]))
        >>> metric.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    name = "mrr"


class ARHR(_TopK):
    r"""ARHR@k (average reciprocal hit rank): :math:`\sum_{i \le k} r_i / i`.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.ARHR(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.1]]), torch.tensor([[1, 0, 1, 0]]))
        >>> metric.compute()
        tensor(1.3333, dtype=torch.float64)
    """

    name = "arhr"


class MAP(_TopK):
    r"""MAP@k: :math:`\sum_{i \le k} \mathrm{Precision@}i \cdot r_i / D`, averaged over queries.

    Args:
        k: cut-off(s).
        normalizer: D. ``"min_k_r"`` = min(k, R) so a perfect ranking scores 1 (default; Jurity,
            RecBole, MS Recommenders); ``"r"`` = R (trec_eval ``map_cut``, ranx); ``"hits"`` = relevant
            items in the top k (torchmetrics); ``"k"``; ``"min_list_r"`` = min(R, the list's length
            within k) (LensKit).
        tie_rank: ``"position"`` (default), or ``"group_max"``: a tied item at its tie group's last rank, with
            the hits through the group's end (cornac's MAP; see :func:`torchrec_eval.functional.map`).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.MAP(k=6)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5, 0.4]]), torch.tensor([[1, 0, 0, 1, 1, 0]]))
        >>> metric.compute()
        tensor(0.7000, dtype=torch.float64)
    """

    name = "map"

    def __init__(self, k: IntOrSeq = 10, *, normalizer: Normalizer | None = None, tie_rank: TieRank | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"normalizer": normalizer, "tie_rank": tie_rank}, **kwargs)


class MAR(_TopK):
    r"""MAR@k: :math:`\sum_{i \le k} \mathrm{Recall@}i \cdot r_i / D`, D as in :class:`MAP`.

    Args:
        k: cut-off(s).
        normalizer: D, as in :class:`MAP`.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.MAR(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7]]), torch.tensor([[1, 0, 1]]))
        >>> metric.compute()
        tensor(0.7500, dtype=torch.float64)
    """

    name = "mar"

    def __init__(self, k: IntOrSeq = 10, *, normalizer: Normalizer | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"normalizer": normalizer}, **kwargs)


class DCG(_TopK):
    r"""DCG@k: :math:`\sum_{i \le k} \mathrm{gain}(g_i) / \log_2(i + 1)` with the raw target as g.

    Args:
        k: cut-off(s).
        gain: ``"linear"`` (g, default), ``"exp"`` (2^g - 1, Burges) or ``"binary"`` (relevance 0/1).
        log_base: base of the discount, 2 by default.
        discount: ``"log"`` (default) 1 / log_b(i + 1), or ``"clipped_log"`` 1 / log_b(max(i, 2)) (LensKit's).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.DCG(k=5)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]]), torch.tensor([[3, 1, 0, 2, 0]]))
        >>> metric.compute()
        tensor(4.4923, dtype=torch.float64)
    """

    name = "dcg"

    def __init__(
        self, k: IntOrSeq = 10, *, gain: Gain | None = None, log_base: float | None = None,
        discount: Discount | None = None, **kwargs: Unpack[TopKArguments]
    ) -> None:
        super().__init__(k, {"gain": gain, "log_base": log_base, "discount": discount}, **kwargs)


class NDCG(_TopK):
    r"""NDCG@k: DCG@k / IDCG@k; the ideal DCG sorts the query's gains descending and cuts at k.

    Args:
        k: cut-off(s).
        gain: ``"linear"`` (g, default), ``"exp"`` (2^g - 1, Burges) or ``"binary"`` (relevance 0/1).
        log_base: base of the discount, 2 by default.
        discount: ``"log"`` (default) 1 / log_b(i + 1), or ``"clipped_log"`` 1 / log_b(max(i, 2)) (LensKit's).
        ideal: ``"cut"`` (default): the ideal list cut at k (trec_eval, sklearn, ranx); with binary
            gains also ``"full"``: all R relevant items, uncut (Jurity), or ``"k"``: k relevant
            slots whatever R is (RecTools).
        kwargs: common arguments (``convention`` included), see
            :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NDCG(k=[3, 5])
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]]), torch.tensor([[3, 1, 0, 2, 0]]))
        >>> {key: round(value.item(), 3) for key, value in metric.compute().items()}
        {'ndcg@3': 0.763, 'ndcg@5': 0.943}
    """

    name = "ndcg"

    def __init__(
        self,
        k: IntOrSeq = 10,
        *,
        gain: Gain | None = None,
        log_base: float | None = None,
        ideal: Ideal | None = None,
        discount: Discount | None = None,
        **kwargs: Unpack[TopKArguments],
    ) -> None:
        super().__init__(k, {"gain": gain, "log_base": log_base, "ideal": ideal, "discount": discount}, **kwargs)


class CG(_TopK):
    r"""CG@k (cumulative gain): :math:`\sum_{i \le k} g_i`.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.CG(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7]]), torch.tensor([[3, 0, 2]]))
        >>> metric.compute()
        tensor(3., dtype=torch.float64)
    """

    name = "cg"


class RPrecision(_TopK):
    r"""R-Precision: Precision@R, R = the query's number of relevant items.

    .. math:: \mathrm{RPrec@k} = \frac{\sum_{i \le \min(k, R)} r_i}{D}, \quad D = \min(k, R) \text{ or } R

    Args:
        k: ``None`` (default, no cut: ranks as deep as the batch's largest R, one host sync) or a cap,
            giving hits@min(k, R) / min(k, R). RecTools' R-Precision (``Precision(r_precision=True)``) is
            another value, hits@k / min(k, R): ``Precision(k, denominator="min_k_r")``.
        denominator: D, ``"min_k_r"`` (default) or ``"r"`` (MS Recommenders' ``r_precision_at_k``).
        no_hit_action: ``"neg"`` (default): a query without a relevant item in its top min(k, R)
            scores 0 and counts; ``"skip"``: it is left out of the mean (MS Recommenders), and so is a
            query without any relevant item, whatever ``empty_target_action``. The state keeps one
            more count per such value (constant size). Not with ``ties="average"``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`;
            ``convention="recommenders"`` sets ``denominator="r"``, ``no_hit_action="skip"``.

    Raises:
        ValueError: on a bad ``k`` or option, ``no_hit_action="skip"`` with ``ties="average"``, and
            on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.RPrecision()
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6]]), torch.tensor([[1, 0, 1, 1]]))
        >>> metric.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    name = "rprecision"

    def __init__(
        self, k: int | None = None, *, denominator: RPrecisionDenominator | None = None,
        no_hit_action: NoHitAction | None = None,
        **kwargs: Unpack[TopKArguments],
    ) -> None:
        super().__init__(k, {"denominator": denominator, "no_hit_action": no_hit_action}, **kwargs)
