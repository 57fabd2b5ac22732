"""Multi-process tests: gloo on CPU, 2 and 3 real processes (``torch.multiprocessing``).

Every metric class and ``RankingMetrics`` must give the single-process result when the batches of
one evaluation are split across ranks: uneven numbers of batches per rank, one rank that sees no
batch at all, all four input forms, groups, and updates that go on after a synced ``compute``.
The same spawned run counts the ``torch.distributed`` collectives that each ``compute`` issues.

One spawn per world size checks every metric at once, so the whole file costs a few seconds.
There is no fallback to one process: if gloo or spawning is unavailable the tests fail.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torchmetrics import MetricCollection

import torchrec_eval as tre
from tests.processes import START_METHOD, free_port
from torchrec_eval.metrics import pairwise as pairwise
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.topk import TopKMetric
from torchrec_eval.ranking.families import REGISTRY

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally


NUM_ITEMS = 12
NUM_GROUPS = 3
# Batch sizes of one evaluation (one row = one query); batch i uses input form FORMS[i % 4].
BATCH_SIZES = [5, 3, 8, 1, 6, 4, 7]
FORMS = ["dense", "ids", "ranked", "flat"]
# Which batches each rank evaluates: uneven counts and sizes; with 3 ranks, rank 2 sees nothing.
ASSIGNMENT = {
    2: [[0, 1, 2, 3, 4], [5, 6]],
    3: [[0, 1, 2], [3, 4, 5, 6], []],
}
# Each rank computes (synced) after its first `PHASE_ONE` batches, then keeps updating: the second
# compute must again be the global value, i.e. the sync must not have clobbered the local state.
PHASE_ONE = 2

# "fork" where the platform has it: the children inherit the imported torch/torchmetrics, which
# saves several seconds per process on a small machine (as DataLoader workers, they run with one
# intra-op thread). "spawn" elsewhere.

# torch.distributed functions counted as collectives (patched on the `torch.distributed` module,
# where torchmetrics and user code look them up).
COLLECTIVES = [
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "gather",
    "scatter",
    "gather_object",
    "scatter_object_list",
    "all_to_all",
    "all_to_all_single",
    "monitored_barrier",
]

# Collectives of one synced compute() per state tensor. With torchmetrics' default dist_sync_fn
# (`gather_all_tensors`): a barrier, an all_gather of the state's shape, an all_gather of the state,
# for each state holding statistics (the empty state that names a metric's configuration is not synced).
PER_STATE = {"barrier": 1, "all_gather": 2}


def expected_collectives(num_states: int) -> dict[str, int]:
    return {key: num_states * n for key, n in PER_STATE.items()}


def _plus(counts: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    return {key: counts.get(key, 0) + more.get(key, 0) for key in counts.keys() | more.keys()}


# every top-k family that takes ranked lists (FallOut, which counts every candidate, has its own metric below)
FAMILIES = [family for family, spec in REGISTRY.items() if not spec.reads_non_relevant]


def all_reduce_sum(tensor: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
    """A ``dist_sync_fn`` that sums a state with one ``all_reduce`` (for ``dist_reduce_fx="sum"`` states)."""
    out = tensor.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
    return [out]


def make_metrics(**kw: Any) -> dict[str, Any]:
    """Every metric class (several options), RankingMetrics with every top-k family at two cut-offs, and a
    MetricCollection."""
    metrics = {
        "precision": tre.Precision(k=[1, 3, 5]),
        "precision_retrieved": tre.Precision(k=5, denominator="retrieved"),
        "precision_min_k_r": tre.Precision(k=4, denominator="min_k_r"),
        "recall": tre.Recall(k=[2, 5]),
        "recall_min_k_r": tre.Recall(k=3, denominator="min_k_r"),
        "f1": tre.F1(k=3),
        "hitrate": tre.HitRate(k=[1, 5]),
        "mrr": tre.MRR(k=5),
        "arhr": tre.ARHR(k=5),
        "map": tre.MAP(k=[3, 5]),
        "map_r": tre.MAP(k=5, normalizer="r"),
        "mar": tre.MAR(k=5),
        "ndcg": tre.NDCG(k=[3, 5]),
        "ndcg_exp": tre.NDCG(k=5, gain="exp"),
        "dcg": tre.DCG(k=4),
        "cg": tre.CG(k=3),
        "rprecision": tre.RPrecision(),
        "rprecision_cap": tre.RPrecision(k=3),
        "ndcg_neg": tre.NDCG(k=5, empty_target_action="neg"),
        "recall_pos": tre.Recall(k=5, empty_target_action="pos"),
        "map_threshold": tre.MAP(k=5, relevance_threshold=2),
        "ndcg_pessimistic": tre.NDCG(k=5, ties="pessimistic"),
        "map_groups": tre.MAP(k=[2, 5], num_groups=NUM_GROUPS),
        "suite_groups": tre.RankingMetrics(["ndcg@5", "recall@3", "mrr@5"], num_groups=NUM_GROUPS),
        "suite": tre.RankingMetrics(FAMILIES, k=[5, 10]),
        "suite_allreduce": tre.RankingMetrics(FAMILIES, k=[5, 10], dist_sync_fn=all_reduce_sum),
        "err": tre.ERR(k=[3, 5]),
        "rbp": tre.RBP(k=5, normalize=True),
        "sdcg": tre.SDCG(k=5, max_grade=3),
        "ncrr": tre.NCRR(k=5),
        "setf": tre.SetF(k=[3, 5], beta=2),
        "num_ret": tre.NumRet(k=5),
        "num_rel_ret": tre.NumRelRet(k=5),
        "num_rel": tre.NumRel(num_groups=NUM_GROUPS),
        "iprec": tre.IPrec(k=5, recall=0.5),
        "interpolated_ap": tre.InterpolatedAP(k=[5, 10]),
        "fallout": tre.FallOut(k=[3, 5], empty_target_action="pos"),
        "bpref": tre.Bpref(k=[3, 10], empty_target_action="neg"),
        "judged": tre.Judged(k=[1, 5]),
        "infap": tre.InfAP(k=[3, 10], empty_target_action="neg"),
        "precision_recall_curve": tre.PrecisionRecallCurve(max_k=6, adaptive_k=True),
        "recall_at_fixed_precision": tre.RecallAtFixedPrecision(min_precision=0.2, max_k=6, num_groups=NUM_GROUPS),
        "collection": MetricCollection(
            {
                name: getattr(tre, cls)(k=[5, 10])
                for name, cls in [
                    ("precision", "Precision"),
                    ("recall", "Recall"),
                    ("f1", "F1"),
                    ("hitrate", "HitRate"),
                    ("mrr", "MRR"),
                    ("arhr", "ARHR"),
                    ("map", "MAP"),
                    ("mar", "MAR"),
                    ("ndcg", "NDCG"),
                    ("dcg", "DCG"),
                    ("cg", "CG"),
                ]
            },
            compute_groups=False,
        ),
    }
    metrics |= {
        "auc": pairwise.AUC(),
        "gauc": pairwise.GAUC(),
        "mpr": pairwise.MPR(),
        "mpr_query": pairwise.MPR(average="query"),
        "fcp": pairwise.FCP(),
        "ctr": pairwise.CTR(k=[2, 5]),
        "pauc": pairwise.PartialAUC(k=[2, 5], insufficient_handling="exclude"),
        "auc_groups": pairwise.AUC(num_groups=NUM_GROUPS),
        # a suite mixing top-k and full-ranking members (two state tensors)
        "suite_pairwise": tre.RankingMetrics(["auc", "gauc", "mpr", "fcp", "ctr@3", "pauc@3", "ndcg@5"]),
    }
    popularity = torch.arange(NUM_ITEMS, 0, -1).double()
    features = torch.eye(NUM_ITEMS)[:, :5] + 0.1
    intents = torch.arange(NUM_ITEMS).unsqueeze(1) % torch.arange(2, 6) == 0  # multi-hot, item 1 has none
    metrics |= {
        "coverage": tre.Coverage(k=[3, 5], num_items=NUM_ITEMS),
        "gini": tre.GiniIndex(k=5, num_items=NUM_ITEMS),
        "exposure_gini": tre.ExposureGini(k=[3, 5], num_items=NUM_ITEMS),
        "entropy": tre.Entropy(k=5, num_items=NUM_ITEMS),
        "inter_list_diversity": tre.InterListDiversity(k=3, num_items=NUM_ITEMS),
        "intra_list_diversity": tre.IntraListDiversity(k=4, item_features=features),
        "novelty": tre.Novelty(k=5, item_popularity=popularity),
        "serendipity": tre.Serendipity(k=5, item_popularity=popularity),
        "average_popularity": tre.AveragePopularity(k=5, item_popularity=popularity),
        "long_tail_share": tre.LongTailShare(k=5, item_popularity=popularity),
        "category_entropy": tre.CategoryEntropy(k=5, item_categories=features),
        "rank_biased_entropy": tre.RankBiasedEntropy(k=[3, 5], item_categories=features, smoothing=1e-6),
        "long_tail_count": tre.LongTailCount(k=5, item_popularity=popularity, tail_ratio=0.5),
        "psp": tre.PSP(k=[3, 5], inverse_propensity=popularity.reciprocal() + 1),
        "psndcg": tre.PSnDCG(k=5, inverse_propensity=popularity.reciprocal() + 1, num_groups=NUM_GROUPS),
        "alpha_ndcg": tre.AlphaNDCG(k=[3, 5], item_intents=intents),
        "err_ia": tre.ERRIA(k=5, item_intents=intents, num_groups=NUM_GROUPS),
        "alpha_dcg": tre.AlphaDCG(k=[1, 5], item_intents=intents),
        "nerr_ia": tre.NERRIA(k=5, item_intents=intents, alpha=0.3),
        "p_ia": tre.PrecisionIA(k=[3, 5], item_intents=intents),
        "strec": tre.SubtopicRecall(k=5, item_intents=intents, num_groups=NUM_GROUPS),
        "ap_ia": tre.AveragePrecisionIA(k=5, item_intents=intents),
        "nrbp": tre.NRBP(k=5, item_intents=intents, beta=0.8, num_groups=NUM_GROUPS),
        "nnrbp": tre.NNRBP(k=[3, 5], item_intents=intents),
        "coverage_groups": tre.Coverage(k=5, num_items=NUM_ITEMS, num_groups=NUM_GROUPS),
    }
    for metric in metrics.values():
        for member in metric.values() if isinstance(metric, MetricCollection) else [metric]:
            for attr, value in kw.items():
                setattr(member, attr, value)
    return metrics


def make_batches() -> list[dict[str, torch.Tensor]]:
    """Deterministic batches in the four input forms; ties, empty targets and graded gains included."""
    gen = torch.Generator().manual_seed(1234)
    batches = []
    for i, size in enumerate(BATCH_SIZES):
        form = FORMS[i % len(FORMS)]
        scores = torch.randint(0, 6, (size, NUM_ITEMS), generator=gen).double() / 3  # many ties
        target = torch.randint(0, 4, (size, NUM_ITEMS), generator=gen) * (
            torch.rand(size, NUM_ITEMS, generator=gen) < 0.3
        )
        target[0] = 0  # a query without relevant items in every batch
        groups = torch.randint(0, NUM_GROUPS, (size,), generator=gen)
        if form == "dense":
            mask = torch.rand(size, NUM_ITEMS, generator=gen) > 0.15
            mask[:, 0] = True
            batch = {"preds": scores, "target": target, "mask": mask}
        elif form == "flat":
            batch = {
                "preds": scores.flatten(),
                "target": target.flatten(),
                "indexes": torch.arange(size).repeat_interleave(NUM_ITEMS) + 100 * i,
            }
        else:
            # target ids: the relevant items of each row, -1 padded, with their graded gains.
            width = int((target > 0).sum(1).max().clamp(min=1))
            order = torch.argsort(
                (target > 0).double() + torch.rand(size, NUM_ITEMS, generator=gen), dim=1, descending=True
            )[:, :width]
            gains = torch.gather(target, 1, order).double()
            ids = torch.where(gains > 0, order, torch.full_like(order, -1))
            gains = gains.clamp(min=0)
            if form == "ids":
                batch = {"preds": scores, "target_ids": ids, "target_gains": gains}
            else:
                ranked = torch.argsort(torch.rand(size, NUM_ITEMS, generator=gen), dim=1)[:, :8]
                ranked[1::2, 6:] = -1  # short lists
                batch = {"ranked_ids": ranked, "target_ids": ids, "target_gains": gains}
        batch["groups"] = groups
        batches.append(batch)
    return batches


def _needs_scores(metric: Any) -> bool:
    """AUC, GAUC, MPR, FCP and pAUC@k rank every candidate, FallOut counts them: they do not take the ranked-list
    form."""
    if isinstance(metric, (pairwise.AUC, pairwise.GAUC, pairwise.MPR, pairwise.FCP, pairwise.PartialAUC, tre.FallOut)):
        return True
    return isinstance(metric, tre.RankingMetrics) and any(
        key in ("auc", "gauc", "mpr", "fcp") or key.startswith(("fallout", "pauc")) for key in metric.keys()
    )


def _update(metric: Any, batch: dict[str, torch.Tensor]) -> None:
    if "ranked_ids" in batch and _needs_scores(metric):
        return  # the same batches are skipped in the single-process reference
    kwargs = dict(batch)
    groups = kwargs.pop("groups")
    if isinstance(metric, MetricCollection):
        metric.update(**kwargs)
    elif metric.num_groups is not None:
        if "indexes" in kwargs:  # flat form: one group per candidate row
            groups = groups.repeat_interleave(NUM_ITEMS)
        metric.update(**kwargs, groups=groups)
    else:
        metric.update(**kwargs)


def _flatten(result: Any) -> dict[str, torch.Tensor]:
    if isinstance(result, dict):
        return {key: value.detach().clone() for key, value in result.items()}
    if isinstance(result, tuple):  # a curve, or a point read off it: float64 values and int64 cut-offs
        return {"cut-offs" if value.dtype == torch.int64 else f"value {i}": value.detach().clone()
                for i, value in enumerate(result)}
    return {"value": result.detach().clone()}


@functools.cache
def single_process_results(
    batch_ids: tuple[int, ...], only: str | None = None
) -> dict[str, dict[str, torch.Tensor]]:
    """The reference: one process, one metric object, the given batches in order."""
    batches = make_batches()
    metrics = make_metrics()
    if only is not None:
        metrics = {only: metrics[only]}
    for metric in metrics.values():
        for i in batch_ids:
            _update(metric, batches[i])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: _flatten(metric.compute()) for name, metric in metrics.items()}


class CollectiveCounter:
    """Counts calls of the torch.distributed collectives while active."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.active = False
        for name in COLLECTIVES:
            original = getattr(dist, name, None)
            if original is not None:
                setattr(dist, name, self._wrap(name, original))

    def _wrap(self, name: str, original: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if self.active:
                self.counts[name] += 1
            return original(*args, **kwargs)

        return wrapped

    def measure(self, fn: Any) -> tuple[Any, dict[str, int]]:
        self.counts.clear()
        self.active = True
        try:
            out = fn()
        finally:
            self.active = False
        return out, dict(self.counts)


def _worker(rank: int, world_size: int, port: int, out_dir: str) -> None:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # "compute before update" on the rank without data
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    try:
        assert dist.get_world_size() == world_size and dist.get_rank() == rank
        counter = CollectiveCounter()
        batches = make_batches()
        mine = ASSIGNMENT[world_size][rank]
        saved: dict[str, Any] = {"rank": rank, "world_size": world_size, "pid": os.getpid()}

        # An evaluation epoch: every rank updates with its own batches (maybe none), then computes.
        metrics = make_metrics()
        for metric in metrics.values():
            for i in mine:
                _update(metric, batches[i])
        results, counts = {}, {}
        for name, metric in metrics.items():
            value, counts[name] = counter.measure(metric.compute)
            results[name] = _flatten(value)
        saved["epoch"], saved["epoch_counts"] = results, counts
        saved["num_states"] = {
            name: sum(getattr(metric, state).numel() > 0 for state in metric._defaults)
            for name, metric in metrics.items()
            if not isinstance(metric, MetricCollection)
        }
        # A second epoch after reset() gives the same values again.
        for metric in metrics.values():
            metric.reset()
            for i in mine:
                _update(metric, batches[i])
        saved["epoch2"], saved["epoch2_counts"] = {}, {}
        for name, metric in metrics.items():
            value, saved["epoch2_counts"][name] = counter.measure(metric.compute)
            saved["epoch2"][name] = _flatten(value)

        # compute() mid-way, then more updates: the sync must leave each rank's local state intact.
        # compute_with_cache=False: a rank with no new batch must still join the second sync (with
        # the default cache it would return its cached value without syncing, and the others hang).
        metrics = make_metrics(compute_with_cache=False)
        for phase, ids in (("phase1", mine[:PHASE_ONE]), ("phase2", mine[PHASE_ONE:])):
            for metric in metrics.values():
                for i in ids:
                    _update(metric, batches[i])
            saved[phase] = {name: _flatten(metric.compute()) for name, metric in metrics.items()}

        # sync_on_compute=False: compute() is this rank's own value and costs no collective.
        local = tre.RankingMetrics(FAMILIES, k=[5, 10], sync_on_compute=False)
        for i in mine:
            _update(local, batches[i])
        value, saved["local_counts"] = counter.measure(local.compute)
        saved["local"] = _flatten(value)
        torch.save(saved, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()




def _assert_same(
    actual: dict[str, dict[str, torch.Tensor]], expected: dict[str, dict[str, torch.Tensor]], where: str
) -> None:
    assert actual.keys() == expected.keys(), where
    for name in expected:
        assert actual[name].keys() == expected[name].keys(), (where, name)
        for key in expected[name]:
            assert actual[name][key].dtype == (torch.int64 if key == "cut-offs" else torch.float64), (where, name, key)
            torch.testing.assert_close(
                actual[name][key],
                expected[name][key],
                rtol=0,
                atol=1e-12,
                equal_nan=True,
                msg=lambda m, n=name, k=key: f"{where} {n} {k}: {m}",
            )


@pytest.fixture(scope="module", params=[2, 3], ids=lambda w: f"world{w}")
def spawned(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the worker on `world_size` real processes once; return what each rank saved."""
    world_size = request.param
    out_dir = tmp_path_factory.mktemp(f"dist{world_size}")
    mp.start_processes(
        _worker,
        args=(world_size, free_port(), str(out_dir)),
        nprocs=world_size,
        join=True,
        start_method=START_METHOD,
    )
    ranks = [torch.load(out_dir / f"rank{r}.pt", weights_only=False) for r in range(world_size)]
    return {"world_size": world_size, "ranks": ranks}


def test_really_several_processes(spawned: dict[str, Any]) -> None:
    ranks = spawned["ranks"]
    assert [r["rank"] for r in ranks] == list(range(spawned["world_size"]))
    assert all(r["world_size"] == spawned["world_size"] for r in ranks)
    assert len({r["pid"] for r in ranks} | {os.getpid()}) == spawned["world_size"] + 1


def test_every_metric_equals_single_process(spawned: dict[str, Any]) -> None:
    world_size = spawned["world_size"]
    assignment = ASSIGNMENT[world_size]
    first = tuple(i for ids in assignment for i in ids[:PHASE_ONE])
    everything = tuple(i for ids in assignment for i in ids)
    expected1 = single_process_results(first)
    expected2 = single_process_results(everything)
    for rank, saved in enumerate(spawned["ranks"]):
        _assert_same(saved["epoch"], expected2, f"world {world_size} rank {rank} epoch")
        _assert_same(saved["epoch2"], expected2, f"world {world_size} rank {rank} epoch after reset")
        _assert_same(saved["phase1"], expected1, f"world {world_size} rank {rank} first compute")
        _assert_same(saved["phase2"], expected2, f"world {world_size} rank {rank} final compute")


def test_unsynced_compute_is_local(spawned: dict[str, Any]) -> None:
    for rank, saved in enumerate(spawned["ranks"]):
        expected = single_process_results(tuple(ASSIGNMENT[spawned["world_size"]][rank]), "suite")["suite"]
        _assert_same({"suite": saved["local"]}, {"suite": expected}, f"rank {rank} sync_on_compute=False")
        assert saved["local_counts"] == {}


ROOT = Path(__file__).resolve().parents[2]
# classes whose inputs the batches above cannot give, run in processes by their own harness test
TOP_K_PROCESSES = "tests/ranking/test_ranking_families.py"
ELSEWHERE = {tre.SampledMetrics: "tests/sampled/test_sampled_metrics.py",  # one relevant item per row
             # two rankings per query, no target
             **dict.fromkeys((tre.Intersection, tre.Jaccard, tre.RBO), "tests/beyond/test_overlap.py"),
             tre.OffPolicyCTR: "tests/pairwise/test_off_policy.py",  # the logging policy's inputs
             tre.WeightedRBP: "tests/ranking/test_list_weights.py"}  # each item's weight beside the ranking


def test_every_exported_metric_class_is_covered() -> None:
    tested = {type(metric) for metric in make_metrics().values()}
    for name in tre.__all__:
        cls = getattr(tre, name)
        if isinstance(cls, type) and issubclass(cls, MemberMetric):
            if issubclass(cls, TopKMetric):  # every top-k class: 2 processes of its family's harness case
                assert "check_processes(build, sorted(REGISTRY)" in (ROOT / TOP_K_PROCESSES).read_text(), name
                continue
            if cls in ELSEWHERE:
                assert "check_processes(" in (ROOT / ELSEWHERE[cls]).read_text(), name
                continue
            assert cls in tested, f"{name} is not in the distributed test"


def test_collective_counts(spawned: dict[str, Any]) -> None:
    """One state per metric -> one gather per compute, whatever the number of metric/k pairs.

    torchmetrics' default ``gather_all_tensors`` costs 1 barrier + 2 all_gathers (shapes, then the
    state) per state tensor; an ``all_reduce`` ``dist_sync_fn`` brings it to 1 collective. A metric's
    first sync adds one all_gather, where the ranks compare their configurations; later ones do not.
    """
    for saved in spawned["ranks"]:
        first = saved["epoch_counts"]
        check = {"all_gather": 1}  # per metric object, at its first sync
        assert first["ndcg_exp"] == _plus(expected_collectives(1), check), first["ndcg_exp"]
        assert first["suite_allreduce"] == {"all_reduce": 1, "all_gather": 1}
        assert first["collection"] == _plus(expected_collectives(11), {"all_gather": 11})
        counts = saved["epoch2_counts"]
        one = counts["ndcg_exp"]
        assert one == expected_collectives(1), one
        # Every metric class, any number of cut-offs or groups, costs the same as one metric per
        # state tensor (top-k metrics and suites of them: one state).
        for name, value in counts.items():
            if name not in ("collection", "suite_allreduce"):
                assert value == expected_collectives(saved["num_states"][name]), (name, value)
        # RankingMetrics with every top-k family at 2 cut-offs: same as one metric, not one per pair.
        assert len(saved["epoch"]["suite"]) == sum(1 if REGISTRY[family].cutoff == "none" else 2 for family in FAMILIES)
        assert counts["suite"] == one
        # A MetricCollection of 11 separate classes pays 11x: one sync per member.
        assert counts["collection"] == {key: 11 * value for key, value in one.items()}
        # The minimum, one all_reduce, with a summing dist_sync_fn.
        assert counts["suite_allreduce"] == {"all_reduce": 1}
