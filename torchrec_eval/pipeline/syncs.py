"""Where the library may read a tensor's value on the host, and where it must not.

On the CPU a host read (``bool(t.any())``, ``nonzero``) is free, and the library uses it to skip
work: only the rows tied at the cut-off are repaired, only rows with ``-inf`` scores are masked. On an
accelerator such a read stalls the device (a host sync), and under ``torch.compile`` it breaks the
graph; there the library takes its sync-free path instead: the same result from masked work on every
row. :func:`host_reads_free` is the one switch between the two. (No device's ``torch.topk`` settles
ties at the cut-off by itself: CUDA's keeps neither the lowest nor the highest indices, see
``tests/scripts/topk_tie_order.py``, so every device repairs them.)

:func:`simulate_accelerator` makes it answer as on CUDA for CPU tensors: a testing aid, so that the
accelerator path runs (and is checked for host reads) on every commit, on a machine with no GPU.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

__all__ = ["host_reads_free", "simulate_accelerator"]

_simulated = 0  # how many simulate_accelerator() blocks are open (a plain int: torch.compile guards on it)
_lock = threading.Lock()


def host_reads_free(tensor: Tensor) -> bool:
    """Whether reading ``tensor`` on the host costs nothing: a CPU tensor, outside ``torch.compile``
    and outside :func:`simulate_accelerator`.

    Example:
        >>> import torch
        >>> from torchrec_eval.syncs import host_reads_free
        >>> host_reads_free(torch.zeros(2))
        True
    """
    return tensor.device.type == "cpu" and not _simulated and not torch.compiler.is_compiling()


@contextmanager
def simulate_accelerator() -> Iterator[None]:
    """Run CPU tensors down the accelerator path: a testing aid, for machines with no GPU.

    Inside the block :func:`host_reads_free` answers False for CPU tensors, so ``update`` takes
    exactly the branches it takes on CUDA. Combined with a dispatch mode that fails on host reads
    (``tests/reference/host_reads.py``) it proves that ``update(validate_args=False)`` reads nothing
    on the host, without a GPU. The switch is global to
    the process (every thread sees it) and blocks may nest; it is not meant for production use.

    Example:
        >>> import torch
        >>> from torchrec_eval.syncs import host_reads_free, simulate_accelerator
        >>> with simulate_accelerator():
        ...     host_reads_free(torch.zeros(2))
        False
        >>> host_reads_free(torch.zeros(2))
        True
    """
    global _simulated
    with _lock:
        _simulated += 1
    try:
        yield
    finally:
        with _lock:
            _simulated -= 1
