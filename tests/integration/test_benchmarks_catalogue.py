"""benchmarks/bench_catalogue.py --quick runs for real and prints every case with its ratio and memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = Path(__file__).resolve().parents[2]


def test_bench_catalogue_quick(tmp_path: Path) -> None:
    out = tmp_path / "catalogue.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_catalogue.py"), "--quick", "--json", str(out)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 12 and {row["items"] for row in rows} == {20_000, 50_000}
    for row in rows:
        assert row["case"] in proc.stdout and f"{row['ratio']:.3f}x" in proc.stdout and row["ms"] > 0
