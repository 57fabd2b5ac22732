"""Confidence intervals and paired comparisons (torchrec_eval/comparison/uncertainty.py).

* Student-t quantiles against scipy and the closed forms;
* intervals read from the running sums equal the textbook interval over the per-query values;
* coverage by simulation: 200 repetitions as 200 groups of one metric (one update, one read), the
  share of intervals containing the true mean within a binomial tolerance of the nominal level;
* the paired comparison: its means equal two separate metrics, its interval covers the true
  difference, its p-value rejects about 5% of the time under the null and ~always under a real
  effect; merged (synced) states equal one process, including a real 2-process gloo run.
"""

import hashlib
import math
import os
import statistics

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torchrec_eval as tre
from tests.processes import FRESH_START_METHOD, free_port
from torchrec_eval import functional as F
from torchrec_eval.comparison.statistics import student_t_two_sided_p
from torchrec_eval.comparison.uncertainty import (
    PairedComparison,
    confidence_interval,
    interval_from_moments,
    t_quantile,
)
from torchrec_eval.metrics import configuration_guard
from torchrec_eval.suites import ranking as collection

REPS = 200
PER_REP = 30
# the share of 200 intervals that cover, nominal 0.95: sd = sqrt(.95 * .05 / 200) = 0.0154; 3.5 sd
TOLERANCE = 3.5 * math.sqrt(0.95 * 0.05 / REPS)


@pytest.fixture
def suites():
    return collection.RankingMetrics


# ----------------------------------------------------------------------------------------------
# quantiles and the interval formula
# ----------------------------------------------------------------------------------------------
def test_t_quantile_closed_forms_and_normal_limit():
    for p in (0.6, 0.9, 0.975, 0.999):
        two = 2 * (1 - p)
        assert float(t_quantile(p, torch.tensor(1.0))) == pytest.approx(
            math.tan(math.pi * (p - 0.5)), rel=1e-12
        )
        assert float(t_quantile(p, torch.tensor(2.0))) == pytest.approx(
            math.sqrt(2 / (two * (2 - two)) - 2), rel=1e-12
        )
        normal = statistics.NormalDist().inv_cdf(p)
        assert float(t_quantile(p, torch.tensor(1e8))) == pytest.approx(normal, rel=1e-6)
    assert torch.isnan(t_quantile(0.975, torch.tensor([0.0, -1.0]))).all()
    with pytest.raises(ValueError, match="`probability` must lie in"):
        t_quantile(0.3, torch.tensor(3.0))


def test_t_quantile_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    df = torch.tensor([1, 2, 3, 4, 5, 7, 10, 29, 100, 1e4], dtype=torch.float64)
    for p in (0.55, 0.8, 0.95, 0.975, 0.995, 0.9995):
        expected = torch.as_tensor(stats.t.ppf(p, df.numpy()))
        assert torch.allclose(t_quantile(p, df), expected, rtol=2e-5)


def test_interval_from_moments_is_the_textbook_interval():
    stats = pytest.importorskip("scipy.stats")
    x = torch.tensor([0.2, 0.9, 0.4, 0.4, 1.0, 0.0, 0.7], dtype=torch.float64)
    mean, low, high, stderr = interval_from_moments(x.sum(), (x * x).sum(), torch.tensor(7.0), level=0.9)
    lo, hi = stats.t.interval(0.9, 6, loc=x.mean().item(), scale=stats.sem(x.numpy()))
    assert float(stderr) == pytest.approx(float(x.std() / math.sqrt(7)), rel=1e-12)
    assert (float(low), float(high)) == pytest.approx((lo, hi), rel=1e-5)
    _, low, high, _ = interval_from_moments(x.sum(), (x * x).sum(), torch.tensor(7.0), method="normal")
    half = 1.959963984540054 * float(stderr)
    assert (float(low), float(high)) == pytest.approx((float(mean) - half, float(mean) + half), rel=1e-12)
    one = interval_from_moments(torch.tensor(0.5), torch.tensor(0.25), torch.tensor(1.0))
    assert float(one[0]) == 0.5 and math.isnan(float(one[1]))


# ----------------------------------------------------------------------------------------------
# confidence_interval on metrics
# ----------------------------------------------------------------------------------------------
def _expected_interval(values, level=0.95):
    values = values[~torch.isnan(values)]
    n = values.numel()
    return interval_from_moments(values.sum(), (values * values).sum(), torch.tensor(float(n)), level)[:3]


def test_interval_of_topk_metrics_matches_per_query_values(suites):
    generator = torch.Generator().manual_seed(0)
    preds = torch.rand(40, 12, generator=generator)
    target = torch.randint(0, 3, (40, 12), generator=generator) * (
        torch.rand(40, 12, generator=generator) < 0.3
    )
    suite = suites(["ndcg@5", "recall@3", "coverage@5"], options={"coverage": {"num_items": 12}})
    suite.update(preds[:25], target[:25])
    suite.update(preds[25:], target[25:])
    result = confidence_interval(suite, level=0.9)
    assert list(result) == ["ndcg@5", "recall@3"]  # coverage is catalogue-level: no interval
    for key, fn, kw in (("ndcg@5", F.ndcg, {"k": 5}), ("recall@3", F.recall, {"k": 3})):
        expected = _expected_interval(fn(preds, target, reduction="none", **kw), level=0.9)
        for a, e in zip(result[key], expected, strict=True):
            assert float(a) == pytest.approx(float(e), rel=1e-10)
        assert float(result[key][0]) == pytest.approx(float(suite.compute()[key]), rel=1e-12)


def test_interval_of_auc_matches_per_query_values():
    generator = torch.Generator().manual_seed(2)
    preds = torch.randint(0, 4, (30, 15), generator=generator).float()  # ties: AUC counts them 1/2
    target = torch.rand(30, 15, generator=generator) < 0.3
    suite = tre.RankingMetrics(["auc", "gauc", "mpr", "ndcg@5"])
    suite.update(preds, target)
    result = confidence_interval(suite)
    assert list(result) == ["auc", "ndcg@5"]  # GAUC and pooled MPR are ratios, not per-query means
    expected = _expected_interval(F.auc(preds, target, reduction="none"))
    for a, e in zip(result["auc"], expected, strict=True):
        assert float(a) == pytest.approx(float(e), rel=1e-10)


def test_a_total_has_no_interval_and_no_paired_comparison():
    """NumQ is a sum over queries, not a mean: no interval is formed for it (there are for the suite's means) and a
    paired comparison refuses it by name, every state of the suite unchanged."""
    generator = torch.Generator().manual_seed(4)
    preds, target = torch.randn(12, 8, generator=generator), torch.rand(12, 8, generator=generator) < 0.3
    suite = tre.RankingMetrics(["ndcg@3", "num_q"])
    suite.update(preds, target)
    assert list(confidence_interval(suite)) == ["ndcg@3"]
    assert suite.compute()["num_q"].item() == 12
    with pytest.raises(ValueError, match=r"\['num_q'\] are totals over queries, not means"):
        PairedComparison(["ndcg@3", "num_q"])
    with pytest.raises(ValueError, match=r"\['num_q'\] are totals over queries, not means"):
        tre.ModelComparison(["num_q"], models=["a", "b"])


def test_interval_of_beyond_per_query_metric():
    generator = torch.Generator().manual_seed(1)
    pop = torch.randint(1, 30, (10,), generator=generator).double()
    ranked = torch.stack([torch.randperm(10, generator=generator)[:4] for _ in range(20)])
    metric = tre_novelty = tre.Novelty(k=4, item_popularity=pop)
    tre_novelty.update(ranked_ids=ranked, target_ids=ranked[:, :1])
    info = -torch.log2(pop / pop.sum())
    per_query = info[ranked].mean(1)
    mean, low, high = confidence_interval(metric)["novelty@4"]
    for a, e in zip((mean, low, high), _expected_interval(per_query), strict=True):
        assert float(a) == pytest.approx(float(e), rel=1e-10)


def test_interval_per_group_equals_group_alone():
    generator = torch.Generator().manual_seed(2)
    preds = torch.rand(30, 8, generator=generator)
    target = torch.rand(30, 8, generator=generator) < 0.3
    groups = torch.randint(0, 3, (30,), generator=generator)
    grouped = tre.NDCG(k=4, num_groups=4)
    grouped.update(preds, target, groups=groups)
    mean, low, high = confidence_interval(grouped)["ndcg@4"]
    assert mean.shape == (4,) and torch.isnan(mean[3]) and torch.isnan(low[3])
    for g in range(3):
        alone = tre.NDCG(k=4)
        alone.update(preds[groups == g], target[groups == g])
        expected = confidence_interval(alone)["ndcg@4"]
        for a, e in zip((mean[g], low[g], high[g]), expected, strict=True):
            assert float(a) == pytest.approx(float(e), rel=1e-12)


def test_confidence_interval_errors():
    with pytest.raises(ValueError, match="`level` must be a number in"):
        confidence_interval(tre.NDCG(k=3), level=95)
    with pytest.raises(ValueError, match="`method` must be one of"):
        confidence_interval(tre.NDCG(k=3), method="bootstrap")
    with pytest.raises(ValueError, match="no mean-over-queries value"):
        confidence_interval(tre.Coverage(k=3, num_items=5))
    with pytest.raises(ValueError, match="must be a torchrec_eval MemberMetric"):
        confidence_interval(object())


# ----------------------------------------------------------------------------------------------
# coverage by simulation
# ----------------------------------------------------------------------------------------------
def _dcg1_batch(generator, gains_first, gains_second):
    """3 items, scores fixed so that item 0 is first: DCG@1 = the gain of item 0 (1 / log2(2) = 1)."""
    rows = gains_first.numel()
    preds = torch.tensor([[3.0, 2.0, 1.0]]).expand(rows, 3).contiguous()
    target = torch.stack([gains_first, gains_second, torch.ones(rows)], dim=1)
    return preds, target


@pytest.mark.parametrize("method,level", [("t", 0.95), ("normal", 0.95), ("t", 0.9)])
def test_interval_coverage_by_simulation(method, level):
    generator = torch.Generator().manual_seed(3)
    gains = torch.randint(0, 4, (REPS * PER_REP,), generator=generator).double()  # mean 1.5
    preds, target = _dcg1_batch(generator, gains, torch.zeros_like(gains))
    metric = tre.DCG(k=1, num_groups=REPS)
    metric.update(preds, target, groups=torch.arange(REPS).repeat_interleave(PER_REP))
    _, low, high = confidence_interval(metric, level=level, method=method)["dcg@1"]
    covered = ((low <= 1.5) & (1.5 <= high)).double().mean().item()
    tolerance = 3.5 * math.sqrt(level * (1 - level) / REPS)
    assert abs(covered - level) <= tolerance, covered
    # the check can fail: a 50% interval covers about half the time
    _, low, high = confidence_interval(metric, level=0.5, method=method)["dcg@1"]
    assert ((low <= 1.5) & (1.5 <= high)).double().mean().item() < level - tolerance


def test_paired_interval_coverage_and_p_values():
    generator = torch.Generator().manual_seed(4)
    rows = REPS * PER_REP
    groups = torch.arange(REPS).repeat_interleave(PER_REP)
    x = torch.randint(0, 4, (rows,), generator=generator).double()  # model a's top item: mean 1.5
    y = torch.randint(0, 3, (rows,), generator=generator).double()  # model b's top item: mean 1.0
    preds_a = torch.tensor([[3.0, 2.0, 1.0]]).expand(rows, 3)
    preds_b = torch.tensor([[2.0, 3.0, 1.0]]).expand(rows, 3)
    target = torch.stack([x, y, torch.ones(rows)], dim=1)
    compare = PairedComparison(["dcg@1"], num_groups=REPS)
    compare.update(preds_a, preds_b, target, groups=groups)
    result = compare.compute()
    covered = ((result["dcg@1/low"] <= 0.5) & (0.5 <= result["dcg@1/high"])).double().mean().item()
    assert abs(covered - 0.95) <= TOLERANCE, covered
    # under the null (both models' items i.i.d. uniform on {0..3}) the test rejects about 5% of the time
    y_null = torch.randint(0, 4, (rows,), generator=generator).double()
    null = PairedComparison(["dcg@1"], num_groups=REPS)
    null.update(preds_a, preds_b, torch.stack([x, y_null, torch.ones(rows)], dim=1), groups=groups)
    rejected = (null.compute()["dcg@1/p_value"] < 0.05).double().mean().item()
    assert abs(rejected - 0.05) <= 3.5 * math.sqrt(0.05 * 0.95 / REPS), rejected
    # a large effect is found with ~every sample of 30 queries
    strong = PairedComparison(["dcg@1"], num_groups=REPS)
    strong.update(preds_a, preds_b, torch.stack([x + 2, y, torch.ones(rows)], dim=1), groups=groups)
    assert (strong.compute()["dcg@1/p_value"] < 0.01).double().mean().item() > 0.95


# ----------------------------------------------------------------------------------------------
# paired comparison
# ----------------------------------------------------------------------------------------------
def test_paired_means_equal_separate_metrics(suites):
    generator = torch.Generator().manual_seed(5)
    preds_a, preds_b = torch.rand(50, 10, generator=generator), torch.rand(50, 10, generator=generator)
    target = torch.rand(50, 10, generator=generator) < 0.2
    pop = torch.arange(1, 11).double()
    compare = PairedComparison(
        lambda: suites(["ndcg@5", "novelty@3", "mrr@5"], options={"novelty": {"item_popularity": pop}})
    )
    compare.update(preds_a[:20], preds_b[:20], target[:20])
    compare.update(preds_a[20:], preds_b[20:], target[20:])
    result = compare.compute()
    assert list(result)[:6] == [
        "ndcg@5/a",
        "ndcg@5/b",
        "ndcg@5/diff",
        "ndcg@5/low",
        "ndcg@5/high",
        "ndcg@5/p_value",
    ]
    for key, fn in (("ndcg@5", F.ndcg), ("mrr@5", F.mrr)):
        a, b = fn(preds_a, target, k=5, reduction="none"), fn(preds_b, target, k=5, reduction="none")
        keep = ~torch.isnan(a)
        d = (a - b)[keep]
        assert float(result[f"{key}/a"]) == pytest.approx(float(a[keep].mean()), rel=1e-12)
        assert float(result[f"{key}/b"]) == pytest.approx(float(b[keep].mean()), rel=1e-12)
        expected = interval_from_moments(d.sum(), (d * d).sum(), torch.tensor(float(d.numel())))
        for name, e in zip(("diff", "low", "high"), expected, strict=False):
            assert float(result[f"{key}/{name}"]) == pytest.approx(float(e), rel=1e-10)
        scipy_stats = pytest.importorskip("scipy.stats")  # the paired t-test of an independent library
        want = scipy_stats.ttest_rel(a[keep].numpy(), b[keep].numpy()).pvalue
        assert float(result[f"{key}/p_value"]) == pytest.approx(float(want), rel=1e-9, abs=1e-14)
    assert float(result["novelty@3/a"]) == pytest.approx(
        float(tre.Novelty(k=3, item_popularity=pop)(preds_a, target)), rel=1e-12
    )


def test_paired_ranked_form_and_identical_models():
    ranked = torch.tensor([[0, 1, 2], [2, 1, -1], [1, 0, 2]])
    target_ids = torch.tensor([[1], [2], [0]])
    compare = PairedComparison(["precision@2", "mrr@3"])
    compare.update(ranked_ids_a=ranked, ranked_ids_b=ranked, target_ids=target_ids)
    result = compare.compute()
    assert float(result["mrr@3/diff"]) == 0 and float(result["mrr@3/p_value"]) == 1.0
    assert float(result["mrr@3/low"]) == 0 and float(result["mrr@3/high"]) == 0


def test_paired_errors(suites):
    with pytest.raises(ValueError, match="catalogue-level"):
        PairedComparison(lambda: suites(["ndcg@3", "coverage@3"], options={"coverage": {"num_items": 4}}))
    with pytest.raises(ValueError, match="`level` must be"):
        PairedComparison(["ndcg@3"], level=1.5)
    with pytest.raises(ValueError, match="Unknown metric"):
        PairedComparison(["nope@3"])
    compare = PairedComparison(["ndcg@3"])
    with pytest.raises(ValueError, match="Pass both models' inputs"):
        compare.update(torch.rand(2, 4), None, torch.ones(2, 4))
    with pytest.raises(ValueError, match="`groups` must be given exactly"):
        compare.update(
            torch.rand(2, 4), torch.rand(2, 4), torch.ones(2, 4), groups=torch.zeros(2, dtype=torch.long)
        )
    with pytest.raises(ValueError, match="to the template metric"):
        PairedComparison(tre.NDCG(k=3), num_groups=2)


def test_paired_merged_states_equal_one_process():
    generator = torch.Generator().manual_seed(6)
    preds_a, preds_b = torch.rand(30, 9, generator=generator), torch.rand(30, 9, generator=generator)
    target = torch.rand(30, 9, generator=generator) < 0.3
    whole = PairedComparison(["ndcg@4", "hitrate@2"])
    whole.update(preds_a, preds_b, target)
    parts = [PairedComparison(["ndcg@4", "hitrate@2"]) for _ in range(2)]
    parts[0].update(preds_a[:11], preds_b[:11], target[:11])
    parts[1].update(preds_a[11:], preds_b[11:], target[11:])
    parts[0].merge_state(parts[1])
    for key, value in whole.compute().items():
        assert float(parts[0].compute()[key]) == pytest.approx(float(value), rel=1e-12, abs=1e-15), key



@pytest.mark.parametrize("other", [["ndcg@10"], ["mrr@5"]])  # sums of the same shapes as ["ndcg@5"]'s
def test_a_paired_comparison_refuses_the_sums_of_another_configuration(monkeypatch, other):
    """``merge_state`` of an NDCG@10 comparison into an NDCG@5 one blended the sums, and ``load_state_dict`` of
    its checkpoint said "All keys matched"; the ranks summed them at a sync. Each raises now, every state
    unchanged, and the same configuration still loads and merges."""
    generator = torch.Generator().manual_seed(8)
    a, b = torch.rand(12, 9, generator=generator), torch.rand(12, 9, generator=generator)
    target = torch.rand(12, 9, generator=generator) < 0.3
    mine, theirs = PairedComparison(["ndcg@5"]), PairedComparison(other)
    for metric in (mine, theirs):
        metric.update(a, b, target)
        metric.persistent(True)
    before = {name: getattr(mine, name).clone() for name in mine._defaults}
    with pytest.raises(ValueError, match="not made by this metric's configuration"):
        mine.load_state_dict(theirs.state_dict())
    with pytest.raises(ValueError, match="another configuration"):
        mine.merge_state(theirs)
    with pytest.raises(ValueError, match="another configuration"):
        mine.merge_state(theirs.metric_state)
    monkeypatch.setattr(configuration_guard, "_distributed", lambda: True)  # rank 1 holds `theirs`
    monkeypatch.setattr(configuration_guard, "_gather_codes", lambda code, group=None: [
        code, torch.tensor([int(hashlib.sha1(theirs._configuration_key().encode()).hexdigest()[:15], 16)])])
    monkeypatch.setattr(configuration_guard, "_gather_texts", lambda text, group=None: [text, text])
    with pytest.raises(ValueError, match="different configurations"):
        mine.sync(dist_sync_fn=lambda tensor, group=None: [tensor, tensor], distributed_available=lambda: True)
    assert all(torch.equal(getattr(mine, name), value) for name, value in before.items())
    monkeypatch.undo()
    same = PairedComparison(["ndcg@5"])
    same.persistent(True)
    same.load_state_dict(mine.state_dict())
    same.merge_state(mine)
    assert torch.equal(same.paired, 2 * mine.paired)


# ----------------------------------------------------------------------------------------------
# a real 2-process run: synced intervals, paired comparison and beyond metrics
# ----------------------------------------------------------------------------------------------
def _data():
    generator = torch.Generator().manual_seed(7)
    preds_a, preds_b = torch.rand(24, 10, generator=generator), torch.rand(24, 10, generator=generator)
    target = torch.rand(24, 10, generator=generator) < 0.3
    groups = torch.randint(0, 2, (24,), generator=generator)
    return preds_a, preds_b, target, groups


def _build():
    pop = torch.arange(1, 11).double()
    features = torch.eye(10)[:, :4] + 0.1
    metrics = {
        "ndcg": tre.NDCG(k=[3, 5], num_groups=2),
        "beyond": [
            tre.Coverage(k=4, num_items=10, num_groups=2),
            tre.InterListDiversity(k=4, num_items=10, num_groups=2),
            tre.GiniIndex(k=4, num_items=10, num_groups=2),
            tre.Entropy(k=4, num_items=10, num_groups=2),
            tre.IntraListDiversity(k=4, item_features=features, num_groups=2),
            tre.Novelty(k=4, item_popularity=pop, num_groups=2),
            tre.Serendipity(k=4, item_popularity=pop, num_groups=2),
            tre.AveragePopularity(k=4, item_popularity=pop, num_groups=2),
        ],
        "paired": PairedComparison(["ndcg@5", "mrr@5"], num_groups=2),
    }
    return metrics


def _evaluate(metrics, rows):
    preds_a, preds_b, target, groups = _data()
    metrics["ndcg"].update(preds_a[rows], target[rows], groups=groups[rows])
    for metric in metrics["beyond"]:
        metric.update(preds_a[rows], target[rows], groups=groups[rows])
    metrics["paired"].update(preds_a[rows], preds_b[rows], target[rows], groups=groups[rows])
    out = {
        f"ci/{key}/{i}": value
        for key, triple in confidence_interval(metrics["ndcg"]).items()
        for i, value in enumerate(triple)
    }
    for metric in metrics["beyond"]:
        out.update({f"beyond/{metric.value_keys[0]}": metric.compute()})
    out.update({f"paired/{key}": value for key, value in metrics["paired"].compute().items()})
    return out


def _worker(rank, world, port, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        rows = torch.arange(24)[[slice(0, 7), slice(7, 24)][rank]]
        result = _evaluate(_build(), rows)
        queue.put((rank, {key: value.tolist() for key, value in result.items()}))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_process_sync_equals_one_process():
    expected = {key: value.tolist() for key, value in _evaluate(_build(), torch.arange(24)).items()}
    port = free_port()
    # not fork: a forked child can inherit a locked intra-op thread pool of the parent and hang
    context = mp.get_context(FRESH_START_METHOD)
    queue = context.Queue()
    processes = [context.Process(target=_worker, args=(rank, 2, port, queue)) for rank in range(2)]
    for process in processes:
        process.start()
    try:
        results = dict(queue.get(timeout=120) for _ in processes)
        for process in processes:
            process.join(60)
            assert process.exitcode == 0
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
    for rank in range(2):
        assert results[rank].keys() == expected.keys()
        for key, value in expected.items():
            assert torch.allclose(
                torch.tensor(results[rank][key]), torch.tensor(value), rtol=1e-12, equal_nan=True
            ), (rank, key)


@pytest.mark.parametrize("queries", [2, 3, 4, 7, 30, 1200])
def test_the_p_value_is_the_paired_t_test(queries):
    """It was the normal approximation (p = 0.083 on the doctest's 4 queries, where the paired t-test
    of scipy gives 0.182): too small on few queries. ``method="normal"`` keeps the z-test."""
    scipy_stats = pytest.importorskip("scipy.stats")
    generator = torch.Generator().manual_seed(queries)
    preds_a, preds_b = torch.rand(queries, 8, generator=generator), torch.rand(queries, 8, generator=generator)
    target = torch.rand(queries, 8, generator=generator) < 0.3
    target[:, 0] = True  # every query counted by both models
    a, b = F.ndcg(preds_a, target, k=3, reduction="none"), F.ndcg(preds_b, target, k=3, reduction="none")
    for method in ("t", "normal"):
        compare = PairedComparison(["ndcg@3"], method=method)
        compare.update(preds_a, preds_b, target)
        got = float(compare.compute()["ndcg@3/p_value"])
        if method == "t":
            want = float(scipy_stats.ttest_rel(a.numpy(), b.numpy()).pvalue)
        else:
            d = (a - b).numpy()
            z = abs(d.mean()) / (d.std(ddof=1) / math.sqrt(queries))
            want = float(2 * scipy_stats.norm.sf(z))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-14), method


def test_student_t_two_sided_p_against_the_incomplete_beta():
    """P(|T| >= t) = I_{df / (df + t^2)}(df / 2, 1 / 2), evaluated by mpmath to 40 digits, on both sides
    of the closed form's limit (1,000 degrees of freedom)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    dfs = [1, 2, 3, 4, 5, 9, 30, 999, 1000, 1001, 5000, 10**5, 10**7]
    ts = [0.0, 1e-8, 0.1, 0.5, 1.0, 1.96, 2.5, 4.0, 6.0, 30.0, -2.0]
    grid = torch.tensor([[float(df), t] for df in dfs for t in ts], dtype=torch.float64)
    got = student_t_two_sided_p(grid[:, 1], grid[:, 0])
    for (df, t), value in zip(grid.tolist(), got.tolist(), strict=True):
        x = mpmath.mpf(df) / (df + mpmath.mpf(t) ** 2)
        want = float(mpmath.betainc(mpmath.mpf(df) / 2, mpmath.mpf(1) / 2, 0, x, regularized=True))
        assert abs(value - want) < 1e-13, (df, t, value, want)
        if want > 1e-6:
            assert abs(value - want) <= 1e-10 * want, (df, t, value, want)
    assert torch.isnan(student_t_two_sided_p(torch.tensor([1.0]), torch.tensor([0.0]))).all()
