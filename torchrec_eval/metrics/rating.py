"""Rating-prediction metrics: torchmetrics' own regression metrics, subclassed only to own their state.

``MAE`` is :class:`torchmetrics.MeanAbsoluteError`, ``MSE`` is :class:`torchmetrics.MeanSquaredError`
and ``RMSE`` is ``MeanSquaredError(squared=False)``, not rewritten here: each is subclassed only to own
its state in a process that receives it (:mod:`torchrec_eval.members.ownership`).
"""

from __future__ import annotations

from typing import Any

from torchmetrics import MeanAbsoluteError, MeanSquaredError

from torchrec_eval.members.ownership import OwnsTensors

__all__ = ["MAE", "MSE", "RMSE"]


class MAE(OwnsTensors, MeanAbsoluteError):
    r"""Mean absolute error of rating predictions: torchmetrics' :class:`~torchmetrics.MeanAbsoluteError`.

    .. math:: \mathrm{MAE} = \tfrac{1}{n} \sum_i |\hat{y}_i - y_i|

    Subclassed only so that a process that receives it (``mp.spawn``, ``ddp_spawn``) owns its state
    (:mod:`torchrec_eval.members.ownership`).

    Example:
        >>> import torch
        >>> from torchrec_eval.metrics import MAE
        >>> metric = MAE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]))
        >>> metric.compute()
        tensor(1.)
    """


class MSE(OwnsTensors, MeanSquaredError):
    r"""Mean squared error of rating predictions: torchmetrics' :class:`~torchmetrics.MeanSquaredError`.

    .. math:: \mathrm{MSE} = \tfrac{1}{n} \sum_i (\hat{y}_i - y_i)^2

    Subclassed only so that a process that receives it owns its state, as :class:`MAE`.

    Example:
        >>> import torch
        >>> from torchrec_eval.metrics import MSE
        >>> metric = MSE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]))
        >>> metric.compute()
        tensor(2.)
    """


class RMSE(OwnsTensors, MeanSquaredError):
    r"""Root mean squared error of rating predictions: torchmetrics' ``MeanSquaredError(squared=False)``.

    .. math:: \mathrm{RMSE} = \sqrt{\tfrac{1}{n} \sum_i (\hat{y}_i - y_i)^2}

    Args:
        num_outputs: number of outputs in multioutput setting (as torchmetrics).
        kwargs: torchmetrics ``Metric`` arguments.

    Example:
        >>> import torch
        >>> from torchrec_eval.metrics import RMSE
        >>> metric = RMSE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]))
        >>> metric.compute()
        tensor(1.4142)
    """

    def __init__(self, num_outputs: int = 1, **kwargs: Any) -> None:
        if "squared" in kwargs:
            raise ValueError("RMSE is MeanSquaredError(squared=False); `squared` cannot be set, "
                             f"got {kwargs['squared']!r}")
        super().__init__(squared=False, num_outputs=num_outputs, **kwargs)
