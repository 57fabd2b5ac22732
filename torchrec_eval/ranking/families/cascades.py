"""The families of a user who scans the list from the top and stops: ERR (stops at a satisfying item) and
RBP (goes on to the next rank with probability p).

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack, overload

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, TopKMetric
from torchrec_eval.pipeline import RankedTargets, keywords_checked_by
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric
from torchrec_eval.ranking.rank_sums import best_sums, divide, summed
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


def rbp_kernel(rt: RankedTargets, ks: Sequence[int], p: float = 0.8, normalize: bool = False) -> Tensor:
    # (1 - p) sum_{i<=k} r_i p^(i-1) (Moffat & Zobel 2008); normalize: over the most the query's relevant
    # items reach, sum_{i <= min(R, k, list length)} p^(i-1) (LensKit's normalize=True)
    total = summed(rt.hits, ks, "geometric", p)
    return divide(total, best_sums(rt, ks, "geometric", p)) if normalize else (1 - p) * total


register("rbp", TopKFamily(rbp_kernel, {"p": (Interval(0.0, 1.0),), "normalize": (True, False), **LIST_OPTIONS}))


class RBP(TopKMetric):
    r"""RBP@k, rank-biased precision (Moffat & Zobel 2008): :math:`(1 - p) \sum_{i \le k} r_i p^{i-1}`.

    Args:
        k: cut-off(s).
        p: the patience, in (0, 1); 0.8 by default (ranx, ir-measures).
        normalize: divide :math:`\sum_{i \le k} r_i p^{i-1}` by its most with the query's relevant items,
            :math:`\sum_{i \le \min(R, k, n)} p^{i-1}` (LensKit's ``normalize=True``).
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
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"p": p, "normalize": normalize}, **kwargs)


@overload
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        p: float | None = None, normalize: bool | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        p: float | None = None, normalize: bool | None = None,
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        p: float | None = None, normalize: bool | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""RBP@k, rank-biased precision (Moffat & Zobel 2008): :math:`(1 - p) \sum_{i \le k} r_i p^{i-1}`.

    A user goes on from each rank to the next with probability ``p`` (0.8 by default, as ranx and
    ir-measures); relevance is binary. ``normalize=True`` divides
    :math:`\sum_{i \le k} r_i p^{i-1}` by its most with the query's relevant items,
    :math:`\sum_{i \le \min(R, k, n)} p^{i-1}` (LensKit's ``normalize=True``; n the list's length).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"rbp@k": value}``).
        p: the patience, a number in (0, 1).
        normalize: see above.
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
    return compute_named_metric("rbp", preds, target, k, {"p": p, "normalize": normalize}, arguments)
