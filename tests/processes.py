"""What the tests need to start processes: a free TCP port for a gloo group, the start method of worker
processes, and the environment of a child Python that imports this checkout."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import torch.multiprocessing as mp

ROOT = Path(__file__).resolve().parents[1]
START_METHOD = "fork" if "fork" in mp.get_all_start_methods() else "spawn"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for ``init_method="tcp://127.0.0.1:PORT"``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def child_env() -> dict[str, str]:
    """This process's environment without a launcher's rank variables (a child is no rank of the tests'
    group), with this checkout first on ``PYTHONPATH`` and one OpenMP thread (small tensors: no
    oversubscribed CPU when tests run side by side)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["OMP_NUM_THREADS"] = "1"
    return env
