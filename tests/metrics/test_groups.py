"""Segments: ``num_groups=G`` and ``groups=[B]`` give, for every metric, per group, the value of the
metric computed on that group's queries alone (and NaN for a group without queries).

Covers every top-k family, every beyond-accuracy metric (catalogue metrics keep one item-count
vector per group; inter-list pairs are formed within a group), suites, all four input forms, and
the group errors.
"""

import math

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.suites import ranking as collection

NUM_ITEMS = 12
NUM_GROUPS = 4  # group 3 never occurs
TOPK = {
    "precision": tre.Precision,
    "recall": tre.Recall,
    "f1": tre.F1,
    "hitrate": tre.HitRate,
    "mrr": tre.MRR,
    "arhr": tre.ARHR,
    "map": tre.MAP,
    "mar": tre.MAR,
    "ndcg": tre.NDCG,
    "dcg": tre.DCG,
    "cg": tre.CG,
}


@pytest.fixture
def suites():
    return collection.RankingMetrics


def _data(seed=0, rows=40):
    generator = torch.Generator().manual_seed(seed)
    preds = torch.rand(rows, NUM_ITEMS, generator=generator)
    target = torch.randint(0, 3, (rows, NUM_ITEMS), generator=generator) * (
        torch.rand(rows, NUM_ITEMS, generator=generator) < 0.25
    )
    target[0] = 0  # a query without relevant items
    mask = torch.rand(rows, NUM_ITEMS, generator=generator) < 0.8
    groups = torch.randint(0, NUM_GROUPS - 1, (rows,), generator=generator)
    return preds, target, mask, groups


def _beyond_metrics(num_groups=None):
    generator = torch.Generator().manual_seed(1)
    pop = torch.randint(0, 30, (NUM_ITEMS,), generator=generator).double()
    pop[0] = 5
    features = torch.randn(NUM_ITEMS, 3, generator=generator)
    return [
        tre.Coverage(k=[2, 5], num_items=NUM_ITEMS, num_groups=num_groups),
        tre.GiniIndex(k=5, num_items=NUM_ITEMS, num_groups=num_groups),
        tre.Entropy(k=5, num_items=NUM_ITEMS, num_groups=num_groups),
        tre.InterListDiversity(k=[3, 5], num_items=NUM_ITEMS, num_groups=num_groups),
        tre.IntraListDiversity(k=5, item_features=features, num_groups=num_groups),
        tre.Novelty(k=5, item_popularity=pop, num_groups=num_groups),
        tre.Serendipity(k=5, item_popularity=pop, num_groups=num_groups),
        tre.AveragePopularity(k=5, item_popularity=pop, num_groups=num_groups),
    ]


def _as_dict(result, key):
    return result if isinstance(result, dict) else {key: result}


def _check_groups(grouped, alone_factory, update_all, update_group, groups):
    result = _as_dict(grouped.compute(), "value")
    for key, value in result.items():
        assert value.shape == (NUM_GROUPS,), key
        assert torch.isnan(value[NUM_GROUPS - 1]), key
    for g in range(NUM_GROUPS - 1):
        alone = alone_factory()
        update_group(alone, groups == g)
        expected = _as_dict(alone.compute(), "value")
        for key, value in expected.items():
            actual = result[key][g]
            if math.isnan(float(value)):
                assert torch.isnan(actual), (key, g)
            else:
                assert float(actual) == pytest.approx(float(value), rel=1e-10, abs=1e-12), (key, g)


@pytest.mark.parametrize("family", sorted(TOPK))
@pytest.mark.parametrize("action", ["skip", "neg"])
def test_topk_groups_dense(family, action):
    preds, target, mask, groups = _data()
    cls = TOPK[family]
    grouped = cls(k=[1, 3, 6], num_groups=NUM_GROUPS, empty_target_action=action)
    grouped.update(preds[:25], target[:25], mask=mask[:25], groups=groups[:25])
    grouped.update(preds[25:], target[25:], mask=mask[25:], groups=groups[25:])
    _check_groups(
        grouped,
        lambda: cls(k=[1, 3, 6], empty_target_action=action),
        None,
        lambda m, rows: m.update(preds[rows], target[rows], mask=mask[rows]),
        groups,
    )


def test_rprecision_groups():
    preds, target, _, groups = _data(2)
    grouped = tre.RPrecision(num_groups=NUM_GROUPS)
    grouped.update(preds, target, groups=groups)
    _check_groups(grouped, tre.RPrecision, None, lambda m, rows: m.update(preds[rows], target[rows]), groups)


@pytest.mark.parametrize("form", ["ids", "ranked", "flat"])
def test_groups_in_other_forms(form):
    preds, target, _, groups = _data(3, rows=20)
    target_ids = torch.where(target > 0, torch.arange(NUM_ITEMS), -1)
    ranked_ids = torch.argsort(preds, dim=1, descending=True)[:, :7]

    def update(metric, rows, with_groups):
        extra = {"groups": groups[rows]} if with_groups else {}
        if form == "ids":
            metric.update(preds[rows], target_ids=target_ids[rows], **extra)
        elif form == "ranked":
            metric.update(ranked_ids=ranked_ids[rows], target_ids=target_ids[rows], **extra)
        else:
            n = int(rows.sum())
            indexes = torch.arange(n).repeat_interleave(NUM_ITEMS)
            if with_groups:
                extra = {"groups": groups[rows].repeat_interleave(NUM_ITEMS)}
            metric.update(preds[rows].reshape(-1), target[rows].reshape(-1), indexes=indexes, **extra)

    grouped = tre.NDCG(k=[2, 5], num_groups=NUM_GROUPS)
    update(grouped, torch.ones(20, dtype=torch.bool), True)
    _check_groups(grouped, lambda: tre.NDCG(k=[2, 5]), None, lambda m, rows: update(m, rows, False), groups)
    if form == "flat":
        return  # the flat form pads queries to one width; beyond metrics are covered by the other forms
    for index in range(8):
        grouped = _beyond_metrics(NUM_GROUPS)[index]
        update(grouped, torch.ones(20, dtype=torch.bool), True)
        _check_groups(
            grouped,
            lambda index=index: _beyond_metrics()[index],
            None,
            lambda m, rows: update(m, rows, False),
            groups,
        )


@pytest.mark.parametrize("index", range(8))
def test_beyond_groups(index):
    preds, target, mask, groups = _data(4)
    grouped = _beyond_metrics(NUM_GROUPS)[index]
    grouped.update(preds[:30], target[:30], mask=mask[:30], groups=groups[:30])
    grouped.update(preds[30:], target[30:], mask=mask[30:], groups=groups[30:])
    _check_groups(
        grouped,
        lambda: _beyond_metrics()[index],
        None,
        lambda m, rows: m.update(preds[rows], target[rows], mask=mask[rows]),
        groups,
    )


def test_beyond_groups_ranked_form_with_short_lists():
    generator = torch.Generator().manual_seed(5)
    ranked = torch.stack([torch.randperm(NUM_ITEMS, generator=generator)[:6] for _ in range(30)])
    ranked = ranked.masked_fill(torch.rand(30, 6, generator=generator) < 0.3, -1)
    target_ids = torch.randint(0, NUM_ITEMS, (30, 1), generator=generator)
    groups = torch.randint(0, NUM_GROUPS - 1, (30,), generator=generator)
    for index in range(8):
        grouped = _beyond_metrics(NUM_GROUPS)[index]
        grouped.update(ranked_ids=ranked, target_ids=target_ids, groups=groups)
        _check_groups(
            grouped,
            lambda index=index: _beyond_metrics()[index],
            None,
            lambda m, rows: m.update(ranked_ids=ranked[rows], target_ids=target_ids[rows]),
            groups,
        )


def test_suite_groups(suites):
    preds, target, mask, groups = _data(6)
    names = ["ndcg@5", "map@3", "hitrate@1", "coverage@5", "novelty@3", "inter_list_diversity@4"]
    options = {
        "coverage": {"num_items": NUM_ITEMS},
        "inter_list_diversity": {"num_items": NUM_ITEMS},
        "novelty": {"item_popularity": torch.arange(1, NUM_ITEMS + 1).double()},
    }
    grouped = suites(names, options=options, num_groups=NUM_GROUPS)
    grouped.update(preds, target, mask=mask, groups=groups)
    assert list(grouped.compute()) == names
    _check_groups(
        grouped,
        lambda: suites(names, options=options),
        None,
        lambda m, rows: m.update(preds[rows], target[rows], mask=mask[rows]),
        groups,
    )


def test_group_errors():
    preds, target, _, _ = _data(7, rows=3)
    metric = tre.NDCG(k=3, num_groups=2)
    with pytest.raises(ValueError, match=r"`groups` must lie in \[0, 2\), got values from 0 to 2"):
        metric.update(preds, target, groups=torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="`groups` must be an integer tensor"):
        metric.update(preds, target, groups=torch.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"`groups` must have shape \[3\]"):
        metric.update(preds, target, groups=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="`groups` must be given exactly"):
        metric.update(preds, target)
    with pytest.raises(ValueError, match="`groups` must be given exactly"):
        tre.NDCG(k=3).update(preds, target, groups=torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="`num_groups` must be an int >= 1"):
        tre.Coverage(k=3, num_items=4, num_groups=0)
