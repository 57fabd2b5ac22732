"""The families that read the top k as a set: SetF, SetMAP, NumRet, NumRelRet and NumRel (trec_eval's
``set_F``, ``set_map``, ``num_ret``, ``num_rel_ret``, ``num_rel``), and NumQ, the number of queries (``num_q``).

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack, overload

from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, TopKMetric
from torchrec_eval.pipeline import RankedTargets, keywords_checked_by
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric, topk_function
from torchrec_eval.ranking.rank_sums import Ratio, divide, hits_within, listed_within
from torchrec_eval.ranking.registry import LIST_OPTIONS, Interval, TopKFamily, register


def setf_kernel(rt: RankedTargets, ks: Sequence[int], beta: float = 1.0) -> Tensor:
    # (1 + b^2) P R / (b^2 P + R) with P = h / num_ret, R = h / R: (1 + b^2) h / (b^2 R + num_ret); 0 without hits
    squared = beta * beta
    return divide((1 + squared) * hits_within(rt, ks), squared * rt.relevant_column + listed_within(rt, ks))


register("setf", TopKFamily(setf_kernel, {"beta": (Interval(0.0),), **LIST_OPTIONS}))


class SetF(TopKMetric):
    r"""SetF@k, the F-measure of the top k as a set: :math:`(1 + \beta^2) P R / (\beta^2 P + R)`, P = hits /
    min(k, n), R = hits / R; 0 without hits.

    Args:
        k: cut-off(s).
        beta: recall weighs :math:`\beta` times as much as precision (a number > 0, default 1).
            trec_eval's and ir-measures' ``set_F.x`` write :math:`x = \beta^2`.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.SetF(k=3, beta=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # 5 * 2 / (4 * 2 + 3)
        tensor(0.9091, dtype=torch.float64)
    """

    name = "setf"

    def __init__(self, k: IntOrSeq = 10, *, beta: float | None = None, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"beta": beta}, **kwargs)


@overload
def setf(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        beta: float | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def setf(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        beta: float | None = None,
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def setf(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        beta: float | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""SetF@k, the F-measure of the top k as a set: :math:`(1 + \beta^2) P R / (\beta^2 P + R)` with
    P = hits / min(k, n), R = hits / R (0 without hits; n the list's length).

    ``beta`` weighs recall :math:`\beta` times as much as precision (van Rijsbergen's, scikit-learn's
    ``fbeta_score``; 1 by default). trec_eval's and ir-measures' ``set_F.x`` write :math:`x = \beta^2`:
    their ``set_F.4`` on a list cut at k is ``setf(beta=2)``. SetP@k and SetR@k are
    :func:`precision` with ``denominator="retrieved"`` and :func:`recall`.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"setf@k": value}``).
        beta: a number > 0.
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import setf
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> setf(preds, target, k=3, beta=2)
        tensor(0.6818, dtype=torch.float64)
    """
    return compute_named_metric("setf", preds, target, k, {"beta": beta}, arguments)


def set_map_kernel(rt: RankedTargets, ks: Sequence[int]) -> Ratio:
    # h^2 / (num_ret R) = set precision x set recall (trec_eval's m_set_map.c); 0 without hits
    hits = hits_within(rt, ks)
    return Ratio(hits * hits, listed_within(rt, ks) * rt.relevant_column)


# the square of the hits is not linear in each rank's relevance: no exact expectation over tie orders
register("set_map", TopKFamily(set_map_kernel, {**LIST_OPTIONS}, exact_under_average_ties=False,
                               aliases=("setap", "set_ap")))


class SetMAP(TopKMetric):
    r"""SetMAP@k, trec_eval's unranked set MAP (``set_map``; ir-measures' ``SetAP``): the precision of the top k
    as a set times its recall, :math:`h_k^2 / (n_k R)`, :math:`h_k` the relevant items among the
    :math:`n_k = \min(k, n)` listed, R the query's relevant items; 0 without a hit.

    Args:
        k: cut-off(s); trec_eval's ``set_map`` of a whole run is the cut-off at the run's depth.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not
            ``ties="average"`` (the square of the hits has no exact expectation over tie orders here).

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.SetMAP(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # 1 hit of 2 listed, 2 relevant: (1/2)(1/2)
        tensor(0.2500, dtype=torch.float64)
    """

    name = "set_map"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def set_map(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
            **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""SetMAP@k, trec_eval's ``set_map`` of the top k: :math:`h_k^2 / (n_k R)`, set precision times set recall
    (see :class:`SetMAP`).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"set_map@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import set_map
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> set_map(preds, target, k=3, reduction="none")  # 2^2 / (3 * 2), 1^2 / (3 * 2)
        tensor([0.6667, 0.1667], dtype=torch.float64)
    """
    return compute_named_metric("set_map", preds, target, k, {}, arguments)


def num_ret_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return listed_within(rt, ks)


register("num_ret", TopKFamily(num_ret_kernel, {**LIST_OPTIONS}, reads_judged=True, empty_unjudged=True, upper_bound=None))


class NumRet(TopKMetric):
    r"""NumRet@k: the items retrieved within the cut-off, :math:`\min(k, n)`; its mean over queries.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NumRet(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, float("-inf"), float("-inf")]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # two candidates
        tensor(2., dtype=torch.float64)
    """

    name = "num_ret"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def num_ret(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""NumRet@k: the number of items retrieved within the cut-off, :math:`\min(k, n)` (n the list's
    length; trec_eval's ``num_ret`` on a list cut at k). Its mean over queries, as every value here
    (trec_eval sums it over queries).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"num_ret@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import num_ret
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> num_ret(preds, target, k=3)
        tensor(3., dtype=torch.float64)
    """
    return compute_named_metric("num_ret", preds, target, k, {}, arguments)


def num_rel_ret_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return hits_within(rt, ks)


register("num_rel_ret", TopKFamily(num_rel_ret_kernel, {**LIST_OPTIONS}, upper_bound=None))


class NumRelRet(TopKMetric):
    r"""NumRelRet@k: the relevant items within the cut-off, :math:`\sum_{i \le k} r_i`; its mean over queries.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NumRelRet(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """

    name = "num_rel_ret"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def num_rel_ret(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""NumRelRet@k: the number of relevant items within the cut-off, :math:`\sum_{i \le k} r_i`
    (trec_eval's ``num_rel_ret`` on a list cut at k). Its mean over queries, as every value here
    (trec_eval sums it over queries).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"num_rel_ret@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import num_rel_ret
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> num_rel_ret(preds, target, k=3)
        tensor(1.5000, dtype=torch.float64)
    """
    return compute_named_metric("num_rel_ret", preds, target, k, {}, arguments)


def num_rel_kernel(rt: RankedTargets, ks: Sequence[int | None]) -> Tensor:
    return rt.relevant_column.expand(-1, len(ks))


register("num_rel", TopKFamily(num_rel_kernel, cutoff="none", upper_bound=None))  # reads no list: no empty_list_action


class _Uncut(TopKMetric):
    """A family that takes no cut-off: its class takes the common arguments alone."""

    def __init__(self, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(None, None, **kwargs)


def _uncut(name: str, preds: Tensor | None, target: Tensor | None, arguments: TopKCall) -> Tensor:
    """The function of a family without a cut-off: its one value."""
    result = compute_named_metric(name, preds, target, None, {}, arguments)
    return result if isinstance(result, Tensor) else result[name]


class NumRel(_Uncut):
    r"""NumRel: the query's relevant candidates R, their mean over queries (trec_eval's ``num_rel``, which it
    sums over queries). It takes no cut-off.

    Args:
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NumRel()
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """

    name = "num_rel"


@keywords_checked_by(TopKCall)
def num_rel(preds: Tensor | None = None, target: Tensor | None = None, **arguments: Unpack[TopKCall]) -> Tensor:
    r"""NumRel: the query's relevant candidates R (trec_eval's ``num_rel``), their mean over queries (trec_eval
    sums them). No cut-off: it counts the targets, not a ranking.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on bad input (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import num_rel
        >>> num_rel(torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]]), torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]]))
        tensor(2., dtype=torch.float64)
    """
    return _uncut("num_rel", preds, target, arguments)


def num_q_kernel(rt: RankedTargets, ks: Sequence[int | None]) -> Tensor:
    return rt.relevant_column.new_ones(rt.relevant_column.shape[0], len(ks))


# a total, not a mean; a query counts when it has a judgment (trec_eval evaluates the queries in the qrels)
register("num_q", TopKFamily(num_q_kernel, cutoff="none", reads_judged=True, empty_unjudged=True, upper_bound=None,
                             total=True, aliases=("numq",)))


class NumQ(_Uncut):
    r"""NumQ: the number of queries evaluated, :math:`\sum_q 1` over the queries with a judged item (trec_eval's
    ``num_q``, ir-measures' ``NumQ``). Its value is that total, not a mean: no confidence interval, no paired
    comparison. It takes no cut-off.

    A query counts when it has a judgment: every row of the dense form (each candidate is judged), a row with a
    target id in the ids form (a judged non-relevant one too), as trec_eval counts the queries of the run found
    in the qrels. ``empty_target_action`` resolves a query without a judgment: skipped (the default and
    ``"neg"``: it adds 0), counted (``"pos"``) or an error; with ``groups``, the total of each group; with
    ``weighted=True``, the sum of the queries' weights.

    Args:
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NumQ()
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1], [0.2, 0.3, 0.7]]), torch.tensor([[1, 0, 0], [0, 0, 0]]))
        >>> metric.update(torch.tensor([[0.5, 0.4, 0.3]]), torch.tensor([[0, 2, 0]]))
        >>> metric.compute()  # three queries, judged (a dense row judges every candidate)
        tensor(3., dtype=torch.float64)
    """

    name = "num_q"


@keywords_checked_by(TopKCall)
def num_q(preds: Tensor | None = None, target: Tensor | None = None, **arguments: Unpack[TopKCall]) -> Tensor:
    r"""NumQ: the number of queries with a judged item in the batch (trec_eval's ``num_q``, ir-measures'
    ``NumQ``): a total, not a mean; with ``reduction="none"``, 1 for each query counted and NaN for the others.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on bad input (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import num_q
        >>> preds = torch.tensor([[0.9, 0.8, 0.1], [0.2, 0.3, 0.7], [0.5, 0.4, 0.3]])
        >>> num_q(preds, target_ids=torch.tensor([[0, 2], [-1, -1], [1, -1]]))  # the second has no judgment
        tensor(2., dtype=torch.float64)
    """
    return _uncut("num_q", preds, target, arguments)
