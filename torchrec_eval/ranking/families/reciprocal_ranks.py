"""The families that weigh each hit by its reciprocal rank or by the precision or recall at it: MRR, ARHR,
NCRR, MAP and MAR.

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
from torchrec_eval.pipeline.batch import TieGroups
from torchrec_eval.pipeline.tensor_cache import ranks
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric, topk_function
from torchrec_eval.ranking.rank_sums import (
    Ratio,
    as_row,
    at_cutoffs,
    best_sums,
    hits_within,
    listed_within,
    per_capped_count,
    per_count,
    rank_weights,
    summed,
)
from torchrec_eval.ranking.registry import LIST_OPTIONS, TopKFamily, register

Normalizer = Literal["min_k_r", "r", "hits", "k", "min_list_r"]
# the rank AP divides by: "position" (the item's own, in the tie order), "group_max": every tied item at its
# tie group's last rank and the hits through the group's end (cornac's MAP: scipy's rankdata "max")
TieRank = Literal["position", "group_max"]
_NORMALIZERS = get_args(Normalizer)


def _precision_at_group_end(rt: RankedTargets, groups: TieGroups) -> Tensor:
    """[B, K] r_i times the precision at the end of rank i's tie group: every tied item takes its group's last
    rank and the hits through it (cornac's MAP), on the view averaged over tie orders (r_i = m / n)."""
    size, group_hits, offset = groups
    hits = rt.hits
    through_group = rt.cum_hits - (offset + 1) * hits + group_hits
    group_end = ranks(rt.depth, hits.device) + size - 1 - offset
    return hits * through_group / group_end

def _average(rt: RankedTargets, ks: Sequence[int], per_rank: Tensor, normalizer: str, weight: str = "one") -> Ratio:
    """sum_{i<=k} per_rank_i w_i / D, where per_rank already carries the relevance of rank i (0 where D is 0)."""
    total = summed(per_rank, ks, weight)
    if normalizer == "min_k_r":
        return per_capped_count(total, rt, ks)
    if normalizer == "r":
        return Ratio(total, rt.relevant_column)
    if normalizer == "hits":  # an expected number of hits under averaged ties may lie in (0, 1)
        return Ratio(total, hits_within(rt, ks))
    if normalizer == "min_list_r":  # LensKit: min(R, the list's length within k)
        return Ratio(total, torch.minimum(rt.relevant_column, listed_within(rt, ks)))
    return Ratio(total, as_row(ks, rt.gains))  # "k"


def mrr_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # 1 / the rank of the first relevant item within each cut-off, 0 without one. Under averaged ties its
    # expectation (the first hit's probability at each rank over the rank); with 0/1 hits the largest h_i / i up to
    # each cut-off, bit for bit what that sum picks (1 / i decreases), with no first-hit tensor
    if rt.tie_groups is not None:
        return summed(rt.first_hit, ks, "reciprocal")
    depth = min(max(ks), rt.depth)
    weighted = rt.hits[:, :depth] * rank_weights(depth, "reciprocal", 2.0, rt.hits.device)
    return weighted.amax(1, keepdim=True) if len(ks) == 1 else at_cutoffs(weighted.cummax(1).values, ks)


register("mrr", TopKFamily(mrr_kernel, {**LIST_OPTIONS}, aliases=("recip_rank",)))


class MRR(TopKMetric):
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


@topk_function
def mrr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""MRR@k: the reciprocal rank of the first relevant item within the top k, 0 if there is none.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"mrr@k": value}``).
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import mrr
        >>> ranked = torch.tensor([[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]])
        >>> relevant = torch.tensor([[0, 2, 4, 5, 6], [1, 3, 6, 7, 0]])
        >>> mrr(ranked_ids=ranked, target_ids=relevant, k=5)
        tensor(0.6667, dtype=torch.float64)
    """
    return compute_named_metric("mrr", preds, target, k, {}, arguments)


def arhr_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return summed(rt.hits, ks, "reciprocal")


register("arhr", TopKFamily(arhr_kernel, {**LIST_OPTIONS}, upper_bound=None))


class ARHR(TopKMetric):
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


@topk_function
def arhr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""ARHR@k (average reciprocal hit rank): :math:`\sum_{i \le k} r_i / i`.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"arhr@k": value}``).
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import arhr
        >>> arhr(torch.tensor([[0.9, 0.8, 0.7, 0.1]]), torch.tensor([[1, 0, 1, 0]]), k=3)
        tensor(1.3333, dtype=torch.float64)
    """
    return compute_named_metric("arhr", preds, target, k, {}, arguments)


def ncrr_kernel(rt: RankedTargets, ks: Sequence[int]) -> Ratio:
    # ARHR over its most with the query's relevant items, sum_{i <= min(R, k, list length)} 1 / i (cornac)
    return Ratio(arhr_kernel(rt, ks), best_sums(rt, ks, "reciprocal"))


register("ncrr", TopKFamily(ncrr_kernel, {**LIST_OPTIONS}))


class NCRR(TopKMetric):
    r"""NCRR@k, normalized cumulative reciprocal rank (cornac):
    :math:`\sum_{i \le k} r_i / i \;/\; \sum_{i \le \min(R, k, n)} 1 / i` (n the list's length).

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NCRR(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # (1 + 1/3) / (1 + 1/2)
        tensor(0.8889, dtype=torch.float64)
    """

    name = "ncrr"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


@topk_function
def ncrr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""NCRR@k, normalized cumulative reciprocal rank (cornac): ARHR@k over its most with the query's
    relevant items, :math:`\sum_{i \le k} r_i / i \;/\; \sum_{i \le \min(R, k, n)} 1 / i` (n the list's length).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"ncrr@k": value}``).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import ncrr
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> ncrr(preds, target, k=3)
        tensor(0.7778, dtype=torch.float64)
    """
    return compute_named_metric("ncrr", preds, target, k, {}, arguments)


def map_kernel(rt: RankedTargets, ks: Sequence[int], normalizer: str = "min_k_r",
                      tie_rank: str = "position") -> Ratio:
    groups = rt.tie_groups  # None in the ranked form: every item has a rank of its own
    if tie_rank == "group_max" and groups is not None:
        return _average(rt, ks, _precision_at_group_end(rt, groups), normalizer)
    return _average(rt, ks, rt.hits_before_and_at, normalizer, "reciprocal")


register("map", TopKFamily(map_kernel, {"normalizer": _NORMALIZERS, "tie_rank": get_args(TieRank), **LIST_OPTIONS},
                            averaged_by=("tie_rank", "group_max"), aliases=("ap",)))


class MAP(TopKMetric):
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


@overload
def map(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        normalizer: Normalizer | None = None, tie_rank: TieRank | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def map(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        normalizer: Normalizer | None = None, tie_rank: TieRank | None = None,
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def map(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        normalizer: Normalizer | None = None, tie_rank: TieRank | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""MAP@k (mean average precision): :math:`\sum_{i \le k} \mathrm{Precision@}i \cdot r_i / D`.

    ``normalizer``: ``"min_k_r"`` D = min(k, R), so a perfect ranking scores 1 (default: Jurity,
    RecBole, MS Recommenders ``map_at_k``); ``"r"`` D = R (trec_eval ``map_cut``, ranx); ``"hits"``
    D = relevant items in the top k (torchmetrics); ``"k"`` D = k; ``"min_list_r"`` D = min(R, the
    list's length within k) (LensKit: min(k, R) but for a list shorter than k).

    ``tie_rank="group_max"`` ranks every tied item at its tie group's last rank, with the relevant items
    through the group's end above it (cornac's MAP, scipy's ``rankdata(method="max")``): precision at
    rank i becomes :math:`h_{e(i)} / e(i)`, e(i) the last rank of i's tie group, whatever the tie order.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"map@k": value}``).
        normalizer: see above.
        tie_rank: ``"position"`` (default) or ``"group_max"``, see above.
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import map
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5, 0.4]])
        >>> map(preds, torch.tensor([[1, 0, 0, 1, 1, 0]]), k=6)
        tensor(0.7000, dtype=torch.float64)
    """
    return compute_named_metric("map", preds, target, k, {"normalizer": normalizer, "tie_rank": tie_rank}, arguments)


def mar_kernel(rt: RankedTargets, ks: Sequence[int], normalizer: str = "min_k_r") -> Ratio:
    return _average(rt, ks, per_count(rt.hits_before_and_at, rt.relevant_column), normalizer)


register("mar", TopKFamily(mar_kernel, {"normalizer": _NORMALIZERS, **LIST_OPTIONS}))


class MAR(TopKMetric):
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


@overload
def mar(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        normalizer: Normalizer | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def mar(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        normalizer: Normalizer | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def mar(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        normalizer: Normalizer | None = None, **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""MAR@k (mean average recall): :math:`\sum_{i \le k} \mathrm{Recall@}i \cdot r_i / D`, D as in :func:`map`.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"mar@k": value}``).
        normalizer: see above.
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import mar
        >>> mar(torch.tensor([[0.9, 0.8, 0.7]]), torch.tensor([[1, 0, 1]]), k=3)
        tensor(0.7500, dtype=torch.float64)
    """
    return compute_named_metric("mar", preds, target, k, {"normalizer": normalizer}, arguments)
