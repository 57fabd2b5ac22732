"""The retrieval precision-recall curve and the recall at a fixed precision (torchmetrics'
``RetrievalPrecisionRecallCurve`` and ``RetrievalRecallAtFixedPrecision``) in fixed memory: each point of the
curve is a mean over queries of Precision@k or Recall@k, so the state is the top-k member's sums at the
cut-offs 1..K, not every score of every query."""

from __future__ import annotations

from typing import Any, Unpack, cast

from torch import Tensor

from torchrec_eval.members.conventions import resolve_options
from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.shown_arguments import shown_repr
from torchrec_eval.ranking.curves import (
    check_min_precision,
    curve_points,
    curve_requests,
    recall_at_fixed_precision,
)
from torchrec_eval.ranking.entries import make_entry
from torchrec_eval.ranking.member import TopKMember

__all__ = ["PrecisionRecallCurve", "RecallAtFixedPrecision"]


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
    :func:`~torchrec_eval.ranking.curves.recall_at_fixed_precision` for the rule (0 and K where no point
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
