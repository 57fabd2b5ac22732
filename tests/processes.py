"""What the tests need to start processes: a free TCP port for a gloo group, the start method of worker
processes, and the environment of a child Python that imports this checkout."""

from __future__ import annotations

import os
import random
import socket
import tempfile
from pathlib import Path
from typing import IO

import torch.multiprocessing as mp

try:
    import fcntl
except ImportError:  # Windows: no POSIX record locks, the ports are only checked
    fcntl = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[1]
START_METHOD = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
# A start method whose children do not inherit this process's state (a child forked from a test process
# can inherit a locked intra-op thread pool and hang): "forkserver" where the platform has it, whose
# children are forked from a server process that imported torch, the package and the harness once and
# runs nothing else, so a child starts in a fraction of a second instead of importing them again (2-4 s
# of CPU each); "spawn" elsewhere. Like "spawn", it pickles the target and its arguments. The server
# starts at the first use in a process and keeps that moment's environment and standard streams for all
# its children: a child sets its own variables (MASTER_ADDR ...) and reports through files or queues.
FRESH_START_METHOD = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
if FRESH_START_METHOD == "forkserver":
    mp.set_forkserver_preload(["torchrec_eval", "tests.harness"])  # read when the server starts

# The ports free_port hands out: below the ranges the OS assigns on its own (bind to port 0, outgoing
# connections; Linux 32768-60999, macOS and Windows 49152-65535), so no socket of another test, worker
# or process takes one by chance between free_port's check and the group's bind.
PORTS = range(20000, 32000)
_taken: set[int] = set()
_lock_file: IO[bytes] | None = None


def _reserve(port: int) -> bool:
    """Lock byte ``port`` of a file shared by every test process on this machine (pytest-xdist workers,
    other sessions) for the rest of this process's life: no other process's free_port returns it."""
    global _lock_file
    if fcntl is None:
        return True
    if _lock_file is None:
        path = Path(tempfile.gettempdir()) / f"torchrec_eval-test-ports-{os.getuid()}.lock"
        _lock_file = open(path, "ab")  # held open: closing it would drop every lock of this process
    try:
        fcntl.lockf(_lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port, os.SEEK_SET)
    except OSError:
        return False  # another process holds it
    return True


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port that nothing listens on now and that no other test process is handed (for
    ``init_method="tcp://127.0.0.1:PORT"`` or ``MASTER_PORT``): a port of :data:`PORTS` that this
    process has not handed out before, locked for this process in a file every test process shares
    (so pytest-xdist workers, and sessions side by side, never get the same one) and bindable now."""
    start = random.SystemRandom().randrange(len(PORTS))  # not the tests' seeded global random
    for i in range(len(PORTS)):
        port = PORTS[(start + i) % len(PORTS)]
        if port in _taken or not _reserve(port):
            continue
        _taken.add(port)  # reserved: this process never hands it out again, bindable now or not
        if _bindable(port):
            return port
    raise RuntimeError(f"no free port left in {PORTS}")


def child_env() -> dict[str, str]:
    """This process's environment without a launcher's rank variables (a child is no rank of the tests'
    group), with this checkout first on ``PYTHONPATH`` and one OpenMP thread (small tensors: no
    oversubscribed CPU when tests run side by side)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["OMP_NUM_THREADS"] = "1"
    return env
