"""A metric sent to another process owns its state there (``mp.spawn``, Lightning's ``ddp_spawn``).

``torch.multiprocessing`` pickles with a ``ForkingPickler`` that moves every CPU tensor it sends into
shared memory. Unless the receiver copies its states, the sender and every receiver add into one
tensor: a sync then gathers a doubled state, concurrent ``+=`` loses updates, and the parent's metric
changes. Each test here fails without :mod:`torchrec_eval.members.ownership`.
"""

from __future__ import annotations

import copy
import os
import pickle
import time
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torchmetrics import Metric

import torchrec_eval as tre
from tests.processes import free_port
from tests.reference import ranking as ref
from tests.reference.classes import FACTORIES, NUM_ITEMS, inputs
from torchrec_eval.comparison.uncertainty import PairedComparison

# the wrappers and suites beside every public metric class
CLASSES = {
    **FACTORIES,
    "RankingMetrics": lambda: tre.RankingMetrics(["ndcg@3", "map@3", "auc", "coverage@3"],
                                                 options={"coverage": {"num_items": NUM_ITEMS}}),
    "PointwiseMetrics": lambda: tre.PointwiseMetrics(["ne", "calibration", "auc"]),
    "Windowed": lambda: tre.Windowed(tre.NE(), window=2),
    "WindowedTorchmetrics": lambda: tre.Windowed(tre.MSE(), window=2, name="mse"),
    "PairedComparison": lambda: PairedComparison(["ndcg@3", "mrr@3"]),
}


def _inputs(name: str, seed: int) -> tuple[torch.Tensor, ...]:
    if name == "PointwiseMetrics" or name.startswith("Windowed"):
        return inputs("NE" if name != "WindowedTorchmetrics" else "MSE", seed)
    if name == "PairedComparison":
        preds, target = inputs("NDCG", seed)
        return preds, preds.flip(1), target
    return inputs(name if name in FACTORIES else "NDCG", seed)


def _states(metric: Metric) -> dict[str, torch.Tensor]:
    """Every state tensor of the metric and of the metrics inside it, and every buffer."""
    found = {f"buffer {name}": buffer for name, buffer in metric.named_buffers()}
    for path, module in metric.named_modules():
        if isinstance(module, Metric):
            for name, value in module.metric_state.items():
                for i, tensor in enumerate(value if isinstance(value, list) else [value]):
                    found[f"{path}.{name}[{i}]"] = tensor
    return found


def _sent(metric: Metric) -> Metric:
    """The metric as another process receives it from ``mp.spawn`` (one process stands in for both)."""
    return pickle.loads(ForkingPickler.dumps(metric))


def _values(result: object) -> dict[str, torch.Tensor]:
    return result if isinstance(result, dict) else {"value": result}


def _assert_same(got: object, want: object) -> None:
    got, want = _values(got), _values(want)
    assert got.keys() == want.keys()
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=0, atol=1e-12, equal_nan=True, msg=key)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_a_received_metric_owns_its_state(name):
    sender = CLASSES[name]()
    sender.update(*_inputs(name, 0))
    before = {key: value.clone() for key, value in _states(sender).items()}

    received = _sent(sender)
    shared = [key for key, value in _states(received).items() if value.is_shared()]
    assert not shared, f"{name}: still in shared memory after unpickling: {shared}"
    received.update(*_inputs(name, 1))
    for key, value in _states(sender).items():  # the sender's metric is not changed by the receiver
        torch.testing.assert_close(value, before[key], rtol=0, atol=0, equal_nan=True, msg=key)

    uninterrupted = CLASSES[name]()  # both batches in one process, no pickling
    for seed in (0, 1):
        uninterrupted.update(*_inputs(name, seed))
    _assert_same(received.compute(), uninterrupted.compute())


@pytest.mark.parametrize("name", ["NDCG", "RankingMetrics", "NE", "Windowed", "PairedComparison"])
def test_deep_copy_and_plain_pickle_keep_working(name):
    metric = CLASSES[name]()
    metric.update(*_inputs(name, 0))
    value = metric.compute()
    both = CLASSES[name]()
    for seed in (0, 1):
        both.update(*_inputs(name, seed))
    for copied in (copy.deepcopy(metric), pickle.loads(pickle.dumps(metric))):
        _assert_same(copied.compute(), value)
        copied.update(*_inputs(name, 1))
        _assert_same(copied.compute(), both.compute())
        _assert_same(metric.compute(), value)  # the copy's update never reaches the original


def test_a_received_catalogue_stream_owns_its_running_lists():
    gen = torch.Generator().manual_seed(3)
    scores, target_ids = torch.randn(4, 30, generator=gen), torch.rand(4, 30, generator=gen).argsort(1)[:, :3]
    metric = tre.RankingMetrics(["ndcg@5", "auc"])
    stream = metric.catalogue(num_items=30, target_ids=target_ids, target_scores=scores.gather(1, target_ids))
    stream.add(scores[:, :10], offset=0)
    kept = stream.top_values.clone()
    received = _sent(stream)
    assert not received.top_values.is_shared() and not received.metric.stats.is_shared()
    assert received.counts is None or not any(v.is_shared() for v in vars(received.counts).values()
                                              if isinstance(v, torch.Tensor))
    received.add(scores[:, 10:], offset=10)
    received.close()
    assert torch.equal(stream.top_values, kept)  # the sender's stream is not changed by the receiver's chunks
    dense = tre.RankingMetrics(["ndcg@5", "auc"])
    dense.update(scores, target_ids=target_ids)
    _assert_same(received.metric.compute(), dense.compute())
    assert metric.stats.abs().sum() == 0  # the sender's metric saw nothing


# ------------------------------------------------------------------------------------------------------
# Two real processes, started by spawning (as ddp_spawn does): the suite is pickled to each of them.
# ------------------------------------------------------------------------------------------------------
SUITE = ["ndcg@5", "recall@10", "map@10", "mrr@10"]
ROWS, ITEMS, BATCH = 24, 40, 4


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    return torch.randn(ROWS, ITEMS, generator=gen), (torch.rand(ROWS, ITEMS, generator=gen) < 0.15).long()




def _rank_main(rank: int, world: int, port: int, suite: tre.RankingMetrics, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        scores, target = _data()
        mine = torch.arange(ROWS).split(BATCH)[rank::world]
        for i, rows in enumerate(mine):
            if rank == 1 and i == len(mine) - 1:
                time.sleep(1.0)  # the other rank reaches compute() first
            suite.update(scores[rows], target[rows])
        first = {key: float(value) for key, value in suite.compute().items()}
        second = {key: float(value) for key, value in suite.compute().items()}
        torch.save({"first": first, "second": second}, os.path.join(out, f"{rank}.pt"))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_spawned_ranks_with_a_late_rank_compute_the_oracle_twice(tmp_path):
    suite = tre.RankingMetrics(SUITE)
    mp.start_processes(_rank_main, args=(2, free_port(), suite, str(tmp_path)), nprocs=2, start_method="spawn")
    scores, target = _data()
    expected = {}
    for key in SUITE:
        family, k = key.split("@")
        expected[key] = ref.mean(ref.evaluate_dense(family, scores, target, int(k)))
    for rank in range(2):
        logged = torch.load(tmp_path / f"{rank}.pt")
        for which in ("first", "second"):
            for key in SUITE:
                assert logged[which][key] == pytest.approx(expected[key], abs=1e-12), (rank, which, key)
    assert suite.stats.abs().sum() == 0  # the parent's suite holds none of the ranks' updates
