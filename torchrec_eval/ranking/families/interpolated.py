"""Interpolated precision: IPrec (the most precision past a recall level, trec_eval's ``iprec_at_recall``)
and InterpolatedAP (its mean over the eleven levels 0, 0.1, ..., 1).

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
from torchrec_eval.pipeline.tensor_cache import ranks, row
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric, topk_function
from torchrec_eval.ranking.registry import LIST_OPTIONS, Interval, TopKFamily, register

#: the recall levels 0.0, 0.1, ..., 1.0 of the 11-point average (j / 10 is the double nearest the literal)
ELEVEN_LEVELS = tuple(j / 10 for j in range(11))

def _at_levels(rt: RankedTargets, k: int, levels: tuple[float, ...]) -> Tensor:
    """[B, len(levels)]: trec_eval's interpolated precision at each recall level p, the most precision
    P@j over ranks j <= k at or after the c-th relevant item (c = 0: every rank); 0 where the top k holds
    fewer than c relevant items (or the query has none). c = (long)(p R + 0.9) in float64, trec_eval
    9's rule (pytrec_eval, ir-measures): the first rank whose recall reaches p, with its rounding."""
    depth = min(k, rt.depth)
    found = rt.cum_hits[:, :depth]
    precision = found / ranks(depth, found.device)
    best_from = precision.flip(1).cummax(1).values.flip(1)  # max over the ranks from i to k
    needed = torch.trunc(rt.relevant_column * row(levels, found.device) + 0.9)  # [B, L]
    reached = found.unsqueeze(2) >= needed.unsqueeze(1)  # [B, k, L]: the c-th relevant item is at or above
    first = reached.to(torch.uint8).argmax(1)
    return best_from.gather(1, first) * (reached.any(1) & (rt.relevant_column > 0))


def iprec_kernel(rt: RankedTargets, ks: Sequence[int], recall: float = 0.0) -> Tensor:
    return torch.stack([_at_levels(rt, k, (recall,))[:, 0] for k in ks], dim=1)


# the most precision past a recall level: a maximum over ranks, not exact on the averaged view
register("iprec", TopKFamily(iprec_kernel, {"recall": (Interval(0.0, 1.0, closed=True, closed_high=True),), **LIST_OPTIONS},
                             exact_under_average_ties=False))


class IPrec(TopKMetric):
    r"""IPrec@k, interpolated precision at recall level p (trec_eval's ``iprec_at_recall``): the most
    precision over the ranks :math:`\le k` at or after the c-th relevant item, :math:`c = \lfloor pR + 0.9
    \rfloor`; 0 where the top k holds fewer.

    Args:
        k: cut-off(s).
        recall: the recall level p in [0, 1] (0 by default).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not
            ``ties="average"``.

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.IPrec(k=5, recall=0.6)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]]), torch.tensor([[0, 1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(0.4000, dtype=torch.float64)
    """

    name = "iprec"

    def __init__(self, k: IntOrSeq = 10, *, recall: float | None = None, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"recall": recall}, **kwargs)


@overload
def iprec(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
          recall: float | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def iprec(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
          recall: float | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def iprec(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
          recall: float | None = None, **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""IPrec@k, interpolated precision at a recall level p (trec_eval's ``iprec_at_recall``, ir-measures'
    ``IPrec@p``): the most precision :math:`P@j` over the ranks :math:`j \le k` at or after the c-th
    relevant item, :math:`c = \lfloor pR + 0.9 \rfloor` (trec_eval 9's rule: the first rank whose recall
    reaches p); 0 where the top k holds fewer than c relevant items.

    On a list cut at k it is trec_eval's value on the run cut at k; k at least the list's length gives
    trec_eval's on the whole run. Its maximum over ranks has no exact expectation over tied scores
    here: it refuses ``ties="average"``.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"iprec@k": value}``).
        recall: the recall level p, a number in [0, 1] (0 by default: the most precision in the top k).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import iprec
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]])
        >>> target = torch.tensor([[0, 1, 0, 0, 1]])
        >>> iprec(preds, target, k=5, recall=0.6)  # at or after the 2nd relevant item: 2 / 5
        tensor(0.4000, dtype=torch.float64)
    """
    return compute_named_metric("iprec", preds, target, k, {"recall": recall}, arguments)


def interpolated_ap_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return torch.stack([_at_levels(rt, k, ELEVEN_LEVELS).mean(1) for k in ks], dim=1)


register("interpolated_ap", TopKFamily(interpolated_ap_kernel, {**LIST_OPTIONS}, exact_under_average_ties=False))


class InterpolatedAP(TopKMetric):
    r"""InterpolatedAP@k, the 11-point interpolated average precision (trec_eval's ``11pt_avg``): the mean
    of :class:`IPrec` at the recall levels 0.0, 0.1, ..., 1.0.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not
            ``ties="average"``.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.InterpolatedAP(k=5)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]]), torch.tensor([[0, 1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(0.4545, dtype=torch.float64)
    """

    name = "interpolated_ap"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def interpolated_ap(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""InterpolatedAP@k, the 11-point interpolated average precision (trec_eval's ``11pt_avg``): the mean of
    :func:`iprec` at the recall levels 0.0, 0.1, ..., 1.0.

    It refuses ``ties="average"``, as :func:`iprec`.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"interpolated_ap@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import interpolated_ap
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]])
        >>> target = torch.tensor([[0, 1, 0, 0, 1]])
        >>> interpolated_ap(preds, target, k=5)  # (6 x 1/2 + 5 x 2/5) / 11
        tensor(0.4545, dtype=torch.float64)
    """
    return compute_named_metric("interpolated_ap", preds, target, k, {}, arguments)
