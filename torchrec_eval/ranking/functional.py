"""Functional top-k ranking metrics: one call, one batch, a mean (or per-query values).

Every function accepts any input form of :mod:`torchrec_eval.pipeline` and the same common arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack, overload

from torch import Tensor

from torchrec_eval.pipeline import keywords_checked_by
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric
from torchrec_eval.ranking.registry import (
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
    "arhr", "cg", "dcg", "f1", "hitrate", "map", "mar", "mrr", "ndcg", "precision", "recall", "rprecision"
]





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


@overload
def f1(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
       **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def f1(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
       **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def hitrate(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
            **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def hitrate(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
            **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def mrr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def mrr(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def arhr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
         **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def arhr(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
         **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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





@overload
def dcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        gain: Gain | None = None, log_base: float | None = None, discount: Discount | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def dcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        gain: Gain | None = None, log_base: float | None = None, discount: Discount | None = None,
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def dcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        gain: Gain | None = None, log_base: float | None = None, discount: Discount | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""DCG@k: :math:`\sum_{i \le k} \mathrm{gain}(g_i) / \log_2(i + 1)`.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"dcg@k": value}``).
        gain: ``"linear"`` uses the target value g (trec_eval, ranx), ``"exp"`` 2^g - 1 (Burges),
            ``"binary"`` the relevance (0/1).
        log_base: base of the rank discount, 2 by default (``math.e`` for MS Recommenders, Spark).
        discount: ``"log"`` (default) :math:`1 / \log_b(i + 1)`, or ``"clipped_log"``
            :math:`1 / \log_b(\max(i, 2))`, LensKit's default (ranks 1 and 2 both weigh 1 at base 2).
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import dcg
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]])
        >>> dcg(preds, torch.tensor([[3, 1, 0, 2, 0]]), k=5)
        tensor(4.4923, dtype=torch.float64)
    """
    return compute_named_metric("dcg", preds, target, k, {"gain": gain, "log_base": log_base, "discount": discount},
                                arguments)


@overload
def ndcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
         gain: Gain | None = None, log_base: float | None = None, ideal: Ideal | None = None,
         discount: Discount | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def ndcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
         gain: Gain | None = None, log_base: float | None = None, ideal: Ideal | None = None,
         discount: Discount | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def ndcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
         gain: Gain | None = None, log_base: float | None = None, ideal: Ideal | None = None,
         discount: Discount | None = None, **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""NDCG@k: DCG@k / IDCG@k, the ideal DCG over the query's gains sorted descending, cut at k.

    The ideal is cut at k as in trec_eval ``ndcg_cut``, scikit-learn and ranx.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"ndcg@k": value}``).
        gain, log_base, discount: as for :func:`dcg` (the ideal DCG takes the same discount).
        ideal: ``"cut"`` (default) cuts the ideal list at k; with binary gains ``"full"`` uses all R
            relevant items (Jurity) and ``"k"`` k relevant slots whatever R is (RecTools).
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import ndcg
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]])
        >>> ndcg(preds, torch.tensor([[3, 1, 0, 2, 0]]), k=5)
        tensor(0.9434, dtype=torch.float64)
    """
    return compute_named_metric("ndcg", preds, target, k,
                                {"gain": gain, "log_base": log_base, "ideal": ideal, "discount": discount}, arguments)


@overload
def cg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
       **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def cg(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
       **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def cg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
       **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""CG@k (cumulative gain): :math:`\sum_{i \le k} g_i`.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"cg@k": value}``).
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import cg
        >>> cg(torch.tensor([[0.9, 0.8, 0.7]]), torch.tensor([[3, 0, 2]]), k=2)
        tensor(3., dtype=torch.float64)
    """
    return compute_named_metric("cg", preds, target, k, {}, arguments)


@overload
def rprecision(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | None = None,
               denominator: RPrecisionDenominator | None = None, no_hit_action: NoHitAction | None = None,
               **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def rprecision(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int | None],
               denominator: RPrecisionDenominator | None = None, no_hit_action: NoHitAction | None = None,
               **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def rprecision(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | None | Sequence[int | None] = None,
               denominator: RPrecisionDenominator | None = None, no_hit_action: NoHitAction | None = None,
               **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""R-Precision: Precision@R, the share of the top R that is relevant, R = the query's relevant items.

    ``k`` is an optional cap: with it the value is hits@min(k, R) / min(k, R). Without a cap the
    ranking goes as deep as the largest R of the batch, which needs one host sync. RecTools'
    R-Precision is hits@k / min(k, R): ``precision(..., k=k, denominator="min_k_r")``.

    ``denominator="r"`` divides the hits in the top min(k, R) by R instead; ``no_hit_action="skip"``
    leaves out the queries without a relevant item in the top min(k, R) (with it, a query without
    any relevant item is left out whatever ``empty_target_action``; not with ``ties="average"``).
    Both together are MS Recommenders' ``r_precision_at_k``, which ``convention="recommenders"``
    sets.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"rprecision@k": value}``).
        denominator: see above.
        no_hit_action: see above.
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import rprecision
        >>> rprecision(torch.tensor([[0.9, 0.8, 0.7, 0.6]]), torch.tensor([[1, 0, 1, 1]]))
        tensor(0.6667, dtype=torch.float64)
    """
    options = {"denominator": denominator, "no_hit_action": no_hit_action}
    return compute_named_metric("rprecision", preds, target, k, options, arguments)
