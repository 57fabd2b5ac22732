"""PSP and PSnDCG against pyxclib's ``psprecision`` and ``psndcg`` (transcribed in ``tests/reference/propensity.py``),
through the harness (splits, forward, checkpoints, merges), in every input form, with excluded items and
groups, and their option checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric
from tests.reference import propensity as ref
from torchrec_eval.beyond import inverse_propensity

ITEMS = 14


def _data(seed: int, rows: int = 16) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Distinct scores, sparse labels (a query without any), and inverse propensities from training counts."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.rand(rows, ITEMS, generator=gen).argsort(1).double()
    target = torch.rand(rows, ITEMS, generator=gen) < 0.25
    target[0] = False
    train = (torch.rand(40, ITEMS, generator=gen) < torch.linspace(0.05, 0.8, ITEMS)).double()
    return preds, target, torch.from_numpy(ref.inverse_propensity(train.numpy()))


def test_inverse_propensity_equals_pyxclibs():
    train = (torch.rand(30, 9, generator=torch.Generator().manual_seed(0)) < 0.3).double()
    for a, b in ((0.55, 1.5), (0.6, 2.6)):
        torch.testing.assert_close(inverse_propensity(train.sum(0), 30, a, b),
                                   torch.from_numpy(ref.inverse_propensity(train.numpy(), a, b)), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="`num_instances` must be an int >= 1, got 0"):
        inverse_propensity(train.sum(0), 0)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_psp_and_psndcg_equal_pyxclib(k):
    preds, target, weights = _data(seed=k)
    labels = target.double().numpy()
    suite = tre.RankingMetrics([f"psp@{k}", f"psndcg@{k}"],
                               options={"psp": {"inverse_propensity": weights}, "psndcg": {"inverse_propensity": weights}})
    for half in (slice(0, 5), slice(5, None)):
        suite.update(preds[half], target[half])
    out = suite.compute()
    assert float(out[f"psp@{k}"]) == pytest.approx(ref.psprecision(preds.numpy(), labels, weights.numpy(), k)[-1], abs=1e-12)
    assert float(out[f"psndcg@{k}"]) == pytest.approx(ref.psndcg(preds.numpy(), labels, weights.numpy(), k)[-1], abs=1e-12)


def test_every_input_form_and_excluded_items_give_the_dense_value():
    preds, target, weights = _data(seed=7)
    ids = torch.where(target, torch.arange(ITEMS), -1)
    ranked = preds.argsort(1, descending=True)
    dense = tre.PSnDCG(k=4, inverse_propensity=weights)
    dense.update(preds, target)
    for inputs in ({"preds": preds, "target_ids": ids}, {"ranked_ids": ranked, "target_ids": ids},
                   {"preds": preds.flatten(), "target": target.flatten(),
                    "indexes": torch.arange(len(preds)).repeat_interleave(ITEMS)}):
        metric = tre.PSnDCG(k=4, inverse_propensity=weights)
        metric.update(**inputs)
        assert float(metric.compute()) == pytest.approx(float(dense.compute()), abs=1e-12)
    # an excluded item is not a candidate: pyxclib on the remaining items, their own weights
    seen = torch.tensor([[i % ITEMS, (i + 5) % ITEMS] for i in range(len(preds))])
    metric = tre.PSP(k=4, inverse_propensity=weights)
    metric.update(preds, target, exclude_ids=seen)
    keep = torch.ones_like(target).scatter_(1, seen, False)
    scores = np.where(keep.numpy(), preds.numpy(), -np.inf)
    expected = ref.psprecision(scores, (target & keep).double().numpy(), weights.numpy(), 4)[-1]
    assert float(metric.compute()) == pytest.approx(expected, abs=1e-12)


def test_a_chunked_catalogue_reads_the_targets_as_the_relevant_items():
    preds, target, weights = _data(seed=9)
    ids = torch.where(target, torch.arange(ITEMS), -1)
    metric = tre.PSnDCG(k=[2, 4], inverse_propensity=weights)
    with metric.catalogue(num_items=ITEMS, target_ids=ids) as chunks:
        for start, stop in ((6, ITEMS), (0, 6)):
            chunks.add(preds[:, start:stop], start)
    for k in (2, 4):
        expected = ref.psndcg(preds.numpy(), target.double().numpy(), weights.numpy(), k)[-1]
        assert float(metric.compute()[f"psndcg@{k}"]) == pytest.approx(expected, abs=1e-12)


def _case(family: str) -> MetricCase:
    preds, target, weights = _data(seed=3, rows=10)
    batches = [{"preds": preds[part], "target": target[part]} for part in (slice(0, 4), slice(4, 5), slice(5, None))]
    score = ref.psprecision if family == "psp" else ref.psndcg
    expected = score(preds.numpy(), target.double().numpy(), weights.numpy(), 3)[-1]
    cls = tre.PSP if family == "psp" else tre.PSnDCG
    return MetricCase(name=family, make=lambda: cls(k=3, inverse_propensity=weights), batches=batches,
                      expected={f"{family}@3": float(expected)})


@pytest.mark.parametrize("family", ["psp", "psndcg"])
def test_the_harness(family):
    check_metric(_case(family))


def test_groups_and_per_query_ratios():
    preds, target, weights = _data(seed=5)
    groups = torch.arange(len(preds)) % 2
    metric = tre.PSP(k=3, inverse_propensity=weights, num_groups=2)
    metric.update(preds, target, groups=groups)
    for group in (0, 1):
        rows = groups == group
        expected = ref.psprecision(preds[rows].numpy(), target[rows].double().numpy(), weights.numpy(), 3)[-1]
        assert float(metric.compute()[group]) == pytest.approx(expected, abs=1e-12)
    values = tre.RankingMetrics(["psp@3"], options={"psp": {"inverse_propensity": weights}}).per_query(preds, target)
    values = values["psp@3"]
    assert math.isnan(values[0])  # no relevant item: no ratio
    one = ref.psprecision(preds[1:2].numpy(), target[1:2].double().numpy(), weights.numpy(), 3)[-1]
    assert float(values[1]) == pytest.approx(one, abs=1e-12)
    from torchrec_eval.comparison.uncertainty import confidence_interval

    with pytest.raises(ValueError, match="has no mean-over-queries value"):  # a ratio of sums, as pyxclib's
        confidence_interval(metric)


def test_bad_options_and_ids_out_of_range_leave_the_state():
    with pytest.raises(ValueError, match="psp needs `inverse_propensity`"):
        tre.RankingMetrics(["psp@3"])
    with pytest.raises(ValueError, match="`inverse_propensity` must be finite, >= 0"):
        tre.PSP(k=3, inverse_propensity=torch.tensor([1.0, -2.0]))
    metric = tre.PSP(k=2, inverse_propensity=torch.ones(4))
    metric.update(torch.rand(2, 4), torch.tensor([[1, 0, 0, 0], [0, 1, 0, 0]]))
    before = metric.beyond_stats.clone()
    with pytest.raises(ValueError, match="out of range for psp: `inverse_propensity` length=4"):
        metric.update(ranked_ids=torch.tensor([[0, 1]]), target_ids=torch.tensor([[7]]))
    assert torch.equal(metric.beyond_stats, before)
