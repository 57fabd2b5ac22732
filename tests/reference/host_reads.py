"""A ``TorchDispatchMode`` that fails on every operation that reads a tensor's data on the host.

On an accelerator each of these waits for the device (a host sync): a scalar read (``.item()``,
``.tolist()``, ``bool(t)``, ``int(t)``, ``if t.any():`` -- they all end in ``aten._local_scalar_dense``);
the operations whose output shape depends on the values (``nonzero``, ``masked_select``, ``unique``,
indexing or assigning with a bool mask, ``repeat_interleave`` without ``output_size``, ``bincount``,
``equal``); and a tensor made from a Python list (``torch.tensor(list, device=...)``, a list used as
an index), which an accelerator copies from the host synchronously. On the CPU they are free, so
nothing else catches them: run an update on the CPU under
:func:`torchrec_eval.syncs.simulate_accelerator` and inside :class:`NoHostReads`, and any host read
the accelerator path would make raises :class:`HostRead`, naming the operation.

``Tensor.tolist`` reads the data pointer without going through the dispatcher, so the mode also
patches it for as long as it is active (``tests/pipeline/test_accelerator_path.py`` checks every listed read).
Not seen here: ``torch.tensor(scalar, device=...)`` (a 0-dim tensor from a Python scalar is let through,
as ``where(mask, x, 0.0)`` makes one with no copy) and explicit moves such as ``.cpu()`` (a no-op on the
CPU).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten


class HostRead(RuntimeError):
    """An operation that reads tensor data on the host ran inside :class:`NoHostReads`."""


# operations that read values on the host, whatever their arguments
_ALWAYS = {
    aten._local_scalar_dense: "a scalar read (.item(), bool(), int(), float())",
    aten.is_nonzero: "bool() of a tensor",
    aten.nonzero: "nonzero (output shape depends on the values)",
    aten.masked_select: "masked_select (output shape depends on the values)",
    aten.unique_dim: "unique", aten._unique: "unique", aten._unique2: "unique",
    aten.unique_consecutive: "unique_consecutive", aten.unique_dim_consecutive: "unique_consecutive",
    aten.bincount: "bincount (its length reads the maximum)",
    aten.equal: "torch.equal (returns a Python bool)",
    aten.allclose: "torch.allclose (returns a Python bool)",
}
# indexing with a bool (or uint8) mask: the number of selected entries depends on the values
_INDEXING = {aten.index, aten.index_put, aten.index_put_, aten._index_put_impl_}


def _mask_indexed(func: Any, args: tuple[Any, ...]) -> bool:
    indices = [index for index in (args[1] if len(args) > 1 else ()) if index is not None]
    if not any(index.dtype in (torch.bool, torch.uint8) for index in indices):
        return False
    # ``x[mask] = scalar``: ATen runs it as ``masked_fill_`` (no host read) when the one index is a
    # mask and the value a single element that does not accumulate
    accumulate = len(args) > 3 and args[3]
    fill = func.overloadpacket is not aten.index and len(indices) == 1 and args[2].numel() == 1 and not accumulate
    return not fill


class NoHostReads(TorchDispatchMode):
    """Raise :class:`HostRead` on any host read of tensor data while active.

    Example:
        >>> import torch
        >>> x = torch.tensor([1.0, 2.0])
        >>> with NoHostReads():
        ...     y = x * 2
        >>> try:
        ...     with NoHostReads():
        ...         x.sum().item()
        ... except HostRead as error:
        ...     print(error)
        aten._local_scalar_dense.default: a scalar read (.item(), bool(), int(), float())
    """

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        packet = func.overloadpacket
        why = _ALWAYS.get(packet)
        if why is None and packet in _INDEXING and _mask_indexed(func, args):
            why = "indexing with a bool mask (output shape depends on the values)"
        if why is None and packet is aten.lift_fresh and args[0].ndim > 0:
            # torch.tensor(list, device=...), x.new_tensor(list), a list or tuple as an index: made on the
            # host, so on an accelerator a copy that waits for the device (copy_ without non_blocking). A
            # Python scalar (0-dim) is passed to kernels as an argument, no copy: let through
            why = "a tensor from Python data (torch.tensor(list), a list index): a synchronous host-to-device copy"
        if why is None and func is aten.repeat_interleave.Tensor and kwargs.get("output_size") is None:
            why = "repeat_interleave without output_size (its length is the sum of the repeats)"
        if why is not None:
            raise HostRead(f"{func}: {why}")
        return func(*args, **kwargs)

    def __enter__(self) -> NoHostReads:
        self._tolist = torch.Tensor.tolist

        def tolist(tensor: torch.Tensor) -> Any:
            raise HostRead("Tensor.tolist: a host read of every element")

        torch.Tensor.tolist = tolist
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        torch.Tensor.tolist = self._tolist
        super().__exit__(*exc)
