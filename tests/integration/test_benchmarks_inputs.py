"""benchmarks/bench_inputs.py --quick runs for real and prints every case with its ratio and memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = Path(__file__).resolve().parents[2]


def test_bench_inputs_quick(tmp_path: Path) -> None:
    out = tmp_path / "inputs.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_inputs.py"), "--quick", "--json", str(out)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    rows = report["rows"]
    assert f"aten ops per update (6 metrics @10, 100 x 1,000, validate_args=False): {report['ops']}" in proc.stdout
    # the table names the device; kernel launches are counted on CUDA only (tests/integration/test_benchmarks_core.py)
    assert report["device"] == "cpu, 1 thread(s)" and "validate_args=False, cpu, 1 thread(s)" in proc.stdout
    assert report["kernels"] is None and "kernel launches" not in proc.stdout
    assert len(rows) == 11
    for row in rows:
        assert row["case"] in proc.stdout and f"{row['ratio']:.2f}x" in proc.stdout and row["ms"] > 0
