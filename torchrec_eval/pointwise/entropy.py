r"""Normalized entropy (NE) and log loss from weighted sums, following TorchRec's ``metrics/ne.py``.

TorchRec's formula (``compute_cross_entropy``, ``compute_ne``, ``compute_logloss``), reproduced exactly,
eta = 1e-12 included: each prediction is clamped to [eta, 1 - eta] in float64 and

.. math::
    \mathrm{CE} = -\sum_i w_i \left(y_i \log_2 p_i + (1 - y_i) \log_2 (1 - p_i)\right), \qquad
    \bar y = \mathrm{clamp}\!\left(\frac{\sum_i w_i y_i}{\max(\sum_i w_i, \eta)}, \eta, 1 - \eta\right)

.. math::
    \mathrm{NE} = \frac{\mathrm{CE}}{-\sum_i w_i y_i \log_2 \bar y - \sum_i w_i (1 - y_i) \log_2 (1 - \bar y)},
    \qquad \mathrm{LogLoss} = \frac{\mathrm{CE}}{\sum_i w_i}

NE is the log loss of the model divided by the log loss of predicting the weighted base rate
:math:`\bar y` for every sample (the entropy of the positive rate times the weighted number of samples):
1 means no better than the base rate, lower is better; the log base cancels. Labels may be soft (in
[0, 1]). The sufficient statistics are three float64 sums: CE (in bits), sum w and sum w y.

Where TorchRec returns a placeholder, these return NaN: log loss of no samples (TorchRec: 0, from
dividing by ``max(sum w, eta)``). NE of no samples is NaN in both.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

#: TorchRec's clamp of predictions and of the base rate (``NEMetricComputation.eta``).
ETA = 1e-12


def cross_entropy_bits(preds: Tensor, target: Tensor, weight: Tensor, eta: float = ETA) -> Tensor:
    r"""Per-sample weighted binary cross entropy in bits, predictions clamped to [eta, 1 - eta].

    .. math:: -w \left(y \log_2 p + (1 - y) \log_2 (1 - p)\right)

    Args:
        preds, target, weight: float64 tensors of one shape (predicted probability, label in [0, 1], weight).
        eta: the clamp.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.entropy import cross_entropy_bits
        >>> one = torch.ones(2, dtype=torch.float64)
        >>> cross_entropy_bits(torch.tensor([0.5, 0.25], dtype=torch.float64), torch.tensor([1.0, 0.0]).double(), one)
        tensor([1.0000, 0.4150], dtype=torch.float64)
    """
    clamped = preds.clamp(min=eta, max=1 - eta)
    return -weight * target * torch.log2(clamped) - weight * (1 - target) * torch.log2(1 - clamped)


def ne_from_sums(cross_entropy: Tensor, weight: Tensor, positive: Tensor, eta: float = ETA) -> Tensor:
    r"""NE from the sums CE (bits), :math:`\sum w` and :math:`\sum w y` (any shape, elementwise).

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.entropy import ne_from_sums
        >>> # 2 samples, base rate 1/2 (entropy 1 bit each), model log loss 0.5 bit per sample
        >>> ne_from_sums(torch.tensor(1.0).double(), torch.tensor(2.0).double(), torch.tensor(1.0).double())
        tensor(0.5000, dtype=torch.float64)
    """
    rate = (positive / weight.clamp(min=eta)).clamp(min=eta, max=1 - eta)
    baseline = -positive * torch.log2(rate) - (weight - positive) * torch.log2(1 - rate)
    return cross_entropy / baseline


def log_loss_from_sums(cross_entropy: Tensor, weight: Tensor, log_base: float = math.e) -> Tensor:
    r"""Weighted mean log loss from CE (bits) and :math:`\sum w`, in the units of ``log_base``.

    ``log_base=math.e`` (default) is the usual log loss (``sklearn.metrics.log_loss``); ``log_base=2`` is
    TorchRec's ``LOG_LOSS`` (bits).

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.entropy import log_loss_from_sums
        >>> log_loss_from_sums(torch.tensor(2.0).double(), torch.tensor(2.0).double(), log_base=2)
        tensor(1., dtype=torch.float64)
    """
    return cross_entropy * (math.log(2.0) / math.log(log_base)) / weight
