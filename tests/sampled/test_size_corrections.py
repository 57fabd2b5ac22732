"""K&R's corrections with a catalogue size per query (issue 54): the interpolated rows against today's exact
construction of each size, ``SampledMetrics(num_items=None)`` (bias-variance and constrained) against a brute force
over the rows (each query's rows built for its own size), against the fixed-size estimator where every size is the
same, and a Monte-Carlo table: the mean over many draws is the estimator's expectation (the brute force's), and it
is far closer to the exact full-catalogue value than the naive one."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from scipy import stats

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import sampled as ref
from tests.reference.host_reads import HostRead, NoHostReads
from torchrec_eval.comparison.uncertainty import confidence_interval
from torchrec_eval.sampled.constrained import constrained_rows
from torchrec_eval.sampled.estimators import bias_variance_rows
from torchrec_eval.sampled.size_corrections import SizeCorrections
from torchrec_eval.syncs import simulate_accelerator

METRICS = [("ndcg", 10), ("recall", 20), ("mrr", None), ("auc", None)]
KEYS = [family if k is None else f"{family}@{k}" for family, k in METRICS]


def _rows_read(corrections: SizeCorrections, size: int, m: int) -> torch.Tensor:
    """[m + 1, P] the rows ``corrections`` gives ``size`` (each sampled rank once), read in a batch with 24 other
    sizes of its dyadic panel, so that the panel is built (a panel a batch holds few sizes of is not)."""
    low, high = max(1 << (size.bit_length() - 1), m + 1), 1 << size.bit_length()
    others = torch.linspace(low, high - 1, 24).long()
    mass = torch.cat([torch.eye(m + 1, dtype=torch.float64), torch.eye(m + 1, dtype=torch.float64)[:1].expand(24, -1)])
    return corrections.values(mass, torch.cat([torch.full((m + 1,), size), others]))[: m + 1]


@pytest.mark.parametrize(("m", "gamma"), [(10, 0.01), (40, 1.0), (40, 0.01)])
def test_every_size_reads_its_exact_rows_to_1e_9(m, gamma):
    """Sizes from m + 1 to 10^9 (narrow panels, where each size takes its own rows, and interpolated ones) against
    ``bias_variance_rows`` of that size."""
    rng = np.random.default_rng(m)
    sizes = sorted({*rng.integers(m + 1, 400, 6).tolist(),
                    *np.exp(rng.uniform(np.log(400), np.log(1e9), 14)).astype(np.int64).tolist()})
    corrections = SizeCorrections(functools.partial(bias_variance_rows, METRICS, num_negatives=m, gamma=gamma), m)
    for size in sizes:
        exact = bias_variance_rows(METRICS, size, m, gamma).T
        got = _rows_read(corrections, size, m)
        assert float((got - exact).abs().max()) <= 1e-9 * float(exact.abs().max()), size
    built = [fit for fit in corrections._panels.values() if not isinstance(fit, str)]
    assert built, "no size was interpolated: the test would not test the interpolation"


def test_the_constrained_rows_of_every_size_to_1e_9():
    """The constrained correction changes its active set at some sizes: the panels around those split (each
    checked), and every size reads its exact rows."""
    m = 12
    corrections = SizeCorrections(functools.partial(constrained_rows, METRICS, num_negatives=m, gamma=0.01), m)
    for size in np.geomspace(200, 3e6, 9).astype(np.int64).tolist():
        exact = constrained_rows(METRICS, size, m, 0.01).T
        got = _rows_read(corrections, size, m)
        assert float((got - exact).abs().max()) <= 1e-9 * float(exact.abs().max()), size
    assert any(fit == "split" for fit in corrections._panels.values()), "no panel split: the test would not test it"


def test_a_panel_is_built_once_it_would_serve_more_sizes_their_own_rows_than_building_costs():
    """17 nodes and 3 checks: a batch with 20 sizes of a panel gives them their own rows and builds nothing, one
    with 21 builds it, and so do batches of fewer once they would add up to more than 20 (the constrained rows
    at m = 100 and sizes 10^3..10^4 split every panel down to 64 sizes, so building each one a batch touched
    cost 39 s for 256 sizes)."""
    built = []
    corrections = SizeCorrections(functools.partial(bias_variance_rows, METRICS, num_negatives=10, gamma=0.01), 10)
    original = corrections._build
    corrections._build = lambda low, high: built.append((low, high)) or original(low, high)  # type: ignore[method-assign]
    mass = torch.eye(11, dtype=torch.float64)[:1].expand(21, -1)
    few, more = torch.arange(5000, 5020), torch.arange(5000, 5021)
    for size, row in zip(few.tolist(), corrections.values(mass[:20], few), strict=True):
        np.testing.assert_allclose(row.numpy(), bias_variance_rows(METRICS, size, 10, 0.01)[:, 0].numpy(), rtol=1e-12)
    assert built == []
    corrections.values(mass, more)
    assert built == [(4096, 8192)]
    later = SizeCorrections(functools.partial(bias_variance_rows, METRICS, num_negatives=10, gamma=0.01), 10)
    build_later = later._build
    later._build = lambda low, high: built.append((low, high)) or build_later(low, high)  # type: ignore[method-assign]
    later.values(mass[:12], torch.arange(6000, 6012))
    assert built == [(4096, 8192)]  # 12 sizes served their own rows ...
    later.values(mass[:12], torch.arange(7000, 7012))
    assert built == [(4096, 8192)] * 2  # ... and 12 more would be 24: the panel is built


def test_least_bias_rows_take_each_size_exactly():
    """gamma = 0 (K&R's least-bias rows) is no smooth function of n: every size its own exact rows."""
    corrections = SizeCorrections(functools.partial(bias_variance_rows, [("recall", 5)], num_negatives=12, gamma=0.0),
                                  12, smooth=False)
    mass = torch.eye(13, dtype=torch.float64)
    for size in (50, 5000, 123_457):
        assert torch.equal(corrections.values(mass, torch.full((13,), size)),
                           bias_variance_rows([("recall", 5)], size, 12, 0.0).T)


def _rows(seed: int, rows: int, m: int, sizes: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, 4, (rows, m + 1), generator=gen).float()
    target = torch.zeros(rows, m + 1, dtype=torch.bool)
    target[torch.arange(rows), torch.randint(0, m + 1, (rows,), generator=gen)] = True
    size = torch.tensor(sizes)[torch.randint(0, len(sizes), (rows,), generator=gen)]
    return preds, target, size


@pytest.mark.parametrize(("estimator", "ties"), [("bias_variance", "index"), ("bias_variance", "pessimistic"),
                                                  ("bias_variance", "average"), ("constrained", "index"),
                                                  ("constrained", "average")])
def test_a_size_per_query_against_a_brute_force(estimator, ties):
    m, gamma = 9, 0.01
    preds, target, sizes = _rows(1, 14, m, [30, 700, 5000, 90_001, 3_000_000])
    metric = tre.SampledMetrics(KEYS, num_items=None, num_negatives=m, estimator=estimator, gamma=gamma, ties=ties)
    metric.update(preds[:6], target[:6], num_items=sizes[:6])
    metric.update(preds[6:], target[6:], num_items=sizes[6:])
    expected = {key: [] for key in KEYS}
    build = bias_variance_rows if estimator == "bias_variance" else constrained_rows
    for scores, row, n in zip(preds.tolist(), target.tolist(), sizes.tolist(), strict=True):
        rows = build(METRICS, n, m, gamma).numpy()  # [P, m + 1], today's exact construction
        sampled = ref.possible_ranks(scores, row.index(True), ties)
        for i, key in enumerate(KEYS):
            expected[key].append(np.mean([rows[i, s - 1] for s in sampled]))
    got = metric.compute()
    per_query = metric.per_query(preds, target, num_items=sizes)
    for key in KEYS:
        assert float(got[key]) == pytest.approx(np.mean(expected[key]), rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(per_query[key].numpy(), expected[key], rtol=1e-9, atol=1e-12)
    intervals = confidence_interval(metric, level=0.9)  # Student-t over the per-query values, as scipy's
    for key in KEYS:
        sample = np.array(expected[key])
        low, high = stats.t.interval(0.9, len(sample) - 1, loc=sample.mean(), scale=stats.sem(sample))
        assert tuple(float(v) for v in intervals[key]) == pytest.approx((sample.mean(), low, high), rel=1e-9)


@pytest.mark.parametrize("estimator", ["bias_variance", "constrained"])
def test_a_size_per_query_without_replacement_against_a_brute_force(estimator):
    """Negatives drawn without replacement (refused with a size per query before): each query's correction is K&R's
    for the hypergeometric P(s | r) of its own size, as the brute force builds it; at sizes near m it is not the
    binomial one's."""
    m, gamma = 9, 0.01
    preds, target, sizes = _rows(3, 14, m, [30, 700, 5000, 90_001])
    metrics = {replacement: tre.SampledMetrics(KEYS, num_items=None, num_negatives=m, estimator=estimator,
                                               gamma=gamma, ties="index", replacement=replacement)
               for replacement in (False, True)}
    for metric in metrics.values():
        metric.update(preds, target, num_items=sizes)
    build = bias_variance_rows if estimator == "bias_variance" else constrained_rows
    expected = {key: [] for key in KEYS}
    for scores, row, n in zip(preds.tolist(), target.tolist(), sizes.tolist(), strict=True):
        rows = build(METRICS, n, m, gamma, replacement=False).numpy()
        (s,) = ref.possible_ranks(scores, row.index(True), "index")
        for i, key in enumerate(KEYS):
            expected[key].append(rows[i, s - 1])
    got, with_replacement = metrics[False].compute(), metrics[True].compute()
    for key in KEYS:
        assert float(got[key]) == pytest.approx(np.mean(expected[key]), rel=1e-9, abs=1e-12)
    assert max(abs(float(got[key]) - float(with_replacement[key])) for key in KEYS) > 1e-4


@pytest.mark.parametrize("n", [30, 300])
def test_the_rank_estimate_without_replacement_is_unbiased_for_the_rank(n):
    """Over scipy's hypergeometric P(s | r), the rank estimate's AUC (linear in the rank) averages to the exact AUC
    of every true rank r: r_hat = 1 + (n - 1)(s - 1) / m is unbiased for r without replacement too."""
    m = 9
    preds = torch.where(torch.arange(m + 1).unsqueeze(1) >= torch.arange(m + 1), 1.0, -1.0)
    preds[:, 0] = 0.0  # row s - 1: the held-out item in column 0, s - 1 negatives above it
    target = torch.zeros(m + 1, m + 1, dtype=torch.bool)
    target[:, 0] = True
    metric = tre.SampledMetrics(["auc"], num_items=None, num_negatives=m, estimator="rank_estimate",
                                replacement=False)
    values = metric.per_query(preds, target, num_items=torch.full((m + 1,), n))["auc"].numpy()
    for r in (1, 2, n // 3, n - 1, n):
        pmf = stats.hypergeom.pmf(np.arange(m + 1), n - 1, r - 1, m)  # negatives above, drawn from n - 1 items
        assert float(pmf @ values) == pytest.approx((n - r) / (n - 1), rel=1e-12, abs=1e-14)


def test_one_size_for_every_query_is_the_fixed_size_estimator():
    m = 20
    preds, target, _ = _rows(2, 30, m, [0])
    varying = tre.SampledMetrics(KEYS, num_items=None, num_negatives=m, ties="average")
    fixed = tre.SampledMetrics(KEYS, num_items=250_000, num_negatives=m, ties="average")
    varying.update(preds, target, num_items=torch.full((30,), 250_000))
    fixed.update(preds, target)
    for key, value in fixed.compute().items():
        assert float(varying.compute()[key]) == pytest.approx(float(value), rel=1e-9)


def test_monte_carlo_the_mean_is_the_expectation_and_far_less_biased_than_naive():
    """20,000 users, each with a catalogue of its own (12 sizes from 2,000 to 50,000 items: the items it has not
    interacted with) and its held-out item at a true rank drawn with a heavy head; m = 100 negatives drawn
    uniformly with replacement. The corrected mean is its expectation (sum over s of P(s | r, n_q) c^(n_q)_s,
    from today's exact rows of each size) within 4 standard errors, and its error against the exact full-catalogue
    value is a small fraction of the naive estimate's."""
    m, queries, gamma = 100, 20_000, 0.01
    rng = np.random.default_rng(0)
    size_set = np.unique(np.geomspace(2000, 50_000, 12).astype(np.int64))
    sizes = rng.choice(size_set, queries)
    ranks = np.minimum(1 + rng.geometric(0.002, queries) - 1, sizes)  # true ranks, most near the top
    above = rng.binomial(m, (ranks - 1) / (sizes - 1))  # negatives above the held-out item
    preds = np.where(np.arange(m + 1)[None, 1:] <= above[:, None], 1.0, -1.0)
    preds = torch.tensor(np.concatenate([np.zeros((queries, 1)), preds], axis=1))
    target = torch.zeros(queries, m + 1, dtype=torch.bool)
    target[:, 0] = True
    keys, requests = ["ndcg@10", "recall@10"], [("ndcg", 10), ("recall", 10)]
    corrected = tre.SampledMetrics(keys, num_items=None, num_negatives=m, gamma=gamma)
    naive = tre.SampledMetrics(keys, num_items=None, num_negatives=m, estimator="naive")
    corrected.update(preds, target, num_items=torch.tensor(sizes))
    naive.update(preds, target)
    per_query = corrected.per_query(preds, target, num_items=torch.tensor(sizes))
    expectation = np.zeros((queries, len(keys)))
    for n in size_set:
        at = sizes == n
        rows = bias_variance_rows(requests, int(n), m, gamma).numpy()  # [P, m + 1]
        probabilities = stats.binom.pmf(np.arange(m + 1)[None, :], m, ((ranks[at] - 1) / (n - 1))[:, None])
        expectation[at] = probabilities @ rows.T
    for i, (key, (family, k)) in enumerate(zip(keys, requests, strict=True)):
        exact = np.mean([float(ref.metric(family, np.array(r), k, int(n))) for r, n in zip(ranks, sizes, strict=True)])
        got = float(corrected.compute()[key])
        standard_error = float(per_query[key].std()) / queries ** 0.5
        assert abs(got - expectation[:, i].mean()) < 4 * standard_error, key
        assert abs(got - exact) < 0.1 * abs(float(naive.compute()[key]) - exact), key


def build(ties: str) -> MetricCase:
    """Three uneven batches of rows with their own sizes (narrow panels and interpolated ones), through the
    harness: splits, forward, checkpoints, pickles, merges, moves, a collection, inference mode."""
    m, gamma = 9, 0.25
    batches, expected = [], {key: [] for key in KEYS}
    for seed, rows in ((11, 5), (12, 1), (13, 8)):
        preds, target, sizes = _rows(seed, rows, m, [40, 999, 31_000, 7_654_321])
        batches.append({"preds": preds, "target": target, "num_items": sizes})
        for scores, row, n in zip(preds.tolist(), target.tolist(), sizes.tolist(), strict=True):
            values = bias_variance_rows(METRICS, n, m, gamma).numpy()
            sampled = ref.possible_ranks(scores, row.index(True), ties)
            for i, key in enumerate(KEYS):
                expected[key].append(np.mean([values[i, s - 1] for s in sampled]))
    return MetricCase(
        name=f"size-per-query/{ties}",
        make=lambda: tre.SampledMetrics(KEYS, num_items=None, num_negatives=m, gamma=gamma, ties=ties),
        batches=batches,
        expected={key: float(np.mean(values)) for key, values in expected.items()},
        atol=1e-9,
    )


@pytest.mark.parametrize("ties", ["average"])  # (the brute force above covers the other tie orders)
def test_the_harness(ties):
    check_metric(build(ties))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, ["pessimistic"], str(tmp_path))


def test_the_sizes_are_the_one_host_read():
    """On the accelerator path (``validate_args=False``) sampled evaluation reads nothing on the host, but for the
    corrections of each query's own size, which read the sizes to pick their rows: docs/host-syncs.md lists it."""
    preds, target = torch.randn(8, 21), torch.zeros(8, 21, dtype=torch.bool)
    target[:, 0] = True
    sizes = {"num_items": torch.full((8,), 5000)}
    for settings, inputs in (({"num_items": 1000}, {}), ({"num_items": None, "estimator": "rank_estimate"}, sizes)):
        metric = tre.SampledMetrics(["ndcg@10", "mrr"], num_negatives=20, validate_args=False, **settings)
        with simulate_accelerator(), NoHostReads():
            metric.update(preds, target, **inputs)
    metric = tre.SampledMetrics(["ndcg@10", "mrr"], num_items=None, num_negatives=20, validate_args=False)
    with pytest.raises(HostRead, match="unique|tolist"), simulate_accelerator(), NoHostReads():  # the sizes
        metric.update(preds, target, **sizes)


def test_the_half_of_a_panel_that_failed_must_serve_twice_the_sizes():
    """Rows that are no smooth function of n (here they alternate with its parity) fail every panel's check: the
    panel [4096, 8192) is built and splits, and its half is built only for more than 40 of a batch's sizes (the
    constrained rows at m = 1000 split nearly every panel: a first batch took 179 s, 84 s with this)."""
    built = []
    corrections = SizeCorrections(lambda n: torch.tensor([[float(n % 2), 1.0]], dtype=torch.float64), 1)
    build = corrections._build
    corrections._build = lambda low, high: built.append((low, high)) or build(low, high)  # type: ignore[method-assign]
    mass = torch.tensor([[1.0, 0.0]], dtype=torch.float64).expand(41, -1)
    sizes = torch.arange(4100, 4100 + 2 * 41, 2) + 1  # odd sizes in the lower half [4096, 6144)
    values = corrections.values(mass[:40], sizes[:40])
    assert built == [(4096, 8192)] and corrections._panels[(4096, 8192)] == "split"
    assert values[:, 0].tolist() == [1.0] * 40  # each odd size its own exact rows
    corrections.values(mass, sizes + 82)  # 41 more odd sizes in that half: 81 served, over 40
    assert built == [(4096, 8192), (4096, 6144)]
