"""The families that sum graded gains over log-discounted ranks: CG, DCG, NDCG (the ideal DCG beside the
DCG, as ranx keeps them) and SDCG.

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, Unpack, get_args, overload

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, TopKMetric
from torchrec_eval.pipeline import RankedTargets, keywords_checked_by
from torchrec_eval.ranking.discount_sum import discount_sum
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric, topk_function
from torchrec_eval.ranking.rank_sums import Ratio, as_row, best_sums, summed, weight_sums
from torchrec_eval.ranking.registry import LIST_OPTIONS, TOP_GRADE, Interval, TopKFamily, register

# the options of DCG's gains and discount
Gain = Literal["linear", "exp", "binary"]
Ideal = Literal["cut", "full", "k"]
# the rank discount of DCG: "log" 1 / log_b(i + 1); "clipped_log" 1 / log_b(max(i, 2)) (LensKit's default:
# ranks 1 and 2 both weigh 1 at base 2)
Discount = Literal["log", "clipped_log"]
_GAIN = {"gain": get_args(Gain), "log_base": (Interval(1.0),), "discount": get_args(Discount)}
# average_ties=True: this family's value is the expectation over all orders of tied scores (as
# torchmetrics' and scikit-learn's NDCG), whatever order the other metrics of the suite use
_AVERAGE = {"average_ties": (True, False)}
_BY_TIES = ("average_ties", True)  # the option value that reads the averaged view (NDCG, DCG)


# the rank weight (rank_sums.rank_weights) of each ``discount``
_WEIGHTS = {"log": "discount", "clipped_log": "clipped_discount"}

def _gains(rt: RankedTargets, gain: str) -> Tensor:
    if gain == "binary":
        return rt.hits
    return torch.exp2(rt.gains) - 1 if gain == "exp" else rt.gains

def _ideal_dcg(rt: RankedTargets, ks: Sequence[int], gain: str, log_base: float, ideal: str, discount: str) -> Tensor:
    weight = _WEIGHTS[discount]
    if gain != "binary" and rt.ideal_gains is not None:  # graded: the query's own gains, sorted ("cut" only)
        ideal_gains = torch.exp2(rt.ideal_gains) - 1 if gain == "exp" else rt.ideal_gains
        # the ideal list has its own length (min(k, number of targets)): a ranked list shorter than k
        # must not cut the ideal at its own length
        return summed(ideal_gains, ks, weight, log_base, finite=gain != "exp")
    # binary gains (or a binary target, whose every gain is 0 or 1): the ideal list holds min(R, k)
    # relevant items (R <= max_relevant): tabulated by length, never longer than the batch can fill,
    # whatever k is
    if ideal == "k":  # RecTools: k relevant slots, whatever R is
        return as_row([_k_slots(k, log_base, discount) for k in ks], rt.gains).expand(rt.gains.shape[0], -1)
    if ideal == "full":  # Jurity: every relevant item, not cut at k
        bound = max(rt.max_relevant, 1)
        table = weight_sums(bound, weight, log_base, rt.gains.device)
        return table[rt.num_relevant.long().clamp(max=bound)].unsqueeze(1).expand(-1, len(ks))
    return best_sums(rt, ks, weight, log_base, within_list=False)

def _k_slots(k: int, log_base: float, discount: str) -> float:
    """The DCG of k relevant items at ranks 1..k, for any k (no [k] tensor)."""
    if discount == "log":
        return discount_sum(k, log_base)
    # clipped: rank 1 weighs 1 / log_b(2), rank i >= 2 as the unclipped rank i - 1
    return math.log(log_base) / math.log(2) + (discount_sum(k - 1, log_base) if k > 1 else 0.0)


def cg_kernel(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return summed(rt.gains, ks)


register("cg", TopKFamily(cg_kernel, {**LIST_OPTIONS}, upper_bound=None))


class CG(TopKMetric):
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


@topk_function
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


def dcg_kernel(rt: RankedTargets, ks: Sequence[int], gain: str = "linear", log_base: float = 2.0,
        discount: str = "log") -> Tensor:
    return summed(_gains(rt, gain), ks, _WEIGHTS[discount], log_base, finite=gain != "exp")


register("dcg", TopKFamily(dcg_kernel, {**_GAIN, **_AVERAGE, **LIST_OPTIONS}, averaged_by=_BY_TIES, upper_bound=None))


class DCG(TopKMetric):
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


def ndcg_kernel(rt: RankedTargets, ks: Sequence[int], gain: str = "linear", log_base: float = 2.0, ideal: str = "cut",
         discount: str = "log") -> Ratio:
    return Ratio(dcg_kernel(rt, ks, gain, log_base, discount), _ideal_dcg(rt, ks, gain, log_base, ideal, discount))


register("ndcg", TopKFamily(ndcg_kernel, {**_GAIN, "ideal": get_args(Ideal), **_AVERAGE, **LIST_OPTIONS},
                             needs_ideal=True, averaged_by=_BY_TIES))


class NDCG(TopKMetric):
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


def sdcg_kernel(rt: RankedTargets, ks: Sequence[int], max_grade: float | None = None, log_base: float = 2.0) -> Ratio:
    # DCG@k of the gains scaled to [0, 1] by the top grade, over the DCG of k items of the top grade: the
    # query's own relevant items do not bound it (cwl_eval's SDCG, ir-measures' SDCG(max_rel=max_grade));
    # without a top grade, of the binary relevance (cwl_eval's max_rel=1, where a grade >= 1 counts 1)
    best = as_row([(max_grade or 1.0) * discount_sum(k, log_base) for k in ks], rt.gains)
    return Ratio(dcg_kernel(rt, ks, "linear" if max_grade else "binary", log_base), best)


register("sdcg", TopKFamily(sdcg_kernel, {**TOP_GRADE, "log_base": (Interval(1.0),), **LIST_OPTIONS}))


class SDCG(TopKMetric):
    r"""SDCG@k, scaled DCG (cwl_eval): DCG@k over the DCG of k items of the top grade,
    :math:`\sum_{i \le k} \frac{g_i}{\log_2(i + 1)} / (g_{max} \sum_{i \le k} \frac{1}{\log_2(i + 1)})`.

    Args:
        k: cut-off(s).
        max_grade: the top grade :math:`g_{max}` (a number >= 1; a larger gain is refused in ``update``),
            or None (default): :math:`g_i` is the relevance :math:`r_i`, 0 or 1.
        log_base: base of the discount, 2 by default.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.SDCG(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # 1 / (1 + 1 / log2(3))
        tensor(0.6131, dtype=torch.float64)
    """

    name = "sdcg"

    def __init__(self, k: IntOrSeq = 10, *, max_grade: float | None = None, log_base: float | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"max_grade": max_grade, "log_base": log_base}, **kwargs)


@overload
def sdcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        max_grade: float | None = None, log_base: float | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def sdcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        max_grade: float | None = None, log_base: float | None = None,
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def sdcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        max_grade: float | None = None, log_base: float | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""SDCG@k, scaled DCG: DCG@k of the gains over the DCG of k items of the top grade,
    :math:`\sum_{i \le k} \frac{g_i}{\log_2(i + 1)} / (g_{max} \sum_{i \le k} \frac{1}{\log_2(i + 1)})`.

    cwl_eval's SDCG (ir-measures' ``SDCG(max_rel=g_max)@k``): unlike NDCG, the query's own relevant
    items do not bound it, so a query with one relevant item cannot reach 1 at k > 1. ``max_grade``
    is :math:`g_{max}`; a larger gain is refused with the other checks. Without it, :math:`g_i` is the
    relevance :math:`r_i` (0 or 1: cwl_eval's ``max_rel=1``, which counts any grade >= 1 as 1), and
    SDCG@k is NDCG with RecTools' ideal of k relevant slots.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"sdcg@k": value}``).
        max_grade: the top grade (a number >= 1), or None (default): binary relevance.
        log_base: base of the discount, 2 by default.
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import sdcg
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> sdcg(preds, target, k=3, max_grade=3)
        tensor(0.3520, dtype=torch.float64)
    """
    return compute_named_metric("sdcg", preds, target, k, {"max_grade": max_grade, "log_base": log_base}, arguments)
