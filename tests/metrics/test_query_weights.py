"""Per-query weights in the ranking metrics (``weighted=True``, ``update(..., sample_weight=w)``).

Oracles: an integer weight is the same as repeating the query that many times (0 = dropping it), for
every family (means over queries and pooled ratios alike); real weights give numpy's weighted average
of the per-query values of the functional API.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.metrics.base import fingerprint

NAMES = ["ndcg@5", "map@5", "recall@3", "precision@3", "mrr@5", "hitrate@2", "rprecision", "auc", "gauc", "mpr",
         "fcp", "ctr@3"]


def _batch(seed: int, rows: int = 12, items: int = 15):
    gen = torch.Generator().manual_seed(seed)
    scores = (torch.rand(rows, items, generator=gen) * 6).round()  # ties
    target = torch.randint(0, 3, (rows, items), generator=gen) * (torch.rand(rows, items, generator=gen) < 0.3)
    target[0] = 0  # a query without a relevant item: skipped by the means
    return scores, target


@pytest.mark.parametrize("form", ["dense", "ids"])
def test_integer_weights_repeat_queries(form):
    scores, target = _batch(0)
    weight = torch.tensor([2, 0, 1, 3, 1, 1, 0, 2, 5, 1, 1, 2])
    weighted = tre.RankingMetrics(NAMES, weighted=True)
    repeated = tre.RankingMetrics(NAMES)
    if form == "dense":
        weighted.update(scores, target, sample_weight=weight)
        repeated.update(scores.repeat_interleave(weight, 0), target.repeat_interleave(weight, 0))
    else:  # the relevant items as ids; a [B, S] exclusion list
        ids = torch.where(target > 0, torch.arange(15), -1)
        exclude = torch.tensor([[0, 1]]).expand(12, 2)
        weighted.update(scores, target_ids=ids, exclude_ids=exclude, sample_weight=weight.double())
        repeated.update(scores.repeat_interleave(weight, 0), target_ids=ids.repeat_interleave(weight, 0),
                        exclude_ids=exclude.repeat_interleave(weight, 0))
    expected = repeated.compute()
    for key, value in weighted.compute().items():
        torch.testing.assert_close(value, expected[key], rtol=1e-12, atol=1e-12)


def test_real_weights_give_the_weighted_average_of_per_query_values():
    scores, target = _batch(1)
    weight = torch.rand(12, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 3
    metric = tre.RankingMetrics(["ndcg@5", "mrr@5", "auc"], weighted=True)
    metric.update(scores[:5], target[:5], sample_weight=weight[:5])
    metric.update(scores[5:], target[5:], sample_weight=weight[5:])
    got = metric.compute()
    for key, per_query in {"ndcg@5": tre.functional.ndcg(scores, target, k=5, reduction="none"),
                           "mrr@5": tre.functional.mrr(scores, target, k=5, reduction="none"),
                           "auc": tre.functional.auc(scores, target, reduction="none")}.items():
        counted = ~torch.isnan(per_query)
        expected = np.average(per_query[counted].numpy(), weights=weight[counted].numpy())
        assert got[key].item() == pytest.approx(expected, rel=1e-12), key


def test_weights_with_groups_and_unit_weights():
    scores, target = _batch(3)
    groups = torch.arange(12) % 3
    weight = torch.tensor([1.0, 2.0, 0.5] * 4)
    metric = tre.NDCG(k=5, num_groups=3, weighted=True)
    metric.update(scores, target, groups=groups, sample_weight=weight)
    per_query = tre.functional.ndcg(scores, target, k=5, reduction="none")
    for g in range(3):
        rows = (groups == g) & ~torch.isnan(per_query)
        assert metric.compute()[g].item() == pytest.approx(
            np.average(per_query[rows].numpy(), weights=weight[rows].numpy()), rel=1e-12)
    ones, plain = tre.MAP(k=5, weighted=True), tre.MAP(k=5)
    ones.update(scores, target)  # no sample_weight: every query weighs 1
    plain.update(scores, target)
    assert ones.compute() == plain.compute()


def test_bad_weights_name_the_argument_and_change_nothing():
    scores, target = _batch(4)
    metric = tre.RankingMetrics(["ndcg@5", "auc"], weighted=True)
    metric.update(scores, target, sample_weight=torch.ones(12))
    before = {name: state.clone() for name, state in metric.metric_state.items()}
    for weight, message in [(torch.ones(11), r"`sample_weight` must be a number tensor of shape \[B\] \(12,\)"),
                            (torch.full((12,), -1.0), "`sample_weight` must be finite and >= 0"),
                            (torch.ones(12, dtype=torch.bool), "`sample_weight` must be a number tensor"),
                            ([1.0] * 12, "`sample_weight` must be a number tensor")]:
        with pytest.raises(ValueError, match=message):
            metric.update(scores, target, sample_weight=weight)
    with pytest.raises(ValueError, match="`sample_weight` weighs whole queries"):
        metric.update(scores.flatten(), target.flatten(), indexes=torch.arange(12).repeat_interleave(15),
                      sample_weight=torch.ones(12 * 15))
    assert all(torch.equal(metric.metric_state[name], state) for name, state in before.items())
    with pytest.raises(ValueError, match="needs a metric built with `weighted=True`"):
        tre.NDCG(k=5).update(scores, target, sample_weight=torch.ones(12))
    with pytest.raises(ValueError, match=r"`weighted`: \['coverage@3'\] are catalogue metrics"):
        tre.RankingMetrics(["ndcg@3", "coverage@3"], options={"coverage": {"num_items": 15}}, weighted=True)
    with pytest.raises(ValueError, match="`catalogue` takes no `sample_weight`"):
        metric.catalogue(15, target_ids=torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="`weighted` must be True or False"):
        tre.NDCG(k=5, weighted=1)
    from torchrec_eval.comparison.uncertainty import confidence_interval

    with pytest.raises(ValueError, match="`metric` is weighted"):
        confidence_interval(metric)


def test_unweighted_metrics_keep_their_state_names():
    """The configuration state is named after a hash; weighting must not rename existing metrics' states."""
    metric, weighted = tre.NDCG(k=5), tre.NDCG(k=5, weighted=True)
    description = [metric.value_keys, metric.members, "skip", None, "index"]
    name = f"config_{hashlib.sha1(fingerprint(description).encode()).hexdigest()[:12]}"
    assert name in metric._defaults and name not in weighted._defaults
