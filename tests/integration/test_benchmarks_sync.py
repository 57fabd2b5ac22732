"""benchmarks/bench_sync.py --quick runs for real (2 gloo processes) and reports sane numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = Path(__file__).resolve().parents[2]


def test_bench_sync_quick(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    out = tmp_path / "sync.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_sync.py"), "--quick", "--json", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["world_size"] == 2
    rows = {row["case"]: row for row in report["rows"]}
    one = rows["NDCG@10 (1 metric)"]
    suite = rows["RankingMetrics (24 pairs)"]
    collection = rows["MetricCollection of 12 classes (24 pairs)"]
    # The table is printed with every case and its ratio.
    for name, row in rows.items():
        assert f"| {name} |" in proc.stdout
        assert f"{row['ratio']:.2f}x" in proc.stdout
        assert row["median_ms"] > 0
    # Collective counts are exact: a suite of 24 pairs syncs like one metric; 12 objects sync 12 times.
    assert one["num_collectives"] >= 1
    assert suite["collectives"] == one["collectives"]
    assert rows["RankingMetrics (24 pairs), 1000 groups"]["collectives"] == one["collectives"]
    assert collection["collectives"] == {key: 12 * n for key, n in one["collectives"].items()}
    assert rows["RankingMetrics (24 pairs), all_reduce sync"]["collectives"] == {"all_reduce": 1}
    assert rows["RankingMetrics (24 pairs), no sync"]["collectives"] == {}
    # Timings are noisy on a shared machine: only a loose bound on the one-suite-vs-one-metric ratio
    # (24x is what 24 separate syncs would cost).
    assert suite["ratio"] < 8, proc.stdout
