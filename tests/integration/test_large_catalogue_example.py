"""examples/large_catalogue.py for real: 1M items in chunks, a dense check, and torchrun item shards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "large_catalogue.py"
SMALL = ["--items", "30000", "--users", "48", "--chunk", "4096", "--check", "--json"]


def _run(*command: str) -> dict[str, float]:
    proc = subprocess.run(list(command), cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("json: ")]
    assert len(lines) == 1, proc.stdout  # rank 0 prints
    return json.loads(lines[0][len("json: ") :])


def test_one_million_items_in_chunks():
    values = _run(sys.executable, str(SCRIPT), "--users", "64", "--json")
    assert list(values) == ["ndcg@10", "recall@50", "mrr@10", "hitrate@10", "auc", "mpr", "coverage@10"]
    assert values["auc"] > 0.8 and values["mpr"] < 20  # the planted taste is found


@pytest.mark.slow
def test_chunks_equal_the_dense_update_and_torchrun_shards_equal_one_process():
    one = _run(sys.executable, str(SCRIPT), *SMALL)  # --check: asserts chunks == dense to 1e-12
    sharded = _run(sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone",
                   str(SCRIPT), *SMALL)
    assert sharded.keys() == one.keys()
    for key, value in one.items():
        assert abs(sharded[key] - value) <= 1e-12, key
