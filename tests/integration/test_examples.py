"""The examples run for real: a subprocess, as a user would start them, plus an in-process call."""

import importlib.util
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import child_env

ROOT = Path(__file__).resolve().parents[2]
TRAIN_LOOP = ROOT / "examples" / "train_loop.py"
METRICS = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@10"]




def _parse_table(stdout: str) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Rows of the per-epoch table keyed by their label ("pop", "1", "2", ...) and the final line."""
    lines = stdout.splitlines()
    header_at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["epoch"])
    columns = lines[header_at].split()
    rows = {}
    for line in lines[header_at + 1 :]:
        cells = line.split()
        if len(cells) != len(columns):
            break
        rows[cells[0]] = {name: float(cells[columns.index(name)]) for name in METRICS}
    final_line = next(line for line in lines if line.startswith("final:"))
    final = {key: float(value) for key, value in re.findall(r"(\S+)=([-+0-9.naNinf]+)", final_line)}
    return rows, final


def test_train_loop_runs_and_improves():
    epochs = 3
    proc = subprocess.run(
        [sys.executable, str(TRAIN_LOOP), "--epochs", str(epochs), "--users", "200", "--items", "300"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    rows, final = _parse_table(proc.stdout)
    assert list(rows) == ["pop"] + [str(e) for e in range(1, epochs + 1)], proc.stdout
    assert set(final) == set(METRICS), proc.stdout
    for values in (*rows.values(), final):
        for name, value in values.items():
            assert math.isfinite(value) and 0.0 <= value <= 1.0, f"{name}={value}\n{proc.stdout}"
    # the final line repeats the last epoch (to the printed precision)
    for name in METRICS:
        assert final[name] == pytest.approx(rows[str(epochs)][name], abs=1e-4)
    # training visibly helps: final ndcg@10 well above the first epoch's
    assert final["ndcg@10"] > rows["1"]["ndcg@10"] + 0.01, proc.stdout
    assert final["recall@20"] > rows["1"]["recall@20"], proc.stdout


def test_train_loop_main_returns_metrics(capsys):
    spec = importlib.util.spec_from_file_location("train_loop_example", TRAIN_LOOP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--epochs", "1", "--users", "50", "--items", "80", "--seed", "1"])
    assert set(result) == set(METRICS)
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in result.values())
    out = capsys.readouterr().out
    assert "final: ndcg@10=" in out


COMPARE_MODELS = ROOT / "examples" / "compare_models.py"


def test_compare_models_prints_the_table_and_its_claims_hold():
    """examples/compare_models.py: the demo's models compared; the table's letters are the p-values' verdicts
    (Holm-adjusted Fisher p < 0.05 and the better mean), and random scores are beaten by every other model."""
    proc = subprocess.run([sys.executable, str(COMPARE_MODELS), "--users", "300", "--items", "400", "--epochs", "8"],
                          cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["#", "Model", "ndcg@10", "recall@20", "mrr@10"]
    assert [line.split()[1] for line in lines[2:6]] == ["bpr_1_epoch", "bpr_8_epochs", "popularity", "random"]
    spec = importlib.util.spec_from_file_location("compare_models", COMPARE_MODELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the script: the same training arithmetic, so the same table
    try:
        comparison = module.compare(300, 400, 8)
    finally:
        torch.set_num_threads(threads)
    results, report = comparison.compute(), comparison.report()
    for key in module.METRICS:
        for model in report.models:
            expected = sorted(other for other in report.models if other != model
                              and _p_adjusted(results, key, model, other) < 0.05
                              and float(results[f"{key}/{model}"]) > float(results[f"{key}/{other}"]))
            assert sorted(report.better_than[key][model]) == expected
        assert all("random" in report.better_than[key][model] for model in report.models if model != "random")
        assert report.better_than[key]["random"] == []
    assert str(report) in proc.stdout  # the same table in a fresh process: the same seeds, the same p-values


def _p_adjusted(results: dict, key: str, first: str, second: str) -> float:
    pair = f"{key}/{first}_vs_{second}" if f"{key}/{first}_vs_{second}/p_adjusted" in results \
        else f"{key}/{second}_vs_{first}"
    return float(results[f"{pair}/p_adjusted"])
