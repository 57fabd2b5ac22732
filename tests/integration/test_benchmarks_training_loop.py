"""benchmarks/bench_training_loop.py --quick runs for real and prints every case with its ratio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = Path(__file__).resolve().parents[2]


def test_bench_training_loop_quick(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "loop.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_training_loop.py"), "--quick", "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["device"] == "cpu, 1 thread(s)" and "scores, cpu, 1 thread(s)" in proc.stdout
    rows = {row["case"]: row for row in report["rows"]}
    assert {"suite k=10**12, update", "seen items as -inf scores", "flat form, split inside a query (carried)"} <= set(rows)
    for name, row in rows.items():
        assert name in proc.stdout and f"{row['ratio']:.2f}x" in proc.stdout
        assert row["ms"] > 0
