"""The families that count the relevant items of the top k -- Precision, Recall, F1, HitRate -- and the
non-relevant ones, FallOut.

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Unpack, get_args, overload

from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, TopKMetric
from torchrec_eval.pipeline import RankedTargets, keywords_checked_by
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric, topk_function
from torchrec_eval.ranking.rank_sums import (
    Ratio,
    as_row,
    divide,
    hits_within,
    listed_within,
    per_capped_count,
    quotient,
    summed,
)
from torchrec_eval.ranking.registry import LIST_OPTIONS, TopKFamily, register

PrecisionDenominator = Literal["k", "retrieved", "min_k_r"]
RecallDenominator = Literal["r", "min_k_r"]


def precision_kernel(rt: RankedTargets, ks: Sequence[int], denominator: str = "k") -> Ratio:
    hits = hits_within(rt, ks)
    if denominator == "k":
        return Ratio(hits, as_row(ks, rt.gains))
    if denominator == "retrieved":
        return Ratio(hits, listed_within(rt, ks))
    return per_capped_count(hits, rt, ks)  # "min_k_r"


register("precision", TopKFamily(precision_kernel, {"denominator": get_args(PrecisionDenominator), **LIST_OPTIONS}))


class Precision(TopKMetric):
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


@overload
def precision(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
              denominator: PrecisionDenominator | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def precision(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
              denominator: PrecisionDenominator | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def precision(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
              denominator: PrecisionDenominator | None = None, **arguments: Unpack[TopKCall]) -> Tensor | dict[str,
              Tensor]:
    r"""Precision@k: the share of the top k that is relevant, :math:`\sum_{i \le k} r_i / k`.

    ``denominator="k"`` (default: trec_eval, ranx, RecBole, Spark), ``"retrieved"`` divides by the
    list's length min(k, candidates) (Jurity), ``"min_k_r"`` by min(k, R).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"precision@k": value}``).
        denominator: see above.
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import precision
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 1], [0, 0, 1, 1]])
        >>> precision(preds, target, k=2)
        tensor(0.5000, dtype=torch.float64)
    """
    return compute_named_metric("precision", preds, target, k, {"denominator": denominator}, arguments)


def recall_kernel(rt: RankedTargets, ks: Sequence[int], denominator: str = "r") -> Ratio:
    if denominator == "min_k_r":
        return per_capped_count(hits_within(rt, ks), rt, ks)
    return Ratio(hits_within(rt, ks), rt.relevant_column)  # 0 hits where R = 0


register("recall", TopKFamily(recall_kernel, {"denominator": get_args(RecallDenominator), **LIST_OPTIONS}))


class Recall(TopKMetric):
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


@overload
def recall(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
           denominator: RecallDenominator | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def recall(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
           denominator: RecallDenominator | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def recall(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
           denominator: RecallDenominator | None = None, **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""Recall@k: the share of the relevant items found in the top k, :math:`\sum_{i \le k} r_i / R`.

    ``denominator="min_k_r"`` divides by min(k, R) instead (Liang et al. 2018).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"recall@k": value}``).
        denominator: see above.
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import recall
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 1], [0, 0, 1, 1]])
        >>> recall(preds, target, k=[1, 3], reduction="none")
        {'recall@1': tensor([0.5000, 0.5000], dtype=torch.float64), 'recall@3': tensor([1.0000, 0.5000], dtype=torch.float64)}
    """
    return compute_named_metric("recall", preds, target, k, {"denominator": denominator}, arguments)


def f1_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    p, r = quotient(precision_kernel(rt, ks)), quotient(recall_kernel(rt, ks))
    return divide(2 * p * r, p + r)


register("f1", TopKFamily(f1_kernel, {**LIST_OPTIONS}))


class F1(TopKMetric):
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


@topk_function
def f1(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""F1@k: the harmonic mean of Precision@k and Recall@k, :math:`2PR / (P + R)` (0 when both are 0).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"f1@k": value}``).
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import f1
        >>> f1(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]), k=2)
        tensor(0.5000, dtype=torch.float64)
    """
    return compute_named_metric("f1", preds, target, k, {}, arguments)


def hitrate_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor | Ratio:
    if rt.tie_groups is not None:  # the probability that a relevant item lies within k
        return summed(rt.first_hit, ks)
    hits = hits_within(rt, ks)  # hits / hits: 1 with a hit, 0 without (divide's rule), with no op of its own
    return Ratio(hits, hits)


# trec_eval's success_k, ir-measures' Success@k
register("hitrate", TopKFamily(hitrate_kernel, {**LIST_OPTIONS}, aliases=("hr", "hit_rate", "success")))


class HitRate(TopKMetric):
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


@topk_function
def hitrate(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""HitRate@k: 1 if any of the top k is relevant, :math:`\mathbb{1}[\sum_{i \le k} r_i > 0]`.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"hitrate@k": value}``).
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import hitrate
        >>> hitrate(torch.tensor([[0.9, 0.8, 0.1], [0.1, 0.2, 0.3]]), torch.tensor([[0, 0, 1], [0, 0, 1]]), k=1)
        tensor(0.5000, dtype=torch.float64)
    """
    return compute_named_metric("hitrate", preds, target, k, {}, arguments)


def fallout_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # the non-relevant items of the top k over the query's non-relevant candidates (a query without one is
    # resolved by ``empty_target_action``: its family's registry entry says so)
    listed = listed_within(rt, ks)
    return divide(listed - hits_within(rt, ks), (rt.num_candidates - rt.num_relevant).unsqueeze(1))


register("fallout", TopKFamily(fallout_kernel, {**LIST_OPTIONS}, higher_is_better=False, reads_non_relevant=True))


class FallOut(TopKMetric):
    r"""FallOut@k: the share of the query's non-relevant candidates that the top k retrieves (torchmetrics'
    ``RetrievalFallOut``); lower is better.

    .. math:: \mathrm{FallOut@k} = \frac{\min(k, n) - \sum_{i \le k} r_i}{n - R}

    with n the query's candidates and R its relevant ones. The query that ``empty_target_action`` resolves
    is the one without a non-relevant candidate (torchmetrics': "no negative target"). torchmetrics' class
    scores it 1 (``empty_target_action="pos"``), where this library skips it by default as every family's
    empty query. It needs every candidate's score: the dense, ids or flat form, not ``ranked_ids``.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, on the ranked form, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.FallOut(k=2, empty_target_action="pos")  # torchmetrics' RetrievalFallOut
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]]),
        ...               torch.tensor([[1, 0, 0, 0], [1, 1, 1, 1]]))
        >>> metric.compute()  # (1 / 3 + 1) / 2: the second query has no non-relevant candidate
        tensor(0.6667, dtype=torch.float64)
    """

    name = "fallout"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def fallout(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""FallOut@k, the share of the non-relevant candidates retrieved in the top k (torchmetrics'
    ``retrieval_fall_out``): :math:`(\min(k, n) - \sum_{i \le k} r_i) / (n - R)`, n candidates, R relevant.

    ``empty_target_action`` resolves a query without a non-relevant candidate. It needs every candidate's
    score (dense, ids or flat form).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another scored form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"fallout@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k``, on ``ranked_ids``, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import fallout
        >>> fallout(torch.tensor([[0.2, 0.3, 0.5]]), torch.tensor([[True, False, True]]), k=2)  # torchmetrics' example
        tensor(1., dtype=torch.float64)
    """
    return compute_named_metric("fallout", preds, target, k, {}, arguments)
