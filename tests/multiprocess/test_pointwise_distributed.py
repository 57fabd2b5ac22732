"""Pointwise metrics on 3 real processes (gloo on CPU): synced values equal the single-process ones.

(Also a ranking suite with per-query weights, ``weighted=True``.)

Ranks see uneven numbers of batches and rank 2 none. Fixed-statistics metrics, the exact (stored)
AUC/AUPRC and a Windowed suite are synced at compute, mid-way and at the end; the synced window is the
union of each rank's last W updates, and only the lifetime and window states travel (the ring stays).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torchrec_eval as tre
from tests.processes import START_METHOD, free_port

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

TASKS = ["click", "buy"]
NUM_GROUPS = 3
SIZES = [6, 3, 9, 1, 7, 4, 8]
ASSIGNMENT = [[0, 1, 2, 3], [4, 5, 6], []]  # rank 2 has no data
WINDOW = 2


def _batches() -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(7)
    out = []
    for size in SIZES:
        preds = (torch.rand(size, 2, generator=gen, dtype=torch.float64) * 8).round() / 8  # ties
        out.append({"preds": preds, "target": (torch.rand(size, 2, generator=gen) < preds).double(),
                    "sample_weight": torch.rand(size, generator=gen, dtype=torch.float64),
                    "groups": torch.randint(0, NUM_GROUPS, (size,), generator=gen)})
    return out


def _suite() -> tre.PointwiseMetrics:
    names = ["ne", "log_loss", "calibration", "ctr", "mse", "mae", "auc", "auprc"]
    return tre.PointwiseMetrics(names, tasks=TASKS, num_groups=NUM_GROUPS,
                                options={"auc": {"bins": 8}, "auprc": {"bins": 16}})


def _query_weights() -> tre.RankingMetrics:
    return tre.RankingMetrics(["ndcg@2", "auc", "gauc"], weighted=True, num_groups=NUM_GROUPS)


def _metrics() -> dict[str, Any]:
    return {
        "suite": _suite(),
        "auc": tre.BinaryAUC(tasks=TASKS, num_groups=NUM_GROUPS),
        "auprc": tre.BinaryAUPRC(tasks=TASKS),
        "windowed": tre.Windowed(_suite(), window=WINDOW),
        "windowed_samples": tre.Windowed(_suite(), window=12, unit="samples"),
        "query_weights": _query_weights(),
    }


def _update(metric: Any, batch: dict[str, torch.Tensor]) -> None:
    groups = batch["groups"] if getattr(metric, "num_groups", 1) is not None else None
    if isinstance(metric, tre.RankingMetrics):  # each row a query: two tasks' scores of two items
        metric.update(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=groups)
        return
    metric.update(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=groups)


def _worker(rank: int, world_size: int, port: int, out_dir: str) -> None:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # "compute before update" on the rank without data
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    try:
        gathers = []
        original = dist.all_gather
        dist.all_gather = lambda *args, **kwargs: (gathers.append(1), original(*args, **kwargs))[1]
        batches, mine, metrics = _batches(), ASSIGNMENT[rank], _metrics()
        saved: dict[str, Any] = {}
        for phase, ids in (("phase1", mine[:2]), ("phase2", mine[2:])):
            for metric in metrics.values():
                for i in ids:
                    _update(metric, batches[i])
            saved[phase] = {}
            for name, metric in metrics.items():
                gathers.clear()
                saved[phase][name] = metric.compute()
                saved[phase][f"{name}_gathers"] = len(gathers)
        torch.save(saved, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out_dir = tmp_path_factory.mktemp("pointwise_dist")
    mp.start_processes(_worker, args=(3, free_port(), str(out_dir)), nprocs=3, join=True, start_method=START_METHOD)
    return [torch.load(out_dir / f"rank{r}.pt", weights_only=False) for r in range(3)]


def _single(ids: list[int]) -> dict[str, Any]:
    """Values of one process fed the batches ``ids``."""
    batches, metrics = _batches(), {"suite": _suite(), "auc": tre.BinaryAUC(tasks=TASKS, num_groups=NUM_GROUPS),
                                    "auprc": tre.BinaryAUPRC(tasks=TASKS), "query_weights": _query_weights()}
    for metric in metrics.values():
        for i in ids:
            _update(metric, batches[i])
    return {name: metric.compute() for name, metric in metrics.items()}


def _close(actual: torch.Tensor, expected: torch.Tensor, where: str) -> None:
    torch.testing.assert_close(actual, expected, rtol=1e-12, atol=1e-12, equal_nan=True, msg=lambda m: f"{where}: {m}")


@pytest.mark.parametrize("phase", ["phase1", "phase2"])
def test_synced_values_equal_one_process(ranks, phase):
    seen = [ids[:2] if phase == "phase1" else ids for ids in ASSIGNMENT]
    expected = _single(sorted(i for ids in seen for i in ids))
    for rank in ranks:
        for name in ("suite", "auc", "auprc", "query_weights"):
            for key, value in expected[name].items():
                _close(rank[phase][name][key], value, f"{phase} {name} {key}")
            assert rank[phase][name].keys() == expected[name].keys()
        for key, value in expected["suite"].items():
            task, value_name = key.split("/")
            _close(rank[phase]["windowed"][f"{task}/lifetime_{value_name}"], value, f"{phase} lifetime {key}")


def test_synced_window_is_the_union_of_each_rank_s_last_updates(ranks):
    last = sorted(i for ids in ASSIGNMENT for i in ids[-WINDOW:])
    expected = _single(last)["suite"]
    for rank in ranks:
        for key, value in expected.items():
            task, name = key.split("/")
            _close(rank["phase2"]["windowed"][f"{task}/window_{name}"], value, f"window {key}")
    # in samples: rank 0 keeps batches 2, 3 (9 + 1 <= 12 < 3 + 9 + 1), rank 1 keeps 5, 6 (4 + 8)
    expected = _single([2, 3, 5, 6])["suite"]
    for rank in ranks:
        for key, value in expected.items():
            task, name = key.split("/")
            _close(rank["phase2"]["windowed_samples"][f"{task}/window_{name}"], value, f"samples {key}")


def test_only_the_statistics_travel(ranks):
    for rank in ranks:
        assert rank["phase2"]["suite_gathers"] == 2  # one state: its shape, then its values
        assert rank["phase2"]["windowed_gathers"] == 2 * 2  # lifetime and window; not the ring
