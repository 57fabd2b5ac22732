"""Functional top-k metrics of the peers' families: ERR, RBP, SDCG and NCRR (user models), SetF, NumRet
and NumRelRet (the top k as a set), IPrec and InterpolatedAP (interpolated precision), FallOut, bpref,
Judged and infAP (incomplete judgments). The same calls as :mod:`torchrec_eval.ranking.functional`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack, overload

from torch import Tensor

from torchrec_eval.pipeline import keywords_checked_by
from torchrec_eval.ranking.curves import curve_points, curve_requests
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric, compute_named_metrics

__all__ = ["bpref", "err", "fallout", "infap", "interpolated_ap", "iprec", "judged", "ncrr", "num_rel", "num_rel_ret", "num_ret",
           "precision_recall_curve", "rbp", "sdcg", "setf"]


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


@overload
def ncrr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def ncrr(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def num_ret(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def num_ret(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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
    result = compute_named_metric("num_rel", preds, target, None, {}, arguments)
    return result if isinstance(result, Tensor) else result["num_rel"]


@overload
def num_rel_ret(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def num_rel_ret(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def interpolated_ap(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
                    **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def interpolated_ap(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
                    **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def fallout(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
            **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def fallout(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
            **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def bpref(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
          **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def bpref(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
          **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def judged(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
           **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def judged(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
           **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@overload
def infap(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
          **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def infap(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
          **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
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


@keywords_checked_by(TopKCall)
def precision_recall_curve(preds: Tensor | None = None, target: Tensor | None = None, *, max_k: int,
                           adaptive_k: bool = False, **arguments: Unpack[TopKCall]) -> tuple[Tensor, Tensor, Tensor]:
    r"""The retrieval precision-recall curve (torchmetrics' ``RetrievalPrecisionRecallCurve``): the mean over
    queries of Precision@k and Recall@k at every cut-off k = 1..``max_k``, from one ranking of the batch.

    .. math:: P@k = \frac{\sum_{i \le k} r_i}{k}, \quad R@k = \frac{\sum_{i \le k} r_i}{R}

    With ``adaptive_k`` precision divides by min(k, n), the query's n candidates (torchmetrics' adaptive k).

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        max_k: the last cut-off K (required: a metric's state holds K points).
        adaptive_k: divide precision by min(k, n).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`; ``reduction="none"`` gives each query's
            curve, [B, K] (NaN rows for skipped queries).

    Returns:
        (precision [K], recall [K], the cut-offs 1..K as int64 [K]).

    Raises:
        ValueError: on a bad ``max_k`` or ``adaptive_k``, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import precision_recall_curve
        >>> precision, recall, top_k = precision_recall_curve(
        ...     torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]), max_k=3)
        >>> precision
        tensor([1.0000, 0.5000, 0.6667], dtype=torch.float64)
        >>> recall, top_k
        (tensor([0.5000, 0.5000, 1.0000], dtype=torch.float64), tensor([1, 2, 3]))
    """
    requests = curve_requests(max_k, adaptive_k)
    return curve_points(compute_named_metrics(requests, preds, target, arguments), len(requests[0][1]))
