"""The retrieval precision-recall curve over the cut-offs 1..K (torchmetrics'): its points are the means over
queries of Precision@k and Recall@k, the top-k member's own values, from one ranking of the batch. Its reading
rule (reading a point off the curve), its classes (:class:`PrecisionRecallCurve`, :class:`RecallAtFixedPrecision`)
and its function (:func:`precision_recall_curve`)."""

from __future__ import annotations

from typing import Any, Unpack, cast

import torch
from torch import Tensor

from torchrec_eval.members.conventions import resolve_options
from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.shown_arguments import shown_repr
from torchrec_eval.pipeline import keywords_checked_by
from torchrec_eval.pipeline.arguments import check_int, is_number
from torchrec_eval.ranking.entries import make_entry
from torchrec_eval.ranking.member import TopKMember
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metrics

#: a top-k request: (family, cut-offs, the family's options)
Request = tuple[str, list[int], dict[str, Any]]


def curve_requests(max_k: object, adaptive_k: object) -> list[Request]:
    """The top-k families of the curve's points: Precision@k and Recall@k for k = 1..``max_k``; precision over
    min(k, candidates) where ``adaptive_k`` (torchmetrics' adaptive k: a query of n < k candidates retrieves
    n), else over k."""
    depth = check_int("max_k", max_k, 1, reason="the curve's cut-offs 1..max_k: its state's size")
    if not isinstance(adaptive_k, bool):
        raise ValueError(f"`adaptive_k` must be True or False, got {adaptive_k!r}")
    ks = list(range(1, depth + 1))
    return [("precision", ks, {"denominator": "retrieved" if adaptive_k else "k"}), ("recall", ks, {})]


def curve_points(values: dict[str, Tensor], max_k: int) -> tuple[Tensor, Tensor, Tensor]:
    """(precision [..., K], recall [..., K], the cut-offs 1..K) from the values ``"precision@k"`` and
    ``"recall@k"`` [...] of :func:`curve_requests`."""
    precision = torch.stack([values[f"precision@{k}"] for k in range(1, max_k + 1)], dim=-1)
    recall = torch.stack([values[f"recall@{k}"] for k in range(1, max_k + 1)], dim=-1)
    return precision, recall, torch.arange(1, max_k + 1, device=precision.device)


def check_min_precision(min_precision: object) -> float:
    if not is_number(min_precision) or not 0 <= min_precision <= 1:
        raise ValueError(f"`min_precision` must be a number in [0, 1], got {min_precision!r}")
    return float(min_precision)


def recall_at_fixed_precision(precision: Tensor, recall: Tensor, min_precision: float) -> tuple[Tensor, Tensor]:
    r"""The most recall the curve reaches at a precision of at least ``min_precision``, and the cut-off that
    reaches it (torchmetrics' ``RetrievalRecallAtFixedPrecision``).

    .. math:: k^* = \max \operatorname{arg\,max}_{k : P@k \ge p} R@k

    the largest such k among equal recalls, as torchmetrics' ``max`` over (recall, k) pairs. Where no point
    reaches ``min_precision``, or the best recall is 0, the recall is 0 and the cut-off K (torchmetrics').

    Args:
        precision: [..., K] mean Precision@k for k = 1..K (NaN: no query counted; it reaches no precision).
        recall: [..., K] mean Recall@k.
        min_precision: p in [0, 1].

    Returns:
        (recall [...] float64, cut-off [...] int64).

    Example:
        >>> import torch
        >>> recall_at_fixed_precision(torch.tensor([1.0, 0.5, 0.67]), torch.tensor([0.5, 0.5, 1.0]), 0.6)
        (tensor(1.), tensor(3))
        >>> recall_at_fixed_precision(torch.tensor([1.0, 0.5, 0.67]), torch.tensor([0.5, 0.5, 1.0]), 0.9)
        (tensor(0.5000), tensor(1))
    """
    depth = recall.shape[-1]
    reached = torch.where(precision >= min_precision, recall, float("-inf"))
    last_best = depth - 1 - reached.flip(-1).argmax(-1, keepdim=True)  # the largest k among equal recalls
    best = reached.gather(-1, last_best).squeeze(-1)
    found = best > 0
    cutoff = torch.where(found, last_best.squeeze(-1) + 1, depth)
    return torch.where(found, best, 0.0).to(recall.dtype), cutoff


class PrecisionRecallCurve(MemberMetric):
    r"""The retrieval precision-recall curve over the cut-offs k = 1..K: the mean over queries of Precision@k
    and Recall@k (torchmetrics' ``RetrievalPrecisionRecallCurve``).

    .. math:: P@k = \operatorname{mean}_q \frac{\sum_{i \le k} r_{q,i}}{k}, \quad
        R@k = \operatorname{mean}_q \frac{\sum_{i \le k} r_{q,i}}{R_q}

    Its state is the sums of the 2K per-query values (a suite of ``precision@1..K`` and ``recall@1..K``
    on one ranking of each batch), so it syncs exactly and its memory does not grow with the queries.
    torchmetrics keeps every score instead, and without ``max_k`` reads K off the largest query at the
    end: here K is given up front, as the state's size. Its ``aggregation`` other than the mean has no
    fixed-memory form and is not offered. Per-query curves: ``per_query`` (keys ``precision@k``,
    ``recall@k``).

    Args:
        max_k: the last cut-off K.
        adaptive_k: precision divides by min(k, n), the query's n candidates (torchmetrics' ``adaptive_k``).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; torchmetrics'
            ``empty_target_action`` is ``"neg"``, this library's default ``"skip"``.

    Raises:
        ValueError: on a bad ``max_k`` or ``adaptive_k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.PrecisionRecallCurve(max_k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]]),
        ...               torch.tensor([[1, 0, 0, 1], [0, 0, 1, 0]]))
        >>> precision, recall, top_k = metric.compute()
        >>> precision
        tensor([1.0000, 0.5000, 0.5000], dtype=torch.float64)
        >>> recall, top_k
        (tensor([0.7500, 0.7500, 1.0000], dtype=torch.float64), tensor([1, 2, 3]))
    """

    higher_is_better = True

    def __init__(self, max_k: int, *, adaptive_k: bool = False, **kwargs: Unpack[MetricArguments]) -> None:
        requests = curve_requests(max_k, adaptive_k)
        convention, ties = kwargs.get("convention"), kwargs.get("ties")
        member = TopKMember([make_entry(name, ks, resolve_options(convention, name, options, ties))
                             for name, ks, options in requests])
        super().__init__([member], **kwargs)
        self.max_k = len(requests[0][1])
        self._show(adaptive_k=adaptive_k or None)

    def compute(self) -> tuple[Tensor, Tensor, Tensor]:  # type: ignore[override]  # torchmetrics' curve
        """(precision [K], recall [K], the cut-offs 1..K); [num_groups, K] points with groups."""
        values = cast(dict[str, Tensor], super().compute())  # 2K keys: a dict
        return curve_points(values, self.max_k)

    def extra_repr(self) -> str:
        """The curve's keys as two ranges, and the arguments that differ from the defaults."""
        return shown_repr([f"precision@1..{self.max_k}", f"recall@1..{self.max_k}"], self._shown_arguments)

    def plot(self, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """Draw the curve, precision against recall, one per group (matplotlib: ``pip install "torchrec_eval[cli]"``).

        Args:
            val: a result of ``compute()``; by default ``compute()``.
            ax: a matplotlib ``Axes`` to draw on; by default a new figure.

        Returns:
            ``(figure, axes)``.
        """
        from torchmetrics.utilities.plot import plot_curve

        precision, recall, top_k = PrecisionRecallCurve.compute(self) if val is None else val
        return plot_curve((recall, precision, top_k), ax=ax, label_names=("Recall", "Precision"),
                          name=type(self).__name__)


class RecallAtFixedPrecision(PrecisionRecallCurve):
    r"""The most recall the mean precision-recall curve reaches at a mean precision of at least
    ``min_precision``, and its cut-off (torchmetrics' ``RetrievalRecallAtFixedPrecision``): see
    :func:`recall_at_fixed_precision` for the rule (0 and K where no point
    reaches it).

    Args:
        min_precision: p in [0, 1].
        max_k, adaptive_k: as in :class:`PrecisionRecallCurve`.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``min_precision``, ``max_k`` or ``adaptive_k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.RecallAtFixedPrecision(min_precision=0.6, max_k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]]),
        ...               torch.tensor([[1, 0, 0, 1], [0, 0, 1, 0]]))
        >>> metric.compute()  # precision 1, 0.5, 0.5: only k = 1 reaches 0.6
        (tensor(0.7500, dtype=torch.float64), tensor(1))
    """

    def __init__(self, min_precision: float, max_k: int, *, adaptive_k: bool = False,
                 **kwargs: Unpack[MetricArguments]) -> None:
        self.min_precision = check_min_precision(min_precision)
        super().__init__(max_k, adaptive_k=adaptive_k, **kwargs)
        self._show(min_precision=min_precision)

    def compute(self) -> tuple[Tensor, Tensor]:  # type: ignore[override]  # torchmetrics' (recall, k)
        """(the best recall, its cut-off); [num_groups] each with groups."""
        precision, recall, _ = super().compute()
        return recall_at_fixed_precision(precision, recall, self.min_precision)

    def plot(self, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """Draw the curve and mark the point read off it (``val``: a result of ``compute()``, by default it)."""
        fig, ax = super().plot(None, ax)
        recall, cutoff = self.compute() if val is None else val
        curves = PrecisionRecallCurve.compute(self)[0].reshape(-1, self.max_k)
        for best, k, precision in zip(recall.reshape(-1).tolist(), cutoff.reshape(-1).tolist(), curves, strict=True):
            ax.plot([best], [float(precision[k - 1])], "o", label=f"k = {k}")
        ax.legend()
        return fig, ax


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
