"""Sampled evaluation's math against the facts: scipy's distributions, the closed forms of the expected
sampled metrics, Monte-Carlo draws, Krichene & Rendle's published numbers, and independent solves of each
correction (``tests/reference/sampled.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from tests.reference import sampled as ref
from torchrec_eval.sampled import estimators as E
from torchrec_eval.sampled.active_set import ExplicitQuadratic, active_set_steps, finish
from torchrec_eval.sampled.constrained import constrained_rows
from torchrec_eval.sampled.transitions import binomial_gram, sampled_rank_probabilities

# Krichene & Rendle, KDD 2020: n = 10,000, five instances per recommender, their true ranks
KR_RANKS = {"A": [100] * 5, "B": [40, 40, 8437, 9266, 4482], "C": [212, 2, 743, 5342, 1548]}


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize(("n", "m"), [(12, 5), (300, 40), (2000, 100)])
def test_the_sampled_rank_distribution_is_scipys(n, m, replacement):
    ranks = torch.arange(1, n + 1)
    got = sampled_rank_probabilities(ranks, n, m, replacement).numpy()
    np.testing.assert_allclose(got, ref.transition(n, m, replacement), rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("n", [1000, 10000, 100000])
@pytest.mark.parametrize("m", [50, 100, 1000])
def test_the_expected_naive_metrics_have_their_closed_forms(n, m):
    if m > n - 1:
        pytest.skip("m sampled negatives need n > m items")
    ranks = torch.tensor([1, 2, 7, n // 3, n - 1, n])
    p = (ranks.double() - 1) / (n - 1)
    np.testing.assert_allclose(E.expected_naive("hitrate", 1, ranks, n, m).numpy(), ((1 - p) ** m).numpy(), atol=1e-12)
    without = [math.comb(n - r, m) / math.comb(n - 1, m) for r in ranks.tolist()]
    np.testing.assert_allclose(E.expected_naive("hitrate", 1, ranks, n, m, replacement=False).numpy(), without,
                               rtol=1e-9, atol=1e-14)
    for k in (1, 10, 100):
        np.testing.assert_allclose(E.expected_naive("recall", k, ranks, n, m).numpy(),
                                   stats.binom.cdf(k - 1, m, p.numpy()), atol=1e-12)
    rr = torch.where(ranks == 1, 1.0, (1 - (1 - p) ** (m + 1)) / ((m + 1) * p.clamp(min=1e-300)))
    np.testing.assert_allclose(E.expected_naive("mrr", None, ranks, n, m).numpy(), rr.numpy(), rtol=1e-9)
    for replacement in (True, False):  # the sampled AUC is unbiased under both models
        np.testing.assert_allclose(E.expected_naive("auc", None, ranks, n, m, replacement).numpy(),
                                   ((n - ranks.double()) / (n - 1)).numpy(), atol=1e-12)


def test_with_one_negative_every_metric_is_affine_in_the_rank():
    n, ranks = 500, torch.arange(1, 501)
    for family, k in (("ndcg", 10), ("mrr", None), ("recall", 5), ("precision", 3)):
        expected = E.expected_naive(family, k, ranks, n, 1)
        assert torch.allclose(expected.diff().diff(), torch.zeros(n - 2, dtype=torch.float64), atol=1e-15)


@pytest.mark.parametrize("replacement", [True, False])
def test_the_expectation_is_what_draws_give(replacement):
    rng = np.random.default_rng(0)
    n, m = 1000, 50
    draws = 100_000 if replacement else 30_000  # (without: a sort of every draw's n - 1 candidates)
    for r in (3, 40, 150):
        others = np.delete(np.arange(1, n + 1), r - 1)  # the negatives' true ranks
        if replacement:
            picked = rng.integers(0, n - 1, size=(draws, m))
        else:  # m distinct negatives per draw, 10,000 draws at a time (bounded memory)
            picked = np.concatenate([np.argsort(rng.random((10_000, n - 1)), axis=1)[:, :m]
                                     for _ in range(draws // 10_000)])
        s = 1 + (others[picked] < r).sum(1)
        values = ref.metric("ndcg", s, 10, m + 1)
        expected = float(E.expected_naive("ndcg", 10, torch.tensor([r]), n, m, replacement))
        assert abs(values.mean() - expected) < 3 * values.std() / math.sqrt(draws) + 1e-9


def test_krichene_and_rendles_running_example():
    n = 10_000
    exact = {name: [float(ref.metric(f, np.array(r), k, n).mean()) for f, k in (("auc", None), ("map", None),
                                                                                  ("ndcg", None), ("recall", 10))]
             for name, r in KR_RANKS.items()}
    assert [round(v, 3) for v in exact["A"]] == [0.990, 0.010, 0.150, 0.000]
    assert [round(v, 3) for v in exact["B"]] == [0.555, 0.010, 0.122, 0.000]
    assert [round(v, 3) for v in exact["C"]] == [0.843, 0.101, 0.208, 0.200]
    sampled = {name: [float(E.expected_naive(f, k, torch.tensor(r), n, 100).mean())
                      for f, k in (("map", None), ("ndcg", None), ("recall", 10))] for name, r in KR_RANKS.items()}
    assert [round(v, 3) for v in sampled["A"]] == [0.634, 0.727, 1.000]
    assert [round(v, 3) for v in sampled["B"]] == [0.340, 0.447, 0.400]
    assert [round(v, 3) for v in sampled["C"]] == [0.325, 0.459, 0.567]
    at_1000 = {name: round(float(E.expected_naive("recall", 10, torch.tensor(r), n, 1000).mean()), 3)
               for name, r in KR_RANKS.items()}
    assert at_1000 == {"A": 0.470, "B": 0.397, "C": 0.200}
    # the inversion: sampled Recall@10 and AP rank A first, the exact ones C
    assert max(sampled, key=lambda name: sampled[name][2]) == "A" and max(exact, key=lambda name: exact[name][3]) == "C"
    assert max(sampled, key=lambda name: sampled[name][0]) == "A" and max(exact, key=lambda name: exact[name][1]) == "C"


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("gamma", [0.0, 0.01, 0.5, 0.9])
@pytest.mark.parametrize(("family", "k"), [("ndcg", 10), ("recall", 5), ("mrr", None)])
def test_the_bias_variance_correction_is_its_least_squares_solution(family, k, gamma, replacement):
    n, m = 300, 10
    a = ref.transition(n, m, replacement)
    b = ref.metric(family, np.arange(1, n + 1), k, n)
    want = ref.bias_variance_lstsq(a, b, gamma)
    got = E.bias_variance(family, k, n, m, gamma, replacement).numpy()
    # the objective decides; the two solutions' objective values agree to 1e-12 and the vectors to 1e-6
    np.testing.assert_allclose(got, want, atol=1e-6)


FAMILIES_K = [("ndcg", 10), ("recall", 5), ("mrr", None), ("auc", None), ("map", 20)]


def _bias_squared(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    """K&R's bias^2 under the uniform prior: sum_r pi_r (A_r c - b_r)^2, pi_r = 1 / n."""
    return float(np.mean((a @ c - b) ** 2))


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize(("n", "m"), [(300, 10), (300, 40)])
def test_gamma_zero_is_the_least_squares_minimum_of_the_bias(n, m, replacement):
    """Where A = P(s | r) is well conditioned (cond(A) about 5e11 at n = 300, m = 40) the gamma = 0 correction's
    bias^2 is the minimum that numpy.linalg.lstsq and scipy.linalg.lstsq find on sqrt(pi) A itself (the Gram
    matrix's solve, whose condition number is cond(A)^2, was 1.2x to 10x above it at m = 40). AUC is affine in
    the rank: its minimum is 0 (round-off). To 1e-5 relative: at cond(A) = 5e11 the solvers' own minima move by
    about 1e-6 with the BLAS's thread count (one thread, as under xdist, against several)."""
    from scipy import linalg

    a = ref.transition(n, m, replacement)
    targets = np.stack([ref.metric(family, np.arange(1, n + 1), k, n) for family, k in FAMILIES_K], axis=1)
    numpy_c, scipy_c = np.linalg.lstsq(a, targets, rcond=None)[0], linalg.lstsq(a, targets)[0]
    for p, (family, k) in enumerate(FAMILIES_K):
        b = targets[:, p]
        minimum = _bias_squared(a, b, numpy_c[:, p])
        assert _bias_squared(a, b, scipy_c[:, p]) == pytest.approx(minimum, rel=1e-5, abs=1e-24)
        got = _bias_squared(a, b, E.bias_variance(family, k, n, m, 0.0, replacement).numpy())
        assert got == pytest.approx(minimum, rel=1e-5, abs=1e-24), (family, k)


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize(("n", "m"), [(1000, 50), (2000, 100)])
def test_past_float64s_conditioning_gamma_zero_is_no_worse_than_numpys_least_squares(n, m, replacement):
    """Past cond(A) = 1 / eps A's columns are dependent to float64 precision and no float64 solve attains the
    exact minimum; the gamma = 0 correction's bias^2 is at most numpy.linalg.lstsq's on sqrt(pi) A (the Gram
    matrix's solve was 1.4x to 5.8x above it at n = 2000, m = 100)."""
    a = ref.transition(n, m, replacement)
    targets = np.stack([ref.metric(family, np.arange(1, n + 1), k, n) for family, k in FAMILIES_K], axis=1)
    numpy_c = np.linalg.lstsq(a, targets, rcond=None)[0]
    got = E.bias_variance_rows(FAMILIES_K, n, m, 0.0, replacement).numpy()
    for p, (family, k) in enumerate(FAMILIES_K):
        b = targets[:, p]
        minimum = _bias_squared(a, b, numpy_c[:, p])
        assert _bias_squared(a, b, got[p]) <= minimum * (1 + 1e-9) + 1e-24, (family, k)


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("gamma", [0.0, 0.01, 0.2, 0.9])
@pytest.mark.parametrize(("family", "k"), [("ndcg", 10), ("recall", 5), ("mrr", None), ("auc", None)])
def test_the_constrained_correction_is_scipys_nonnegative_least_squares(family, k, gamma, replacement):
    n, m = 300, 10
    a = ref.transition(n, m, replacement)
    want = ref.constrained_nnls(a, ref.metric(family, np.arange(1, n + 1), k, n), gamma)
    got = constrained_rows([(family, k)], n, m, gamma, replacement)[0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-8)
    assert (np.diff(got) <= 0).all() and (got >= 0).all()


def test_the_constraints_bind_where_the_free_correction_breaks_them():
    """At gamma = 0.01 the free correction of Recall@5 goes below 0 and up again with s; the constrained one
    does neither, and its objective is no better than the free one's (the free one is the unconstrained
    optimum) but the same as scipy's constrained optimum."""
    n, m, gamma = 300, 10, 0.01
    free = E.bias_variance("recall", 5, n, m, gamma).numpy()
    assert free.min() < -0.1 and (np.diff(free) > 0).any()
    system, targets = E.correction_system([("recall", 5)], n, m, gamma)
    objective = lambda c: float(0.5 * c @ system.numpy() @ c - c @ targets.numpy()[:, 0])  # noqa: E731
    got = constrained_rows([("recall", 5)], n, m, gamma)[0].numpy()
    want = ref.constrained_nnls(ref.transition(n, m, True), ref.metric("recall", np.arange(1, n + 1), 5, n), gamma)
    assert objective(free) < objective(got) == pytest.approx(objective(want), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("replacement", [True, False])
def test_gamma_one_is_the_posterior_mean(replacement):
    n, m = 400, 20
    a = ref.transition(n, m, replacement)
    b = ref.metric("ndcg", np.arange(1, n + 1), 10, n)
    np.testing.assert_allclose(E.bias_variance("ndcg", 10, n, m, 1.0, replacement).numpy(), ref.posterior_mean(a, b),
                               atol=1e-12)


def test_the_rank_estimate():
    n, m = 1000, 100
    s = np.arange(1, m + 2)
    want = ref.metric("ndcg", 1 + (n - 1) * (s - 1) / m, 10, n)
    np.testing.assert_allclose(E.rank_estimate("ndcg", 10, n, m).numpy(), want, atol=1e-15)


@pytest.mark.parametrize("replacement", [True, False])
def test_em_is_a_plain_numpy_em(replacement):
    n, m = 200, 10
    a = ref.transition(n, m, replacement)
    histogram = np.array([30, 12, 9, 7, 5, 4, 3, 2, 2, 1, 1], dtype=float)
    want = ref.em(histogram, a, iterations=50)
    got = E.em_rank_distribution(torch.tensor(histogram), n, m, replacement, iterations=50, tolerance=0.0)
    assert got.axis.exact and got.axis.ranks.tolist() == list(range(1, n + 1))  # a small catalogue, rank by rank
    np.testing.assert_allclose(got.mass.numpy(), want, atol=1e-12)
    assert float(got.mass.sum()) == pytest.approx(1.0, abs=1e-12)


def test_em_takes_a_round_off_negative_as_zero_and_refuses_a_real_one():
    """A rank no query reached may hold -eps * the mass in a state of float64 sums: EM fits it as the 0 it is;
    a count truly below 0 (-1e-6 of the mass) is refused by name."""
    n, m = 200, 4
    histogram = torch.tensor([0.8386828, 0.26166, 1.0297, 0.94174, 0.0], dtype=torch.float64)
    want = ref.em(histogram.numpy(), ref.transition(n, m, True), iterations=50)
    bound = 4 * (m + 2) * torch.finfo(torch.float64).eps * float(histogram.sum())  # the documented slack
    for tiny in (-2.8e-17, -1.1e-16, -0.9 * bound):
        got = E.em_rank_distribution(torch.cat([histogram[:-1], torch.tensor([tiny], dtype=torch.float64)]), n, m,
                                     iterations=50, tolerance=0.0)
        np.testing.assert_allclose(got.mass.numpy(), want, atol=1e-12)
    for bad in (-1.1 * bound, -1e-6 * float(histogram.sum()), float("nan")):
        with pytest.raises(ValueError, match=r"`histogram` must hold m \+ 1 = 5 counts >= 0"):
            E.em_rank_distribution(torch.cat([histogram[:-1], torch.tensor([bad], dtype=torch.float64)]), n, m)


def test_em_recovers_the_true_metric_of_many_instances():
    """With many instances the EM estimate of NDCG@10 is closer to the exact value than the naive one."""
    n, m = 2000, 100
    gen = torch.Generator().manual_seed(0)
    ranks = (torch.rand(20_000, generator=gen) ** 3 * n).long().clamp(1, n)  # a model that ranks well
    a = sampled_rank_probabilities(ranks, n, m)
    s = torch.multinomial(a, 1, generator=gen).squeeze(1)
    histogram = torch.bincount(s, minlength=m + 1).double()
    exact = float(ref.metric("ndcg", ranks.numpy(), 10, n).mean())
    naive = float(histogram @ E.naive("ndcg", 10, m) / histogram.sum())
    estimate = float(E.true_value("ndcg", 10, E.em_rank_distribution(histogram, n, m, cutoffs=(10,))))
    assert abs(estimate - exact) < abs(naive - exact) / 5


@pytest.mark.parametrize(("call", "match"), [
    (lambda: E.naive("ndcg", 10, 0), "num_negatives"),
    (lambda: E.rank_estimate("ndcg", 10, 100, 100), "num_negatives"),
    (lambda: E.bias_variance("ndcg", 10, 100, 10, 1.5), "gamma"),
    (lambda: E.naive("coverage", 10, 10), "family"),
    (lambda: E.naive("auc", 10, 10), "k"),
    (lambda: E.em_rank_distribution(torch.ones(5), 100, 10), "histogram"),
])
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(("n", "m"), [(2, 1), (11, 10), (300, 1), (300, 7), (5000, 300)])
def test_the_gram_from_power_sums_is_the_product_of_scipy_transitions(n, m):
    a = ref.transition(n, m, True)
    np.testing.assert_allclose(binomial_gram(n, m).numpy(), a.T @ a / n, rtol=1e-10, atol=1e-300)


def test_a_suite_of_cut_offs_gets_each_metric_its_own_correction():
    """One pass over the ranks for several cut-offs reaches the largest of them."""
    n, m = 300, 10
    together = E.bias_variance_rows([("recall", 3), ("ndcg", 40), ("precision", 7)], n, m, 0.1)
    for row, (family, k) in zip(together, [("recall", 3), ("ndcg", 40), ("precision", 7)], strict=True):
        want = ref.bias_variance_lstsq(ref.transition(n, m, True), ref.metric(family, np.arange(1, n + 1), k, n), 0.1)
        np.testing.assert_allclose(row.numpy(), want, atol=1e-6)


def test_an_active_set_that_does_not_converge_says_so():
    matrix = torch.tensor([[1.0, 0.9], [0.9, 1.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="max_steps"):
        finish(active_set_steps(ExplicitQuadratic(matrix, torch.tensor([1.0, 1.0], dtype=torch.float64)), max_steps=0))
