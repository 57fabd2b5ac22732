"""Where the library may read a tensor's value on the host, and where it must not: the public face of
:mod:`torchrec_eval.pipeline.syncs`, which holds the switch (see docs/host-syncs.md).

:func:`simulate_accelerator` sends CPU tensors down the accelerator path (a testing aid);
:func:`host_reads_free` is the question the pipeline asks.
"""

from torchrec_eval.pipeline.syncs import host_reads_free, simulate_accelerator

__all__ = ["host_reads_free", "simulate_accelerator"]
