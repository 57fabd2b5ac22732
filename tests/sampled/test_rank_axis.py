"""The rank axis (``torchrec_eval/sampled/rank_axis.py``) against the sums it replaces: every estimator built
on a few thousand weighted ranks equals the rank-by-rank construction (numpy and scipy over all n ranks,
``tests/reference/sampled.py``) to 1e-9 relative wherever that can still be computed, and at n = 10^9 and
10^10, where it cannot, equals the continuous limit of the same sums (Beta integrals)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import gammaln
from scipy.stats import hypergeom

import torchrec_eval as tre
from tests.reference import sampled as ref
from torchrec_eval.sampled import estimators as E
from torchrec_eval.sampled.constrained import constrained_rows
from torchrec_eval.sampled.rank_axis import EXACT_ITEMS, discrete_gauss, rank_axis
from torchrec_eval.sampled.transitions import binomial_gram

REQUESTS = [("ndcg", 10), ("recall", 50), ("mrr", None), ("auc", None), ("ndcg", None)]


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / np.abs(want).max())


def test_the_discrete_gauss_rule_sums_polynomials_of_degree_below_twice_its_nodes_exactly():
    lengths = torch.tensor([25, 1000, 10**6])
    nodes, weights = discrete_gauss(lengths, 12)
    for row, length in enumerate(lengths.tolist()):
        x = np.arange(length, dtype=np.float64) / length  # scaled: the sums stay in float64's range
        for degree in (0, 1, 5, 23):
            want = float((x ** degree).sum())
            got = float((weights[row] * (nodes[row] / length) ** degree).sum())
            assert got == pytest.approx(want, rel=1e-12), (length, degree)
    assert bool(((nodes >= 0) & (nodes <= lengths.unsqueeze(1) - 1)).all())


@pytest.mark.parametrize("n", [10**4, 10**6, 10**9, 10**10, 2**53 - 1])
@pytest.mark.parametrize("m", [1, 100, 1000])
def test_the_axis_stands_for_every_rank_with_few_nodes(n, m):
    axis = rank_axis(n, m, (10, 50))
    assert not axis.exact and len(axis) < 4000
    assert float(axis.weights.sum()) == pytest.approx(n, rel=1e-13)
    assert float(axis.ranks.min()) == 1 and float(axis.ranks.max()) <= n
    assert bool((axis.weights > 0).all()) and bool((axis.ranks.diff() > 0).all())
    assert axis.ranks[axis.ranks <= 16].tolist() == list(range(1, 17))  # the head, rank by rank


def test_a_small_catalogue_is_summed_rank_by_rank():
    axis = rank_axis(EXACT_ITEMS, 100)
    assert axis.exact and axis.ranks.tolist() == list(range(1, EXACT_ITEMS + 1))
    assert not rank_axis(EXACT_ITEMS + 1, 100).exact


@pytest.mark.parametrize(("n", "m"), [(10**5, 100), (10**5, 10), (8192, 1000)])
def test_the_corrections_equal_the_rank_by_rank_sums(n, m):
    a = ref.transition(n, m, True)
    r = np.arange(1, n + 1)
    b = np.stack([ref.metric(family, r, k, n) for family, k in REQUESTS], axis=1)
    np.testing.assert_allclose(binomial_gram(n, m).numpy(), a.T @ a / n, rtol=1e-9, atol=1e-12 * (a.T @ a / n).max())
    system, targets = E.correction_system(REQUESTS, n, m, 0.01)
    gram = a.T @ a / n
    want_system = 0.99 * gram + 0.01 * np.diag(gram.sum(1))
    assert _relative(system.numpy(), want_system) < 1e-9
    assert _relative(targets.numpy(), a.T @ b / n) < 1e-9
    want = np.linalg.solve(want_system, a.T @ b / n).T
    assert _relative(E.bias_variance_rows(REQUESTS, n, m, 0.01).numpy(), want) < 1e-9


@pytest.mark.parametrize(("n", "m"), [(20_000, 30), (5000, 200)])
def test_without_replacement_the_gram_equals_the_hypergeometric_sums(n, m):
    """scipy's hypergeometric pmf over 10^6 cells takes seconds: the same pmf from log-gamma functions."""
    j, r = np.arange(m + 1)[None, :], np.arange(1, n + 1)[:, None]
    possible = (j <= r - 1) & (m - j <= n - r)
    log = (gammaln(r) - gammaln(j + 1) - gammaln(np.maximum(r - j, 1)) + gammaln(n - r + 1)
           - gammaln(m - j + 1) - gammaln(np.maximum(n - r - m + j + 1, 1)) - gammaln(n) + gammaln(m + 1)
           + gammaln(n - m))
    a = np.where(possible, np.exp(np.where(possible, log, 0.0)), 0.0)
    some = np.arange(1, n + 1, n // 7)[:, None]
    np.testing.assert_allclose(a[some[:, 0] - 1], hypergeom.pmf(j, n - 1, some - 1, m), rtol=1e-9, atol=1e-300)
    system, targets = E.correction_system([("ndcg", 10), ("auc", None)], n, m, 1.0, replacement=False)
    assert _relative(system.numpy(), np.diag((a.T @ a / n).sum(1))) < 1e-9
    b = np.stack([ref.metric("ndcg", np.arange(1, n + 1), 10, n), ref.metric("auc", np.arange(1, n + 1), None, n)], 1)
    assert _relative(targets.numpy(), a.T @ b / n) < 1e-9


def test_the_least_bias_correction_is_numpys_least_squares_where_a_is_well_conditioned():
    n, m = 50_000, 8
    a = ref.transition(n, m, True) / math.sqrt(n)
    b = ref.metric("ndcg", np.arange(1, n + 1), 10, n) / math.sqrt(n)
    want = np.linalg.lstsq(a, b, rcond=None)[0]
    got = E.least_bias_rows([("ndcg", 10)], n, m)[0].numpy()
    assert _relative(got, want) < 1e-9


def test_the_constrained_correction_is_scipys_on_the_whole_axis():
    n, m = 20_000, 20
    a = ref.transition(n, m, True)
    b = ref.metric("recall", np.arange(1, n + 1), 10, n)
    want = ref.constrained_nnls(a, b, 0.01)
    got = constrained_rows([("recall", 10)], n, m, 0.01)[0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-8)


@pytest.mark.parametrize(("n", "m", "skew"), [(30_000, 100, 3.0), (8192, 1000, 0.3)])
def test_em_equals_the_rank_by_rank_em(n, m, skew):
    """200 iterations of EM on the axis give the metrics of 200 iterations over all n ranks, to 1e-9: a model
    that ranks well (true ranks n u^3) and one that ranks badly (n u^0.3), where EM's fit is sharpest."""
    gen = torch.Generator().manual_seed(0)
    true = (torch.rand(2000, generator=gen) ** skew * n).long().clamp(1, n)
    a = ref.transition(n, m, True)
    s = torch.multinomial(torch.from_numpy(a[true.numpy() - 1]), 1, generator=gen).squeeze(1)
    histogram = torch.bincount(s, minlength=m + 1).double()
    pi = ref.em(histogram.numpy(), a, iterations=200)
    fitted = E.em_rank_distribution(histogram, n, m, iterations=200, tolerance=0.0, cutoffs=(10, 50))
    assert not fitted.axis.exact
    for family, k in REQUESTS:
        want = float(pi @ ref.metric(family, np.arange(1, n + 1), k, n))
        assert float(E.true_value(family, k, fitted)) == pytest.approx(want, rel=1e-9, abs=1e-12), (family, k)


def test_a_cut_off_the_axis_was_not_built_for_is_refused():
    fitted = E.em_rank_distribution(torch.tensor([5.0, 3.0, 2.0]), 10**6, 2, cutoffs=(10,))
    assert 0 < float(E.true_value("ndcg", 10, fitted)) < 1
    with pytest.raises(ValueError, match=r"`k`: .* cut-offs \(10,\).*k=20"):
        E.true_value("ndcg", 20, fitted)


@pytest.mark.parametrize("n", [10**9, 10**10])
@pytest.mark.parametrize("m", [10, 100, 1000])
def test_at_a_billion_items_the_gram_is_the_beta_integrals(n, m):
    r"""(1/n) sum_r p_r^t (1 - p_r)^{2m-t} -> B(t + 1, 2m - t + 1) as n grows, within O(m / n) (the sum's end
    terms): the power sums of every rank, where they cannot be summed."""
    t = np.arange(2 * m + 1)
    log_beta = np.array([math.lgamma(x + 1) + math.lgamma(2 * m - x + 1) - math.lgamma(2 * m + 2) for x in t])
    log_choose = np.array([math.lgamma(m + 1) - math.lgamma(x + 1) - math.lgamma(m - x + 1) for x in range(m + 1)])
    index = np.arange(m + 1)[:, None] + np.arange(m + 1)[None, :]
    want = np.exp(log_choose[:, None] + log_choose[None, :] + log_beta[index])
    np.testing.assert_allclose(binomial_gram(n, m).numpy(), want, rtol=1e-6 * m / 10, atol=1e-15)


def test_a_catalogue_past_float64s_integers_is_one_clear_error():
    with pytest.raises(ValueError, match=r"`num_items` must be at most 2\*\*53 - 1 = 9007199254740991 .* got "
                                         r"9007199254740992"):
        tre.SampledMetrics(["ndcg@10"], num_items=2**53, num_negatives=100)


def test_at_a_billion_items_the_posterior_mean_is_its_closed_form():
    r"""gamma = 1 is the posterior mean :math:`c_s = \sum_r P(s|r) M(r) / \sum_r P(s|r)`; at s = 1 the numerator
    of NDCG@10 is ten terms and the denominator :math:`\sum_{j=0}^{N} (1 - j/N)^m = N/(m+1) + 1/2 + m/(12N)`
    (Euler-Maclaurin, N = n - 1)."""
    n, m = 10**9, 100
    big_n = n - 1
    numerator = sum((1 - (r - 1) / big_n) ** m / math.log2(r + 1) for r in range(1, 11))
    want = numerator / (big_n / (m + 1) + 0.5 + m / (12 * big_n))
    assert float(E.bias_variance("ndcg", 10, n, m, 1.0)[0]) == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("estimator", ["bias_variance", "constrained", "em"])
def test_a_billion_item_catalogue_gets_every_estimate(estimator):
    """Held-out items at sampled ranks 1..8 among 100 negatives of 10^9 items: each estimator gives a value in
    [0, 1] at once (the corrections of such a rank: a true rank in the millions, NDCG@10 near 0)."""
    metric = tre.SampledMetrics(["ndcg@10", "recall@10", "mrr"], num_items=10**9, num_negatives=100,
                                estimator=estimator)
    scores = torch.rand(64, 101, generator=torch.Generator().manual_seed(0))
    scores[:, 0] = 1 - torch.arange(64) % 8 / 100  # the held-out item below 0..7 negatives (all others < 0.93)
    scores[:, 1:] = torch.where(scores[:, 1:] > 0.92, 0.5, scores[:, 1:])
    target = torch.zeros(64, 101, dtype=torch.bool)
    target[:, 0] = True
    metric.update(scores, target)
    values = metric.compute()
    assert set(values) == {"ndcg@10", "recall@10", "mrr"}
    for value in values.values():
        assert 0 <= float(value) < 0.01


def test_em_fits_a_catalogue_of_any_size_as_far():
    """EM stopped when no rank's mass moved more than 1e-10: at n = 10^10 every mass is below that, and the fit
    stopped after one iteration (Recall@10 n / 10 read 97 where it converges to 134.5). It now reads each
    rank's density n pi_r: the fit, and so AUC and Recall@10 scaled by n / 10, converge as n grows."""
    m = 100
    gen = torch.Generator().manual_seed(0)
    p = torch.rand(5000, generator=gen) ** 3
    histogram = torch.bincount(torch.binomial(torch.full_like(p, float(m)), p, generator=gen).long(),
                               minlength=m + 1).double()
    fits = {n: E.em_rank_distribution(histogram, n, m, cutoffs=(10,)) for n in (10**8, 10**10, 10**12)}
    auc = {n: float(E.true_value("auc", None, fit)) for n, fit in fits.items()}
    scaled = {n: float(E.true_value("recall", 10, fit)) * n / 10 for n, fit in fits.items()}
    assert auc[10**10] == pytest.approx(auc[10**8], rel=1e-9) and auc[10**12] == pytest.approx(auc[10**8], rel=1e-9)
    assert scaled[10**10] == pytest.approx(scaled[10**8], rel=1e-4)
    assert scaled[10**12] == pytest.approx(scaled[10**8], rel=1e-4)
