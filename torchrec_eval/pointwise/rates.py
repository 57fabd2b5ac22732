r"""Calibration, CTR, MSE, RMSE and MAE from weighted sums, as TorchRec's ``calibration.py``, ``ctr.py``,
``mse.py`` and ``mae.py`` define them.

.. math::
    \mathrm{Calibration} = \frac{\sum_i w_i p_i}{\sum_i w_i y_i}, \quad
    \mathrm{CTR} = \frac{\sum_i w_i y_i}{\sum_i w_i}, \quad
    \mathrm{MSE} = \frac{\sum_i w_i (p_i - y_i)^2}{\sum_i w_i}, \quad
    \mathrm{RMSE} = \sqrt{\mathrm{MSE}}, \quad
    \mathrm{MAE} = \frac{\sum_i w_i |p_i - y_i|}{\sum_i w_i}

Calibration is the predicted number of positives over the observed number (1 = calibrated, above 1 =
over-prediction); CTR is the weighted positive rate of the labels (predictions are not used). Each is a
ratio of two float64 sums, so it is exact over any split of the data.

Where the denominator is 0 these return NaN (0/0) or inf, where TorchRec returns 0 (a placeholder that a
dashboard cannot tell apart from a real 0).
"""

from __future__ import annotations

import torch
from torch import Tensor


def calibration_from_sums(prediction: Tensor, positive: Tensor) -> Tensor:
    r"""Calibration :math:`\sum w p / \sum w y` from the two sums.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.rates import calibration_from_sums
        >>> calibration_from_sums(torch.tensor(3.0).double(), torch.tensor(2.0).double())
        tensor(1.5000, dtype=torch.float64)
    """
    return prediction / positive


def mean_from_sums(total: Tensor, weight: Tensor) -> Tensor:
    r"""Weighted mean :math:`\sum w x / \sum w`: CTR (x = y), MSE (x = (p - y)^2), MAE (x = |p - y|).

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.rates import mean_from_sums
        >>> mean_from_sums(torch.tensor(2.0).double(), torch.tensor(4.0).double())
        tensor(0.5000, dtype=torch.float64)
    """
    return total / weight


def rmse_from_sums(squared_error: Tensor, weight: Tensor) -> Tensor:
    r"""Weighted RMSE :math:`\sqrt{\sum w (p - y)^2 / \sum w}`.

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise.rates import rmse_from_sums
        >>> rmse_from_sums(torch.tensor(8.0).double(), torch.tensor(2.0).double())
        tensor(2., dtype=torch.float64)
    """
    return torch.sqrt(squared_error / weight)
