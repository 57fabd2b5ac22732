r"""Compat: Clarke, Vtyurina & Smucker's compatibility (TOIS 2021; ir-measures' ``Compat(p, normalize)``), the
rank-biased overlap of the ranking with an ideal ranking of the query's relevant items.

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Unpack, overload

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, TopKMetric
from torchrec_eval.pipeline import RankedTargets, keywords_checked_by
from torchrec_eval.pipeline.tensor_cache import constant
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric
from torchrec_eval.ranking.rank_sums import at_cutoffs, divide, listed_within
from torchrec_eval.ranking.registry import LIST_OPTIONS, Interval, TopKFamily, register

#: the series sum_i p^(i-1) / i is kept to the rank where its tail falls below this (of a value of at least 1)
_TAIL = 1e-20


def _partial_sums(p: float, ranks: int, device: torch.device) -> Tensor:
    """[M + 1] float64 H(m) = sum_{i <= m} p^(i-1) / i for m = 0..M, M = min(ranks, the rank past which the rest of
    the series is below ``_TAIL``): H(m) for a larger m is H(M)."""
    last = min(ranks, max(1, math.ceil(math.log(_TAIL * (1 - p)) / math.log(p))))

    def build() -> Tensor:
        i = torch.arange(1, last + 1, dtype=torch.float64)
        return torch.cat([torch.zeros(1, dtype=torch.float64), (p ** (i - 1) / i).cumsum(0)]).to(device)

    return constant(("compat-series", p, last, device), build)


def _ideal_positions(rt: RankedTargets) -> Tensor:
    """[B, K] float64 the position in the ideal list (1-based) of the relevant item at each rank: after every
    relevant item of a higher grade, and after the ranked ones of its grade that are ranked above it (ir-measures
    orders a grade by the run's scores; the unranked ones of a grade come after the ranked ones)."""
    if rt.binary:
        return rt.cum_hits
    relevant = rt.relevant if rt.relevant is not None else rt.gains > 0
    grade = torch.where(relevant, rt.gains, -math.inf)
    _, relevant_items = rt.relevant_item_table()
    every = torch.where(relevant_items, rt.relevant_item_gains(), -math.inf).sort(dim=1).values
    above = every.shape[1] - torch.searchsorted(every, grade.contiguous(), right=True)  # higher grades, all
    ranked_sorted = grade.sort(dim=1).values
    ranked_above = grade.shape[1] - torch.searchsorted(ranked_sorted, grade.contiguous(), right=True)
    order = grade.sort(dim=1, descending=True, stable=True).indices
    place = torch.empty_like(order).scatter_(1, order, torch.arange(order.shape[1], device=order.device)
                                            .expand_as(order).contiguous())
    return (1 + above + place - ranked_above).to(torch.float64)


def compat_kernel(rt: RankedTargets, ks: Sequence[int], p: float = 0.95, normalize: bool = True) -> Tensor:
    r"""RBO to depth :math:`D = \max(n_k, R)` of the top k against the ideal list: the relevant item at rank j with
    ideal position :math:`\pi_j` is in both prefixes from depth :math:`a_j = \max(j, \pi_j)`, so
    :math:`\sum_i p^{i-1} |I_i \cap R_i| / i = \sum_j (H(D) - H(a_j - 1))`, H the partial sums of
    :math:`p^{i-1} / i`; divided by :math:`\sum_{i \le D} p^{i-1}`, or with ``normalize`` by the ideal list's own
    :math:`\sum_{i \le D} p^{i-1} \min(i, R) / i`."""
    depth = rt.gains.shape[1]
    relevant_count = rt.num_relevant.unsqueeze(1)
    list_depth = torch.maximum(listed_within(rt, ks), relevant_count)  # D, [B, len(ks)]
    table = _partial_sums(p, max(depth, rt.max_relevant) + 1, rt.gains.device)
    last = table.shape[0] - 1

    def partial(m: Tensor) -> Tensor:
        return table[m.long().clamp(0, last)]

    ranks = torch.arange(1, depth + 1, dtype=torch.float64, device=rt.gains.device)
    entered = torch.maximum(ranks, _ideal_positions(rt))  # a_j
    before = at_cutoffs((rt.hits * partial(entered - 1)).cumsum(1), ks)
    overlap = partial(list_depth) * at_cutoffs(rt.cum_hits, ks) - before
    if normalize:  # sum_{i <= R} p^(i-1) + R (H(D) - H(R))
        ideal = (1 - p ** relevant_count) / (1 - p) + relevant_count * (partial(list_depth) - partial(relevant_count))
        return divide(overlap, ideal)
    return overlap * (1 - p) / (1 - p ** list_depth)


register("compat", TopKFamily(compat_kernel, {"p": (Interval(0.0, 1.0),), "normalize": (False, True), **LIST_OPTIONS},
                              exact_under_average_ties=False, reads_relevant_items=True))


class Compat(TopKMetric):
    r"""Compat@k: Clarke, Vtyurina & Smucker's compatibility (ir-measures' ``Compat(p, normalize)``), the
    rank-biased overlap of the top k with the ideal ranking of the query's relevant items, over depth
    :math:`D = \max(\min(k, n), R)`:

    .. math:: \mathrm{Compat@}k = \frac{\sum_{i \le D} p^{i-1} |I_i \cap R_i| / i}{\sum_{i \le D} p^{i-1} \min(i, R) / i}

    :math:`R_i` the top i of the ranking, :math:`I_i` of the ideal list: the relevant items by grade, those of a grade
    in the ranking's order, the unranked ones of a grade after the ranked ones (ir-measures orders a grade by the
    run's scores, an unranked item at score 0: the same for positive scores). Without ``normalize`` the denominator is
    :math:`\sum_{i \le D} p^{i-1}`. A query without a relevant item follows ``empty_target_action`` (ir-measures scores
    it 0). Reads every relevant item's grade (the dense form's whole row); not with ``ties="average"``.

    Args:
        k: cut-off(s): the run cut at k, as ir-measures evaluates a run of k items a query.
        p: persistence in (0, 1) (0.95, ir-measures' default).
        normalize: divide by the ideal list's own overlap (True, ir-measures' default).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``p`` or ``normalize``, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.Compat(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6]]), torch.tensor([[0, 1, 0, 1]]))
        >>> metric.compute()
        tensor(0.3040, dtype=torch.float64)
    """

    name = "compat"

    def __init__(self, k: IntOrSeq = 10, *, p: float | None = None, normalize: bool | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"p": p, "normalize": normalize}, **kwargs)


@overload
def compat(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10, p: float | None = None,
           normalize: bool | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...
@overload
def compat(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int], p: float | None = None,
           normalize: bool | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...
@keywords_checked_by(TopKCall)
def compat(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
           p: float | None = None, normalize: bool | None = None,
           **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""Compat@k, the rank-biased overlap of the top k with the query's ideal ranking (see :class:`Compat`).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"compat@k": value}``).
        p: persistence in (0, 1) (0.95).
        normalize: divide by the ideal list's own overlap (True).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k``, ``p`` or ``normalize``, ``ties="average"``, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import compat
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6]])
        >>> compat(preds, torch.tensor([[0, 1, 0, 1]]), k=3, p=0.5, normalize=False)
        tensor(0.1905, dtype=torch.float64)
    """
    return compute_named_metric("compat", preds, target, k, {"p": p, "normalize": normalize}, arguments)
