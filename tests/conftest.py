"""Every test starts from the same global random state, so a test never depends on the ones before it.

Under pytest-xdist with several workers (the README's ``-n auto``), each worker and the processes its
tests start run one thread (torch's intra-op pool, OpenMP, BLAS, numba): the workers already keep every
core busy, and a second thread per process only waits for a core, spinning (a test of many small ops
ran 4x slower, on 4x the CPU time, with 2 threads per worker on 2 busy cores). Variables set by the
user are kept."""

import os

import pytest
import torch

from tests.processes import free_port

if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_name, "1")  # read by the processes the tests start (numba: by this one too)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

# user code for the type checkers (tests/integration/test_typing.py), not for --doctest-modules to import:
# misspelt_option.py fails on purpose
collect_ignore = ["typing"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give an ``xdist_group`` test the ``@group`` suffix that ``--dist loadgroup`` schedules by, where pytest-xdist
    could not: it writes ``item._nodeid``, which pytest 9 no longer reads (a node's id is its ``_id``), so every group
    was spread over the workers (a module-scoped fixture ran once per worker; ranx's numba code compiled in each).
    ``tests/test_xdist_groups.py`` fails when a group is not applied."""
    if not config.getoption("loadgroup", default=False):  # set on the workers of --dist loadgroup
        return
    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            from _pytest.nodeid import NodeId  # pytest >= 9, where nodeid is NodeId's string

            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


@pytest.fixture(autouse=True)
def _seed_global_rng():
    torch.manual_seed(0)


@pytest.fixture
def master_port(monkeypatch) -> int:
    """``MASTER_PORT`` for a Lightning launch in this test, from :func:`tests.processes.free_port`
    (Lightning's own choice is a port the OS picks and lets go, which a process beside, such as another
    pytest-xdist worker, can take before the launch binds it); the variable is restored afterwards."""
    port = free_port()
    monkeypatch.setenv("MASTER_PORT", str(port))
    return port


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))])
def device(request) -> torch.device:
    """Every device a test can run on here: the CPU always, CUDA when present."""
    return torch.device(request.param)

