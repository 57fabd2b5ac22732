"""Metric states that follow the module's device but never its dtype.

``module.to(torch.bfloat16)``, Lightning's "16-true" / "bf16-true" precision and ``.half()`` cast a
module's floating tensors; the sufficient statistics of a metric must stay float64 (and its constructor
tables, registered as buffers, their dtype) or the sums lose their exactness. ``set_dtype`` remains
the explicit way to change a state's dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from torchrec_eval.metrics.lifecycle import SafeMetric

__all__ = ["MoveOnly"]


class MoveOnly(SafeMetric):
    """A metric whose states and buffers follow ``.to(device)`` but keep their dtype; ``set_dtype`` still casts."""

    def _apply(self, fn: Any, exclude_state: Sequence[str] = ()) -> Any:
        if self._dtype_convert:
            return super()._apply(fn, exclude_state)
        buffers = dict(self._buffers)
        this = super()._apply(fn, exclude_state=tuple(self._defaults))  # sets the device, leaves the states
        for name, default in this._defaults.items():
            state = getattr(this, name)
            if isinstance(default, Tensor):
                this._defaults[name] = default.to(this.device)
                setattr(this, name, state.to(this.device))
            else:
                setattr(this, name, [item.to(this.device) for item in state])
        for name, buffer in buffers.items():  # constructor tables: moved by fn, cast back if fn cast them
            moved = this._buffers.get(name)
            if buffer is not None and moved is not None and moved.dtype != buffer.dtype:
                this._buffers[name] = buffer.to(moved.device)
        return this
