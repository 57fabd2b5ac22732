"""``ModelComparison`` against independent code: scipy's paired t-test and bootstrap, statsmodels' p-value
adjustments, ranx's randomization test, a brute-force enumeration of every sign pattern and a numpy
randomized Tukey HSD; the same p-values for any split of the queries into batches and on 3 gloo processes;
every refusal named with the states unchanged."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from scipy import stats

import torchrec_eval as tre
from tests.processes import FRESH_START_METHOD, free_port

MODELS = ["a", "b", "c"]
KEYS = ["ndcg@10", "mrr@10"]


def _data(seed: int = 0, rows: int = 240, shifts=(0.0, 0.05, 0.3)) -> tuple[list[torch.Tensor], torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    target = (torch.rand(rows, 40, generator=gen) < 0.1).long()
    target[:, 0] = 1  # every query has a relevant item: every model counts every query
    return [torch.randn(rows, 40, generator=gen) + shift * target for shift in shifts], target


def _per_query(preds: list[torch.Tensor], target: torch.Tensor) -> dict[str, np.ndarray]:
    """[n, M] each key's per-query values of every model, from RankingMetrics.per_query."""
    suite = tre.RankingMetrics(KEYS)
    return {key: np.stack([suite.per_query(p, target)[key].numpy() for p in preds], axis=1) for key in KEYS}


def _run(test: str, preds, target, splits=(0, 70, 71, 240), **kwargs) -> dict[str, float]:
    compare = tre.ModelComparison(KEYS, models=MODELS, test=test, **kwargs)
    for start, stop in itertools.pairwise(splits):
        compare.update([p[start:stop] for p in preds], target[start:stop], query_ids=torch.arange(start, stop))
    return {key: float(value) for key, value in compare.compute().items()}


def test_means_and_the_t_test_are_scipys():
    preds, target = _data()
    got = _run("student", preds, target)
    for key, values in _per_query(preds, target).items():
        for m, model in enumerate(MODELS):
            assert got[f"{key}/{model}"] == pytest.approx(values[:, m].mean(), abs=1e-12)
        for i, j in itertools.combinations(range(3), 2):
            name = f"{key}/{MODELS[i]}_vs_{MODELS[j]}"
            d = values[:, i] - values[:, j]
            assert got[f"{name}/diff"] == pytest.approx(d.mean(), abs=1e-12)
            assert got[f"{name}/effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), abs=1e-10)
            assert got[f"{name}/p_value"] == pytest.approx(stats.ttest_rel(values[:, i], values[:, j]).pvalue,
                                                           rel=1e-10, abs=1e-14)


@pytest.mark.parametrize(("ours", "theirs"), [("bonferroni", "bonferroni"), ("holm", "holm"), ("bh", "fdr_bh")])
def test_the_adjusted_p_values_are_statsmodels(ours, theirs):
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    preds, target = _data(1, shifts=(0.0, 0.1, 0.15))
    got = _run("student", preds, target, correction=ours)
    for key in KEYS:
        names = [f"{key}/{MODELS[i]}_vs_{MODELS[j]}" for i, j in itertools.combinations(range(3), 2)]
        raw = np.array([got[f"{name}/p_value"] for name in names])
        want = multitest.multipletests(raw, method=theirs)[1]
        np.testing.assert_allclose([got[f"{name}/p_adjusted"] for name in names], want, rtol=0, atol=1e-12)


@pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
def test_the_randomization_test_agrees_with_ranx():
    """ranx draws its permutations in numba's parallel threads, so its p at a seed depends on their number
    and scheduling: on one thread it is the same in every run, and this test with it."""
    pytest.importorskip("ranx")
    import numba
    from ranx.statistical_tests.fisher_randomization_test import fisher_randomization_test

    preds, target = _data(2, shifts=(0.0, 0.08, 0.3))
    replicates = 10_000
    got = _run("fisher", preds, target, replicates=replicates)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        wanted = {(key, i, j): fisher_randomization_test(values[:, i], values[:, j], replicates, 0.05, 42)[0]
                  for key, values in _per_query(preds, target).items() for i, j in itertools.combinations(range(3), 2)}
    finally:
        numba.set_num_threads(threads)
    for key in KEYS:
        for i, j in itertools.combinations(range(3), 2):
            want = wanted[(key, i, j)]
            p = got[f"{key}/{MODELS[i]}_vs_{MODELS[j]}/p_value"]
            assert abs(p - want) <= 3 * np.sqrt(2 * max(want * (1 - want), 1 / replicates) / replicates), (key, i, j)


def test_the_exact_test_is_the_enumeration_of_every_sign_pattern():
    preds, target = _data(3, rows=12, shifts=(0.0, 0.2, 0.4))
    got = _run("fisher", preds, target, splits=(0, 5, 12), replicates=2**12, exact=True)
    for key, values in _per_query(preds, target).items():
        for i, j in itertools.combinations(range(3), 2):
            d = values[:, i] - values[:, j]
            flips = np.array(list(itertools.product((1.0, -1.0), repeat=12)))  # all 4,096 patterns
            want = np.mean(np.abs(flips @ d) >= abs(d.sum()) - 1e-12)
            assert got[f"{key}/{MODELS[i]}_vs_{MODELS[j]}/p_value"] == pytest.approx(want, abs=1e-12)


def test_the_randomized_tukey_hsd_agrees_with_a_numpy_one():
    preds, target = _data(4, shifts=(0.0, 0.1, 0.25))
    replicates = 5000
    got = _run("tukey", preds, target, replicates=replicates)
    rng = np.random.default_rng(0)
    for key, values in _per_query(preds, target).items():
        means = values.mean(0)
        ranges = np.empty(replicates)
        for b in range(replicates):  # permute the models' values within every query
            permuted = np.take_along_axis(values, rng.permuted(np.tile(np.arange(3), (len(values), 1)), axis=1), 1)
            ranges[b] = np.ptp(permuted.mean(0))
        for i, j in itertools.combinations(range(3), 2):
            want = np.mean(ranges >= abs(means[i] - means[j]))
            p = got[f"{key}/{MODELS[i]}_vs_{MODELS[j]}/p_value"]
            assert abs(p - want) <= 3 * np.sqrt(2 * max(want * (1 - want), 1 / replicates) / replicates), (key, i, j)


def test_the_bootstrap_interval_agrees_with_scipys():
    preds, target = _data(5, shifts=(0.0, 0.1, 0.2))
    got = _run("bootstrap", preds, target, replicates=4000, level=0.9)
    for key, values in _per_query(preds, target).items():
        for i, j in itertools.combinations(range(3), 2):
            result = stats.bootstrap((values[:, i], values[:, j]), lambda x, y, axis=-1: (x - y).mean(axis),
                                     paired=True, method="percentile", n_resamples=4000, confidence_level=0.9,
                                     random_state=0)
            low, high = result.confidence_interval
            name = f"{key}/{MODELS[i]}_vs_{MODELS[j]}"
            width = high - low
            assert got[f"{name}/low"] == pytest.approx(low, abs=0.1 * width)
            assert got[f"{name}/high"] == pytest.approx(high, abs=0.1 * width)


@pytest.mark.parametrize("test", ["fisher", "bootstrap", "tukey"])
def test_any_split_of_the_queries_gives_the_same_p_values(test):
    preds, target = _data(6)
    one = _run(test, preds, target, splits=(0, 240), replicates=300)
    many = _run(test, preds, target, splits=(0, 1, 2, 100, 239, 240), replicates=300)
    assert one.keys() == many.keys()
    for key, value in one.items():
        assert many[key] == pytest.approx(value, abs=1e-12), key


@pytest.mark.parametrize(("make", "update", "match"), [
    (lambda: tre.ModelComparison(KEYS, models=["a"]), None, "models"),
    (lambda: tre.ModelComparison(KEYS, models=MODELS, test="wilcoxon"), None, "test"),
    (lambda: tre.ModelComparison(KEYS, models=MODELS, correction="sidak"), None, "correction"),
    (lambda: tre.ModelComparison(KEYS, models=MODELS, test="fisher", replicates=1000, exact=True), None, "exact"),
    # 39 replicates leave the 95% interval's 2.5% tails under one replicate each: at least 40
    (lambda: tre.ModelComparison(KEYS, models=MODELS, test="bootstrap", replicates=39), None, ">= 40 at level=0.95"),
    (lambda: tre.ModelComparison(KEYS, models=MODELS), lambda c, p, t: c.update(p[:2], t), "one tensor per model"),
    (lambda: tre.ModelComparison(KEYS, models=MODELS, test="fisher"), lambda c, p, t: c.update(p, t), "query_ids"),
    (lambda: tre.ModelComparison(KEYS, models=MODELS, test="fisher"),
     lambda c, p, t: c.update(p, t, query_ids=torch.arange(t.shape[0]).float()), "query_ids"),
    (lambda: tre.ModelComparison(KEYS, models=MODELS, test="fisher", replicates=2**4, exact=True),
     lambda c, p, t: c.update(p, t, query_ids=torch.arange(t.shape[0])), "exact test"),
])
def test_bad_input_is_named_and_changes_nothing(make, update, match):
    preds, target = _data(7, rows=8)
    if update is None:
        with pytest.raises(ValueError, match=match):
            make()
        return
    compare = make()
    before = {name: getattr(compare, name).clone() for name in compare._defaults}
    with pytest.raises(ValueError, match=match):
        update(compare, preds, target)
    for name, value in before.items():
        assert torch.equal(getattr(compare, name), value)


def test_null_comparisons_reject_at_about_alpha():
    """Two models with the same per-query distribution: over 500 simulated comparisons of 60 queries each
    (queries 60 s .. 60 s + 59 of simulation s), every test rejects at alpha = 0.05 about 5% of the time
    (within [0.025, 0.085], about 3 standard errors)."""
    gen = torch.Generator().manual_seed(8)
    simulations, rows = 500, 60
    rejected = {test: 0 for test in ("student", "fisher", "bootstrap", "tukey")}
    for s in range(simulations):
        target = torch.zeros(rows, 20, dtype=torch.long)
        target[:, :3] = 1
        preds = [torch.randn(rows, 20, generator=gen) + 0.5 * target for _ in range(2)]
        for test in rejected:
            compare = tre.ModelComparison(["ndcg@10"], models=["a", "b"], test=test, replicates=400, seed=s)
            compare.update(preds, target, query_ids=torch.arange(s * rows, (s + 1) * rows))
            rejected[test] += float(compare.compute()["ndcg@10/a_vs_b/p_value"]) <= 0.05
    for test, count in rejected.items():
        assert 0.025 <= count / simulations <= 0.085, (test, count)


def _rank(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        preds, target = _data(9)
        results = {}
        for test in ("student", "fisher", "bootstrap", "tukey"):
            compare = tre.ModelComparison(KEYS, models=MODELS, test=test, replicates=200)
            for start in range(rank * 16, 240, world * 16):  # batches dealt round robin
                rows = slice(start, start + 16)
                compare.update([p[rows] for p in preds], target[rows], query_ids=torch.arange(240)[rows])
            results[test] = {key: float(value) for key, value in compare.compute().items()}
        torch.save(results, os.path.join(out, f"{rank}.pt"))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_three_processes_equal_one(tmp_path):
    mp.start_processes(_rank, args=(3, free_port(), str(tmp_path)), nprocs=3, join=True,
                       start_method=FRESH_START_METHOD)
    preds, target = _data(9)
    for test in ("student", "fisher", "bootstrap", "tukey"):
        alone = _run(test, preds, target, splits=(0, 240), replicates=200)
        for rank in range(3):
            got = torch.load(tmp_path / f"{rank}.pt")[test]
            for key, value in alone.items():
                assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), (test, rank, key)


def test_a_checkpoint_loads_into_the_same_comparison_and_no_other():
    preds, target = _data(10, rows=30)
    source = tre.ModelComparison(KEYS, models=MODELS, test="fisher", replicates=64)
    source.update(preds, target, query_ids=torch.arange(30))
    source.persistent(True)
    same = tre.ModelComparison(KEYS, models=MODELS, test="fisher", replicates=64)
    same.persistent(True)
    same.load_state_dict(source.state_dict())
    assert {k: float(v) for k, v in same.compute().items()} == {k: float(v) for k, v in source.compute().items()}
    for other in (tre.ModelComparison(KEYS, models=MODELS, test="tukey", replicates=64),  # same state shapes
                  tre.ModelComparison(KEYS, models=MODELS, test="fisher", replicates=64, seed=1)):
        other.persistent(True)
        before = {name: getattr(other, name).clone() for name in other._defaults}
        with pytest.raises(ValueError, match="configuration"):
            other.load_state_dict(source.state_dict())
        with pytest.raises(ValueError, match="configuration"):
            other.merge_state(source)
        assert all(torch.equal(getattr(other, name), value) for name, value in before.items())


def test_a_failed_update_then_a_good_one_counts_the_good_one_and_bf16_scores_rank_as_float32():
    preds, target = _data(11, rows=30)
    halves = [p.to(torch.bfloat16) for p in preds]  # rounding makes ties among the scores
    compare = tre.ModelComparison(KEYS, models=MODELS, test="bootstrap", replicates=64)
    with pytest.raises(ValueError, match="query_ids"):
        compare.update(halves, target)
    compare.update(halves, target, query_ids=torch.arange(30))
    alone = tre.ModelComparison(KEYS, models=MODELS, test="bootstrap", replicates=64)
    alone.update([h.float() for h in halves], target, query_ids=torch.arange(30))
    got, want = compare.compute(), alone.compute()
    assert {k: float(v) for k, v in got.items()} == pytest.approx({k: float(v) for k, v in want.items()}, abs=1e-12)
