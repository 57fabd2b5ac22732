r"""Lifetime and window values of a metric in one object, as TorchRec reports them.

:class:`Windowed` wraps any metric whose states are tensors summed across processes (every pointwise
and ranking metric of this library except the exact AUC/AUPRC; torchmetrics' ``MeanSquaredError``,
...). Each ``update`` computes the batch's own contribution to those states (the wrapped metric updated
from zero, so the increment is exact), adds it to the *lifetime* states, and writes it into a ring
buffer of the last C updates. The *window* states are the sum of the ring's slots that are in the
window, summed from the slots when computed or synced (no running subtraction, so no drift):

* ``unit="updates"``: the last W updates (C = W);
* ``unit="samples"``: TorchRec's ``WindowBuffer``: the most recent whole updates whose numbers of
  samples (rows of ``preds``) add up to at most W, and at most ``max_updates`` of them (C; TorchRec:
  1000). An update of more than W samples raises.

``compute`` returns both, computed by the wrapped metric's own formula from the lifetime states and from
the window states: ``{"lifetime_ne": ..., "window_ne": ...}``, or for a dict result
``{"click/lifetime_ne": ..., "click/window_ne": ...}`` (TorchRec's ``lifetime_`` / ``window_`` prefixes).

Memory: C copies of the wrapped metric's statistics, whatever the number of samples. Under
distributed sync the lifetime and window states are summed over the processes (the ring stays local):
the synced window is the union of each process's last W updates (or samples), so its value is exact
for that union. TorchRec divides a global window of N samples by the world size R; to reproduce it,
pass ``window=ceil(N / R)``. ``merge_state`` is refused (torchmetrics' ``RuntimeError`` for a metric with
``full_state_update``, both metrics unchanged): two windows have no order to merge in (a sync across
processes gives the union of their windows, as above).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_sum
from torchmetrics.utilities.distributed import gather_all_tensors

from torchrec_eval.metrics.lifecycle import Apply, StatefulMetric
from torchrec_eval.pipeline.arguments import check_int
from torchrec_eval.pipeline.validation import describe_any

__all__ = ["Windowed"]

UNITS = ("updates", "samples")
TORCHREC_MAX_UPDATES = 1000  # TorchRec's MAX_BUFFER_COUNT


def _samples(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Rows of ``preds``: the first positional argument, or ``preds=``, or the first tensor given."""
    first = args[0] if args else kwargs.get("preds")
    if not isinstance(first, Tensor):
        first = next((value for value in (*args, *kwargs.values()) if isinstance(value, Tensor)), None)
    return 0 if first is None or first.ndim == 0 else first.shape[0]


def _tensor_states(metric: Metric) -> dict[str, Tensor]:
    """The states of a metric whose states are all tensors (checked by :class:`Windowed`)."""
    return {state: default for state, default in metric._defaults.items() if isinstance(default, Tensor)}


class Windowed(StatefulMetric):
    """The lifetime value of a metric and its value over the recent window of updates (or samples).

    Args:
        metric: the metric to wrap; its states must be tensors reduced by ``"sum"`` (it is used as a
            formula: its own states stay empty).
        window: W, in ``unit``\\ s.
        unit: ``"updates"`` (default) or ``"samples"`` (TorchRec's window, whole updates).
        max_updates: with ``unit="samples"``, the most updates the window holds (default
            ``min(window, 1000)``, TorchRec's limit); not used with ``"updates"``.
        name: the result name for a metric that returns a tensor (default: its value key, e.g.
            ``"ne"``, or its class name in lower case).
        kwargs: torchmetrics ``Metric`` arguments of the wrapper (``sync_on_compute``, ``dist_sync_fn``,
            ...): the wrapper syncs, the wrapped metric never does.

    Raises:
        ValueError: on a metric with other states (e.g. the exact :class:`~torchrec_eval.BinaryAUC`: use
            :class:`~torchrec_eval.BinnedAUC`), a bad ``window``, ``unit`` or ``max_updates``; in
            ``update``, on the flat form (``indexes``), an update of more than W samples, and whatever
            the wrapped metric raises (the states are then left as they were).

    Example:
        >>> import torch
        >>> from torchrec_eval.pointwise import Calibration, Windowed
        >>> metric = Windowed(Calibration(), window=2)
        >>> metric.update(torch.tensor([0.9, 0.9]), torch.tensor([1, 0]))  # 1.8 predicted, 1 observed
        >>> metric.update(torch.tensor([0.2, 0.3]), torch.tensor([1, 0]))  # 0.5 / 1
        >>> metric.update(torch.tensor([0.5, 0.5]), torch.tensor([1, 0]))  # 1.0 / 1
        >>> {key: round(value.item(), 4) for key, value in metric.compute().items()}  # 3.3 / 3 and 1.5 / 2
        {'lifetime_calibration': 1.1, 'window_calibration': 0.75}
    """

    is_differentiable = False
    full_state_update = True  # forward: the batch value needs a ring of its own
    ring_next: Tensor  # states (add_state), named here for the type checker
    ring_samples: Tensor

    def __init__(self, metric: Metric, window: int, *, unit: str = "updates", max_updates: int | None = None,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(metric, Metric):
            raise ValueError(f"`metric` must be a torchmetrics Metric, got {type(metric).__name__}")
        bad = [state for state, default in metric._defaults.items()
               if not isinstance(default, Tensor) or metric._reductions[state] is not dim_zero_sum]
        if bad:
            raise ValueError(
                f"`metric` {type(metric).__name__} has states that are not tensors summed across processes "
                f"({bad}); a window needs fixed sufficient statistics (for AUC/AUPRC use BinnedAUC/BinnedAUPRC)"
            )
        window = check_int("window", window, 1)
        if unit not in UNITS:
            raise ValueError(f"`unit` must be one of {UNITS}, got {unit!r}")
        if unit == "updates" and max_updates is not None:
            raise ValueError(f"`max_updates` applies to unit='samples' only, got {max_updates!r}")
        if max_updates is None:
            max_updates = window if unit == "updates" else min(window, TORCHREC_MAX_UPDATES)
        max_updates = check_int("max_updates", max_updates, 1)
        self.metric = metric
        self.window, self.unit, self.capacity = window, unit, max_updates
        self.__dict__["higher_is_better"] = getattr(metric, "higher_is_better", None)  # a class constant in torchmetrics
        keys = getattr(metric, "value_keys", None)
        self.name = name or (keys[0] if keys and len(keys) == 1 else type(metric).__name__.lower())
        self.inner_states = list(metric._defaults)
        for state, default in _tensor_states(metric).items():
            for kind in ("lifetime", "window"):
                self.add_state(f"{kind}_{state}", default=default.detach().clone(), dist_reduce_fx="sum")
            ring = torch.zeros((self.capacity, *default.shape), dtype=default.dtype, device=default.device)
            self.add_state(f"ring_{state}", default=ring, dist_reduce_fx="sum")
        self.add_state("ring_samples", default=torch.zeros(self.capacity, dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("ring_next", default=torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        # the ring is this process's recent past: never synced (nor are empty states)
        self.local_states = [state for state, default in _tensor_states(self).items() if state.startswith("ring_")
                             or default.numel() == 0]

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Update with the wrapped metric's arguments (all or nothing)."""
        self._update_from({"args": args, "kwargs": kwargs})

    def _increments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Tensor]:
        """The batch's contribution to each state of the wrapped metric, which is left unchanged."""
        inner = self.metric
        saved = ({state: getattr(inner, state) for state in self.inner_states}, inner._update_count, inner._computed)
        try:
            defaults = _tensor_states(inner)
            for state, default in defaults.items():
                setattr(inner, state, default.detach().clone())
            inner.update(*args, **kwargs)
            return {state: getattr(inner, state) - defaults[state] for state in self.inner_states}
        finally:
            for state, value in saved[0].items():
                setattr(inner, state, value)
            inner._update_count, inner._computed = saved[1], saved[2]

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        args, kwargs = inputs["args"], inputs["kwargs"]
        if kwargs.get("indexes") is not None:
            raise ValueError("`indexes`: a windowed metric does not take the flat form (a query may span updates); "
                             f"pass whole queries in the dense or ids form; got `indexes` of "
                             f"{describe_any(kwargs['indexes'])}")
        samples = _samples(args, kwargs)
        if self.unit == "samples" and samples > self.window:
            raise ValueError(f"`preds`: an update of {samples} samples does not fit in a window of {self.window} "
                             "samples (TorchRec requires window >= batch size); use a larger `window`")
        increments = self._increments(args, kwargs)

        def apply() -> None:
            slot = self.ring_next.view(1)
            for state, increment in increments.items():
                self._state(f"lifetime_{state}").add_(increment)
                self._state(f"ring_{state}").index_copy_(0, slot, increment.unsqueeze(0))
            self.ring_samples.index_fill_(0, slot, samples)
            self.ring_next.add_(1).remainder_(self.capacity)

        return apply

    def _refresh_window(self) -> None:
        """Set the window states to the sum of the ring's slots in the window (this process's own)."""
        kept = self._kept_slots()
        for state in self.inner_states:
            ring = self._state(f"ring_{state}")
            setattr(self, f"window_{state}", (ring * kept.view(-1, *[1] * (ring.ndim - 1)).to(ring.dtype)).sum(0))

    def _state(self, name: str) -> Tensor:
        """One of the tensor states (``lifetime_*``, ``window_*``, ``ring_*``)."""
        return cast(Tensor, getattr(self, name))

    def _kept_slots(self) -> Tensor:
        """[C] bool: the slots in the window (no host sync)."""
        if self.unit == "updates":
            return torch.ones(self.capacity, dtype=torch.bool, device=self.ring_samples.device)
        ages = torch.arange(self.capacity, device=self.ring_samples.device)
        slots = (self.ring_next - 1 - ages).remainder(self.capacity)  # newest first
        fits = self.ring_samples[slots].cumsum(0) <= self.window
        return torch.zeros_like(fits).scatter_(0, slots, fits)

    def _evaluate(self, kind: str) -> Any:
        """The wrapped metric's compute on the lifetime or window states (unsynced: they already are)."""
        inner = self.metric
        saved = {state: getattr(inner, state) for state in self.inner_states}
        try:
            for state in self.inner_states:
                setattr(inner, state, getattr(self, f"{kind}_{state}"))
            return type(inner).compute(inner)
        finally:
            for state, value in saved.items():
                setattr(inner, state, value)

    def _named(self, value: Any, prefix: str) -> dict[str, Tensor]:
        if isinstance(value, Tensor):
            return {prefix + self.name: value}
        out = {}
        for key, item in value.items():
            head, _, tail = key.rpartition("/")
            out[f"{head}/{prefix}{tail}" if head else prefix + tail] = item
        return out

    def compute(self) -> dict[str, Tensor]:
        """``{"lifetime_<name>": ..., "window_<name>": ...}`` (prefixing the last part of each dict key)."""
        if not self._is_synced:  # synced: _sync_dist has summed the processes' windows already
            self._refresh_window()
        return {**self._named(self._evaluate("lifetime"), "lifetime_"), **self._named(self._evaluate("window"), "window_")}

    def _sync_dist(self, dist_sync_fn: Any = gather_all_tensors, process_group: Any = None) -> None:
        """torchmetrics' sync of the lifetime and window states only."""
        self._refresh_window()
        local = {state: self._reductions.pop(state) for state in self.local_states}
        try:
            super()._sync_dist(dist_sync_fn, process_group)
        finally:
            self._reductions.update(local)
