r"""Exact weighted AUC and AUPRC over all samples: the one pointwise family that stores its inputs.

A ranking statistic over a stream has no fixed-size sufficient statistic, so, like torchmetrics'
``BinaryAUROC(thresholds=None)`` and TorchRec's ``auc.py``, these classes keep every (prediction, label,
weight[, group]) in float64 list states (``dist_reduce_fx="cat"``): memory grows by 24 bytes per sample
and task (+8 with groups) and the sync gathers all samples. They are the exception to the
fixed-statistics rule of this library; :class:`~torchrec_eval.BinnedAUC` and
:class:`~torchrec_eval.BinnedAUPRC` keep fixed histograms instead, with a documented error bound.
Predictions may be any real scores (logits included). Formulas: :mod:`torchrec_eval.pointwise.curves`.
"""

from __future__ import annotations

from typing import Any, Unpack

import torch
from torch import Tensor
from torchmetrics.utilities import dim_zero_cat
from torchmetrics.utilities.distributed import gather_all_tensors

from torchrec_eval.metrics.lifecycle import Apply
from torchrec_eval.pointwise.base import PointwiseArguments, PointwiseMetric
from torchrec_eval.pointwise.curves import sample_areas

__all__ = ["BinaryAUC", "BinaryAUPRC"]


class _StoredCurve(PointwiseMetric):
    """Stores the samples (flattened float64 lists; groups as int64) and sorts them at ``compute``."""

    key = ""
    higher_is_better = True
    binary_target = True

    def __init__(self, **kwargs: Unpack[PointwiseArguments]) -> None:
        super().__init__(single_key=True, **kwargs)
        self.value_keys = [self.key]
        for name in ("preds", "target", "weight", "groups"):
            self.add_state(f"sample_{name}", default=[], dist_reduce_fx="cat")

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        batch = self.batch(**inputs)
        columns = [batch.preds.reshape(-1), batch.target.reshape(-1), batch.weight.reshape(-1)]
        if batch.groups is not None:
            columns.append(batch.groups)

        def apply() -> None:
            for name, column in zip(("preds", "target", "weight", "groups"), columns, strict=False):
                getattr(self, f"sample_{name}").append(column)

        return apply

    def _dtypes(self) -> dict[str, torch.dtype]:
        columns = {"preds": torch.float64, "target": torch.float64, "weight": torch.float64}
        return columns if self.num_groups is None else {**columns, "groups": torch.int64}

    def _sync_dist(self, dist_sync_fn: Any = gather_all_tensors, process_group: Any = None) -> None:
        """torchmetrics' sync, with an empty column of the right dtype for a process that saw no sample
        (torchmetrics would send a float32 one, which the float64 columns of the others do not match)."""
        for name, dtype in self._dtypes().items():
            state = getattr(self, f"sample_{name}")
            if not state:
                state.append(torch.zeros(0, dtype=dtype, device=self.device))
        super()._sync_dist(dist_sync_fn, process_group)

    def _column(self, name: str) -> Tensor:
        state, dtype = getattr(self, f"sample_{name}"), self._dtypes()[name]
        return dim_zero_cat(state).to(dtype) if len(state) else torch.zeros(0, dtype=dtype, device=self.device)

    def _values(self) -> dict[str, Tensor]:
        preds, target, weight = (self._column(name).view(-1, self.num_tasks) for name in ("preds", "target", "weight"))
        groups = self._column("groups") if self.num_groups is not None else None
        auc, ap = sample_areas(preds, target, weight, groups, self.num_groups)
        return {self.key: auc if self.key == "auc" else ap}


class BinaryAUC(_StoredCurve):
    r"""Exact weighted ROC AUC over all samples (stores them; see :class:`~torchrec_eval.BinnedAUC` for
    fixed memory).

    .. math:: \mathrm{AUC} = \frac{\sum_{i, j} w_i y_i\, w_j (1 - y_j) \left(\mathbb{1}[p_i > p_j]
        + \tfrac12 \mathbb{1}[p_i = p_j]\right)}{\sum_i w_i y_i \sum_j w_j (1 - y_j)}

    ``sklearn.metrics.roc_auc_score(y, p, sample_weight=w)``, computed from one sort at ``compute`` (no
    pairs). Soft labels count on both sides. NaN without a positive or a negative weight (TorchRec: 0.5).
    Not the ranking :class:`~torchrec_eval.AUC` (per query, averaged over queries).

    Args:
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/auc": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            finite scores, ``target`` in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import BinaryAUC
        >>> metric = BinaryAUC()
        >>> metric.update(torch.tensor([0.9, 0.2, 0.4]), torch.tensor([1, 0, 1]))
        >>> metric.update(torch.tensor([0.4, 0.6]), torch.tensor([0, 0]))
        >>> metric.compute()  # 4 of 6 pairs right, 1 tied
        tensor(0.7500, dtype=torch.float64)
    """

    key = "auc"


class BinaryAUPRC(_StoredCurve):
    r"""Exact weighted average precision over all samples (stores them; see
    :class:`~torchrec_eval.BinnedAUPRC` for fixed memory).

    .. math:: \mathrm{AP} = \sum_n (R_n - R_{n-1})\, P_n

    over the distinct prediction values taken as thresholds, in decreasing order, with weighted
    precision :math:`P_n` and recall :math:`R_n`: ``sklearn.metrics.average_precision_score(y, p,
    sample_weight=w)`` and TorchRec's AUPRC. NaN without a positive weight.

    Args:
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/auprc": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            finite scores, ``target`` in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import BinaryAUPRC
        >>> metric = BinaryAUPRC()
        >>> metric.update(torch.tensor([0.9, 0.2, 0.4, 0.6]), torch.tensor([1, 0, 1, 0]))
        >>> metric.compute()  # (1/2) (1/1 + 2/3)
        tensor(0.8333, dtype=torch.float64)
    """

    key = "auprc"
