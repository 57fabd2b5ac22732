"""Per-query rank estimates of ``SampledMetrics``: a catalogue size per query and popularity-sampled
negatives, against a brute force over the rows (each row's estimate written out in Python), against the
fact that Horvitz-Thompson's estimate is unbiased (AUC is linear in the rank, so its mean over many draws
is the exact AUC), and every refusal named with the state unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from tests.reference import sampled as ref

M = 9
METRICS = [("recall", 30), ("ndcg", 50), ("mrr", None), ("auc", None)]
KEYS = [family if k is None else f"{family}@{k}" for family, k in METRICS]


def _rows(seed: int, rows: int = 12) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows of 1 + M scores with ties, the held-out item in a random column, a catalogue size per row and a
    draw probability per negative."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, 5, (rows, M + 1), generator=gen).float()
    target = torch.zeros(rows, M + 1, dtype=torch.bool)
    target[torch.arange(rows), torch.randint(0, M + 1, (rows,), generator=gen)] = True
    sizes = torch.randint(M + 1, 400, (rows,), generator=gen)
    probabilities = torch.rand(rows, M + 1, generator=gen) * 0.01 + 1e-4
    return preds, target, sizes, probabilities


@pytest.mark.parametrize("ties", ["index", "pessimistic", "average"])
def test_a_catalogue_size_per_query_against_a_brute_force(ties):
    preds, target, sizes, _ = _rows(1)
    metric = tre.SampledMetrics(KEYS, num_items=None, num_negatives=M, estimator="rank_estimate", ties=ties)
    metric.update(preds[:5], target[:5], num_items=sizes[:5])
    metric.update(preds[5:], target[5:], num_items=sizes[5:])
    expected = {key: [] for key in KEYS}
    for scores, row, n in zip(preds.tolist(), target.tolist(), sizes.tolist(), strict=True):
        sampled = ref.possible_ranks(scores, row.index(True), ties)
        for (family, k), key in zip(METRICS, KEYS, strict=True):
            expected[key].append(np.mean([ref.metric(family, 1 + (n - 1) * (s - 1) / M, k, n) for s in sampled]))
    got = metric.compute()
    per_query = metric.per_query(preds, target, num_items=sizes)
    for key in KEYS:
        assert float(got[key]) == pytest.approx(np.mean(expected[key]), abs=1e-12)
        np.testing.assert_allclose(per_query[key].numpy(), expected[key], atol=1e-12)


def test_one_size_for_every_query_is_the_fixed_size_rank_estimate():
    preds, target, _, _ = _rows(2)
    varying = tre.SampledMetrics(KEYS, num_items=None, num_negatives=M, estimator="rank_estimate", ties="average")
    fixed = tre.SampledMetrics(KEYS, num_items=300, num_negatives=M, estimator="rank_estimate", ties="average")
    varying.update(preds, target, num_items=torch.full((preds.shape[0],), 300))
    fixed.update(preds, target)
    for key, value in fixed.compute().items():
        assert float(varying.compute()[key]) == pytest.approx(float(value), abs=1e-12)


@pytest.mark.parametrize("ties", ["index", "pessimistic", "average"])
def test_popularity_draws_against_a_brute_force(ties):
    preds, target, _, probabilities = _rows(3)
    metric = tre.SampledMetrics(KEYS, num_items=5000, num_negatives=M, estimator="rank_estimate",
                                sampling="popularity", ties=ties)
    metric.update(preds, target, negative_probabilities=probabilities)
    expected = {key: [] for key in KEYS}
    for scores, row, q in zip(preds.tolist(), target.tolist(), probabilities.tolist(), strict=True):
        j = row.index(True)
        above = sum(1 / q[i] for i, v in enumerate(scores) if i != j and v > scores[j])
        tied = [i for i, v in enumerate(scores) if i != j and v == scores[j]]
        counted = {"pessimistic": tied, "index": [i for i in tied if i < j], "average": tied}[ties]
        half = 0.5 if ties == "average" else 1.0
        rank = 1 + (above + half * sum(1 / q[i] for i in counted)) / M
        for (family, k), key in zip(METRICS, KEYS, strict=True):
            expected[key].append(float(ref.metric(family, np.array(rank), k, 5000)))
    for key, value in metric.compute().items():
        assert float(value) == pytest.approx(np.mean(expected[key]), abs=1e-12)


def test_the_popularity_rank_estimate_is_unbiased():
    """A held-out item at true rank 301 of n = 2,000 items, below the 300 most popular ones, with draw
    probabilities skewed to popular items; over 20,000 queries of m = 50 draws each, the mean estimated AUC
    (linear in the rank) is the exact AUC within 4 standard errors, while the uniform rank estimate of the
    same draws, which takes the popular negatives above for a large share of the catalogue, is far off."""
    n, m, queries, rank = 2000, 50, 20_000, 301
    gen = torch.Generator().manual_seed(0)
    popularity = torch.rand(n - 1, generator=gen) ** 4 + 1e-3  # the other items' draw weights
    probability = popularity / popularity.sum()
    above = torch.zeros(n - 1, dtype=torch.bool)
    above[popularity.argsort(descending=True)[: rank - 1]] = True  # a model that ranks popular items first
    draws = torch.multinomial(probability, queries * m, replacement=True, generator=gen).view(queries, m)
    preds = torch.cat([torch.zeros(queries, 1), torch.where(above[draws], 1.0, -1.0)], dim=1)
    target = torch.zeros(queries, m + 1, dtype=torch.bool)
    target[:, 0] = True
    q = torch.cat([torch.ones(queries, 1), probability[draws]], dim=1)
    weighted = tre.SampledMetrics(["auc"], num_items=n, num_negatives=m, estimator="rank_estimate",
                                  sampling="popularity")
    uniform = tre.SampledMetrics(["auc"], num_items=n, num_negatives=m, estimator="rank_estimate")
    weighted.update(preds, target, negative_probabilities=q)
    uniform.update(preds, target)
    exact = (n - rank) / (n - 1)
    values = weighted.per_query(preds, target, negative_probabilities=q)["auc"]
    assert abs(float(weighted.compute()["auc"]) - exact) < 4 * float(values.std()) / queries ** 0.5
    assert abs(float(uniform.compute()["auc"]) - exact) > 0.05


def test_naive_needs_no_size_nor_probabilities():
    preds, target, _, _ = _rows(4)
    metric = tre.SampledMetrics(["mrr"], num_items=None, num_negatives=M, estimator="naive")
    metric.update(preds, target)
    ranks = [ref.possible_ranks(s, t.index(True), "index")[0] for s, t in zip(preds.tolist(), target.tolist(),
                                                                                strict=True)]
    assert float(metric.compute()["mrr"]) == pytest.approx(np.mean([1 / r for r in ranks]), abs=1e-12)


@pytest.mark.parametrize(("kwargs", "update", "match"), [
    ({"num_items": None, "estimator": "rank_estimate"}, lambda m, p, t, n, q: m.update(p, t), "num_items"),
    ({"num_items": None, "estimator": "rank_estimate"},
     lambda m, p, t, n, q: m.update(p, t, num_items=n.clamp(max=M)), "at least m \\+ 1"),
    ({"num_items": None, "estimator": "rank_estimate"},
     lambda m, p, t, n, q: m.update(p, t, num_items=n.float()), "num_items"),
    ({"num_items": 500, "estimator": "rank_estimate", "sampling": "popularity"},
     lambda m, p, t, n, q: m.update(p, t), "negative_probabilities"),
    ({"num_items": 500, "estimator": "rank_estimate", "sampling": "popularity"},
     lambda m, p, t, n, q: m.update(p, t, negative_probabilities=q * 0), "negative_probabilities"),
    ({"num_items": 500, "estimator": "rank_estimate", "sampling": "popularity"},
     lambda m, p, t, n, q: m.update(p, t, negative_probabilities=q[:, :3]), "negative_probabilities"),
    ({"num_items": 500}, lambda m, p, t, n, q: m.update(p, t, num_items=n), "num_items"),
    ({"num_items": None, "estimator": "rank_estimate"}, lambda m, p, t, n, q: m.bootstrap_interval(), "bootstrap"),
])
def test_bad_per_query_inputs_are_named_and_change_nothing(kwargs, update, match):
    preds, target, sizes, probabilities = _rows(5)
    metric = tre.SampledMetrics(KEYS, num_negatives=M, **kwargs)
    before = {name: getattr(metric, name).clone() for name in metric._defaults}
    with pytest.raises(ValueError, match=match):
        update(metric, preds, target, sizes, probabilities)
    for name, value in before.items():
        assert torch.equal(getattr(metric, name), value)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"num_items": None, "estimator": "em"}, "estimator"),
    ({"num_items": 500, "estimator": "em", "sampling": "popularity"}, "estimator"),
    ({"num_items": 500, "estimator": "bias_variance", "sampling": "popularity"}, "estimator"),
    ({"num_items": None, "estimator": "naive", "audit": True}, "audit"),
    ({"num_items": 500, "estimator": "rank_estimate", "sampling": "popularity", "replacement": False}, "replacement"),
    ({"num_items": 500, "sampling": "stratified"}, "sampling"),
])
def test_settings_the_estimators_cannot_serve_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tre.SampledMetrics(KEYS, num_negatives=M, **kwargs)
