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
  whole: each call's last query is held back until the next call shows it complete. Query ids must
  increase from call to call (rows of one query contiguous in the stream, as in a file sorted by
  query); a query id lower than one already seen, or a query continued after it was evaluated, raises
  instead of being counted twice. Every reader of the state sees the held-back query: ``compute``
  (so ``plot``, ``forward``, containers), ``sync`` (so ``confidence_interval``) and ``merge_state``
  (of the incoming metric) evaluate it as it stands, which ends it; ``metric_state`` and a persistent
  ``state_dict`` carry its rows (``_flat_stream_*`` entries), so a checkpoint resumes mid-query and a
  dict of states that holds rows back is refused by ``merge_state`` rather than silently dropped;
  ``reset`` warns when it drops rows that no reader evaluated.
* **Its own state in every process.** A metric sent to another process (``mp.spawn``, ``ddp_spawn``)
  copies the tensors that ``torch.multiprocessing`` put in shared memory
  (:mod:`torchrec_eval.members.ownership`): each process adds into its own state.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.distributed import gather_all_tensors

from torchrec_eval.members.ownership import OwnsTensors
from torchrec_eval.metrics.configuration_guard import check_ranks_agree, check_shapes, fixed_shapes
from torchrec_eval.pipeline.validation import describe_any

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

    def entries(self) -> dict[str, Tensor]:
        """The stream as ``_flat_stream_*`` tensors (empty before any flat-form row): for ``state_dict``."""
        if self.last is None:
            return {}
        out = {STREAM_LAST: torch.tensor(self.last), STREAM_EVALUATED: torch.tensor(self.evaluated)}
        out.update({PENDING + name: column.detach().clone() for name, column in (self.pending or {}).items()})
        return out

    @staticmethod
    def from_entries(entries: dict[str, Any], device: torch.device) -> FlatStream:
        """The stream that :meth:`entries` wrote (no entries: an empty stream, as in an old checkpoint).

        Raises:
            ValueError: on entries that are not such a stream, naming the entry and what it holds.
        """
        if not entries:
            return FlatStream()
        last, evaluated = entries.get(STREAM_LAST), entries.get(STREAM_EVALUATED, torch.tensor(False))
        pending = {key[len(PENDING):]: value for key, value in entries.items() if key.startswith(PENDING)}
        unknown = set(entries) - {STREAM_LAST, STREAM_EVALUATED, *(PENDING + name for name in pending)}
        columns = list(pending.values())
        if (
            unknown or not isinstance(last, Tensor) or last.numel() != 1 or last.is_floating_point()
            or not isinstance(evaluated, Tensor) or evaluated.numel() != 1
            or (pending and "indexes" not in pending)
            or not all(isinstance(c, Tensor) and c.ndim == 1 and c.shape == columns[0].shape for c in columns)
        ):
            shown = {key: describe_any(value) for key, value in entries.items()}
            raise ValueError(
                f"The flat-form stream of a state_dict must be `{STREAM_LAST}` (one integer), "
                f"`{STREAM_EVALUATED}` and 1-D `{PENDING}<column>` rows of equal length including "
                f"`indexes`; got {shown}"
            )
        held = {name: column.to(device) for name, column in pending.items()} or None
        return FlatStream(held, int(last), evaluated=held is None and bool(evaluated))


STREAM = "_flat_stream_"  # the prefix of the stream's entries in a state_dict and in metric_state
STREAM_LAST, STREAM_EVALUATED, PENDING = STREAM + "last", STREAM + "evaluated", STREAM + "pending."


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

    # readers of the state: each sees the held-back flat query -----------------------------------
    def sync(self, *args: Any, **kwargs: Any) -> None:
        """torchmetrics' ``sync``, after evaluating the held-back flat query as ``compute`` does: whatever
        reads a synced state (``confidence_interval``, ``sync_context``) counts it."""
        if not self._is_synced:  # a synced state is replaced by the local one at unsync: drain locally
            self._drain()
        super().sync(*args, **kwargs)

    @property
    def metric_state(self) -> dict[str, Any]:
        """The states, and the flat stream's ``_flat_stream_*`` entries when it holds rows or ids, so that a
        dict of them carries the held-back rows (``merge_state`` refuses to drop them)."""
        return {**super().metric_state, **self._flat.entries()}

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """torchmetrics' ``merge_state``, counting the incoming metric's held-back flat query.

        A metric's held-back query is evaluated first, as its ``compute`` would (which ends it there); this
        metric's own held-back query stays held back. A dict of states that holds flat-form rows back
        (``_flat_stream_pending.*``, from ``metric_state`` or a ``state_dict``) raises: its rows would be lost.
        """
        if isinstance(incoming_state, dict):
            pending = sorted(key for key in incoming_state if key.startswith(PENDING))
            if pending:
                raise ValueError(
                    f"`incoming_state` holds back rows of the flat form ({pending}, query "
                    f"{int(incoming_state.get(STREAM_LAST, torch.tensor(-1)))}) that a dict of states cannot "
                    "add: merge the metric object itself (merge_state(metric) evaluates them), or call its "
                    "compute() before taking its states"
                )
            incoming_state = {key: value for key, value in incoming_state.items() if not key.startswith(STREAM)}
            self._check_merge(incoming_state)
        elif isinstance(incoming_state, type(self)):
            self._check_merge({key: getattr(incoming_state, key) for key in incoming_state._defaults})
            incoming_state._drain()
        super().merge_state(incoming_state)

    def _check_merge(self, states: dict[str, Any]) -> None:
        """Raise a ``ValueError`` on states that cannot merge into this metric: another shape (a subclass
        checks more)."""
        check_shapes(self, states, "`incoming_state`")

    def _configuration_key(self) -> str:
        """What the ranks compare before their first sync: the class and the shapes of its sums (a
        subclass names its configuration too)."""
        return f"{type(self).__name__} {fixed_shapes(self)}"

    def _sync_dist(self, dist_sync_fn: Any = gather_all_tensors, process_group: Any = None) -> None:
        """torchmetrics' sync, once the ranks agree on the configuration
        (:mod:`~torchrec_eval.metrics.configuration_guard`)."""
        check_ranks_agree(self, self._configuration_key(), process_group or self.process_group)
        super()._sync_dist(dist_sync_fn, process_group)

    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> Any:
        """torchmetrics' ``state_dict``; with persistent states, the flat stream too (``_flat_stream_*``), so a
        checkpoint taken mid-query resumes to the uninterrupted value."""
        destination = super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
        if any(self._persistent.values()):
            destination.update({prefix + key: value for key, value in self._flat.entries().items()})
        return destination

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: Any, **kwargs: Any) -> None:
        entries = {key[len(prefix):]: state_dict[key] for key in state_dict if key.startswith(prefix + STREAM)}
        carries_states = bool(entries) or any(prefix + name in state_dict for name in self._defaults)
        stream = FlatStream.from_entries(entries, self.device) if carries_states else self._flat  # may raise
        saved = {name: state_dict[prefix + name] for name in self._defaults if prefix + name in state_dict}
        check_shapes(self, saved, "The state_dict")  # before torchmetrics replaces any state
        for key in entries:
            del state_dict[prefix + key]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._flat = stream  # a checkpoint without a stream (an old one, or none held) ends the current one

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        this = super()._apply(fn, *args, **kwargs)
        pending = this._flat.pending
        if pending is not None:  # the held-back rows follow the device (never a dtype cast)
            moved = {name: column.to(this.device) for name, column in pending.items()}
            this._flat = FlatStream(moved, this._flat.last, this._flat.evaluated)
        return this

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
            pending = self._flat.pending
            if pending is not None:  # e.g. torchmetrics' Running resets after each update: never silent
                warnings.warn(
                    f"{type(self).__name__}.reset() drops {pending['indexes'].numel()} rows of query "
                    f"{self._flat.last} that the flat form held back and no reader evaluated; call compute() "
                    "before reset() to count them (torchmetrics' Running: use forward(), which ends each "
                    "call's last query)",
                    UserWarning,
                    stacklevel=2,
                )
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
