"""The metrics in a real training loop: samplers under DDP, uneven updates, checkpoints, failed updates,
explicit update arguments, ``-inf`` scores, the flat form across calls, huge cut-offs.

Each test here failed on the code before it was written (issue 13); the comments say how.
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchmetrics

import torchrec_eval as tre
from tests.processes import free_port
from torchrec_eval.data import UnpaddedDistributedSampler
from torchrec_eval.metrics import pairwise as pairwise
from torchrec_eval.ranking.discount_sum import discount_sum
from torchrec_eval.ranking.families import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
NUM_ITEMS = 20
POPULARITY = torch.arange(NUM_ITEMS, 0, -1).double()


def every_family() -> dict[str, tre.metrics.base.MemberMetric]:
    """One metric object per family (defaults), and suites mixing members."""
    metrics = {name: tre.RankingMetrics([f"{name}@5" if spec.cutoff == "k" else name])  # R-Precision, NumRel: bare
               for name, spec in REGISTRY.items()}
    metrics |= {
        "auc": pairwise.AUC(),
        "gauc": pairwise.GAUC(),
        "mpr": pairwise.MPR(),
        "fcp": pairwise.FCP(),
        "ctr": pairwise.CTR(k=3),
        "coverage": tre.Coverage(k=5, num_items=NUM_ITEMS),
        "novelty": tre.Novelty(k=5, item_popularity=POPULARITY),
        "ndcg_class": tre.NDCG(k=[3, 5]),
        "suite": tre.RankingMetrics(
            ["ndcg@5", "map@5", "auc", "fcp", "coverage@5", "novelty@5"],
            options={"coverage": {"num_items": NUM_ITEMS}, "novelty": {"item_popularity": POPULARITY}},
        ),
    }
    return metrics


def batch(rows: int = 6, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, 5, (rows, NUM_ITEMS), generator=gen).double()
    target = torch.randint(0, 3, (rows, NUM_ITEMS), generator=gen) * (torch.rand(rows, NUM_ITEMS, generator=gen) < 0.4)
    target[:, 0] = 1  # every query has a relevant item (and a non-relevant one)
    target[:, 1] = 0
    return scores, target


def snapshot(metric) -> dict[str, torch.Tensor]:
    return {name: getattr(metric, name).clone() for name in metric._defaults}


def assert_same_state(metric, before: dict[str, torch.Tensor]) -> None:
    for name, value in before.items():
        assert torch.equal(getattr(metric, name), value), name


# 1. padding samplers -----------------------------------------------------------------------------
def _run_lightning(sampler: str, tmp_path: Path) -> dict:
    out = tmp_path / f"{sampler}.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MASTER_PORT": str(free_port())}  # Lightning's port
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests/scripts/lightning_ddp_sampler.py"), sampler, str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.slow
def test_lightning_ddp_two_devices_with_the_unpadded_sampler_equals_one_process(tmp_path):
    pytest.importorskip("lightning")
    sys.path.insert(0, str(ROOT / "tests/scripts"))
    try:
        import lightning_ddp_sampler as script
    finally:
        sys.path.pop(0)
    model = script.Recommender("unpadded")  # the weights the Trainer runs with (training leaves them)
    data = script.validation_data()
    suite = tre.RankingMetrics(script.METRICS)
    with torch.no_grad():
        for users, target_ids, exclude_ids in torch.utils.data.DataLoader(data, batch_size=script.BATCH):
            suite.update(model.score_all(users), target_ids=target_ids, exclude_ids=exclude_ids)
    expected = {key: float(value) for key, value in suite.compute().items()}

    unpadded = _run_lightning("unpadded", tmp_path)
    assert unpadded["world_size"] == 2 and unpadded["queries"] == [51, 50]  # odd: uneven shards
    for key, value in expected.items():
        assert unpadded["logged"][key] == pytest.approx(value, abs=1e-12), key

    # the same test sees the bug: Lightning's default sampler repeats a user to even out the shards
    padded = _run_lightning("default", tmp_path)
    assert padded["queries"] == [51, 51]
    assert any(abs(padded["logged"][key] - value) > 1e-9 for key, value in expected.items())


def test_unpadded_sampler_gives_every_sample_once():
    for world in (1, 2, 3, 4):
        for shuffle in (False, True):
            shards = [list(UnpaddedDistributedSampler(range(11), world, rank, shuffle=shuffle)) for rank in range(world)]
            assert sorted(i for shard in shards for i in shard) == list(range(11))
    assert list(UnpaddedDistributedSampler(range(3))) == [0, 1, 2]  # no process group: one rank
    with pytest.raises(ValueError, match="drop_last"):
        UnpaddedDistributedSampler(range(3), 2, 0, drop_last=True)


# 2. uneven updates after a compute ---------------------------------------------------------------


def _uneven_metrics():
    return {
        "ndcg": tre.NDCG(k=5),
        "suite": tre.RankingMetrics(["ndcg@5", "mrr@5", "auc"]),
        "auc": pairwise.AUC(),
        "coverage": tre.Coverage(k=5, num_items=NUM_ITEMS),
    }


def _uneven_worker(rank: int, world: int, port: int, queue) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=timedelta(seconds=30)
    )
    try:
        metrics = _uneven_metrics()
        for metric in metrics.values():
            metric.update(*batch(4, seed=rank))
        first = {name: metric.compute() for name, metric in metrics.items()}
        if rank < 2:  # rank 2 does not update again
            for metric in metrics.values():
                metric.update(*batch(3, seed=10 + rank))
        second = {name: metric.compute() for name, metric in metrics.items()}
        # the suite's values as Lightning's log_dict(suite) computes them: one SuiteValue at a time
        views = {key: float(view.compute()) for key, view in metrics["suite"].items()}
        def plain(results):  # floats, not tensors: a tensor in a queue dies with this process
            return {name: {key: float(v) for key, v in value.items()} if isinstance(value, dict)
                    else float(value) for name, value in results.items()}

        queue.put((rank, plain(first), plain(second), views))
    except Exception as error:  # noqa: BLE001 - reported to the parent
        queue.put((rank, repr(error), None, None))
    finally:
        dist.destroy_process_group()


def test_uneven_updates_after_a_compute_on_three_ranks():
    # Before: torchmetrics' compute cache let rank 2 return its first value without joining the
    # collective; ranks 0 and 1 then waited for it (a hang, here a gloo timeout).
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    queue, port = ctx.Queue(), free_port()
    procs = [ctx.Process(target=_uneven_worker, args=(rank, 3, port, queue)) for rank in range(3)]
    for proc in procs:
        proc.start()
    results = {}
    for _ in procs:
        rank, first, second, views = queue.get(timeout=120)
        results[rank] = (first, second, views)
    for proc in procs:
        proc.join(timeout=30)
    for rank, (first, second, _) in results.items():
        assert second is not None, f"rank {rank}: {first}"

    def reference(batches):
        metrics = _uneven_metrics()
        for metric in metrics.values():
            for rows, seed in batches:
                metric.update(*batch(rows, seed=seed))
        return {name: metric.compute() for name, metric in metrics.items()}

    first_ref = reference([(4, 0), (4, 1), (4, 2)])
    second_ref = reference([(4, 0), (4, 1), (4, 2), (3, 10), (3, 11)])
    for rank, (first, second, views) in results.items():
        for name in first_ref:
            for got, want in ((first[name], first_ref[name]), (second[name], second_ref[name])):
                got, want = (x if isinstance(x, dict) else {"v": x} for x in (got, want))
                for key in want:
                    assert float(got[key]) == pytest.approx(float(want[key]), abs=1e-12), (rank, name, key)
        for key, value in views.items():
            assert value == pytest.approx(float(second_ref["suite"][key]), abs=1e-12), (rank, key)


def test_compute_cache_is_off_by_default_and_can_be_turned_on():
    assert tre.NDCG(k=5).compute_with_cache is False
    assert tre.NDCG(k=5, compute_with_cache=True).compute_with_cache is True


# 3. checkpoints ----------------------------------------------------------------------------------
def test_states_are_not_in_the_state_dict_unless_persistent():
    suite = tre.RankingMetrics(["ndcg@10", "auc"])
    suite.update(*batch())
    assert dict(suite.state_dict()) == {}  # as torchmetrics: a checkpoint carries no metric state
    suite.persistent(True)
    assert {"stats", "pairwise_auc"} <= set(suite.state_dict())


def test_a_changed_suite_loads_a_checkpoint_state_dict():
    class Model(torch.nn.Module):
        def __init__(self, metrics):
            super().__init__()
            self.linear = torch.nn.Linear(2, 2)
            self.val_metrics = tre.RankingMetrics(metrics)

    old = Model(["ndcg@10", "map@10"])
    old.val_metrics.update(*batch())
    buffer = io.BytesIO()
    torch.save(old.state_dict(), buffer)
    buffer.seek(0)
    new = Model(["ndcg@10", "map@10", "mrr@10"])  # before: "Unexpected key(s) ... config_..."
    new.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(new.linear.weight, old.linear.weight)


def test_a_changed_suite_loads_through_lightning_load_from_checkpoint(tmp_path):
    L = pytest.importorskip("lightning")

    class Module(L.LightningModule):
        def __init__(self, metrics=("ndcg@10",)):
            super().__init__()
            self.save_hyperparameters()
            self.layer = torch.nn.Linear(NUM_ITEMS, NUM_ITEMS)
            self.val_metrics = tre.RankingMetrics(list(metrics))

        def training_step(self, batch_, batch_idx):
            return self.layer(batch_[0]).sum()

        def validation_step(self, batch_, batch_idx):
            scores, target = batch_
            self.val_metrics.update(self.layer(scores), target)
            self.log_dict(self.val_metrics)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    scores, target = batch(8)
    data = torch.utils.data.TensorDataset(scores.float(), target)
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    trainer = L.Trainer(
        accelerator="cpu", max_epochs=1, logger=False, enable_progress_bar=False,
        enable_model_summary=False, default_root_dir=tmp_path,
    )
    trainer.fit(Module(), loader, loader)
    path = tmp_path / "model.ckpt"
    trainer.save_checkpoint(path)
    loaded = Module.load_from_checkpoint(path, metrics=("ndcg@10", "mrr@10"))
    assert loaded.val_metrics.keys() == ["ndcg@10", "mrr@10"]


CONFIG_STATE_SCRIPT = """
import torch, torchrec_eval as tre
from torchrec_eval import beyond
torch.set_printoptions(precision=2, threshold=3)
metric = tre.Novelty(k=5, item_popularity=torch.arange(1, 2000).double() / 7)
print([name for name in metric._defaults if name.startswith("config_")][0])
"""


def test_state_names_are_stable_across_processes_and_print_options():
    # Before: the name hashed a tensor's repr, which depends on torch.set_printoptions.
    metric = tre.Novelty(k=5, item_popularity=torch.arange(1, 2000).double() / 7)
    name = next(n for n in metric._defaults if n.startswith("config_"))
    other = subprocess.run(
        [sys.executable, "-c", CONFIG_STATE_SCRIPT], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert other.stdout.strip() == name
    assert name.isidentifier()
    different = tre.Novelty(k=5, item_popularity=torch.arange(1, 2000).double() / 8)
    assert name not in different._defaults  # another configuration, another name


def test_mid_epoch_resume_with_persistent_states():
    suite = tre.RankingMetrics(["ndcg@5", "auc", "coverage@5"], options={"coverage": {"num_items": NUM_ITEMS}})
    suite.persistent(True)
    suite.update(*batch(seed=1))
    resumed = tre.RankingMetrics(["ndcg@5", "auc", "coverage@5"], options={"coverage": {"num_items": NUM_ITEMS}})
    resumed.persistent(True)
    resumed.load_state_dict(suite.state_dict())
    for metric in (suite, resumed):
        metric.update(*batch(seed=2))
    torch.testing.assert_close(resumed.compute(), suite.compute(), rtol=0, atol=1e-12)


# 4. a failed update leaves every state as it was -------------------------------------------------
BAD_INPUTS = [
    lambda s, t: dict(preds=s.masked_fill(s == s.max(), float("nan")), target=t),
    lambda s, t: dict(preds=s, target=-t),
    lambda s, t: dict(preds=s, target=t[:, :3]),
    lambda s, t: dict(preds=s, target_ids=torch.full((s.shape[0], 2), NUM_ITEMS + 3)),
]


@pytest.mark.parametrize("name", list(every_family()))
@pytest.mark.parametrize("bad", range(len(BAD_INPUTS)))
@pytest.mark.parametrize("call", ["update", "forward"])
def test_a_failed_update_or_forward_leaves_the_state_unchanged(name, bad, call):
    # Before: forward() zeroed everything accumulated so far, and the update count moved.
    metric = every_family()[name]
    metric.update(*batch(seed=1))
    before, count, value = snapshot(metric), metric._update_count, metric.compute()
    scores, target = batch(seed=2)
    with pytest.raises(ValueError):
        getattr(metric, call)(**BAD_INPUTS[bad](scores, target))
    assert_same_state(metric, before)
    assert metric._update_count == count
    after = metric.compute()
    assert torch.equal(torch.as_tensor(list(after.values()) if isinstance(after, dict) else after),
                       torch.as_tensor(list(value.values()) if isinstance(value, dict) else value))
    # and the next good batch counts as if the bad one had never come
    getattr(metric, call)(*batch(seed=3))
    clean = every_family()[name]
    for seed in (1, 3):
        clean.update(*batch(seed=seed))
    got, expected = metric.compute(), clean.compute()
    assert torch.equal(torch.as_tensor(list(got.values()) if isinstance(got, dict) else got),
                       torch.as_tensor(list(expected.values()) if isinstance(expected, dict) else expected))


def test_a_suite_member_that_raises_after_another_member_adds_nothing():
    # Before: the top-k statistics were added, then coverage refused an item id >= num_items.
    suite = tre.RankingMetrics(["ndcg@5", "auc", "coverage@5"], options={"coverage": {"num_items": 5}})
    scores, target = batch()
    suite.update(scores[:, :5], target[:, :5])
    before = snapshot(suite)
    with pytest.raises(ValueError, match="num_items"):
        suite.update(scores, target)  # ids up to 19 are out of range for coverage's 5 items
    assert_same_state(suite, before)
    assert suite._update_count == 1


def test_empty_target_action_error_adds_nothing():
    suite = tre.RankingMetrics(["ndcg@5", "auc"], empty_target_action="error")
    suite.update(*batch())
    before = snapshot(suite)
    scores, target = batch(seed=3)
    target[2] = 0
    with pytest.raises(ValueError, match="Query 2"):
        suite.update(scores, target)
    assert_same_state(suite, before)


def test_compute_warns_before_any_successful_update():
    metric = tre.NDCG(k=5)
    with pytest.raises(ValueError):
        metric.update(torch.rand(2, 4), -torch.ones(2, 4))
    with pytest.warns(UserWarning, match="before the ``update``"):
        metric.compute()


# 5. the update signature --------------------------------------------------------------------------
def test_update_has_typed_keyword_arguments_and_names_a_typo():
    """The keywords a type checker sees: named, or those of ``**inputs: Unpack[FormInputs]``."""
    from torchrec_eval.metrics.lifecycle import keywords_of

    params = keywords_of(type(tre.RankingMetrics(["ndcg@5"])).update)
    for name in ("preds", "target", "indexes", "target_ids", "target_gains", "ranked_ids", "mask",
                 "exclude_ids", "groups"):
        assert name in params
    metric = tre.NDCG(k=5)
    with pytest.raises(ValueError, match=r"'exclude_id'.*valid arguments.*exclude_ids"):
        metric.update(torch.rand(2, 4), target_ids=torch.tensor([[0], [1]]), exclude_id=torch.tensor([[2], [3]]))
    assert metric._update_count == 0


def test_target_gains_with_a_dense_target_is_refused():
    with pytest.raises(ValueError, match="`target_gains` goes with `target_ids`"):
        tre.NDCG(k=5).update(torch.rand(2, 4), torch.ones(2, 4), target_gains=torch.ones(2, 4))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32])
def test_ids_of_any_integer_dtype(dtype):
    scores = torch.rand(3, 9)
    ids = torch.tensor([[0, 4, 8], [1, 2, 3], [5, 6, 7]])
    exclude = torch.tensor([[1], [4], [0]])
    expected = tre.functional.ndcg(scores, target_ids=ids, exclude_ids=exclude, k=3)
    got = tre.functional.ndcg(scores, target_ids=ids.to(dtype), exclude_ids=exclude.to(dtype), k=3)
    assert torch.equal(got, expected)
    ranked = scores.argsort(1, descending=True)
    assert torch.equal(
        tre.functional.ndcg(ranked_ids=ranked.to(dtype), target_ids=ids.to(dtype), k=3),
        tre.functional.ndcg(ranked_ids=ranked, target_ids=ids, k=3),
    )


@pytest.mark.parametrize("k", [np.int64(3), np.int32(3), torch.tensor(3), torch.tensor(3, dtype=torch.int16)])
def test_k_of_any_integer_type(k):
    scores, target = batch()
    expected = tre.functional.ndcg(scores, target, k=3)
    assert torch.equal(tre.functional.ndcg(scores, target, k=k), expected)
    metric = tre.NDCG(k=k)
    metric.update(scores, target)
    assert torch.equal(metric.compute(), expected)
    suite = tre.RankingMetrics(["ndcg", "ctr", "coverage"], k=[k], options={"coverage": {"num_items": NUM_ITEMS}})
    assert suite.keys() == ["ndcg@3", "ctr@3", "coverage@3"]
    for bad in (3.0, torch.tensor(3.0), True, np.float64(3)):
        with pytest.raises(ValueError, match="`k`"):
            tre.NDCG(k=bad)


# 6. -inf scores mean "not a candidate" ------------------------------------------------------------
NEG_INF_METRICS = ["ndcg@5", "map@5", "recall@5", "precision@5", "mrr@5", "rprecision", "auc", "gauc", "mpr",
                   "fcp", "ctr@3"]


@pytest.mark.parametrize("ties", ["index", "reverse_index", "pessimistic", "optimistic", "average"])
@pytest.mark.parametrize("validate_args", [True, False])
@pytest.mark.parametrize("form", ["dense", "ids", "flat"])
def test_neg_inf_scores_equal_a_mask(ties, validate_args, form):
    # Before: refused with validation; without it, ties="average" gave NDCG 0.81 for 0.27, FCP miscounted.
    scores, target = batch(8, seed=4)
    gen = torch.Generator().manual_seed(5)
    mask = torch.rand(scores.shape, generator=gen) > 0.3
    mask[0, :] = False  # a query with no candidate at all
    masked = scores.masked_fill(~mask, float("-inf"))
    kwargs = dict(ties=ties, validate_args=validate_args)
    metrics = NEG_INF_METRICS if form != "ids" else [m for m in NEG_INF_METRICS if m != "fcp"]
    expected, got = tre.RankingMetrics(metrics, **kwargs), tre.RankingMetrics(metrics, **kwargs)
    if form == "dense":
        expected.update(scores, target, mask=mask)
        got.update(masked, target)
    elif form == "ids":
        ids = torch.where(target > 0, torch.arange(NUM_ITEMS), -1)
        expected.update(scores, target_ids=ids, mask=mask)
        got.update(masked, target_ids=ids)
    else:
        indexes = torch.arange(8).repeat_interleave(NUM_ITEMS)
        expected.update(scores.flatten(), target.flatten(), indexes=indexes, mask=mask.flatten())
        got.update(masked.flatten(), target.flatten(), indexes=indexes)
    for key, value in expected.compute().items():
        assert torch.allclose(got.compute()[key], value, atol=1e-12, equal_nan=True), key


def test_nan_and_plus_inf_scores_stay_errors():
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"`preds` must be real scores.*-inf is allowed"):
            tre.NDCG(k=2).update(torch.tensor([[0.3, bad, 0.1]]), torch.tensor([[1, 0, 0]]))


# 7. the flat form split across updates -------------------------------------------------------------
def _flat_stream(rows=7, seed=6):
    gen = torch.Generator().manual_seed(seed)
    indexes = torch.arange(rows).repeat_interleave(torch.randint(2, 7, (rows,), generator=gen))
    preds = torch.rand(indexes.numel(), generator=gen)
    target = (torch.rand(indexes.numel(), generator=gen) < 0.4).long()
    return preds, target, indexes


@pytest.mark.parametrize("cuts", [[5], [3, 11], [1, 2, 3, 4, 20, 21], [8, 8, 9]])
def test_a_query_split_across_updates_is_evaluated_whole(cuts):
    # Before: the two halves were counted as two queries (0.318 where torchmetrics gives 0.216).
    preds, target, indexes = _flat_stream()
    oracle = torchmetrics.retrieval.RetrievalNormalizedDCG(top_k=3)
    oracle.update(preds, target, indexes=indexes)
    suite = tre.RankingMetrics(["ndcg@3", "auc"], convention="torchmetrics")
    bounds = [0, *cuts, indexes.numel()]
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        if stop > start:
            suite.update(preds[start:stop], target[start:stop], indexes=indexes[start:stop])
    assert float(suite.compute()["ndcg@3"]) == pytest.approx(float(oracle.compute()), abs=1e-6)
    whole = tre.RankingMetrics(["ndcg@3", "auc"], convention="torchmetrics")
    whole.update(preds, target, indexes=indexes)
    for key, value in whole.compute().items():
        assert torch.allclose(suite.compute()[key], value, atol=1e-12), key


def test_flat_form_refuses_what_it_cannot_evaluate_exactly():
    preds, target, indexes = _flat_stream()
    metric = tre.NDCG(k=3)
    metric.update(preds[:10], target[:10], indexes=indexes[:10])
    before, last = snapshot(metric), int(indexes[9])
    with pytest.raises(ValueError, match=r"`indexes`: query 0 arrives after query"):
        metric.update(preds[:10], target[:10], indexes=indexes[:10])  # ids going back: a reused id
    assert_same_state(metric, before)
    metric.compute()  # the stream ends at compute: the held-back query is evaluated now
    with pytest.raises(ValueError, match="evaluated"):
        rows = indexes == last
        metric.update(preds[rows], target[rows], indexes=indexes[rows])
    metric.update(preds[indexes > last], target[indexes > last], indexes=indexes[indexes > last])
    with pytest.warns(UserWarning, match="drops .* rows of query 6"):  # held back, never evaluated
        metric.reset()  # a new epoch may number its queries from 0 again
    metric.update(preds, target, indexes=indexes)
    with pytest.raises(ValueError, match="`preds` must be real scores"):
        metric.update(torch.tensor([float("nan")]), torch.tensor([1]), indexes=torch.tensor([99]))


def test_flat_forward_returns_the_batch_value_and_accumulates():
    preds, target, indexes = _flat_stream()
    metric = tre.NDCG(k=3)
    half = int((indexes < 4).sum())
    first = metric(preds[:half], target[:half], indexes=indexes[:half])
    alone = tre.NDCG(k=3)
    alone.update(preds[:half], target[:half], indexes=indexes[:half])
    assert torch.equal(first, alone.compute())
    metric(preds[half:], target[half:], indexes=indexes[half:])
    whole = tre.NDCG(k=3)
    whole.update(preds, target, indexes=indexes)
    assert torch.allclose(metric.compute(), whole.compute(), atol=1e-12)


# 8. huge cut-offs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("convention", [None, "trec", "ranx", "torchmetrics", "recbole", "jurity", "recommenders",
                                        "spark", "rectools"])
def test_a_huge_k_allocates_nothing_for_it(convention):
    # Before: k=10**12 with binary gains built a table of k discounts (8 TB).
    scores, target = batch()
    huge, full = 10**12, NUM_ITEMS
    cut = [family for family, spec in REGISTRY.items() if spec.cutoff != "none"]  # NumRel takes no cut-off
    suite = tre.RankingMetrics([f"{family}@{huge}" for family in cut], convention=convention)
    suite.update(scores, target)
    values = suite.compute()
    reference = tre.RankingMetrics([f"{family}@{full}" for family in cut], convention=convention)
    reference.update(scores, target)
    for key, value in reference.compute().items():
        family = key.partition("@")[0]
        if family in ("precision", "f1", "sdcg") or (family in ("map", "mar", "ndcg") and convention in (
                "rectools", "jurity") and family != "ndcg") or (family == "ndcg" and convention == "rectools"):
            continue  # these divide by k itself
        if family in ("nerr", "inst", "insq", "bpm"):  # the C/W/L users read on past the list up to k (cwl_eval's
            assert bool(values[key.replace(f"@{full}", f"@{huge}")].isfinite()), key  # padding), in closed form
            continue
        assert torch.allclose(values[key.replace(f"@{full}", f"@{huge}")], value, equal_nan=True), key


def test_rectools_ideal_dcg_of_a_huge_k_matches_a_direct_sum():
    mpmath = pytest.importorskip("mpmath")
    for k in (7, 2**20, 2**20 + 3, 3_000_000):
        direct = math.fsum(1 / math.log2(i + 1) for i in range(1, k + 1))
        assert discount_sum(k, 2.0) == pytest.approx(direct, rel=1e-13)
    k = 10**12  # Euler-Maclaurin tail against mpmath's logarithmic integral
    head = math.fsum(1 / math.log2(i + 1) for i in range(1, 2**20 + 1))
    a, b = 2**20 + 1, k + 1
    tail = (mpmath.li(b) - mpmath.li(a) + (1 / mpmath.log(b) - 1 / mpmath.log(a)) / 2) * mpmath.log(2)
    assert discount_sum(k, 2.0) == pytest.approx(head + float(tail), rel=1e-12)


def test_paired_comparison_is_safe_too():
    from torchrec_eval.comparison.uncertainty import PairedComparison

    compare = PairedComparison(["ndcg@5", "mrr@5"])
    scores, target = batch()
    compare.update(scores, scores.flip(1), target)
    before = snapshot(compare)
    with pytest.raises(ValueError, match="'target_id'"):
        compare.update(scores, scores, target_id=target)
    with pytest.raises(ValueError, match="must be >= 0"):
        compare.update(scores, scores, -target)
    assert_same_state(compare, before)
    assert compare._update_count == 1
    # the flat form across calls, as for the metrics
    preds, target, indexes = _flat_stream()
    split, whole = PairedComparison(["ndcg@3"]), PairedComparison(["ndcg@3"])
    whole.update(preds, preds.flip(0), target, indexes=indexes)
    for rows in (slice(0, 9), slice(9, None)):
        split.update(preds[rows], preds.flip(0)[rows], target[rows], indexes=indexes[rows])
    for key, value in whole.compute().items():
        assert torch.allclose(split.compute()[key], value, atol=1e-12, equal_nan=True), key


def test_ctr_with_ignore_index_keeps_the_typed_signature_and_the_flat_stream():
    from torchrec_eval.metrics.lifecycle import keywords_of

    metric = pairwise.CTR(k=2, ignore_index=-1)
    assert "exclude_ids" in keywords_of(type(metric).update)
    preds = torch.tensor([0.9, 0.8, 0.7, 0.6, 0.1, 0.2, 0.3, 0.4])
    target = torch.tensor([1, -1, 0, 1, -1, -1, 1, -1])
    indexes = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    metric.update(preds[:3], target[:3], indexes=indexes[:3])  # query 0 continues in the next call
    metric.update(preds[3:], target[3:], indexes=indexes[3:])
    assert float(metric.compute()) == pytest.approx(2 / 3)  # (1 + 1) clicks / (2 + 1) shown, as the docs
