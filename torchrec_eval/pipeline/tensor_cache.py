"""Small constant tensors (ranks, discounts, cut-off rows), built once per device and reused.

Rebuilding them in every ``update`` costs a handful of kernel launches and Python dispatches each, which
dominates small batches (and every launch counts on a GPU). They are read-only: nothing writes into a
tensor this module returns.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import torch
from torch import Tensor

_CACHE: dict[Hashable, Tensor] = {}
_MAX_ENTRIES = 512  # a bound for programs that evaluate at ever new sizes
_MAX_ELEMENTS = 1 << 16  # larger tensors are rebuilt each time rather than kept


def constant(key: Hashable, build: Callable[[], Tensor]) -> Tensor:
    """The tensor ``build()`` returns, built once per ``key`` (which must name the device).

    Built outside inference mode, so that a constant first made under Lightning's validation
    (``torch.inference_mode``) can still be used in a training step. Under ``torch.compile`` it is
    built in the graph instead (a cached tensor would be a guarded global).

    Example:
        >>> import torch
        >>> ranks = constant(("doc-ranks", 3, torch.device("cpu")), lambda: torch.arange(1.0, 4.0))
        >>> ranks is constant(("doc-ranks", 3, torch.device("cpu")), lambda: torch.arange(1.0, 4.0))
        True
    """
    if torch.compiler.is_compiling():
        return build()
    value = _CACHE.get(key)
    if value is None:
        with torch.inference_mode(False), torch.no_grad():
            value = build()
        if value.numel() > _MAX_ELEMENTS:
            return value
        if len(_CACHE) >= _MAX_ENTRIES:
            _CACHE.clear()
        _CACHE[key] = value
    return value


def positions(length: int, device: torch.device) -> Tensor:
    """[length] int64 list positions 0..length - 1."""
    return constant(("list_positions", length, device), lambda: torch.arange(length, device=device))


def ranks(length: int, device: torch.device) -> Tensor:
    """[length] float64 ranks 1..length."""
    return constant(
        ("ranks", length, device), lambda: torch.arange(1, length + 1, dtype=torch.float64, device=device)
    )


def geometric(length: int, patience: float, device: torch.device) -> Tensor:
    """[length] float64 weights p^(i - 1) of ranks i = 1..length (RBP's, LensKit's ``GeometricRankWeight``)."""
    return constant(("geometric", length, patience, device),
                    lambda: torch.pow(patience, ranks(length, device) - 1))


def row(values: tuple[float, ...], device: torch.device) -> Tensor:
    """[len(values)] float64 tensor of ``values`` (cut-offs as a row)."""
    return constant(("row", values, device), lambda: torch.tensor(values, dtype=torch.float64, device=device))


def filled(shape: tuple[int, ...], value: float, device: torch.device) -> Tensor:
    """A float64 tensor of ``shape`` holding ``value`` everywhere."""
    return constant(
        ("filled", shape, value, device), lambda: torch.full(shape, value, dtype=torch.float64, device=device)
    )


# Counting True flags along the rows of a bool tensor, faster than ``sum`` (a hot step of every update).

def count_true(flags: Tensor, dtype: torch.dtype = torch.int64) -> Tensor:
    """Number of True values along dim 1 of a 2-D bool tensor, as ``dtype`` [B] (int64 by default).

    ``bool_tensor.sum(1)`` widens every byte before adding, which costs more than the top-k itself
    on CPU. Here eight flags are read as one int64 word; sums of at most 255 words cannot carry
    between byte lanes, and the eight lanes are added at the end. Same result, ~50x less work on
    large batches (small ones take the plain sum: fewer kernel launches; up to 65,536 flags a single sum in
    ``dtype``, one launch instead of a sum and a cast).
    """
    rows, cols = flags.shape
    words = cols // 8
    dense = flags.stride() == (cols, 1)  # is_contiguous() is also True for a [1, N] slice of a wider row
    if flags.numel() <= 1 << 16:  # a small batch is launch-bound: one op, whatever dtype (exact: counts < 2^53)
        return flags.sum(1, dtype=dtype)
    if words < 2 or cols % 8 or not dense or flags.device.type == "mps" or flags.numel() < 1 << 20:
        return flags.sum(1, dtype=torch.int32).to(dtype)  # an int32 sum: several times faster than float64
    packed = flags.view(torch.int64)  # [B, words]; each byte is 0 or 1
    full = words // 255 * 255
    lanes = packed[:, :full].reshape(rows, -1, 255).sum(2)  # every byte lane <= 255: no carry
    if full < words:
        lanes = torch.cat([lanes, packed[:, full:].sum(1, keepdim=True)], dim=1)
    return lanes.view(torch.uint8).sum(1, dtype=torch.int32).to(dtype)  # the byte lanes of every word's sum


def hit_dtype() -> torch.dtype:
    """The dtype of 0/1 hits at each rank of a binary target: float64 eager (the formulas' matrix products take
    one dtype), float32 compiled, where they are exact (as is every count of them below 2^24) at half the bytes of
    the graph's [B, K] buffers, and every sum over them accumulates in float64 inside its fused kernel."""
    return torch.float32 if torch.compiler.is_compiling() else torch.float64
