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
  instead of being counted twice. The held-back query is in the states as it stands (its increments kept
  with the stream and taken back out when it continues), so every reader and every sharer of the states
  (torchmetrics' compute groups) sees it; ``compute`` (so ``plot``, ``forward``, containers), ``sync``
  (so ``confidence_interval``) and ``merge_state`` (of the incoming metric) end it; ``metric_state`` and a persistent
  ``state_dict`` carry its rows (``_flat_stream_*`` entries), so a checkpoint resumes mid-query and a
  dict of states that holds rows back is refused by ``merge_state`` rather than silently dropped;
  ``reset`` warns when it drops rows that no reader evaluated.
* **Its own state in every process.** A metric sent to another process (``mp.spawn``, ``ddp_spawn``)
  copies the tensors that ``torch.multiprocessing`` put in shared memory
  (:mod:`torchrec_eval.members.ownership`): each process adds into its own state.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar, cast

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.distributed import gather_all_tensors

from torchrec_eval.members.ownership import own_tensors
from torchrec_eval.metrics.configuration_guard import check_ranks_agree, check_shapes, fixed_shapes
from torchrec_eval.metrics.flat_stream import PENDING, STREAM, STREAM_LAST, TENTATIVE, FlatStream

Apply = Callable[[], None]


def leave_inference_states(metric: Any) -> None:
    """Before a metric's states are added into in place outside ``torch.inference_mode``: replace each state that
    is an inference tensor by a normal copy (exact). A state made under inference mode (a ``reset``,
    ``load_state_dict`` or ``merge_state`` in Lightning's evaluation loops, which run in it) is an inference
    tensor, which torch lets no one update in place outside that mode (torchmetrics' #1993)."""
    if torch.compiler.is_compiling() or torch.is_inference_mode_enabled():
        return  # in place on an inference or a normal tensor: both allowed here (a graph: no inference tensors)
    for name in metric._defaults:
        state = getattr(metric, name)
        if isinstance(state, Tensor) and state.is_inference():
            setattr(metric, name, state.clone())


class TorchmetricsArguments(TypedDict, total=False):
    """torchmetrics' ``Metric`` arguments, which every stateful metric of the library passes on."""

    compute_on_cpu: bool
    dist_sync_on_step: bool
    process_group: Any
    dist_sync_fn: Callable[..., Any] | None
    distributed_available_fn: Callable[[], bool] | None
    sync_on_compute: bool
    compute_with_cache: bool


@functools.cache
def named_keywords(function: Callable[..., Any]) -> tuple[tuple[str, ...], bool]:
    """The keyword arguments ``function`` names: its named parameters and the keys of the ``TypedDict`` its
    ``**kwargs`` unpacks (``**inputs: Unpack[FormInputs]``); and whether a bare ``**kwargs`` takes any other."""
    parameters = inspect.signature(function).parameters
    named = [name for name, p in parameters.items() if name != "self"
             and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    rest = [p for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    if not rest:
        return tuple(named), False
    unpacked = typing.get_type_hints(function, include_extras=True).get(rest[0].name)
    typed = [arg for arg in typing.get_args(unpacked) if typing.is_typeddict(arg)]
    return (*named, *(typed[0].__annotations__ if typed else ())), not typed


def keywords_of(function: Callable[..., Any]) -> tuple[str, ...] | None:
    """The keyword arguments ``function`` takes (:func:`named_keywords`); None where a bare ``**kwargs`` takes any."""
    names, open_ended = named_keywords(function)
    return None if open_ended else names


def check_keywords(where: str, valid: tuple[str, ...] | None, kwargs: dict[str, Any]) -> None:
    """Raise a ``ValueError`` naming a keyword argument that is not among ``valid`` (None: any is)."""
    unknown = [] if valid is None else [name for name in kwargs if name not in valid]
    if unknown:
        raise ValueError(f"{where} got an unexpected keyword argument {unknown[0]!r}; valid arguments: "
                         f"{list(valid or ())}")


def constructor_keywords(cls: type) -> list[str]:
    """The keyword arguments ``cls(...)`` takes: its ``__init__``'s named parameters, the keys of the
    ``TypedDict`` its ``**kwargs`` unpacks (``Unpack[MetricArguments]``), and torchmetrics' arguments."""
    taken, _ = named_keywords(cast(Callable[..., Any], inspect.getattr_static(cls, "__init__")))
    own = [name for name in taken if name not in TorchmetricsArguments.__annotations__]
    return list(dict.fromkeys([*own, *TorchmetricsArguments.__annotations__]))


def check_constructor_keywords(cls: type, kwargs: Mapping[str, Any]) -> None:
    """Raise a ``ValueError`` naming ``cls`` and the keywords it takes when ``kwargs`` holds one that neither it
    nor torchmetrics' ``Metric`` takes (torchmetrics' own message names neither the class nor the valid ones)."""
    unknown = [name for name in kwargs if name not in TorchmetricsArguments.__annotations__]
    if unknown:
        valid = constructor_keywords(cls)
        close = {name: difflib.get_close_matches(name, valid, n=1) for name in unknown}
        hints = "".join(f" (did you mean {match[0]!r} for {name!r}?)" for name, match in close.items() if match)
        raise ValueError(f"{cls.__name__}() got unexpected keyword argument(s) {unknown}{hints}; "
                         f"it takes: {valid}")


F = TypeVar("F", bound=Callable[..., Any])


def keywords_checked(method: F) -> F:
    """A method that raises :func:`check_keywords`' ``ValueError`` on a misspelt keyword, not a ``TypeError``."""
    valid = keywords_of(method)

    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        check_keywords(f"{type(self).__name__}.{method.__name__}()", valid, kwargs)
        return method(self, *args, **kwargs)

    return cast(F, checked)


class StatefulMetric(Metric):
    """torchmetrics ``Metric`` with all-or-nothing updates, no stale cache, checked keywords, a flat stream,
    float64 states that follow ``.to(device)`` but never a dtype cast, and its own tensors once unpickled.

    The one base of every stateful metric of the library (the ranking metrics, the pointwise ones, the
    paired comparison). A subclass implements ``_stage(inputs) -> apply`` (validate and compute one
    batch's contribution without touching any state; ``apply()`` adds it) and an ``update`` with explicit
    keyword arguments that calls :meth:`_update_from`.
    """

    _FLAT_COLUMNS: tuple[str, ...] = ()  # the 1-D arguments that travel with `indexes` in the flat form

    def __init__(self, **kwargs: Any) -> None:
        check_constructor_keywords(type(self), kwargs)
        kwargs.setdefault("compute_with_cache", False)
        super().__init__(**kwargs)
        self._flat = FlatStream()
        self._forwarding = False

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        raise NotImplementedError

    def _update_from(self, inputs: dict[str, Any]) -> None:
        """Stage the batch, then apply it (the flat form: :meth:`_update_flat`)."""
        if inputs.get("indexes") is not None:
            self._update_flat(inputs)
            return
        self._apply_staged(self._stage(inputs))

    def _apply_staged(self, apply: Apply) -> None:
        """Add a staged batch's increments (nothing failed: from here on the states change), states made under
        ``torch.inference_mode`` first copied into normal tensors (:func:`leave_inference_states`)."""
        leave_inference_states(self)
        apply()

    def _update_flat(self, inputs: dict[str, Any]) -> None:
        """The flat form: stage the call's complete queries and its last one, which may continue; then take the
        last call's tentative increments of its held-back query back out of the states, add the complete queries
        and add the new held-back query tentatively (its increments kept with the stream, to take back when it
        continues). The states always hold every row seen, so every reader (``compute``, torchmetrics'
        ``MetricCollection`` sharing or copying them in a compute group) sees the whole stream."""
        columns = {name: inputs[name] for name in ("indexes", *self._FLAT_COLUMNS) if inputs.get(name) is not None}
        self._check_flat(inputs)
        ready, stream = self._flat.feed(columns)
        apply_ready = None if ready is None else self._stage({**inputs, **ready})
        apply_held = self._stage({**inputs, **cast(dict[str, Tensor], stream.pending)})
        leave_inference_states(self)  # nothing failed: from here on the states change
        for name, increment in self._flat.tentative.items():
            getattr(self, name).sub_(increment)
        if apply_ready is not None:
            apply_ready()
        before = {name: getattr(self, name).clone() for name in self._tensor_states()}
        apply_held()
        self._flat = stream.holding({name: getattr(self, name) - before[name] for name in before})

    def _tensor_states(self) -> list[str]:
        """The states that hold numbers: tensors, not the empty configuration state."""
        return [name for name in self._defaults if isinstance(state := getattr(self, name), Tensor) and state.numel()]

    def _check_flat(self, inputs: dict[str, Any]) -> None:
        """Validate a flat-form call in full before any of its rows is held back."""
        raise NotImplementedError

    def _drain(self) -> None:
        """End the held-back flat query where it stands (at ``compute``): its tentative increments, in the states
        already, become final, and the query may not continue."""
        if self._flat.pending is not None:
            self._flat = self._flat.drained()

    # readers of the state: each ends the held-back flat query, which the states hold as it stands ----
    def sync(self, *args: Any, **kwargs: Any) -> None:
        """torchmetrics' ``sync``, after ending the held-back flat query as ``compute`` does (it is in the states
        as it stands): whatever reads a synced state (``confidence_interval``, ``sync_context``) counts it."""
        if not self._is_synced:  # a synced state is replaced by the local one at unsync: end it locally
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
        (:mod:`~torchrec_eval.metrics.configuration_guard`), of every state but the empty configuration state: a
        metric costs the collectives of its statistics only (and one more at its first sync, for the check)."""
        check_ranks_agree(self, self._configuration_key(), process_group or self.process_group)
        empty = {name: fx for name, fx in self._reductions.items()
                 if isinstance(state := getattr(self, name), Tensor) and state.numel() == 0}
        for name in empty:
            del self._reductions[name]
        try:
            super()._sync_dist(dist_sync_fn, process_group)
        finally:
            self._reductions.update(empty)

    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> Any:
        """torchmetrics' ``state_dict``; with persistent states, the flat stream too (``_flat_stream_*``), so a
        checkpoint taken mid-query resumes to the uninterrupted value."""
        destination = super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
        if any(self._persistent.values()):
            destination.update({prefix + key: value for key, value in self._flat.entries().items()})
        return destination

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        entries = {key[len(prefix):]: state_dict[key] for key in state_dict if key.startswith(prefix + STREAM)}
        carries_states = bool(entries) or any(prefix + name in state_dict for name in self._defaults)
        stream = FlatStream.from_entries(entries, self.device) if carries_states else self._flat  # may raise
        saved = {name: state_dict[prefix + name] for name in self._defaults if prefix + name in state_dict}
        check_shapes(self, saved, "The state_dict")  # before torchmetrics replaces any state
        unknown = sorted(set(stream.tentative) - set(self._tensor_states()))
        if unknown:
            raise ValueError(f"The state_dict's held-back increments name states this metric does not have: "
                             f"{[TENTATIVE + name for name in unknown]} ({self!r})")
        check_shapes(self, stream.tentative, f"The state_dict's `{TENTATIVE}*` increments")
        for key in entries:
            del state_dict[prefix + key]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._flat = stream  # a checkpoint without a stream (an old one, or none held) ends the current one

    def _apply(self, fn: Any, exclude_state: Sequence[str] = ()) -> Any:
        """torchmetrics' move, keeping every state's and constructor table's dtype (``module.to(torch.bfloat16)``,
        Lightning's "bf16-true" and ``.half()`` cast a module's floating tensors; float64 sums must stay
        exact): states and held-back flat rows follow the device only. ``set_dtype`` still casts."""
        if self._dtype_convert:
            return super()._apply(fn, exclude_state)
        buffers = dict(self._buffers)
        this = cast(StatefulMetric, super()._apply(fn, exclude_state=tuple(self._defaults)))  # moves, leaves the states
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
        this._flat = this._flat.to(this.device)
        return this

    def __setstate__(self, state: dict[str, Any]) -> None:
        """torchmetrics' unpickling, then a private copy of every tensor left in shared memory
        (:mod:`~torchrec_eval.members.ownership`: ``mp.spawn`` and ``ddp_spawn`` would share the states)."""
        super().__setstate__(state)
        own_tensors(self)

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
        from torchrec_eval.metrics.families import upper_bound
        from torchrec_eval.plotting import plot_metric

        bound = upper_bound(getattr(self, "value_keys", ()))
        return plot_metric(self, self.compute() if val is None else val, ax, bound)

    # torchmetrics hooks --------------------------------------------------------------------------
    def _wrap_update(self, update: Callable[..., None]) -> Callable[..., None]:
        wrapped = super()._wrap_update(update)
        valid = keywords_of(update)

        @functools.wraps(update)
        def checked(*args: Any, **kwargs: Any) -> None:
            check_keywords(f"{type(self).__name__}.update()", valid, kwargs)
            count, computed = self._update_count, self._computed
            try:
                wrapped(*args, **kwargs)
            except BaseException:
                self._update_count, self._computed = count, computed
                raise

        return checked

    def _wrap_compute(self, compute: Callable[..., Any]) -> Callable[..., Any]:
        wrapped = super()._wrap_compute(compute)

        @functools.wraps(compute)
        def draining(*args: Any, **kwargs: Any) -> Any:
            self._drain()
            return wrapped(*args, **kwargs)

        return draining

    def _filter_kwargs(self, **kwargs: Any) -> dict[str, Any]:
        """The keywords of a container's call (``MetricCollection``) that this ``update`` takes, those of its
        ``**inputs: Unpack[...]`` included (torchmetrics' own filter passes every keyword to a ``**kwargs``)."""
        valid = keywords_of(type(self).update)
        return kwargs if valid is None else {name: value for name, value in kwargs.items() if name in valid}

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
