"""The families of incomplete judgments: bpref, Judged@k and infAP (trec_eval's ``bpref`` and ``infAP``,
ir-measures' ``Judged@k``).

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, TopKMetric
from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric, topk_function
from torchrec_eval.ranking.rank_sums import divide, listed_within, per_count, summed
from torchrec_eval.ranking.registry import LIST_OPTIONS, TopKFamily, register

#: trec_eval's ``INFAP_EPSILON``: infAP's smoothing of the precision among the judged items above a relevant one
INFAP_EPSILON = 1e-5


def bpref_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # trec_eval's m_bpref.c on the list cut at k: each relevant item r of the top k scores
    # 1 - min(n_r, R) / min(N, R), n_r the judged non-relevant items ranked above it, N the query's judged
    # non-relevant items (1 where n_r = 0, so also where N = 0); their sum over R (0 where R = 0)
    above = rt.judged_non_relevant.cumsum(1)  # at a relevant rank: those above it (it is not one itself)
    relevant = rt.relevant_column
    cap = torch.minimum(rt.num_judged_non_relevant, relevant).clamp(min=1)  # n_r > 0 only where N, R >= 1
    terms = rt.hits * (1 - torch.minimum(above, relevant) / cap)
    return per_count(summed(terms, ks), relevant)


# the judgments of the ranked items: bpref's cap min(n_r, R) is not linear in the relevance of the ranks
# above, and the averaged view keeps no judgments of tied items: one order of the tied scores each
register("bpref", TopKFamily(bpref_kernel, {**LIST_OPTIONS}, exact_under_average_ties=False, reads_judged=True))


class Bpref(TopKMetric):
    r"""bpref@k, binary preference (Buckley & Voorhees 2004): how few judged non-relevant items rank above each
    relevant item of the top k (trec_eval's ``bpref`` on the run cut at k).

    .. math:: \mathrm{bpref@k} = \frac{1}{R} \sum_{r \text{ relevant}, \mathrm{rank}(r) \le k}
        \left(1 - \frac{\min(n_r, R)}{\min(N, R)}\right)

    with :math:`n_r` the judged non-relevant items ranked above r, N the query's judged non-relevant items and R
    its relevant ones; a term is 1 where :math:`n_r = 0` (so wherever N = 0). Unjudged items are skipped: a
    target id is a judgment (not relevant where its gain is not: a qrels line of 0, or below
    ``relevance_threshold``), an item outside the target ids is unjudged. The dense form judges every
    candidate. trec_eval scores a query without a relevant item 0: ``empty_target_action="neg"`` (or
    ``convention="trec"``).

    Args:
        k: cut-off(s); a k as long as the lists gives trec_eval's ``bpref``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``
            (the cap min(n_r, R) has no exact expectation over tie orders here).

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.Bpref(k=10)
        >>> # ranked a, u, b, c, v: a and c relevant, b judged non-relevant, d and e judged non-relevant
        >>> # and not retrieved, u and v unjudged (trec_eval: 0.75)
        >>> metric.update(ranked_ids=torch.tensor([[0, 5, 1, 2, 6]]), target_ids=torch.tensor([[0, 1, 2, 3, 4]]),
        ...               target_gains=torch.tensor([[1, 0, 2, 0, 0]]))
        >>> metric.compute()  # (1 + (1 - min(1, 2) / min(3, 2))) / 2
        tensor(0.7500, dtype=torch.float64)
    """

    name = "bpref"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def bpref(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""bpref@k, binary preference (Buckley & Voorhees 2004; trec_eval's ``bpref`` on the run cut at k): how few
    judged non-relevant items rank above each relevant one,
    :math:`\frac{1}{R} \sum_{r} \left(1 - \frac{\min(n_r, R)}{\min(N, R)}\right)` over the relevant items r of
    the top k, :math:`n_r` the judged non-relevant items above r, N the query's judged non-relevant items (a
    term is 1 where :math:`n_r = 0`).

    A target id is a judgment (of a non-relevant item where its gain is not relevant: a qrels line of 0), an
    item outside the target ids is unjudged and skipped; the dense form judges every candidate. A k as long as
    the lists gives trec_eval's ``bpref``.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids`` (and ``target_gains``), or another input
            form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"bpref@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`; not ``ties="average"``.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import bpref
        >>> # judged: item 0 relevant, items 1 and 3 non-relevant; item 2 is unjudged
        >>> bpref(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]]), target_ids=torch.tensor([[0, 1, 3, 4]]),
        ...       target_gains=torch.tensor([[1, 0, 0, 1]]), k=5)  # (1 + (1 - min(2, 2) / min(2, 2))) / 2
        tensor(0.5000, dtype=torch.float64)
    """
    return compute_named_metric("bpref", preds, target, k, {}, arguments)


def judged_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # ir-measures' Judged@k: the judged items of the top k over the list's length within k, min(k, n)
    # (0 for an empty list)
    return divide(summed(rt.judged_items().to(torch.float64), ks), listed_within(rt, ks))


register("judged", TopKFamily(judged_kernel, {**LIST_OPTIONS}, exact_under_average_ties=False, reads_judged=True,
                               empty_unjudged=True))


class Judged(TopKMetric):
    r"""Judged@k: the share of the top k that is judged (ir-measures' ``Judged@k``).

    .. math:: \mathrm{Judged@k} = \frac{\sum_{i \le k} j_i}{\min(k, n)}

    with :math:`j_i` 1 where the item at rank i is among the query's target ids (whatever its gain) and n the
    list's length. The query that ``empty_target_action`` resolves is the one without a judged item (no target
    id), as ir-measures evaluates every query with a judgment; a query without a relevant item counts. The
    dense form judges every candidate (1 for every non-empty list).

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.Judged(k=[2, 10])
        >>> metric.update(ranked_ids=torch.tensor([[7, 2, 5], [1, 3, -1]]), target_ids=torch.tensor([[5, 7], [3, -1]]),
        ...               target_gains=torch.tensor([[0, 1], [0, 0]]))
        >>> metric.compute()  # (1/2 + 1/2) / 2 and (2/3 + 1/2) / 2
        {'judged@2': tensor(0.5000, dtype=torch.float64), 'judged@10': tensor(0.5833, dtype=torch.float64)}
    """

    name = "judged"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def judged(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""Judged@k, the share of the top k that is judged (ir-measures' ``Judged@k``):
    :math:`\sum_{i \le k} j_i / \min(k, n)`, :math:`j_i` 1 where the item at rank i is among the target ids
    (whatever its gain), n the list's length.

    The query that ``empty_target_action`` resolves is the one without a judged item (ir-measures evaluates
    every query with a judgment). The dense form judges every candidate (its value is then 1).

    Args:
        preds, target: ``preds`` with ``target_ids`` (and ``target_gains``), ``ranked_ids`` with ``target_ids``,
            or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"judged@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`; not ``ties="average"``.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import judged
        >>> judged(ranked_ids=torch.tensor([[7, 2, 5]]), target_ids=torch.tensor([[5, 7, 9]]),
        ...        target_gains=torch.tensor([[0, 1, 2]]), k=[2, 10])  # 1 / 2, 2 / 3
        {'judged@2': tensor(0.5000, dtype=torch.float64), 'judged@10': tensor(0.6667, dtype=torch.float64)}
    """
    return compute_named_metric("judged", preds, target, k, {}, arguments)


def infap_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # trec_eval's m_infAP.c on the list cut at k: each relevant item at rank i scores
    # (1 + a (h + e) / (h + m + 2e)) / i, with a the pooled items above it (judged or not), h and m the judged
    # relevant and non-relevant ones above, e = 1e-5 (1 at rank 1, where a = 0); their sum over R
    hits = rt.hits
    judged, pooled = rt.judged_items().to(torch.float64), rt.pooled_items().to(torch.float64)
    relevant_above = rt.cum_hits - hits
    judged_above, pooled_above = judged.cumsum(1) - judged, pooled.cumsum(1) - pooled
    estimate = (relevant_above + INFAP_EPSILON) / (judged_above + 2 * INFAP_EPSILON)
    return per_count(summed(hits * (1 + pooled_above * estimate), ks, "reciprocal"), rt.relevant_column)


# infAP's estimate a (h + e) / (h + m + 2e) is not linear in the relevance of the ranks above
register("infap", TopKFamily(infap_kernel, {**LIST_OPTIONS}, exact_under_average_ties=False, reads_judged=True,
                              reads_pooled=True))


class InfAP(TopKMetric):
    r"""infAP@k, inferred average precision (Yilmaz & Aslam 2006): average precision estimated from a judged
    random sample of the pool, as trec_eval's ``infAP`` computes it on the run cut at k.

    .. math:: \mathrm{infAP@k} = \frac{1}{R} \sum_{r \text{ relevant}, i_r \le k}
        \frac{1}{i_r} \left(1 + a_r \frac{h_r + \epsilon}{h_r + m_r + 2\epsilon}\right)

    with :math:`i_r` the rank of r, :math:`a_r` the pooled items ranked above it (judged or not), :math:`h_r` and
    :math:`m_r` the judged relevant and non-relevant ones above, :math:`\epsilon = 10^{-5}` and R the query's
    relevant items (1 at rank 1). The targets say what is pooled and judged: a target gain of -1 is a pooled
    item that is not judged (trec_eval's qrels line of -1), any other target id is a judgment (non-relevant
    where its gain is not relevant), an item outside the target ids is not pooled. The dense form pools and
    judges every candidate. The other metrics of a suite read a gain of -1 as 0. trec_eval scores a query
    without a relevant item 0: ``empty_target_action="neg"`` (or ``convention="trec"``).

    Args:
        k: cut-off(s); a k as long as the lists gives trec_eval's ``infAP``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``
            (the estimate is not linear in the relevance of the ranks above).

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update`` (a negative target gain
            other than -1, among others).

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.InfAP(k=[1, 10])
        >>> # ranked 0, 5, 1, 2, 6: 0 and 2 relevant, 1 judged non-relevant, 5 pooled but not judged, 6 not pooled
        >>> metric.update(ranked_ids=torch.tensor([[0, 5, 1, 2, 6]]), target_ids=torch.tensor([[0, 1, 2, 5]]),
        ...               target_gains=torch.tensor([[1, 0, 2, -1]]))
        >>> metric.compute()  # @10: (1 + (1 + 3 (1 + e) / (2 + 2e)) / 4) / 2, trec_eval's 0.8125
        {'infap@1': tensor(0.5000, dtype=torch.float64), 'infap@10': tensor(0.8125, dtype=torch.float64)}
    """

    name = "infap"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def infap(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""infAP@k, inferred average precision (Yilmaz & Aslam 2006; trec_eval's ``infAP`` on the run cut at k):
    average precision estimated from a judged sample of the pool,
    :math:`\frac{1}{R} \sum_{r} \frac{1}{i_r}\left(1 + a_r \frac{h_r + \epsilon}{h_r + m_r + 2\epsilon}\right)`
    over the relevant items r of the top k at ranks :math:`i_r`, :math:`a_r` the pooled items above r (judged or
    not), :math:`h_r` and :math:`m_r` the judged relevant and non-relevant ones above, :math:`\epsilon = 10^{-5}`.

    A target gain of -1 is a pooled item that is not judged (a qrels line of -1), any other target id a
    judgment (non-relevant where its gain is not relevant), an item outside the target ids is not pooled. The
    dense form pools and judges every candidate. A k as long as the lists gives trec_eval's ``infAP``.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids`` (and ``target_gains``), or another input
            form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"infap@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`; not ``ties="average"``.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, a negative target gain other than -1, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import infap
        >>> # ranked 0, 5, 1, 2, 6: 0 and 2 relevant, 1 judged non-relevant, 5 pooled but not judged, 6 not pooled
        >>> infap(ranked_ids=torch.tensor([[0, 5, 1, 2, 6]]), target_ids=torch.tensor([[0, 1, 2, 5]]),
        ...       target_gains=torch.tensor([[1, 0, 2, -1]]), k=5)  # (1 + (1 + 3 * 0.5) / 4) / 2, trec_eval's
        tensor(0.8125, dtype=torch.float64)
    """
    return compute_named_metric("infap", preds, target, k, {}, arguments)
