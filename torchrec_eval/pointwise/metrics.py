r"""Pointwise metrics of a CTR / conversion model, as torchmetrics classes with fixed float64 statistics.

One prediction per sample: NE, log loss, calibration, CTR, MSE, RMSE, MAE and binned AUC / AUPRC, each
weighted by ``sample_weight``, for one task or T tasks at once (``tasks``), per segment (``num_groups``).
Formulas: :mod:`~torchrec_eval.pointwise.entropy`, :mod:`~torchrec_eval.pointwise.rates`,
:mod:`~torchrec_eval.pointwise.curves`; exact AUC / AUPRC (stored samples):
:mod:`~torchrec_eval.pointwise.exact`; several values at once: :class:`~torchrec_eval.PointwiseMetrics`;
lifetime and window values: :class:`~torchrec_eval.Windowed`.
"""

from __future__ import annotations

import math
from typing import Any, Unpack

from torch import Tensor

from torchrec_eval.pointwise.base import PointwiseArguments, StatisticsMetric
from torchrec_eval.pointwise.entropy import ETA
from torchrec_eval.pointwise.members import DEFAULT_BINS, HistogramMember, SumsMember

__all__ = ["NE", "BinnedAUC", "BinnedAUPRC", "Calibration", "LogLoss", "PointwiseCTR", "PointwiseMAE",
           "PointwiseMSE", "PointwiseRMSE"]


class _Sum(StatisticsMetric):
    """One value of :class:`~torchrec_eval.pointwise.members.SumsMember`, the class's ``key``."""

    key = ""

    def __init__(self, *, options: dict[str, Any] | None = None, **kwargs: Unpack[PointwiseArguments]) -> None:
        super().__init__([SumsMember({self.key: options or {}})], single_key=True, **kwargs)


class NE(_Sum):
    r"""Normalized entropy: the weighted log loss over the entropy of the weighted base rate (TorchRec's NE).

    .. math:: \mathrm{NE} = \frac{-\sum_i w_i (y_i \log p_i + (1 - y_i) \log(1 - p_i))}
        {-\sum_i w_i (y_i \log \bar y + (1 - y_i) \log(1 - \bar y))}, \qquad
        \bar y = \frac{\sum_i w_i y_i}{\sum_i w_i}

    with predictions and :math:`\bar y` clamped to [eta, 1 - eta], exactly TorchRec's
    ``compute_ne`` (:mod:`torchrec_eval.pointwise.entropy`). 1 = no better than predicting the base
    rate; lower is better. State: 3 float64 sums per group and task.

    Args:
        eta: the clamp (TorchRec: 1e-12).
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/ne": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            probabilities in [0, 1], ``target`` in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import NE
        >>> metric = NE()
        >>> metric.update(torch.tensor([0.9, 0.2, 0.3, 0.6]), torch.tensor([1, 0, 0, 1]))
        >>> metric.compute()  # log loss 0.2990 nats over the entropy of a base rate of 1/2, ln 2
        tensor(0.4314, dtype=torch.float64)
    """

    key = "ne"
    higher_is_better = False

    def __init__(self, *, eta: float = ETA, **kwargs: Unpack[PointwiseArguments]) -> None:
        super().__init__(options={"eta": eta}, **kwargs)


class LogLoss(_Sum):
    r"""Weighted log loss (binary cross entropy) of predicted probabilities.

    .. math:: \mathrm{LogLoss} = -\frac{\sum_i w_i (y_i \log p_i + (1 - y_i) \log(1 - p_i))}{\sum_i w_i}

    ``sklearn.metrics.log_loss(y, p, sample_weight=w)`` with the default natural log; ``log_base=2`` gives
    TorchRec's ``LOG_LOSS`` (bits). Predictions are clamped to [eta, 1 - eta] as in TorchRec.

    Args:
        log_base: base of the logarithm (default e).
        eta: the clamp (TorchRec: 1e-12).
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/log_loss": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            probabilities in [0, 1], ``target`` in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import LogLoss
        >>> metric = LogLoss()
        >>> metric.update(torch.tensor([0.9, 0.2, 0.3, 0.6]), torch.tensor([1, 0, 0, 1]),
        ...               sample_weight=torch.tensor([1.0, 1.0, 2.0, 1.0]))
        >>> metric.compute()
        tensor(0.3105, dtype=torch.float64)
    """

    key = "log_loss"
    higher_is_better = False

    def __init__(self, *, log_base: float = math.e, eta: float = ETA, **kwargs: Unpack[PointwiseArguments]) -> None:
        super().__init__(options={"log_base": log_base, "eta": eta}, **kwargs)


class Calibration(_Sum):
    r"""Calibration: the predicted over the observed weighted number of positives (TorchRec's).

    .. math:: \mathrm{Calibration} = \frac{\sum_i w_i p_i}{\sum_i w_i y_i}

    1 = calibrated on average, above 1 = over-prediction. NaN / inf without positives (TorchRec: 0).

    Args:
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/calibration": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            finite, ``target`` in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import Calibration
        >>> metric = Calibration()
        >>> metric.update(torch.tensor([0.75, 0.5, 0.5, 0.75]), torch.tensor([1, 0, 0, 1]))
        >>> metric.compute()  # 2.5 predicted, 2 observed
        tensor(1.2500, dtype=torch.float64)
    """

    key = "calibration"


class PointwiseCTR(_Sum):
    r"""Weighted CTR of the labels: :math:`\sum_i w_i y_i / \sum_i w_i` (TorchRec's CTR; ``preds`` unused).

    Not the ranking :class:`~torchrec_eval.CTR` (clicks among the top k of each query).

    Args:
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/ctr": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            finite (not used), ``target`` in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import PointwiseCTR
        >>> metric = PointwiseCTR()
        >>> metric.update(torch.tensor([0.9, 0.2, 0.3, 0.6]), torch.tensor([1, 0, 0, 1]),
        ...               sample_weight=torch.tensor([3.0, 1.0, 1.0, 1.0]))
        >>> metric.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    key = "ctr"


class PointwiseMSE(_Sum):
    r"""Weighted mean squared error :math:`\sum_i w_i (p_i - y_i)^2 / \sum_i w_i` (TorchRec's MSE).

    Args:
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/mse": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            finite, ``target`` finite.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import PointwiseMSE
        >>> metric = PointwiseMSE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]), sample_weight=torch.tensor([1.0, 3.0]))
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """

    key = "mse"
    higher_is_better = False


class PointwiseRMSE(_Sum):
    r"""Weighted root mean squared error :math:`\sqrt{\sum_i w_i (p_i - y_i)^2 / \sum_i w_i}` (TorchRec's RMSE).

    Args:
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/rmse": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            finite, ``target`` finite.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import PointwiseRMSE
        >>> metric = PointwiseRMSE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]))
        >>> metric.compute()
        tensor(1.4142, dtype=torch.float64)
    """

    key = "rmse"
    higher_is_better = False


class PointwiseMAE(_Sum):
    r"""Weighted mean absolute error :math:`\sum_i w_i |p_i - y_i| / \sum_i w_i` (TorchRec's MAE).

    Args:
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/mae": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            finite, ``target`` finite.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import PointwiseMAE
        >>> metric = PointwiseMAE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]), sample_weight=torch.tensor([1.0, 3.0]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    key = "mae"
    higher_is_better = False


class _Binned(StatisticsMetric):
    key = ""
    higher_is_better = True

    def __init__(self, *, bins: int = DEFAULT_BINS, **kwargs: Unpack[PointwiseArguments]) -> None:
        super().__init__([HistogramMember([self.key], bins)], single_key=True, **kwargs)

    def error_bound(self) -> Tensor | dict[str, Tensor]:
        """The upper bound of |binned - exact| for the data seen so far, shaped and named as ``compute``
        (unsynced: the bound of this process's data)."""
        results = self.name_values(self.members[0].error_bounds(self.stats))
        return next(iter(results.values())) if self.tasks is None else results


class BinnedAUC(_Binned):
    r"""Weighted ROC AUC over all samples from fixed histograms: memory 2 K float64 per group and task.

    .. math:: \mathrm{AUC}_K = \frac{1}{P N} \sum_b P_b \left(N_{<b} + \tfrac12 N_b\right)

    over K bins of the predictions in [0, 1] (bin ``min(floor(p K), K - 1)``), :math:`P_b`, :math:`N_b`
    the weights of positives (:math:`w y`) and negatives (:math:`w (1 - y)`) in bin b: the exact AUC of
    the predictions rounded down to their bin, ties counting 1/2. It differs from the exact AUC
    (:class:`~torchrec_eval.BinaryAUC`) by at most :math:`\sum_b P_b N_b / (2 P N) \le \max_b N_b / (2N)`,
    which :meth:`error_bound` returns. NaN without a positive or a negative weight (TorchRec: 0.5).

    Args:
        bins: K.
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/auc": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            probabilities in [0, 1], ``target`` in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import BinnedAUC
        >>> metric = BinnedAUC(bins=10)
        >>> metric.update(torch.tensor([0.91, 0.22, 0.35, 0.62, 0.25]), torch.tensor([1, 0, 1, 0, 1]))
        >>> metric.compute(), metric.error_bound()  # 0.22 and 0.25 share a bin: that pair counts 1/2
        (tensor(0.5833, dtype=torch.float64), tensor(0.0833, dtype=torch.float64))
    """

    key = "auc"


class BinnedAUPRC(_Binned):
    r"""Weighted average precision (area under the precision-recall curve) from fixed histograms.

    .. math:: \mathrm{AP}_K = \frac{1}{P} \sum_b P_b \frac{P_{\ge b}}{P_{\ge b} + N_{\ge b}}

    over K bins of the predictions in [0, 1], as :class:`BinnedAUC`: the exact average precision
    (``sklearn.metrics.average_precision_score``, TorchRec's AUPRC) of the predictions rounded down to
    their bin. :meth:`error_bound` returns the bound on the difference to the exact value
    (:mod:`torchrec_eval.pointwise.curves`). NaN without a positive weight.

    Args:
        bins: K.
        tasks, num_groups, validate_args, kwargs: as for every pointwise metric
            (:class:`~torchrec_eval.pointwise.base.PointwiseMetric`); with ``tasks``: ``{"{task}/auprc": value}``.

    Raises:
        ValueError: on a bad argument; in ``update`` (the state unchanged) on bad input: ``preds``
            probabilities in [0, 1], ``target`` in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import BinnedAUPRC
        >>> metric = BinnedAUPRC(bins=10)
        >>> metric.update(torch.tensor([0.91, 0.22, 0.35, 0.62, 0.05]), torch.tensor([1, 0, 1, 0, 1]))
        >>> metric.compute()  # (1/3) (1/1 + 2/3 + 3/5)
        tensor(0.7556, dtype=torch.float64)
    """

    key = "auprc"
