"""examples/lightning_validation.py for real: the plain run and the LightningCLI `fit --config` run."""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lightning")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "lightning_validation.py"
CLI_CONFIG = ROOT / "configs" / "lightning_validation.yaml"
SMALL_DATA = [
    "--data.init_args.num_users",
    "40",
    "--data.init_args.num_items",
    "60",
    "--data.init_args.batch_size",
    "64",
    "--data.init_args.eval_batch_size",
    "16",
]


def run_script(*args: str) -> tuple[list[str], dict[str, float]]:
    """Run the example from the repository root; returns its stdout lines and the parsed ``final:`` line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    final = [line for line in lines if line.startswith("final: ")]
    assert len(final) == 1, result.stdout
    values = dict(pair.split("=") for pair in final[0].removeprefix("final: ").split())
    return lines, {name: float(value) for name, value in values.items()}


def test_plain_run_prints_the_final_metrics():
    lines, final = run_script(
        "--users", "40", "--items", "60", "--epochs", "2", "--dim", "8", "--batch-size", "64", "--loss", "bpr"
    )
    assert [line.split(":")[0] for line in lines if line.startswith("epoch ")] == ["epoch 1", "epoch 2"]
    metrics = ["ndcg@10", "recall@10", "precision@10", "hitrate@10", "map@10", "mrr@10"]
    assert list(final) == [*metrics, "train_loss"]
    assert all(0.0 <= final[name] <= 1.0 for name in metrics)
    assert final["hitrate@10"] > 0.0  # 40 users, 60 items: some test item is in some top 10


def test_cli_fit_with_the_config(tmp_path):
    pytest.importorskip("jsonargparse")  # LightningCLI needs it (the `lightning` extra)
    lines, final = run_script(
        "fit",
        "--config",
        str(CLI_CONFIG.relative_to(ROOT)),
        "--trainer.logger.init_args.save_dir",
        str(tmp_path),
        "--trainer.max_epochs",
        "1",
        *SMALL_DATA,
    )
    # The suite is the ready-made "recsys", given to the model by name in the CLI config.
    families = ["ndcg", "recall", "precision", "hitrate", "map", "mrr"]
    metrics = [f"{family}@{k}" for family in families for k in (10, 20)]
    assert list(final) == [*metrics, "train_loss"]
    assert sum(line.startswith("epoch 1: ") for line in lines) == 1
    # The CSV logger got the same values, and the CLI saved the config it ran.
    [version] = (tmp_path / "lightning_logs").iterdir()
    rows = [row for row in csv.DictReader(open(version / "metrics.csv")) if row.get("ndcg@10")]
    assert len(rows) == 1
    for name in metrics:
        assert float(rows[0][name]) == pytest.approx(final[name], abs=1e-4)  # printed with 4 decimals
    assert "metrics: recsys" in (version / "config.yaml").read_text()


def test_cli_takes_an_inline_suite_and_links_the_data_sizes(tmp_path, monkeypatch):
    """In process (no subprocess start-up): `--model.init_args.metrics` as an inline mapping."""
    pytest.importorskip("jsonargparse")
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("lightning_validation", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "lightning_validation", module)  # the class_path in the config
    spec.loader.exec_module(module)
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", [str(SCRIPT)])  # LightningCLI warns when given args besides sys.argv
    final = module.main(
        [
            "fit",
            "--config",
            str(CLI_CONFIG),
            "--trainer.logger",
            "false",
            "--trainer.default_root_dir",
            str(tmp_path),
            "--trainer.max_epochs",
            "1",
            "--trainer.limit_train_batches",
            "1",
            "--trainer.callbacks",
            "[]",
            "--model.init_args.metrics",
            "{metrics: [ndcg, mrr], k: [3, 5], ties: pessimistic}",
            *SMALL_DATA,
        ]
    )
    assert list(final) == ["ndcg@3", "ndcg@5", "mrr@3", "mrr@5", "train_loss"]
    with pytest.raises(ValueError, match="Unknown key 'cutof'"):  # raised when the model is built
        module.main(
            [
                "fit",
                "--config",
                str(CLI_CONFIG),
                "--trainer.logger",
                "false",
                "--model.init_args.metrics",
                "{metrics: [ndcg@5], cutof: 3}",
                *SMALL_DATA,
            ]
        )
