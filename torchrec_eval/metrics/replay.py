"""A compiled function whose graphs run without Dynamo once their input signature is known (issue 53).

A ``torch.compile``d call first checks Dynamo's guards: for a suite's update about 400 of them (one per
configuration value the trace read), about a third of the host time of a small compiled update. The
configuration of a metric never changes after construction, so what can change between two updates is the
inputs' layout and the global state a graph is specialised to. :class:`ReplayedCompile` compiles through
Dynamo as ever, keeps each graph the backend compiles with the signature of the call that compiled it, and
runs a later call of that signature as the kept graph itself: the call's Python is a signature and a
replay. A graph is kept only when its inputs are the call's own tensors (or their sizes, or the metric's
registered buffers, read again at each call) and a direct run of it equals Dynamo's result on that call; any
other call goes through Dynamo, with its guards (so does a signature that an earlier dynamic graph serves:
Dynamo compiles nothing for it, so nothing is kept).

The signature: each input's type, layout, shape, strides, dtype, device, ``requires_grad``, whether it is an
inference tensor and which input is the same tensor object (``None`` inputs by name); the grad and inference
modes, the default dtype and device, deterministic algorithms and autocast on the inputs' devices; and the
layout of the metric's buffers. A call with an input of another kind (a Python number the graph may be
specialised to) always goes through Dynamo.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

__all__ = ["ReplayedCompile", "signature"]

# the placeholders a graph may take: an input of the call, one of its sizes (a dynamic graph), or a registered
# buffer of the owner (a metric's tables: read again at each call, so they follow ``.to(device)``)
_INPUT = re.compile(r"L\['inputs'\]\['(\w+)'\]")
_SIZE = re.compile(r"L\['inputs'\]\['(\w+)'\]\.size\(\)\[(\d+)\]")
_BUFFER = re.compile(r"L\['owner'\]\._buffers\['(\w+)'\]")


def signature(inputs: dict[str, Any]) -> tuple[Any, ...] | None:
    """What a graph compiled for ``inputs`` is specialised to, or None for an input that is neither a tensor nor
    None.

    Example:
        >>> import torch
        >>> preds, target = signature({"preds": torch.zeros(2, 3), "target": None})[-2:]
        >>> preds[3:5], target
        ((torch.Size([2, 3]), (3, 1)), ('target', None))
    """
    parts: list[Any] = [torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.get_default_dtype(),
                        torch.get_default_device(), torch.are_deterministic_algorithms_enabled()]
    devices: set[str] = set()
    first_named: dict[int, str] = {}
    for name, value in inputs.items():
        if isinstance(value, Tensor):
            # the first input that is this very tensor: Dynamo makes one graph input of a tensor passed twice
            same = first_named.setdefault(id(value), name)
            parts.append((name, type(value), value.layout, value.shape, value.stride(), value.dtype, value.device,
                          value.requires_grad, value.is_inference(), same))
            devices.add(value.device.type)
        elif value is None:
            parts.append((name, None))
        else:
            return None
    parts[5:5] = [torch.is_autocast_enabled(device) for device in sorted(devices)]
    return tuple(parts)


def _bound(function: Callable[[Any, dict[str, Any]], Any], owner: Any) -> Callable[[dict[str, Any]], Any]:
    """``function(owner, inputs)`` as a function of ``inputs`` alone, on a code object of its own. Dynamo keeps
    compiled entries, and counts them against its recompile limit (8), per code object: a ``functools.partial``
    compiles through one wrapper shared by every partial of the process, whose ninth entry (a ninth metric
    configuration) failed to compile, with a warning and eager updates from then on."""

    def call(inputs: dict[str, Any]) -> Any:
        return function(owner, inputs)

    return types.FunctionType(call.__code__.replace(), call.__globals__, call.__name__, None, call.__closure__)


def _source_name(node: torch.fx.Node) -> str:
    """Where Dynamo read a placeholder from (``L['inputs']['preds']``), or "" where it does not say (the graph is
    then never replayed); a property of the source in recent torch, a method before."""
    name = getattr(getattr(node.meta.get("grapharg"), "source", None), "name", "")
    return str(name() if callable(name) else name)


class _Graph:
    """One compiled graph and where each of its inputs comes from in a call: ``("input", name, None)``,
    ``("size", name, axis)`` or ``("buffer", name, None)`` (a buffer of the owner)."""

    def __init__(self, sources: list[str], compiled: Callable[..., Any]) -> None:
        self.compiled = compiled
        self.reads: list[tuple[str, str, int | None]] | None = []
        for source in sources:
            whole, size, buffer = _INPUT.fullmatch(source), _SIZE.fullmatch(source), _BUFFER.fullmatch(source)
            if whole is not None:
                self.reads.append(("input", whole.group(1), None))
            elif size is not None:
                self.reads.append(("size", size.group(1), int(size.group(2))))
            elif buffer is not None:
                self.reads.append(("buffer", buffer.group(1), None))
            else:
                self.reads = None  # a placeholder that is none of these: never replayed
                return

    def run(self, inputs: dict[str, Any], owner: Any) -> tuple[Tensor, ...]:
        args = [inputs[name] if kind == "input" else inputs[name].shape[axis] if kind == "size"
                else owner._buffers[name] for kind, name, axis in self.reads or ()]
        return tuple(self.compiled(*args))


class ReplayedCompile:
    """``torch.compile(fullgraph=True, **options)`` of ``function(owner, inputs)`` (a dict of tensors to a tuple
    of tensors) for one ``owner``, whose graphs are replayed directly once a call's :func:`signature` is known.

    Args:
        function: the function to compile; it must read nothing that changes between calls but its ``inputs``
            and the owner's registered buffers (a metric's configuration is fixed at construction).
        owner: its first argument (a metric), whose ``_buffers`` a graph may read.
        options: ``torch.compile``'s keywords (``backend``, ``mode``, ``options``, ``dynamic``).

    Example:
        >>> import torch
        >>> from torchrec_eval import RankingMetrics
        >>> suite = RankingMetrics(["ndcg@2"], validate_args=False).compile_update(backend="aot_eager")
        >>> for _ in range(3):
        ...     suite.update(torch.tensor([[0.9, 0.1, 0.5]]), torch.tensor([[0, 1, 1]]))
        >>> suite._compiled_step.replayed  # the first update compiled the graph, the two others replayed it
        2
    """

    def __init__(self, function: Callable[[Any, dict[str, Any]], tuple[Tensor, ...]], owner: Any,
                 options: dict[str, Any]) -> None:
        options = dict(options)
        backend, mode, extra = options.pop("backend", "inductor"), options.pop("mode", None), options.pop("options", None)
        # the backend torch.compile itself would build from these options (the graph it compiles is kept)
        self._backend: Callable[..., Any] = (
            torch._TorchCompileInductorWrapper(mode, extra, options.get("dynamic")) if backend == "inductor"  # type: ignore[no-untyped-call]
            else torch._TorchCompileWrapper(backend, mode, extra, options.get("dynamic")))  # type: ignore[no-untyped-call]
        self._function = torch.compile(_bound(function, owner), fullgraph=True, backend=self._keep, **options)
        self._owner = owner
        self._compiled: list[_Graph] = []  # the graphs compiled during the current call
        self._graphs: dict[tuple[Any, ...], _Graph] = {}
        self.replayed = 0  # calls that ran a kept graph (for tests and benchmarks)

    def _keep(self, graph: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        compiled = self._backend(graph, example_inputs)
        sources = [_source_name(node) for node in graph.graph.nodes if node.op == "placeholder"]
        self._compiled.append(_Graph(sources, compiled))
        return compiled

    def __call__(self, inputs: dict[str, Any]) -> tuple[Tensor, ...]:
        """The function's value at ``inputs``: a kept graph's for a known signature, else Dynamo's."""
        key = signature(inputs)
        buffers = getattr(self._owner, "_buffers", None)
        if key is not None and buffers:  # the layout of the owner's buffers too (a graph may read them)
            key += tuple((name, buffer.shape, buffer.dtype, buffer.device) for name, buffer in buffers.items()
                         if buffer is not None)
        kept = self._graphs.get(key) if key is not None else None
        if kept is not None:
            self.replayed += 1
            return kept.run(inputs, self._owner)
        self._compiled.clear()
        result = tuple(self._function(inputs))
        if key is not None and len(self._compiled) == 1 and self._compiled[0].reads is not None:
            result = self._check_and_keep(key, self._compiled[0], inputs, result)
        self._compiled.clear()
        return result

    def _check_and_keep(self, key: tuple[Any, ...], graph: _Graph, inputs: dict[str, Any],
                        result: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """Keep ``graph`` for ``key`` if running it directly gives Dynamo's ``result`` (same outputs, same order, to
        1e-12: a GPU's atomic adds may differ in the last bit between runs); returns a copy of ``result`` (a CUDA
        graph's outputs are overwritten by its next run: the direct one). The comparison is one host read, on the
        call that compiled the graph only (docs/host-syncs.md)."""
        expected = tuple(value.clone() for value in result)
        direct = graph.run(inputs, self._owner)
        if len(direct) == len(expected) and all(
                isinstance(got, Tensor) and got.shape == want.shape and got.dtype == want.dtype
                and torch.allclose(got, want, rtol=1e-12, atol=0.0, equal_nan=True)
                for got, want in zip(direct, expected, strict=True)):
            self._graphs[key] = graph
        return expected
