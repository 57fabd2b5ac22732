"""The bootstrap interval of ``SampledMetrics``: its redraws are multinomial draws of the histogram (their
moments against the multinomial's), and its bounds are numpy's quantiles of the estimator run on each redraw
by the independent references (``tests/reference/sampled.py``: numpy least squares, a plain numpy EM)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from tests.reference import sampled as ref
from torchrec_eval.sampled.bootstrap import resampled_histograms

N, M = 150, 6


def test_the_redraws_are_multinomial():
    histogram = torch.tensor([40.0, 25.0, 0.0, 15.0, 10.0, 6.0, 4.0])
    draws = resampled_histograms(histogram, 20_000, torch.Generator().manual_seed(1)).numpy()
    assert (draws.sum(1) == 100).all() and (draws[:, 2] == 0).all()
    p = histogram.numpy() / 100
    np.testing.assert_array_less(np.abs(draws.mean(0) - 100 * p), 4 * np.sqrt(100 * p * (1 - p) / 20_000) + 1e-12)
    covariance = np.cov(draws.T)
    want = 100 * (np.diag(p) - np.outer(p, p))
    np.testing.assert_allclose(covariance, want, atol=0.05 * want.max())


def _metric(estimator: str, seed: int = 0, rows: int = 120) -> tre.SampledMetrics:
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randn(rows, M + 1, generator=gen)
    preds[:, 0] += 1.0
    target = torch.zeros(rows, M + 1, dtype=torch.bool)
    target[:, 0] = True
    metric = tre.SampledMetrics(["ndcg@5", "mrr"], num_items=N, num_negatives=M, estimator=estimator, gamma=0.1)
    metric.update(preds, target)
    return metric


@pytest.mark.parametrize("estimator", ["bias_variance", "em"])
def test_the_bounds_are_quantiles_of_the_reference_estimates_on_the_same_redraws(estimator):
    metric = _metric(estimator)
    got = metric.bootstrap_interval(level=0.9, replicates=40, seed=7)
    draws = resampled_histograms(metric.sampled_ranks[0], 40, torch.Generator().manual_seed(7)).numpy()
    a = ref.transition(N, M, True)
    for (family, k), key in ((("ndcg", 5), "ndcg@5"), (("mrr", None), "mrr")):
        truth = ref.metric(family, np.arange(1, N + 1), k, N)
        if estimator == "em":
            estimates = [ref.em(h, a) @ truth for h in draws]
        else:
            c = ref.bias_variance_lstsq(a, truth, 0.1)
            estimates = list(draws @ c / draws.sum(1))
        estimate, low, high = got[key]
        assert float(estimate) == pytest.approx(float(metric.compute()[key]), abs=1e-12)
        assert float(low) == pytest.approx(np.quantile(estimates, 0.05), abs=1e-6)
        assert float(high) == pytest.approx(np.quantile(estimates, 0.95), abs=1e-6)


def test_groups_get_their_own_intervals_and_an_empty_group_nan():
    gen = torch.Generator().manual_seed(2)
    preds = torch.randn(50, M + 1, generator=gen)
    target = torch.zeros(50, M + 1, dtype=torch.bool)
    target[:, 0] = True
    metric = tre.SampledMetrics(["ndcg@5"], num_items=N, num_negatives=M, estimator="naive", num_groups=3)
    metric.update(preds, target, groups=torch.arange(50) % 2)
    estimate, low, high = metric.bootstrap_interval(replicates=300)["ndcg@5"]
    assert estimate.shape == (3,) and bool((low[:2] < estimate[:2]).all() and (estimate[:2] < high[:2]).all())
    assert bool(low[2].isnan() and high[2].isnan() and estimate[2].isnan())


@pytest.mark.parametrize(("kwargs", "match"), [({"level": 1.5}, "level"), ({"replicates": 0}, "replicates"),
                                               ({"seed": -1}, "seed")])
def test_bad_bootstrap_arguments_are_named(kwargs, match):
    metric = _metric("naive")
    with pytest.raises(ValueError, match=match):
        metric.bootstrap_interval(**kwargs)
