r"""Weighted ROC AUC and average precision (AUPRC) over all samples: exact, or from fixed histograms.

Both variants reduce the data to *cells*: runs of samples with equal scores (exact: every distinct
score; binned: every histogram bin), each with the weight of its positives and of its negatives
(:math:`w y` and :math:`w (1 - y)`, so soft labels count on both sides), in ascending score order
within each segment (a task, or a task of one group). One formula then serves both (cell c, with
:math:`P_{<c}`, :math:`N_{<c}` the weights of the cells below it and P, N the totals):

.. math::
    \mathrm{AUC} = \frac{1}{P N} \sum_c P_c \left(N_{<c} + \tfrac12 N_c\right), \qquad
    \mathrm{AP} = \frac{1}{P} \sum_c P_c \, \frac{P - P_{<c}}{(P - P_{<c}) + (N - N_{<c})}

AUC is the weighted Mann-Whitney statistic (a tied pair counts 1/2), equal to
``sklearn.metrics.roc_auc_score(..., sample_weight=w)``; AP is the step-wise area under the
precision-recall curve with one step per distinct score, ``sklearn.metrics.average_precision_score``,
which is also what TorchRec's ``auprc.py`` integrates. A segment without a positive or without a
negative weight has no AUC (NaN); without a positive it has no AP (NaN). TorchRec's ``auc.py`` returns
0.5 there, and orders tied scores by its sort instead of counting them 1/2.

**Binned error bound.** With K bins over [0, 1] (bin of p: ``min(floor(p K), K - 1)``) the binned values
are exactly those of the scores rounded down to their bin. Only pairs within one bin can be counted
differently from the exact values (1/2 instead of 0 or 1), so

.. math::
    |\mathrm{AUC}_K - \mathrm{AUC}| \le \frac{\sum_b P_b N_b}{2 P N} \le \frac{\max_b N_b}{2 N}

and, because every precision reached inside bin b lies in
:math:`[\frac{P_{>b}}{P_{>b} + N_{>b} + N_b}, \frac{P_{>b} + P_b}{P_{>b} + P_b + N_{>b}}]`,

.. math::
    |\mathrm{AP}_K - \mathrm{AP}| \le \frac{1}{P} \sum_b P_b \left(\frac{P_{>b} + P_b}{P_{>b} + P_b + N_{>b}}
        - \frac{P_{>b}}{P_{>b} + N_{>b} + N_b}\right)

Both bounds are computed from the histogram itself (:func:`histogram_error_bounds`).
"""

from __future__ import annotations

import torch
from torch import Tensor


def curve_areas(positive: Tensor, negative: Tensor, segment: Tensor, num_segments: int) -> tuple[Tensor, Tensor]:
    """AUC and AP of each segment from cells sorted by (segment, ascending score).

    Args:
        positive, negative: float64 [C] weights of each cell's positives and negatives; empty cells
            (both 0) change nothing.
        segment: int64 [C] non-decreasing segment of each cell, in [0, num_segments).
        num_segments: S.

    Returns:
        AUC and AP, float64 [S] each (NaN where undefined).

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.curves import curve_areas
        >>> # scores 0.1 (neg), 0.4 (pos), 0.4 (neg), 0.8 (pos): one tied pair
        >>> pos, neg = torch.tensor([0.0, 1.0, 1.0]).double(), torch.tensor([1.0, 1.0, 0.0]).double()
        >>> curve_areas(pos, neg, torch.zeros(3, dtype=torch.long), 1)
        (tensor([0.8750], dtype=torch.float64), tensor([0.8333], dtype=torch.float64))
    """
    zeros = positive.new_zeros(num_segments)
    pos_total = zeros.index_add(0, segment, positive)
    neg_total = zeros.index_add(0, segment, negative)
    # weight strictly below each cell within its segment: running sums less the earlier segments' totals
    pos_below = positive.cumsum(0) - positive - (pos_total.cumsum(0) - pos_total)[segment]
    neg_below = negative.cumsum(0) - negative - (neg_total.cumsum(0) - neg_total)[segment]
    auc = zeros.index_add(0, segment, positive * (neg_below + negative / 2)) / (pos_total * neg_total)
    # at the threshold of a cell, everything scored at or above it is predicted positive
    true_pos = pos_total[segment] - pos_below
    predicted = true_pos + neg_total[segment] - neg_below
    precision = torch.where(predicted > 0, true_pos / predicted.clamp(min=torch.finfo(predicted.dtype).tiny), 0.0)
    ap = zeros.index_add(0, segment, positive * precision) / pos_total
    return auc, ap


def sample_cells(preds: Tensor, target: Tensor, weight: Tensor, groups: Tensor | None,
                 num_groups: int | None) -> tuple[Tensor, Tensor, Tensor, int]:
    """Cells of equal scores from samples: one sort per task (two with groups), no host sync.

    Args:
        preds, target, weight: float64 [n, T]; groups: int64 [n] or None.

    Returns:
        (positive, negative, segment, S) for :func:`curve_areas`, segment = task * G + group (S = T G);
        there are n T cells, the unused ones empty at the end.
    """
    count, tasks = preds.shape
    segments_per_task = num_groups or 1
    scores = preds.T
    order = torch.argsort(scores, dim=1, stable=True)
    task = torch.arange(tasks, device=preds.device).unsqueeze(1) * segments_per_task
    if groups is None:
        segment = task.expand(tasks, count)
    else:  # by group, then by score within the group
        by_group = torch.argsort(groups[order], dim=1, stable=True)
        order = order.gather(1, by_group)
        segment = task + groups[order]
    segment, values = segment.reshape(-1), scores.gather(1, order).reshape(-1)
    weights = weight.T.gather(1, order).reshape(-1)
    labels = target.T.gather(1, order).reshape(-1)
    starts = torch.ones_like(values, dtype=torch.bool)
    if values.numel():
        starts[1:] = (values[1:] != values[:-1]) | (segment[1:] != segment[:-1])
    cell = starts.cumsum(0) - 1
    positive = torch.zeros_like(values).index_add_(0, cell, weights * labels)
    negative = torch.zeros_like(values).index_add_(0, cell, weights * (1 - labels))
    cell_segment = torch.full_like(segment, tasks * segments_per_task - 1).scatter_(0, cell, segment)
    return positive, negative, cell_segment, tasks * segments_per_task


def sample_areas(preds: Tensor, target: Tensor, weight: Tensor, groups: Tensor | None = None,
                 num_groups: int | None = None) -> tuple[Tensor, Tensor]:
    """Exact AUC and AP per group and task, [G, T] each, from samples (float64 [n, T], groups [n]).

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.curves import sample_areas
        >>> preds = torch.tensor([[0.1], [0.4], [0.4], [0.8]]).double()
        >>> target = torch.tensor([[0.0], [1.0], [0.0], [1.0]]).double()
        >>> sample_areas(preds, target, torch.ones_like(preds))
        (tensor([[0.8750]], dtype=torch.float64), tensor([[0.8333]], dtype=torch.float64))
    """
    auc, ap = curve_areas(*sample_cells(preds, target, weight, groups, num_groups))
    tasks, segments_per_task = preds.shape[1], num_groups or 1
    return auc.view(tasks, segments_per_task).T, ap.view(tasks, segments_per_task).T


def histogram(preds: Tensor, target: Tensor, weight: Tensor, groups: Tensor | None, num_groups: int | None,
              bins: int) -> Tensor:
    """Weights per score bin, [G, T, 2 K]: positives in ``[..., :K]``, negatives in ``[..., K:]``.

    The bin of a prediction p in [0, 1] is ``min(floor(p K), K - 1)``.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.curves import histogram
        >>> preds, target = torch.tensor([[0.1], [0.4], [0.9]]).double(), torch.tensor([[0.0], [1.0], [1.0]]).double()
        >>> histogram(preds, target, torch.ones_like(preds), None, None, bins=2)
        tensor([[[1., 1., 1., 0.]]], dtype=torch.float64)
    """
    count, tasks = preds.shape
    index = (preds * bins).floor_().clamp_(0, bins - 1).nan_to_num_(0).long()
    rows = torch.arange(tasks, device=preds.device).expand(count, tasks)
    if groups is not None:
        rows = rows + groups.unsqueeze(1) * tasks
    base = rows * (2 * bins) + index
    out = torch.zeros((num_groups or 1) * tasks * 2 * bins, dtype=torch.float64, device=preds.device)
    out.index_add_(0, base.reshape(-1), (weight * target).reshape(-1))
    out.index_add_(0, (base + bins).reshape(-1), (weight * (1 - target)).reshape(-1))
    return out.view(num_groups or 1, tasks, 2 * bins)


def histogram_areas(counts: Tensor) -> tuple[Tensor, Tensor]:
    """AUC and AP from histograms [..., 2 K] (see :func:`histogram`), each of shape [...]."""
    bins = counts.shape[-1] // 2
    flat = counts.reshape(-1, 2 * bins)
    segment = torch.arange(flat.shape[0], device=counts.device).repeat_interleave(bins)
    auc, ap = curve_areas(flat[:, :bins].reshape(-1), flat[:, bins:].reshape(-1), segment, flat.shape[0])
    return auc.view(counts.shape[:-1]), ap.view(counts.shape[:-1])


def histogram_error_bounds(counts: Tensor) -> tuple[Tensor, Tensor]:
    """Upper bounds of |binned - exact| for AUC and AP from histograms [..., 2 K] (module docstring).

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.curves import histogram_error_bounds
        >>> # 3 bins; the lowest holds 1 of 2 positives and 1 of 2 negatives: 1 pair of 4 may be off by 1/2
        >>> histogram_error_bounds(torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0, 0.0]).double())[0]
        tensor(0.1250, dtype=torch.float64)
    """
    bins = counts.shape[-1] // 2
    positive, negative = counts[..., :bins], counts[..., bins:]
    pos_total, neg_total = positive.sum(-1), negative.sum(-1)
    auc_bound = (positive * negative).sum(-1) / (2 * pos_total * neg_total)
    pos_above = pos_total.unsqueeze(-1) - positive.cumsum(-1)
    neg_above = neg_total.unsqueeze(-1) - negative.cumsum(-1)

    def ratio(top: Tensor, bottom: Tensor) -> Tensor:  # a precision; 1 when nothing is predicted
        return torch.where(bottom > 0, top / bottom.clamp(min=torch.finfo(bottom.dtype).tiny), 1.0)

    highest = ratio(pos_above + positive, pos_above + positive + neg_above)
    lowest = ratio(pos_above, pos_above + neg_above + negative)
    ap_bound = (positive * (highest - lowest)).sum(-1) / pos_total
    return auc_bound, ap_bound
