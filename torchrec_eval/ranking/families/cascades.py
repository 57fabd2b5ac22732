"""The families of a user who scans the list from the top and stops: ERR (stops at a satisfying item) and
RBP (goes on to the next rank with probability p).

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Unpack, get_args, overload

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, TopKMetric
from torchrec_eval.pipeline import RankedTargets, keywords_checked_by
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric
from torchrec_eval.ranking.rank_sums import best_sums, divide, listed_within, summed, weight_sums
from torchrec_eval.ranking.registry import LIST_OPTIONS, TOP_GRADE, Interval, TopKFamily, register


def err_kernel(rt: RankedTargets, ks: Sequence[int], max_grade: float = 4.0) -> Tensor:
    # the item at rank i satisfies the user with probability s_i = (2^g_i - 1) / 2^max_grade (Chapelle et
    # al. 2009, gdeval); the user reaches rank i if no item above did, and stops there with 1 / i utility
    satisfied = (torch.exp2(rt.gains) - 1) / 2.0**max_grade
    unsatisfied = torch.cumprod(1 - satisfied, dim=1)
    reached = torch.cat([torch.ones_like(unsatisfied[:, :1]), unsatisfied[:, :-1]], dim=1)
    return summed(satisfied * reached, ks, "reciprocal")


register("err", TopKFamily(err_kernel, {**TOP_GRADE, **LIST_OPTIONS}, max_grade=4.0, exact_under_average_ties=False))


class ERR(TopKMetric):
    r"""ERR@k, expected reciprocal rank (Chapelle et al. 2009):
    :math:`\sum_{i \le k} \frac{1}{i} s_i \prod_{j < i} (1 - s_j)`, :math:`s_i = (2^{g_i} - 1) / 2^{g_{max}}`.

    Args:
        k: cut-off(s).
        max_grade: the top grade :math:`g_{max}` (a number >= 1, default 4 as gdeval); a larger gain
            is refused in ``update``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not
            ``ties="average"`` (a product over ranks has no exact expectation over tie orders here).

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.ERR(k=3, max_grade=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 3]]))
        >>> metric.compute()  # 1/8 + (7/8)(7/8)/3
        tensor(0.3802, dtype=torch.float64)
    """

    name = "err"

    def __init__(self, k: IntOrSeq = 10, *, max_grade: float | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"max_grade": max_grade}, **kwargs)


@overload
def err(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        max_grade: float | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def err(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        max_grade: float | None = None,
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def err(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        max_grade: float | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""ERR@k, the expected reciprocal rank of the item that satisfies the user (Chapelle et al. 2009):
    :math:`\sum_{i \le k} \frac{1}{i} s_i \prod_{j < i} (1 - s_j)` with :math:`s_i = (2^{g_i} - 1) / 2^{g_{max}}`.

    The gains are the targets (graded, as gdeval and ir-measures' ``ERR@k``); ``max_grade`` is the top
    grade :math:`g_{max}` (4 by default, gdeval's); a larger gain is refused with the other checks. Its
    value is a product over ranks, which has no exact expectation over tied scores here: it refuses
    ``ties="average"``.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"err@k": value}``).
        max_grade: the top grade (a number >= 1, default 4).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import err
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> err(preds, target, k=3, max_grade=3)
        tensor(0.3776, dtype=torch.float64)
    """
    return compute_named_metric("err", preds, target, k, {"max_grade": max_grade}, arguments)


#: the rank weights of RBP: "geometric" p^(i-1) (Moffat & Zobel's); LensKit's ``LogRankWeight``, "log"
#: 1 / log_b(i + 1) (``offset=1``) and "clipped_log" 1 / log_b(max(i, 2)) (its default, ``offset=0``)
RankWeight = Literal["geometric", "log", "clipped_log"]
_WEIGHTS = {"geometric": "geometric", "log": "discount", "clipped_log": "clipped_discount"}


def rbp_kernel(rt: RankedTargets, ks: Sequence[int], p: float = 0.8, normalize: bool = False,
               weight: str = "geometric", log_base: float = 2.0) -> Tensor:
    # (1 - p) sum_{i<=k} r_i p^(i-1) (Moffat & Zobel 2008): the geometric weights' series sums to 1 / (1 - p).
    # normalize: over the most the query's relevant items reach, the weights of ranks 1..min(R, k, list length)
    # (LensKit's normalize=True). A log weight has no series sum: LensKit divides by the weights of the list's
    # ranks 1..min(k, list length) then
    rank_weight, parameter = _WEIGHTS[weight], p if weight == "geometric" else log_base
    total = summed(rt.hits, ks, rank_weight, parameter)
    if normalize:
        return divide(total, best_sums(rt, ks, rank_weight, parameter))
    if weight == "geometric":
        return (1 - p) * total
    listed = listed_within(rt, ks).long()
    return divide(total, weight_sums(max(ks), rank_weight, parameter, rt.gains.device)[listed])


register("rbp", TopKFamily(rbp_kernel, {"p": (Interval(0.0, 1.0),), "normalize": (True, False),
                                        "weight": get_args(RankWeight), "log_base": (Interval(1.0),), **LIST_OPTIONS}))


class RBP(TopKMetric):
    r"""RBP@k, rank-biased precision (Moffat & Zobel 2008): :math:`(1 - p) \sum_{i \le k} r_i p^{i-1}`; with
    LensKit's log rank weights :math:`w_i`, :math:`\sum_{i \le k} r_i w_i / \sum_{i \le \min(k, n)} w_i`.

    Args:
        k: cut-off(s).
        p: the patience of the geometric weights, in (0, 1); 0.8 by default (ranx, ir-measures).
        normalize: divide :math:`\sum_{i \le k} r_i w_i` by its most with the query's relevant items,
            :math:`\sum_{i \le \min(R, k, n)} w_i` (LensKit's ``normalize=True``).
        weight: the rank weights :math:`w_i`: ``"geometric"`` :math:`p^{i-1}` (default), ``"log"``
            :math:`1 / \log_b(i + 1)` (LensKit's ``LogRankWeight(offset=1)``) or ``"clipped_log"``
            :math:`1 / \log_b \max(i, 2)` (``LogRankWeight()``); a log weight ignores ``p``.
        log_base: the base b of the log weights (2).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.RBP(k=3, p=0.5)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 3]]))
        >>> metric.compute()  # 0.5 (1 + 0.25)
        tensor(0.6250, dtype=torch.float64)
    """

    name = "rbp"

    def __init__(self, k: IntOrSeq = 10, *, p: float | None = None, normalize: bool | None = None,
                 weight: RankWeight | None = None, log_base: float | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"p": p, "normalize": normalize, "weight": weight, "log_base": log_base}, **kwargs)


@overload
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        p: float | None = None, normalize: bool | None = None, weight: RankWeight | None = None,
        log_base: float | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        p: float | None = None, normalize: bool | None = None, weight: RankWeight | None = None,
        log_base: float | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        p: float | None = None, normalize: bool | None = None, weight: RankWeight | None = None,
        log_base: float | None = None, **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""RBP@k, rank-biased precision (Moffat & Zobel 2008): :math:`(1 - p) \sum_{i \le k} r_i p^{i-1}`.

    A user goes on from each rank to the next with probability ``p`` (0.8 by default, as ranx and
    ir-measures); relevance is binary. ``normalize=True`` divides
    :math:`\sum_{i \le k} r_i p^{i-1}` by its most with the query's relevant items,
    :math:`\sum_{i \le \min(R, k, n)} p^{i-1}` (LensKit's ``normalize=True``; n the list's length). ``weight``
    takes LensKit's log rank weights instead (see :class:`RBP`).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"rbp@k": value}``).
        p: the patience, a number in (0, 1).
        normalize: see above.
        weight, log_base: the rank weights, ``"geometric"`` (default), ``"log"`` or ``"clipped_log"``, and the
            log weights' base (see :class:`RBP`).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import rbp
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> rbp(preds, target, k=3, p=0.5)
        tensor(0.5625, dtype=torch.float64)
    """
    options = {"p": p, "normalize": normalize, "weight": weight, "log_base": log_base}
    return compute_named_metric("rbp", preds, target, k, options, arguments)
