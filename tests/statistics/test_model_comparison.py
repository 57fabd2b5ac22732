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
from tests.reference.host_reads import NoHostReads
from torchrec_eval.comparison.statistics import replicate_sums
from torchrec_eval.comparison.statistics.replicates import poisson_weights
from torchrec_eval.syncs import simulate_accelerator

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
    # a repeated id draws one query's replicates twice: ids 0,0,1,1,.. moved a Fisher p from 0.05 to 0.04, and
    # one id for all gave a bootstrap p of 0
    *((lambda test=test: tre.ModelComparison(KEYS, models=MODELS, test=test, replicates=64),
       lambda c, p, t: c.update(p, t, query_ids=torch.tensor([3, 9, 4, 9, 5, 6, 7, 8])), r"repeat.*\[9\]")
      for test in ("fisher", "bootstrap", "tukey")),
    (lambda: tre.ModelComparison(KEYS, models=MODELS, test="bootstrap", replicates=64),
     lambda c, p, t: c.update(p, t, query_ids=torch.zeros(t.shape[0], dtype=torch.long)), r"repeat.*\[0\]"),
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


@pytest.mark.parametrize("test", ["fisher", "bootstrap", "tukey"])
def test_without_validate_args_an_update_reads_nothing_and_ids_are_not_checked(test):
    """``validate_args=False`` keeps every check that reads the host out of ``update`` (the accelerator path
    simulated on the CPU): the repeated ids are then not refused, as documented."""
    preds, target = _data(12, rows=16)

    def make():
        return tre.ModelComparison(KEYS, models=MODELS, test=test, replicates=100, validate_args=False)

    with simulate_accelerator():
        make().update(preds, target, query_ids=torch.arange(16))  # first-call constants
        compare = make()
        with NoHostReads():
            compare.update(preds, target, query_ids=torch.arange(16))
            compare.update(preds, target, query_ids=torch.zeros(16, dtype=torch.long))


def _numpy_bootstrap(d: np.ndarray, weights: np.ndarray, level: float) -> tuple[float, float, float]:
    """The Poisson bootstrap of the mean difference, written out: each replicate's weighted mean and standard
    deviation of the differences ``d`` [n] (two passes), the replicates of fewer than two draws dropped; the
    percentile interval (numpy's linear quantiles) and the studentized p."""
    n = len(d)
    draws = weights.sum(0)  # [R]
    keep = draws >= 2
    w, size = weights[:, keep], draws[keep]
    means = (w * d[:, None]).sum(0) / size
    sd = np.sqrt((w * (d[:, None] - means) ** 2).sum(0) / (size - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, (means - d.mean()) / (sd / np.sqrt(size)), np.where(means == d.mean(), 0.0, np.inf))
    observed = d.mean() / (d.std(ddof=1) / np.sqrt(n))
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return low, high, float(np.mean(np.abs(t) >= abs(observed)))


@pytest.mark.parametrize(("rows", "replicates", "seed"), [(5, 1000, 0), (5, 1000, 3), (10, 10_000, 1), (10, 10_000, 2),
                                                          (40, 2000, 0)])
def test_the_bootstrap_at_a_few_queries_is_the_numpy_bootstrap_of_resamples_of_two_draws_or_more(rows, replicates,
                                                                                                   seed):
    """At 5 queries every seed gave a NaN interval (a replicate of no draw: 0 / 0) and replicates of one draw
    counted as "not exceeding" (p too low); now both are over the replicates of at least two draws."""
    preds, target = _data(13 + seed, rows=rows, shifts=(0.0, 0.3, 0.1))
    ids = torch.arange(100, 100 + rows)
    compare = tre.ModelComparison(KEYS, models=MODELS, test="bootstrap", replicates=replicates, seed=seed, level=0.9)
    compare.update(preds, target, query_ids=ids)
    got = {key: float(value) for key, value in compare.compute().items()}
    weights = poisson_weights(ids, replicates, seed).numpy()  # the same draws: [n, R]
    assert (weights.sum(0) < 2).any() or rows == 40  # degenerate replicates are there to drop
    for key, values in _per_query(preds, target).items():
        for i, j in itertools.combinations(range(3), 2):
            low, high, p = _numpy_bootstrap(values[:, i] - values[:, j], weights, 0.9)
            name = f"{key}/{MODELS[i]}_vs_{MODELS[j]}"
            assert got[f"{name}/low"] == pytest.approx(low, rel=1e-12, abs=1e-12), name
            assert got[f"{name}/high"] == pytest.approx(high, rel=1e-12, abs=1e-12), name
            assert got[f"{name}/p_value"] == pytest.approx(p, abs=1e-12), name


def test_replicates_beyond_the_machines_memory_are_refused_with_the_bytes(monkeypatch):
    """``exact=True, replicates=2**40`` tried to allocate 17.6 TB, ``replicates=10**9`` died in the allocator."""
    with pytest.raises(ValueError, match=r"`replicates`=1,099,511,627,776 needs 35,184,372,088,832 bytes"):
        tre.ModelComparison(["ndcg@10"], models=["a", "b"], test="fisher", replicates=2**40, exact=True)
    monkeypatch.setattr(replicate_sums, "host_memory", lambda: 5 * 10**8)  # a machine of 500 MB
    # [R, K, M] sums of 10^7 replicates, 2 metrics and 3 models, and torchmetrics' copy: 2 * 8 * 6 * 10^7 bytes
    with pytest.raises(ValueError, match=r"`replicates`=10,000,000 needs 960,000,000 bytes .* 500,000,000 bytes"):
        tre.ModelComparison(KEYS, models=MODELS, test="tukey", replicates=10**7)
    # the bootstrap's [R, K] weights and [R, K, M, M] products too: 2 * 8 * (6 + 2 + 18) * 10^6 bytes
    with pytest.raises(ValueError, match=r"`replicates`=2,000,000 needs 832,000,000 bytes .* 500,000,000 bytes"):
        tre.ModelComparison(KEYS, models=MODELS, test="bootstrap", replicates=2 * 10**6)
    tre.ModelComparison(KEYS, models=MODELS, test="bootstrap", replicates=10**5)  # 83 MB: built
    tre.ModelComparison(KEYS, models=MODELS, test="student", replicates=10**12)  # no replicate state
