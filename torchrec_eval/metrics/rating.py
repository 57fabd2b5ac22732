"""Rating-prediction metrics: torchmetrics' own regression metrics, subclassed to own their state, to sum
in float64 and to update after ``torch.inference_mode``.

``MAE`` is :class:`torchmetrics.MeanAbsoluteError`, ``MSE`` is :class:`torchmetrics.MeanSquaredError`
and ``RMSE`` is ``MeanSquaredError(squared=False)``, not rewritten here: each is subclassed only to own
its state in a process that receives it (:mod:`torchrec_eval.members.ownership`), to keep its sums in
float64 and to add to a state made in inference mode, as every other metric of the package
(:class:`RatingStates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torchmetrics import MeanAbsoluteError, MeanSquaredError

from torchrec_eval.members.ownership import OwnsTensors
from torchrec_eval.metrics.lifecycle import leave_inference_states

__all__ = ["MAE", "MSE", "RMSE"]


class RatingStates(OwnsTensors):
    """Mixin for a torchmetrics regression metric (``update(preds, target)``, float sums): its states as every
    other metric of the package keeps them.

    * **float64 sums.** torchmetrics keeps them in the default dtype (float32) and adds each batch in the
      inputs' dtype, so float64 inputs lost their precision and a small error vanished against a large sum
      (MSE 99900.10 where 99901.10 is right after one error of 1e4 and 1000 errors of 1). Here every
      floating state is float64 and each batch is summed from its float64 values; a module dtype move
      (``.to(torch.bfloat16)``, Lightning's "bf16-true") moves the states to the device only; ``set_dtype``
      still casts them.
    * **Across inference mode.** A state made under ``torch.inference_mode`` (a ``reset`` in Lightning's
      validation loop) is an inference tensor, which torch lets no one add into outside that mode
      (torchmetrics' #1993: the next training-time ``update`` raised); ``update`` first replaces it by a
      normal copy, exactly.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        defaults: dict[str, Any] = self._defaults  # type: ignore[attr-defined]  # Metric's
        for name, default in defaults.items():
            if isinstance(default, Tensor) and default.is_floating_point():
                defaults[name] = default.to(torch.float64)
                setattr(self, name, default.to(torch.float64))

    def update(self, preds: Tensor, target: Tensor) -> None:
        """torchmetrics' ``update`` on the float64 values of ``preds`` and ``target``."""
        leave_inference_states(self)
        super().update(_float64(preds), _float64(target))  # type: ignore[misc]  # the metric's own update

    def _apply(self, fn: Any, exclude_state: Sequence[str] = ()) -> nn.Module:
        """torchmetrics' move, keeping the states' dtype unless ``set_dtype`` casts them."""
        if self._dtype_convert:  # type: ignore[attr-defined]  # set_dtype
            return super()._apply(fn, exclude_state)  # type: ignore[misc]
        this = super()._apply(fn, exclude_state=tuple(self._defaults))  # type: ignore[attr-defined, misc]
        for name, default in this._defaults.items():
            this._defaults[name] = default.to(this.device)
            setattr(this, name, getattr(this, name).to(this.device))
        return this


def _float64(value: Any) -> Any:
    """A tensor's float64 values (anything else goes to torchmetrics as it is)."""
    return value.to(torch.float64) if isinstance(value, Tensor) else value


class MAE(RatingStates, MeanAbsoluteError):
    r"""Mean absolute error of rating predictions: torchmetrics' :class:`~torchmetrics.MeanAbsoluteError`.

    .. math:: \mathrm{MAE} = \tfrac{1}{n} \sum_i |\hat{y}_i - y_i|

    Subclassed only so that a process that receives it (``mp.spawn``, ``ddp_spawn``) owns its state
    (:mod:`torchrec_eval.members.ownership`), sums in float64 and updates after ``torch.inference_mode``
    (:class:`RatingStates`).

    Example:
        >>> import torch
        >>> from torchrec_eval import MAE
        >>> metric = MAE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]))
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """


class MSE(RatingStates, MeanSquaredError):
    r"""Mean squared error of rating predictions: torchmetrics' :class:`~torchmetrics.MeanSquaredError`.

    .. math:: \mathrm{MSE} = \tfrac{1}{n} \sum_i (\hat{y}_i - y_i)^2

    Subclassed only so that a process that receives it owns its state, sums in float64 and updates after
    ``torch.inference_mode``, as :class:`MAE`.

    Example:
        >>> import torch
        >>> from torchrec_eval import MSE
        >>> metric = MSE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """


class RMSE(RatingStates, MeanSquaredError):
    r"""Root mean squared error of rating predictions: torchmetrics' ``MeanSquaredError(squared=False)``.

    .. math:: \mathrm{RMSE} = \sqrt{\tfrac{1}{n} \sum_i (\hat{y}_i - y_i)^2}

    Args:
        num_outputs: number of outputs in multioutput setting (as torchmetrics).
        kwargs: torchmetrics ``Metric`` arguments.

    Raises:
        ValueError: on ``squared`` (always False here) and torchmetrics' bad ``num_outputs``.

    Example:
        >>> import torch
        >>> from torchrec_eval import RMSE
        >>> metric = RMSE()
        >>> metric.update(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 4.0]))
        >>> metric.compute()
        tensor(1.4142, dtype=torch.float64)
    """

    def __init__(self, num_outputs: int = 1, **kwargs: Any) -> None:
        if "squared" in kwargs:
            raise ValueError("RMSE is MeanSquaredError(squared=False); `squared` cannot be set, "
                             f"got {kwargs['squared']!r}")
        super().__init__(squared=False, num_outputs=num_outputs, **kwargs)
