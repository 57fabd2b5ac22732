"""What every stateful metric of the library does around its update: safe in a real training loop.

* **All or nothing.** ``update`` and ``forward`` either add a whole batch or, when they raise, leave
  every state, the update count and the flat-form stream exactly as they were. A metric *stages* a
  batch (validates it and computes its contribution, touching nothing) and only then applies it.
* **No stale compute under uneven updates.** torchmetrics' compute cache lets a rank that did not
  update since the last ``compute`` return its cached value without joining the collective, while
  the others wait for it. The cache is off by default (``compute_with_cache=False``): every
  ``compute`` syncs on every rank.
* **Typos are errors.** ``update`` takes explicit keyword arguments; an unknown one raises a
  ``ValueError`` naming it and the valid ones (never a ``TypeError`` from deep inside).
* **The flat form across calls.** A query whose rows arrive in two ``update`` calls is evaluated once,
  whole: each call's last query is held back until the next call (or ``compute``) shows it complete.
  Query ids must increase from call to call (rows of one query contiguous in the stream, as in a
  file sorted by query); a query id lower than one already seen, or a query continued after it was
  evaluated, raises instead of being counted twice.
* **Its own state in every process.** A metric sent to another process (``mp.spawn``, ``ddp_spawn``)
  copies the tensors that ``torch.multiprocessing`` put in shared memory
  (:mod:`torchrec_eval.metrics.ownership`): each process adds into its own state.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from torchrec_eval.metrics.ownership import OwnsTensors

Apply = Callable[[], None]


@dataclass(frozen=True)
class FlatStream:
    """Rows of the flat form held back between calls: the last query of a call may continue.

    Attributes:
        pending: 1-D columns (``indexes``, ``preds``, ...) of the query held back, or None.
        last: the highest query id seen so far (held back or evaluated), or None.
    """

    pending: dict[str, Tensor] | None = None
    last: int | None = None
    evaluated: bool = False  # whether the query `last` was already evaluated

    def feed(self, columns: dict[str, Tensor]) -> tuple[dict[str, Tensor] | None, FlatStream]:
        """Split a call's rows (plus the held-back ones) into complete queries and the new held-back one.

        Returns the rows ready to evaluate (None if none) and the stream after this call; ``self`` is
        not changed, so a failure later in the update leaves the stream as it was.
        """
        indexes = columns["indexes"]
        low, high = (int(v) for v in torch.aminmax(indexes))  # the flat form syncs anyway (torch.unique)
        if self.last is not None and (low < self.last or (low == self.last and self.evaluated)):
            raise ValueError(
                f"`indexes`: query {low} arrives after query {self.last} was "
                f"{'evaluated' if low == self.last and self.evaluated else 'seen'}. In the flat form a "
                "query's rows must be contiguous in the stream and query ids must increase from one "
                "update to the next (a query may continue into the next update call, not after "
                "compute() or forward()); number the queries of each batch after those of the last "
                "(e.g. add an offset) or pass each query whole"
            )
        if self.pending is not None:
            columns = _concat(self.pending, columns)
            indexes = columns["indexes"]
        tail = indexes == high
        if bool(tail.all()):
            return None, FlatStream(columns, high)
        head = ~tail
        ready = {name: value[head] for name, value in columns.items()}
        return ready, FlatStream({name: value[tail] for name, value in columns.items()}, high)

    def drained(self) -> FlatStream:
        """The stream once its held-back query is evaluated: that query may not continue."""
        return FlatStream(None, self.last, evaluated=self.pending is not None or self.evaluated)


def _concat(old: dict[str, Tensor], new: dict[str, Tensor]) -> dict[str, Tensor]:
    if set(old) != set(new):
        if set(old) ^ set(new) != {"mask"}:
            raise ValueError(
                f"The flat form needs the same arguments in every update call of a stream: the last "
                f"call had {sorted(old)}, this one {sorted(new)}"
            )
        old, new = ({"mask": torch.ones_like(c["indexes"], dtype=torch.bool), **c} for c in (old, new))
    return {name: torch.cat([old[name], new[name].to(old[name].device)]) for name in new}


def check_keywords(where: str, parameters: Mapping[str, inspect.Parameter], kwargs: dict[str, Any]) -> None:
    """Raise a ``ValueError`` naming a keyword argument that a function with ``parameters`` does not take."""
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = [name for name in kwargs if name not in parameters]
    if unknown:
        valid = [n for n, p in parameters.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL and n != "self"]
        raise ValueError(f"{where} got an unexpected keyword argument {unknown[0]!r}; valid arguments: {valid}")


def keywords_checked(method: Callable) -> Callable:
    """A method that raises :func:`check_keywords`' ``ValueError`` on a misspelt keyword, not a ``TypeError``."""
    parameters = inspect.signature(method).parameters

    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        check_keywords(f"{type(self).__name__}.{method.__name__}()", parameters, kwargs)
        return method(self, *args, **kwargs)

    return checked


class SafeMetric(OwnsTensors, Metric):
    """torchmetrics ``Metric`` with all-or-nothing updates, no stale cache, checked keywords, a flat stream.

    A subclass implements ``_stage(inputs) -> apply`` (validate and compute one batch's contribution
    without touching any state; ``apply()`` adds it) and an ``update`` with explicit keyword arguments
    that calls :meth:`_update_from`.
    """

    _FLAT_COLUMNS: tuple[str, ...] = ()  # the 1-D arguments that travel with `indexes` in the flat form

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("compute_with_cache", False)
        super().__init__(**kwargs)
        self._flat = FlatStream()
        self._forwarding = False

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        raise NotImplementedError

    def _update_from(self, inputs: dict[str, Any]) -> None:
        """Stage the batch (flat rows held back as needed), then apply it and commit the stream."""
        stream = self._flat
        if inputs.get("indexes") is not None:
            columns = {name: inputs[name] for name in ("indexes", *self._FLAT_COLUMNS) if inputs.get(name) is not None}
            self._check_flat(inputs)
            ready, stream = self._flat.feed(columns)
            if ready is None:
                self._flat = stream
                return
            inputs = {**inputs, **ready}
        apply = self._stage(inputs)
        apply()
        self._flat = stream

    def _check_flat(self, inputs: dict[str, Any]) -> None:
        """Validate a flat-form call in full before any of its rows is held back."""
        raise NotImplementedError

    def _drain(self) -> None:
        """Evaluate the held-back flat query (at ``compute``: the stream ends there)."""
        if self._flat.pending is not None:
            self._stage(dict(self._flat.pending))()
            self._flat = self._flat.drained()

    def plot(self, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """Plot a result, or results over steps, as torchmetrics' ``Metric.plot`` does.

        Args:
            val: a result of ``compute()`` or ``forward()`` (a tensor, or a dict of them), or a list of
                results (one per step: a line per value); by default ``compute()``.
            ax: a matplotlib ``Axes`` to draw on; by default a new figure.

        Returns:
            ``(figure, axes)``. See :func:`torchrec_eval.plotting.plot_values`.

        Raises:
            ModuleNotFoundError: if matplotlib is not installed (``pip install "torchrec_eval[cli]"``).
            ValueError: on a ``val`` that is not a result or a list of results of one metric.
        """
        from torchrec_eval.plotting import plot_metric

        return plot_metric(self, self.compute() if val is None else val, ax)

    # torchmetrics hooks --------------------------------------------------------------------------
    def _wrap_update(self, update: Callable) -> Callable:
        wrapped = super()._wrap_update(update)
        parameters = inspect.signature(update).parameters

        @functools.wraps(update)
        def checked(*args: Any, **kwargs: Any) -> None:
            check_keywords(f"{type(self).__name__}.update()", parameters, kwargs)
            count, computed = self._update_count, self._computed
            try:
                wrapped(*args, **kwargs)
            except BaseException:
                self._update_count, self._computed = count, computed
                raise

        return checked

    def _wrap_compute(self, compute: Callable) -> Callable:
        wrapped = super()._wrap_compute(compute)

        @functools.wraps(compute)
        def draining(*args: Any, **kwargs: Any) -> Any:
            self._drain()
            return wrapped(*args, **kwargs)

        return draining

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """torchmetrics' ``forward`` (batch value, and the batch added to the state), all or nothing."""
        snapshot = self._snapshot()
        try:
            self._drain()  # the batch value must not include rows held back from earlier updates
            self._forwarding = True
            return super().forward(*args, **kwargs)
        except BaseException:
            self._restore(snapshot)
            raise
        finally:
            self._forwarding = False

    def reset(self) -> None:
        super().reset()
        if not self._forwarding:  # forward() resets to compute the batch alone: the stream goes on
            self._flat = FlatStream()

    _FLAGS = (
        "_update_count", "_computed", "_forward_cache", "_is_synced", "_to_sync", "_should_unsync",
        "compute_on_cpu", "_enable_grad", "_flat",
    )

    def _snapshot(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return self._copy_state_dict(), {name: getattr(self, name) for name in self._FLAGS}

    def _restore(self, snapshot: tuple[dict[str, Any], dict[str, Any]]) -> None:
        states, flags = snapshot
        for name, value in states.items():
            setattr(self, name, value)
        for name, value in flags.items():
            setattr(self, name, value)
