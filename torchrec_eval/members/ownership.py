"""A metric received by another process owns its tensors: none of them stays in shared memory.

``torch.multiprocessing`` (``mp.spawn``, Lightning's ``ddp_spawn``, ``DataLoader`` workers) pickles
with a ``ForkingPickler`` that moves every CPU tensor it sends into shared memory and hands the
receiver the *same* memory; CUDA tensors travel the same way through CUDA IPC. A module's parameters
and buffers are then un-shared by Lightning, but a metric's states are plain attributes, so every
process that received the metric (and the sender) would add into one state tensor: doubled states
after a sync, updates lost to concurrent ``+=``, and the parent's metric changed by its children.

So every stateful object of the package calls :func:`own_tensors` when it is unpickled: each tensor
it holds in shared memory (any CUDA tensor) is replaced by a private copy. Plain pickling and
``copy.deepcopy`` already give fresh CPU tensors, which are left as they are.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torch import Tensor, nn


def own_tensors(obj: Any, seen: set[int] | None = None) -> None:
    """Replace, in place, every shared-memory tensor reachable from ``obj.__dict__`` by a private copy.

    It walks dicts, lists, tuples, dataclasses (frozen ones too: they are fresh from the unpickler),
    modules and the package's own objects (members, streams); other objects are left alone.

    Example:
        >>> import torch
        >>> class Holder:
        ...     pass
        >>> holder = Holder()
        >>> holder.state = torch.zeros(3).share_memory_()
        >>> own_tensors(holder)
        >>> holder.state.is_shared()
        False
    """
    seen = set() if seen is None else seen
    seen.add(id(obj))
    _owned(vars(obj), seen)  # the attribute dict is changed in place


def _owned(value: Any, seen: set[int]) -> Any:
    """``value``, or a copy of it where it is (or holds, in an immutable container) a shared tensor."""
    if isinstance(value, Tensor):
        if not value.is_shared():  # type: ignore[no-untyped-call]  # torch leaves is_shared unannotated; always True for a CUDA tensor: received by IPC, it is the sender's memory
            return value
        copy = value.detach().clone()
        return nn.Parameter(copy, requires_grad=value.requires_grad) if isinstance(value, nn.Parameter) else copy
    if id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, dict):
        for key, item in list(value.items()):
            owned = _owned(item, seen)
            if owned is not item:
                value[key] = owned
    elif isinstance(value, list):
        for index, item in enumerate(value):
            value[index] = _owned(item, seen)
    elif isinstance(value, tuple):
        items = [_owned(item, seen) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    elif _walked(value):
        own_tensors(value, seen)
    return value


def _walked(value: Any) -> bool:
    """Whether :func:`own_tensors` looks inside ``value``: a module, a dataclass, or one of the package's objects."""
    if not hasattr(value, "__dict__") or isinstance(value, type):
        return False
    return (isinstance(value, nn.Module) or dataclasses.is_dataclass(value)
            or type(value).__module__.startswith("torchrec_eval."))


class OwnsTensors:
    """Mixin for a ``torchmetrics.Metric``: when unpickled, it calls :func:`own_tensors` on itself."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)  # type: ignore[misc]  # Metric's: restores the wrapped update/compute
        own_tensors(self)
