"""benchmarks/bench_gpu.py and tests/scripts/topk_tie_order.py --quick run for real (on the CPU here;
on a GPU, ``benchmarks/gpu_session.sh`` runs them with ``--device cuda``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_bench_gpu_quick_on_the_cpu(tmp_path: Path) -> None:
    out = tmp_path / "gpu.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--quick", "--no-compile", "--device", "cpu",
         "--json", str(out)],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    floors = [row for row in rows if "floor" in row["case"]]
    assert len(floors) == 4 and all(row["ratio"] == 1.0 for row in floors)  # 2 ranking shapes, comparison, pointwise
    assert {row["case"] for row in rows} >= {"eager, validate_args=False", "PairedComparison, 24 metrics",
                                             "PointwiseMetrics, validate_args=False"}
    for row in rows:
        assert row["ms"] > 0 and row["kernels"] == "n/a" and row["syncs"] == "n/a"  # no launches on the CPU
        assert f"{row['ratio']:.2f}x" in proc.stdout


def test_topk_tie_order_quick_reports_the_cpu_topk(tmp_path: Path) -> None:
    """The CPU's topk keeps no promise about ties: the script must say so (exit 1) and list the rows."""
    out = tmp_path / "ties.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "scripts" / "topk_tie_order.py"), "--quick", "--device", "cpu",
         "--json", str(out)],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert any(row["boundary"] for row in rows) and all(row["cases"] > 0 for row in rows)
    assert "settings have failing rows" in proc.stdout
