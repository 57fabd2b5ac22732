"""Metric lifecycle: reset, checkpoints, merge_state, pickling, device/dtype moves, forward, and the
torchmetrics containers (MetricCollection with compute groups, the Running wrapper).

Every check compares with an uninterrupted evaluation of the same batches, exactly (float64 state:
rtol=0, atol=1e-12).
"""

from __future__ import annotations

import copy
import io
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torchmetrics import MetricCollection
from torchmetrics.wrappers import Running

import torchrec_eval as tre
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.ranking.families import REGISTRY

NUM_ITEMS = 10
NUM_GROUPS = 3
FAMILIES = list(REGISTRY)  # every top-k family

FACTORIES: dict[str, Callable[[], MemberMetric]] = {
    "precision": lambda: tre.Precision(k=[1, 5]),
    "recall": lambda: tre.Recall(k=5),
    "f1": lambda: tre.F1(k=3),
    "hitrate": lambda: tre.HitRate(k=[1, 3]),
    "mrr": lambda: tre.MRR(k=5),
    "arhr": lambda: tre.ARHR(k=5),
    "map": lambda: tre.MAP(k=[3, 5]),
    "mar": lambda: tre.MAR(k=5),
    "ndcg": lambda: tre.NDCG(k=[3, 5], gain="exp"),
    "dcg": lambda: tre.DCG(k=4),
    "cg": lambda: tre.CG(k=3),
    "rprecision": lambda: tre.RPrecision(),
    "suite": lambda: tre.RankingMetrics(FAMILIES, k=[5, 10]),
    "groups": lambda: tre.RankingMetrics(["ndcg@5", "map@5", "rprecision"], num_groups=NUM_GROUPS),
}


def make_batches(num: int = 6, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for i in range(num):
        size = 3 + i % 4
        preds = torch.randint(0, 5, (size, NUM_ITEMS), generator=gen).float() / 4  # ties
        target = torch.randint(0, 3, (size, NUM_ITEMS), generator=gen) * (
            torch.rand(size, NUM_ITEMS, generator=gen) < 0.35
        )
        target[0] = 0  # a query with no relevant item
        groups = torch.randint(0, NUM_GROUPS, (size,), generator=gen)
        batches.append({"preds": preds, "target": target, "groups": groups})
    return batches


def update(metric: Any, batch: dict[str, torch.Tensor]) -> None:
    if getattr(metric, "num_groups", None) is not None:
        metric.update(batch["preds"], batch["target"], groups=batch["groups"])
    else:
        metric.update(batch["preds"], batch["target"])


def as_dict(value: Any) -> dict[str, torch.Tensor]:
    return value if isinstance(value, dict) else {"value": value}


def assert_same(actual: Any, expected: Any) -> None:
    actual, expected = as_dict(actual), as_dict(expected)
    assert actual.keys() == expected.keys()
    for key in expected:
        assert actual[key].dtype == torch.float64, key
        torch.testing.assert_close(
            actual[key], expected[key], rtol=0, atol=1e-12, equal_nan=True, msg=lambda m, k=key: f"{k}: {m}"
        )


def full_result(name: str, batches: list[dict[str, torch.Tensor]]) -> Any:
    metric = FACTORIES[name]()
    for batch in batches:
        update(metric, batch)
    return metric.compute()


BATCHES = make_batches()
NAMES = list(FACTORIES)


@pytest.mark.parametrize("name", NAMES)
def test_states_are_summed_float64_tensors(name: str) -> None:
    metric = FACTORIES[name]()
    assert "stats" in metric._defaults
    for state in metric._defaults:
        assert getattr(metric, state).dtype == torch.float64, state
        assert metric._reductions[state] is not None, state  # summed across processes, not gathered


@pytest.mark.parametrize("name", NAMES)
def test_reset_and_compute_cache(name: str) -> None:
    metric = FACTORIES[name]()
    for batch in BATCHES[3:]:
        update(metric, batch)
    first = metric.compute()
    assert_same(metric.compute(), first)  # cached, unchanged
    metric.reset()
    assert not metric.stats.any()
    with pytest.warns(UserWarning, match="before the ``update``"):
        empty = metric.compute()
    totals = {name for name in FAMILIES if REGISTRY[name].total}  # a sum over no query is 0, a mean NaN
    assert all((value == 0).all() if key in totals else torch.isnan(value).all()
               for key, value in as_dict(empty).items())
    for batch in BATCHES:
        update(metric, batch)
    assert_same(metric.compute(), full_result(name, BATCHES))
    update(metric, BATCHES[0])  # an update after compute invalidates the cached value
    assert_same(metric.compute(), full_result(name, BATCHES + BATCHES[:1]))


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_mid_epoch_resumes_to_same_value(name: str) -> None:
    """state_dict -> torch.save -> fresh metric -> load_state_dict, halfway through the batches."""
    metric = FACTORIES[name]()
    metric.persistent(True)  # torchmetrics states are not in state_dict unless made persistent
    for batch in BATCHES[:3]:
        update(metric, batch)
    buffer = io.BytesIO()
    torch.save(metric.state_dict(), buffer)
    buffer.seek(0)
    resumed = FACTORIES[name]()
    resumed.persistent(True)
    resumed.load_state_dict(torch.load(buffer, weights_only=True))
    assert resumed.stats.dtype == torch.float64
    for batch in BATCHES[3:]:
        update(resumed, batch)
    assert_same(resumed.compute(), full_result(name, BATCHES))


def test_checkpoint_of_a_module_holding_metrics() -> None:
    """A model checkpoint (nn.Module with metrics as attributes) carries the metric states."""

    class Evaluator(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(2, 2)
            self.suite = tre.RankingMetrics(["ndcg@5", "map@5", "recall@3"])
            self.mrr = tre.MRR(k=[1, 5])
            for metric in (self.suite, self.mrr):
                metric.persistent(True)

    model = Evaluator()
    for batch in BATCHES[:2]:
        model.suite.update(batch["preds"], batch["target"])
        model.mrr.update(batch["preds"], batch["target"])
    state = model.state_dict()
    assert {"suite.stats", "mrr.stats"} <= set(state)
    resumed = Evaluator()
    resumed.load_state_dict(state)
    reference = Evaluator()
    for batch in BATCHES:
        reference.suite.update(batch["preds"], batch["target"])
        reference.mrr.update(batch["preds"], batch["target"])
    for batch in BATCHES[2:]:
        resumed.suite.update(batch["preds"], batch["target"])
        resumed.mrr.update(batch["preds"], batch["target"])
    assert_same(resumed.suite.compute(), reference.suite.compute())
    assert_same(resumed.mrr.compute(), reference.mrr.compute())


@pytest.mark.parametrize("name", NAMES)
def test_merge_state(name: str) -> None:
    """Metrics fed with disjoint batches (as on separate workers) merge into the whole."""
    parts = [FACTORIES[name]() for _ in range(3)]
    for i, batch in enumerate(BATCHES):
        update(parts[i % 3], batch)
    merged = FACTORIES[name]()
    merged.merge_state(parts[0])
    merged.merge_state(parts[1].metric_state)  # a dict of states also works
    merged.merge_state(parts[2])
    with warnings.catch_warnings():  # torchmetrics: merge_state does not count as an update
        warnings.simplefilter("ignore")
        assert_same(merged.compute(), full_result(name, BATCHES))
    parts[0].merge_state(parts[1])
    parts[0].merge_state(parts[2])
    assert_same(parts[0].compute(), full_result(name, BATCHES))


def test_merge_state_rejects_a_different_configuration() -> None:
    a, b = tre.NDCG(k=5), tre.NDCG(k=3)
    update(a, BATCHES[0])
    update(b, BATCHES[0])
    with pytest.raises(ValueError):
        a.merge_state(b)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("how", ["pickle", "deepcopy", "clone"])
def test_copy_mid_stream(name: str, how: str) -> None:
    metric = FACTORIES[name]()
    for batch in BATCHES[:3]:
        update(metric, batch)
    if how == "pickle":
        other = pickle.loads(pickle.dumps(metric))
    elif how == "deepcopy":
        other = copy.deepcopy(metric)
    else:
        other = metric.clone()
    assert other.stats.dtype == torch.float64
    for batch in BATCHES[3:]:
        update(other, batch)
    assert_same(other.compute(), full_result(name, BATCHES))
    # the copy is independent: the original still holds only the first three batches
    assert_same(metric.compute(), full_result(name, BATCHES[:3]))


def test_pickled_results_and_metric_after_compute() -> None:
    metric = tre.RankingMetrics(["ndcg@5", "hitrate@3"])
    update(metric, BATCHES[0])
    value = metric.compute()
    clone = pickle.loads(pickle.dumps(metric))
    assert_same(clone.compute(), value)


@pytest.mark.parametrize(
    "cast",
    [
        "double",
        "float",
        "half",
        "bfloat16",
        "type_float32",
        "to_cpu",
        "to_float64",
        "module_half",
        "module_double",
        "module_float",
    ],
)
def test_device_and_dtype_moves_keep_float64_state(cast: str) -> None:
    metric = tre.RankingMetrics(["ndcg@5", "map@5", "mrr@5"])
    for batch in BATCHES[:3]:
        update(metric, batch)
    holder = nn.Sequential(nn.Linear(2, 2))
    holder.add_module("metric", metric)
    moved: Any = {
        "double": lambda: metric.double(),
        "float": lambda: metric.float(),
        "half": lambda: metric.half(),
        "bfloat16": lambda: metric.bfloat16(),
        "type_float32": lambda: metric.type(torch.float32),
        "to_cpu": lambda: metric.to("cpu"),
        "to_float64": lambda: metric.to(torch.float64),
        "module_half": lambda: holder.half().metric,
        "module_double": lambda: holder.double().metric,
        "module_float": lambda: holder.float().metric,
    }[cast]()
    assert moved.stats.dtype == torch.float64
    assert moved._defaults["stats"].dtype == torch.float64
    for batch in BATCHES[3:]:
        update(moved, batch)
    assert_same(moved.compute(), _suite_ref())
    moved.reset()
    assert moved.stats.dtype == torch.float64


def _suite_ref() -> dict[str, torch.Tensor]:
    metric = tre.RankingMetrics(["ndcg@5", "map@5", "mrr@5"])
    for batch in BATCHES:
        update(metric, batch)
    return metric.compute()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_to_dtype_keeps_float64_state(dtype: torch.dtype) -> None:
    metric = tre.NDCG(k=5)
    update(metric, BATCHES[0])
    holder = nn.Sequential(nn.Linear(2, 2))
    holder.add_module("metric", metric)
    holder.to(dtype)
    assert metric.stats.dtype == torch.float64


def test_set_dtype_is_the_explicit_way_to_change_the_state_dtype() -> None:
    metric = tre.NDCG(k=5)
    metric.set_dtype(torch.float32)
    assert metric.stats.dtype == torch.float32


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_round_trip() -> None:
    metric = tre.RankingMetrics(FAMILIES, k=[5, 10]).to("cuda")
    assert metric.stats.dtype == torch.float64 and metric.stats.is_cuda
    for batch in BATCHES:
        metric.update(batch["preds"].cuda(), batch["target"].cuda())
    result = {key: value.cpu() for key, value in metric.compute().items()}
    assert_same(result, full_result("suite", BATCHES))
    back = metric.to("cpu")
    assert back.stats.device.type == "cpu" and back.stats.dtype == torch.float64


@pytest.mark.parametrize("name", NAMES)
def test_forward_returns_batch_value_and_accumulates(name: str) -> None:
    metric = FACTORIES[name]()
    for batch in BATCHES:
        args = (batch["preds"], batch["target"])
        kwargs = {"groups": batch["groups"]} if metric.num_groups is not None else {}
        assert_same(metric(*args, **kwargs), full_result(name, [batch]))
    assert_same(metric.compute(), full_result(name, BATCHES))


# --- torchmetrics containers --------------------------------------------------------------------


FACTORIES["small_suite"] = lambda: tre.RankingMetrics(["arhr@5", "mar@5", "cg@3", "f1@3", "rprecision"])


def _collection_members() -> dict[str, MemberMetric]:
    # output keys must not collide (torchmetrics would prefix every key with its member's name)
    return {name: FACTORIES[name]() for name in ["precision", "recall", "ndcg", "map", "mrr", "small_suite"]}


@pytest.mark.parametrize("compute_groups", [True, False])
def test_metric_collection(compute_groups: bool) -> None:
    collection = MetricCollection(_collection_members(), compute_groups=compute_groups)
    for batch in BATCHES:
        collection.update(batch["preds"], batch["target"])
    result = collection.compute()
    expected: dict[str, torch.Tensor] = {}
    for name in _collection_members():
        value = full_result(name, BATCHES)
        expected |= value if isinstance(value, dict) else {name: value}  # dicts are flattened
    assert_same(result, expected)
    # forward through the collection: batch values, and the accumulated state stays right
    collection.reset()
    for batch in BATCHES:
        collection(batch["preds"], batch["target"])
    assert_same(collection.compute(), expected)


def test_compute_groups_share_state_of_identical_metrics() -> None:
    collection = MetricCollection(
        {"a": tre.NDCG(k=5), "b": tre.NDCG(k=5), "c": tre.MAP(k=5)}, compute_groups=True
    )
    for batch in BATCHES:
        collection.update(batch["preds"], batch["target"])
    assert sorted(map(sorted, collection.compute_groups.values())) == [["a", "b"], ["c"]]
    result = collection.compute()
    assert_same(result["a"], _single(tre.NDCG(k=5)))
    assert_same(result["b"], result["a"])
    assert_same(result["c"], _single(tre.MAP(k=5)))


def _single(metric: MemberMetric, batches: list[dict[str, torch.Tensor]] = BATCHES) -> Any:
    for batch in batches:
        update(metric, batch)
    return metric.compute()


def test_compute_groups_do_not_merge_different_metrics_that_agree_on_the_first_batch() -> None:
    no_hit = {"preds": torch.tensor([[0.9, 0.8, 0.1, 0.0]]), "target": torch.tensor([[0, 0, 0, 1]])}
    hits = {"preds": torch.tensor([[0.9, 0.8, 0.1, 0.0]]), "target": torch.tensor([[1, 0, 1, 1]])}
    collection = MetricCollection({"precision": tre.Precision(k=2), "recall": tre.Recall(k=2)})
    for batch in (no_hit, hits):  # both are 0 on the first batch
        collection.update(batch["preds"], batch["target"])
    result = collection.compute()
    assert_same(result["precision"], _single(tre.Precision(k=2), [no_hit, hits]))
    assert_same(result["recall"], _single(tre.Recall(k=2), [no_hit, hits]))


@pytest.mark.parametrize("name", ["ndcg", "precision", "suite", "groups"])
@pytest.mark.parametrize("window", [1, 3])
def test_running_window_over_last_updates(name: str, window: int) -> None:
    running = Running(FACTORIES[name](), window=window)
    for i, batch in enumerate(BATCHES):
        if running.base_metric.num_groups is not None:
            running.update(batch["preds"], batch["target"], groups=batch["groups"])
        else:
            running.update(batch["preds"], batch["target"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = running.compute()
        assert_same(value, full_result(name, BATCHES[max(0, i + 1 - window) : i + 1]))


def test_running_forward_returns_batch_value() -> None:
    running = Running(tre.NDCG(k=5), window=2)
    for i, batch in enumerate(BATCHES):
        assert_same(running(batch["preds"], batch["target"]), _single(tre.NDCG(k=5), [batch]))
        assert_same(running.compute(), _single(tre.NDCG(k=5), BATCHES[max(0, i - 1) : i + 1]))


def test_suite_keys_values_items_are_methods_as_in_a_mapping() -> None:
    """``keys()`` was shadowed by a list attribute of the base class (calling it raised a TypeError)."""
    suite = tre.RankingMetrics(["ndcg@5", "auc", "mrr@5"])
    assert suite.keys() == ["ndcg@5", "auc", "mrr@5"]
    assert [key for key, _ in suite.items()] == suite.keys() and len(suite.values()) == 3
