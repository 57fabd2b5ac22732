"""examples/ddp_eval.py for real: torchrun with 2 CPU processes (gloo) against one in-process run."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "ddp_eval.py"
# 49 users on 2 ranks, 8 per batch: 25 + 24 users, 4 + 3 batches (uneven on purpose).
ARGS = ["--users", "49", "--items", "200", "--batch-size", "8", "--seed", "3", "--json"]


def _load_example():
    spec = importlib.util.spec_from_file_location("ddp_eval_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _json_line(stdout: str) -> dict[str, float]:
    lines = [line for line in stdout.splitlines() if line.startswith("json: ")]
    assert len(lines) == 1, stdout  # printed once, by rank 0 only
    return json.loads(lines[0][len("json: ") :])


def test_torchrun_two_processes_equals_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["OMP_NUM_THREADS"] = "1"
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(var, None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--standalone",
            str(SCRIPT),
            *ARGS,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    headers = [line for line in out.splitlines() if line.startswith("world_size=")]
    assert headers == [
        "world_size=2 backend=gloo users=49 items=200 users_per_rank=[25, 24] batches_per_rank=[4, 3]"
    ], out
    distributed = _json_line(out)

    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    single = _load_example().main(ARGS)
    assert list(distributed) == list(single) == _load_example().METRICS
    torch.testing.assert_close(
        torch.tensor(list(distributed.values()), dtype=torch.float64),
        torch.tensor(list(single.values()), dtype=torch.float64),
        rtol=0,
        atol=1e-12,
    )
    assert all(0 < value <= 1 for value in single.values())  # a real evaluation, not all zeros / NaN
    # the table rows show the same values
    for key, value in distributed.items():
        assert f"{key}" in out and f"{value:.6f}" in out


@pytest.mark.parametrize("size", [1, 5, 6, 49])
@pytest.mark.parametrize("world_size", [2, 3, 8])
@pytest.mark.parametrize("shuffle", [False, True])
def test_unpadded_sampler_keeps_every_sample_once(size: int, world_size: int, shuffle: bool) -> None:
    example = _load_example()
    dataset = list(range(size))
    shards = [
        list(
            example.UnpaddedDistributedSampler(
                dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=7
            )
        )
        for rank in range(world_size)
    ]
    assert sorted(i for shard in shards for i in shard) == dataset
    assert [len(shard) for shard in shards] == [
        len(example.UnpaddedDistributedSampler(dataset, num_replicas=world_size, rank=rank))
        for rank in range(world_size)
    ]
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


@pytest.mark.parametrize(("gpus", "local_ranks", "asked", "backend"), [
    (0, 2, "auto", "gloo"), (1, 2, "auto", "gloo"), (2, 2, "auto", "nccl"), (8, 2, "auto", "nccl"),
    (1, 2, "gloo", "gloo"), (2, 2, "nccl", "nccl"),
])
def test_the_backend_needs_a_gpu_per_local_rank(monkeypatch, gpus, local_ranks, asked, backend):
    """On a one-GPU machine, two torchrun processes once both took cuda:0/cuda:1 and failed with
    'invalid device ordinal' (seen on an H200): ``auto`` now runs them on gloo."""
    example = _load_example()
    monkeypatch.setattr(example.torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(example.torch.cuda, "device_count", lambda: gpus)
    assert example._backend(asked, local_ranks) == backend


def test_nccl_without_a_gpu_per_local_rank_is_refused_with_the_counts(monkeypatch):
    example = _load_example()
    monkeypatch.setattr(example.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(example.torch.cuda, "device_count", lambda: 1)
    with pytest.raises(SystemExit, match="2 local ranks, 1 GPU"):
        example._backend("nccl", 2)
