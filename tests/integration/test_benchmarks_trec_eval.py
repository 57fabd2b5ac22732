"""benchmarks/bench_trec_eval.py --quick runs for real (tiny files, fresh processes) and prints its tables."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = Path(__file__).resolve().parents[2]


def test_bench_trec_eval_quick(tmp_path: Path) -> None:
    trec_eval = os.environ.get("TREC_EVAL") or shutil.which("trec_eval")  # optional: its row and the byte check
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_trec_eval.py"), "--quick", "--tools", "pytrec_eval,all_trec",
               "--data", str(tmp_path), *(["--trec-eval", trec_eval] if trec_eval else [])]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "40 queries x 60 documents" in out and "2,400 run lines" in out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| tool")}
    assert "torchrec-eval --convention trec" in rows
    assert sum(1 for line in (tmp_path / "run_40x60.trec").read_text().splitlines()) == 2400
    if trec_eval:
        assert "trec_eval" in rows and "byte for byte: yes" in out
        assert "trec_eval -m all_trec" in rows and "-m all_trec: " in out and out.count("byte for byte: yes") == 4
        for fmt in ("prefs", "qrels_prefs"):  # the preference formats' table
            assert f"trec_eval -R {fmt}" in rows and f"-R {fmt}: torchrec-eval's output is trec_eval's, byte for byte: yes" in out
    assert "torchrec-eval -m all_trec" in rows
    assert "torchrec-eval -R prefs" in rows and "torchrec-eval baseline (imports, no evaluation)" in rows
    if "pytrec_eval" in rows:  # the values agree to the 4 decimals printed
        gap = float(out.split("max |ours - pytrec_eval| over ")[1].split(": ")[1].split()[0])
        assert gap <= 5.0001e-05
    long_ids = [name for name in rows if name.startswith("torchrec-eval (")]  # the long-id table, small ids
    assert [name.removeprefix("torchrec-eval (").rsplit(", ", 1)[0] for name in long_ids] == [
        "one 64-byte id, 40 lines", "every id 64 bytes, 1,000 lines", "one 1,024-byte id, 40 lines",
        "every id 1,024 bytes, 64 lines"]
    assert (tmp_path / "run_every_1024_1x64.trec").stat().st_size > 64 * 1024
    if trec_eval:  # each long-id file's output checked against trec_eval's
        assert all(rows[name].rstrip().endswith("| yes |") for name in long_ids)
        assert sum(1 for name in rows if name.startswith("trec_eval (")) == 4
    for line in rows.values():  # seconds and MB are numbers, the ratio of the base row is 1
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        assert float(cells[1]) >= 0 and cells[2].endswith("x") and cells[3].endswith(" MB")
