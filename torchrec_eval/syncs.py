"""Where the library may read a tensor's value on the host, and where it must not.

On the CPU a host read (``bool(t.any())``, ``nonzero``) is free, and the library uses it to skip
work: only the rows tied at the cut-off are repaired, only rows with ``-inf`` scores are masked. On an
accelerator such a read stalls the device (a host sync), and under ``torch.compile`` it breaks the
graph; there the library takes its sync-free path instead: the same result from masked work on every
row. :func:`host_reads_free` is the one switch between the two.
"""

from __future__ import annotations

import torch
from torch import Tensor


def host_reads_free(tensor: Tensor) -> bool:
    """Whether reading ``tensor`` on the host costs nothing: a CPU tensor, outside ``torch.compile``.

    Example:
        >>> import torch
        >>> from torchrec_eval.syncs import host_reads_free
        >>> host_reads_free(torch.zeros(2))
        True
    """
    return tensor.device.type == "cpu" and not torch.compiler.is_compiling()
