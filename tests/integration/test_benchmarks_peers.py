"""bench_peers.py and bench_scaling.py run for real (--quick, in subprocesses) and print their tables."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
def test_bench_peers_and_scaling_quick(tmp_path):
    plot = tmp_path / "scaling.png"
    commands = {
        "peers": [sys.executable, str(ROOT / "benchmarks" / "bench_peers.py"), "--quick"],
        "scaling": [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_scaling.py"),
            "--quick",
            "--plot",
            str(plot),
        ],
    }
    # Both at once: most of their time is importing torch, torchmetrics and ranx.
    running = {
        name: subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name, command in commands.items()
    }
    out = {}
    for name, process in running.items():
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, f"{name}: {stderr[-3000:]}"
        out[name] = stdout

    peers = out["peers"]
    for title in (
        "1. Top-k suite",
        "2. One relevant item per query",
        "3. AUC",
        "4. Beyond accuracy",
        "Goals",
    ):
        assert title in peers
    for row in (
        "torch.topk(scores, 10) (floor)",
        "torchrec_eval RankingMetrics, binary target",
        "torchmetrics.retrieval (flat, indexes)",
        "ranx evaluate",
        "torcheval retrieval_precision",
        "torcheval hit_rate + reciprocal_rank",
        "converting the tensors to Qrels/Run",
    ):
        assert row in peers
    for column in ("vs floor", "peak mem", "state bytes"):
        assert column in peers
    # the values agree with every peer (same data, matching conventions)
    for line in peers.splitlines():
        if line.startswith("max |our value"):
            gaps = [float(part.split()[-1]) for part in line.split(":", 1)[1].split(",")]
            assert max(gaps) < 1e-6, line
    # our state is the same 104 bytes whatever the size; torchmetrics' grows
    scaling = out["scaling"]
    assert "Scaling with the number of queries" in scaling and "catalogue" in scaling
    assert "constant state memory: ours 104 bytes at every size, met" in scaling
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
