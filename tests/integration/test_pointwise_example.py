"""examples/ctr_training_loop.py runs for real: a subprocess, as a user would start it, and an in-process call."""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
import sys

import torch

from tests.processes import ROOT, child_env

EXAMPLE = ROOT / "examples" / "ctr_training_loop.py"
TASKS = ["click", "conversion"]
SUITE = ["ne", "log_loss", "calibration", "ctr", "auc"]


def _pairs(line: str) -> dict[str, float]:
    return {key: float(value) for key, value in re.findall(r"(\S+)=([-+0-9.naNinf]+)", line)}


def test_ctr_training_loop_logs_window_and_lifetime_values_per_task():
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--steps", "120", "--log-every", "40", "--window", "40"],
        cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["step"])
    columns = lines[header].split()[1:]
    assert columns == [f"{task}/{name}" for task in TASKS for name in ("ne", "calibration", "auc")]
    rows = [[float(cell) for cell in line.split()] for line in lines[header + 1 : header + 4]]
    assert [row[0] for row in rows] == [40, 80, 120]
    assert all(math.isfinite(value) for row in rows for value in row), proc.stdout
    ne = columns.index("click/ne") + 1
    assert rows[-1][ne] < rows[0][ne], proc.stdout  # the model learns: window NE falls
    final = _pairs(next(line for line in lines if line.startswith("final:")))
    assert set(final) == {f"{task}/lifetime_{name}" for task in TASKS for name in SUITE}
    assert all(math.isfinite(value) for value in final.values())
    held_out = _pairs(next(line for line in lines if line.startswith("held-out:")))
    assert held_out["click/auc"] > 0.55 and held_out["conversion/auc"] > 0.55, proc.stdout
    # negatives were down-sampled 4x and weighted 4x: the weighted metrics see calibrated predictions
    assert 0.8 < final["click/lifetime_calibration"] < 1.25, proc.stdout
    assert 0.8 < held_out["click/calibration"] < 1.25, proc.stdout


def test_ctr_training_loop_main_returns_the_logged_values(capsys):
    spec = importlib.util.spec_from_file_location("ctr_training_loop_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: as the subprocess (OMP_NUM_THREADS=1), no oversubscribed CPU
    try:
        result = module.main(["--steps", "20", "--log-every", "10", "--window", "5", "--batch-size", "256"])
    finally:
        torch.set_num_threads(threads)
    assert set(result["final"]) == {f"{task}/lifetime_{name}" for task in TASKS for name in SUITE}
    assert set(result["held_out"]) == {f"{task}/{name}" for task in TASKS for name in ("ne", "calibration", "auc")}
    out = capsys.readouterr().out
    assert f"click/lifetime_ne={result['final']['click/lifetime_ne']:.4f}" in out
