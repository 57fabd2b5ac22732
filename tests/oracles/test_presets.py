"""The options that make every preset reproduce its library on every metric (issue 26):

* ``empty_list_action="skip"``: a query with an empty list is left out (Jurity's precision and MAP, MS
  Recommenders' precision, recall and MAP), in every top-k family, every input form, the classes and
  the suite, per query, weighted, per group;
* R-Precision's ``denominator="r"`` and ``no_hit_action="skip"`` (MS Recommenders' ``r_precision_at_k``),
  against the reference of ``tests/reference/conventions.py`` on random inputs;
* RecTools' ``featureless="nan"`` (intra-list diversity) and ``all_zero="zero"`` (average popularity);
* the state stays constant-size ([G, 2P + C]) and checkpoints of the one-count layout still load,
  under the configuration state's old name (names pinned from the code before these options).

The peers themselves run in ``tests/scripts/presets_side_by_side.py`` (not collected).
"""

import math

import pytest
import torch

import torchrec_eval as tre
from tests.reference import conventions as ref
from torchrec_eval import functional as F
from torchrec_eval.comparison.uncertainty import confidence_interval
from torchrec_eval.ranking.families import REGISTRY

TOL = {"rtol": 1e-9, "atol": 1e-12}
KS = (1, 3, 10)


def _close(actual, expected, msg=""):
    actual = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    expected = torch.as_tensor(expected, dtype=torch.float64).reshape(actual.shape)
    torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{msg}\n{m}", **TOL)


def _ranked(seed, B=40, num_items=25, max_len=8):
    """Ranked form with short and empty lists (rows 0 and 7: relevant items, empty list; row 1: no
    relevant item), and the same as python lists."""
    g = torch.Generator().manual_seed(seed)
    ranked_ids = torch.full((B, max_len), -1, dtype=torch.long)
    target_ids = torch.full((B, 10), -1, dtype=torch.long)
    queries = []
    for b in range(B):
        length = 0 if b in (0, 7) else int(torch.randint(1, max_len + 1, (1,), generator=g))
        ranked = torch.randperm(num_items, generator=g)[:length].tolist()
        size = 0 if b == 1 else int(torch.randint(1, min(10, num_items + 1), (1,), generator=g))
        truth = torch.randperm(num_items, generator=g)[:size].tolist()
        ranked_ids[b, :length] = torch.tensor(ranked, dtype=torch.long)
        target_ids[b, :size] = torch.tensor(truth, dtype=torch.long)
        queries.append((ranked, dict.fromkeys(truth, 1)))
    return {"ranked_ids": ranked_ids, "target_ids": target_ids}, queries


def _nan(values):
    return [math.nan if v is None else v for v in values]


# ==============================================================================================
# empty_list_action
# ==============================================================================================
def test_empty_list_action_leaves_out_empty_lists_in_every_family():
    inputs, queries = _ranked(seed=1)
    empty = torch.tensor([not ranked for ranked, _ in queries])
    assert empty.sum() == 2
    # FallOut: scored forms; NumRel reads no list
    for name in (name for name, spec in REGISTRY.items() if not spec.reads_non_relevant and spec.cutoff != "none"):
        fn = getattr(F, name)
        for k in KS:
            counted = fn(k=k, reduction="none", **inputs)
            skipped = fn(k=k, reduction="none", empty_list_action="skip", **inputs)
            _close(skipped, counted.masked_fill(empty, math.nan), f"{name}@{k}")
            assert (counted[empty] == 0).all()
            mean = fn(k=k, empty_list_action="skip", **inputs)
            _close(mean, skipped[~torch.isnan(skipped)].mean(), f"{name}@{k} mean")


def test_empty_list_action_in_classes_suite_per_query_and_the_dense_form():
    inputs, _ = _ranked(seed=2)
    suite = tre.RankingMetrics(["precision@3", "ndcg@3", "map@5"], empty_target_action="neg",
                               options={"precision": {"empty_list_action": "skip"}, "map": {"empty_list_action": "skip"}})
    for half in (slice(0, 15), slice(15, None)):
        suite.update(**{name: value[half] for name, value in inputs.items()})
    out = suite.compute()
    assert suite.stats.shape == (1, 2 * 3 + 2)  # one more count: the queries with a list
    for key, fn, k, skip in (("precision@3", F.precision, 3, True), ("ndcg@3", F.ndcg, 3, False),
                             ("map@5", F.map, 5, True)):
        extra = {"empty_list_action": "skip"} if skip else {}
        expected = fn(k=k, empty_target_action="neg", **extra, **inputs)
        _close(out[key], expected, key)
        metric = {"precision": tre.Precision, "ndcg": tre.NDCG, "map": tre.MAP}[key.partition("@")[0]](
            k=k, empty_target_action="neg", **extra)
        metric.update(**inputs)
        _close(metric.compute(), expected, key)
        _close(suite.per_query(**inputs)[key], fn(k=k, empty_target_action="neg", reduction="none", **extra, **inputs))
    # dense form: a query without a candidate (every score masked) is an empty list
    preds = torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.8, 0.3]])
    target = torch.tensor([[1, 0, 0], [0, 1, 0]])
    mask = torch.tensor([[True, True, True], [False, False, False]])
    _close(F.precision(preds, target, k=2, mask=mask, empty_target_action="neg", reduction="none"), [0.5, 0.0])
    _close(F.precision(preds, target, k=2, mask=mask, empty_target_action="neg", empty_list_action="skip",
                       reduction="none"), [0.5, math.nan])


def test_empty_list_action_weighted_grouped_and_interval_counts():
    inputs, _ = _ranked(seed=3)
    B = inputs["ranked_ids"].shape[0]
    weights = torch.linspace(0.5, 2.0, B, dtype=torch.float64)
    groups = torch.arange(B) % 3
    metric = tre.Recall(k=5, empty_list_action="skip", weighted=True, num_groups=3)
    metric.update(**inputs, sample_weight=weights, groups=groups)
    values = F.recall(k=5, empty_list_action="skip", reduction="none", **inputs)
    kept = ~torch.isnan(values)
    for g in range(3):
        rows = kept & (groups == g)
        _close(metric.compute()[g], (values[rows] * weights[rows]).sum() / weights[rows].sum())
    plain = tre.Recall(k=5, empty_list_action="skip")
    plain.update(**inputs)
    mean, low, high = confidence_interval(plain)["recall@5"]
    _close(mean, values[kept].mean())
    n = int(kept.sum())
    assert plain.stats[0, 2 + 1] == n and plain.stats[0, 2] == B - 1  # R > 0 / and a list as well
    half = float(values[kept].std() / math.sqrt(n))
    assert 1.9 * half < float(high - mean) < 2.2 * half  # t quantile over n - 1 degrees of freedom


def test_bad_new_options_raise_and_name_what_they_got():
    for call, name in (
        (lambda: tre.Precision(k=3, empty_list_action="drop"), "empty_list_action"),
        (lambda: F.ndcg(torch.rand(2, 3), torch.ones(2, 3), k=2, empty_list_action=True), "empty_list_action"),
        (lambda: tre.RPrecision(denominator="k"), "denominator"),
        (lambda: tre.RPrecision(no_hit_action="pos"), "no_hit_action"),
        (lambda: tre.RankingMetrics(["rprecision@5"], options={"rprecision": {"no_hit_action": 1}}), "no_hit_action"),
        (lambda: tre.AveragePopularity(k=2, item_popularity=torch.ones(3), all_zero="nan"), "all_zero"),
        (lambda: tre.IntraListDiversity(k=2, item_features=torch.ones(3, 2), featureless="skip"), "featureless"),
    ):
        with pytest.raises(ValueError, match=name) as info:
            call()
        assert "got" in str(info.value)


def test_a_failed_update_leaves_every_state_unchanged():
    inputs, _ = _ranked(seed=4)
    metric = tre.RankingMetrics(["precision@3", "rprecision@3"], convention="recommenders")
    metric.update(**inputs)
    before = metric.stats.clone()
    bad = dict(inputs, target_ids=inputs["target_ids"].clone())
    bad["target_ids"][3, 0] = -5
    with pytest.raises(ValueError, match="target_ids"):
        metric.update(**bad)
    assert torch.equal(metric.stats, before)


# ==============================================================================================
# R-Precision: denominator, no_hit_action (MS Recommenders' r_precision_at_k)
# ==============================================================================================
@pytest.mark.parametrize("seed", [5, 6])
def test_rprecision_options_against_the_ms_recommenders_reference(seed):
    inputs, queries = _ranked(seed=seed)
    for k in (*KS, None):
        cap = 100 if k is None else k
        expected = [ref.recommenders_r_precision_at_k(ranked, truth, cap) for ranked, truth in queries]
        assert any(v is None for v, (r, t) in zip(expected, queries, strict=True) if r and t)  # users without a hit
        got = F.rprecision(k=k, convention="recommenders", reduction="none", **inputs)
        _close(got, _nan(expected), f"rprecision@{k}")
        _close(F.rprecision(k=k, convention="recommenders", **inputs), ref.mean(expected))
        explicit = F.rprecision(k=k, denominator="r", no_hit_action="skip", reduction="none", **inputs)
        _close(explicit, got)
        # each option alone: hits@min(k, R) / R counting every query; the default divisor, skipping
        hits = [sum(1 for item in ranked[: min(cap, len(truth))] if item in truth) for ranked, truth in queries]
        by_r = [h / len(t) if t else None for h, (_, t) in zip(hits, queries, strict=True)]
        _close(F.rprecision(k=k, denominator="r", reduction="none", **inputs), _nan(by_r))
        by_min = [h / min(cap, len(t)) if h else None for h, (_, t) in zip(hits, queries, strict=True)]
        _close(F.rprecision(k=k, no_hit_action="skip", reduction="none", **inputs), _nan(by_min))
    # the class and the suite hold one count per such value: [G, 2P + C], whatever the number of queries
    metric = tre.RPrecision(k=[3, 10], convention="recommenders", num_groups=2)
    for _ in range(3):
        metric.update(**inputs, groups=torch.arange(inputs["ranked_ids"].shape[0]) % 2)
    # all, hit in the top min(k, R) per value, hit in the top k per value (empty_mean="zero")
    assert metric.stats.shape == (2, 2 * 2 + 5)
    assert tre.RPrecision(k=[3, 10], convention="recommenders", empty_mean="nan").stats.shape == (1, 2 * 2 + 3)


def test_no_hit_action_skip_refuses_averaged_ties():
    for call in (lambda: tre.RPrecision(k=3, convention="recommenders", ties="average"),
                 lambda: tre.RankingMetrics(["rprecision"], convention="recommenders", ties="average"),
                 lambda: F.rprecision(torch.rand(2, 4), torch.ones(2, 4), k=3, no_hit_action="skip", ties="average")):
        with pytest.raises(ValueError, match=r"no_hit_action='skip'.*ties='average'"):
            call()
    tre.RPrecision(k=3, ties="average")  # the default counts every query: fine


def test_compiled_update_equals_eager_with_the_new_counts():
    inputs, _ = _ranked(seed=7)
    names = ["precision@3", "ndcg@3", "rprecision@5", "map@5"]
    eager = tre.RankingMetrics(names, convention="recommenders", validate_args=False)
    compiled = tre.RankingMetrics(names, convention="recommenders", validate_args=False)
    compiled.compile_update(backend="eager")
    for metric in (eager, compiled):
        metric.update(**inputs)
    for key in names:
        _close(compiled.compute()[key], eager.compute()[key], key)


# ==============================================================================================
# the state layout of the count columns
# ==============================================================================================
def test_default_configurations_keep_one_count_column():
    suite = tre.RankingMetrics(["ndcg@3", "rprecision"])
    assert suite.stats.shape == (1, 2 * 2 + 1)


# ==============================================================================================
# RecTools: intra-list diversity without features, average popularity without interactions
# ==============================================================================================
def test_rectools_intra_list_diversity_leaves_out_pairs_without_features():
    features = torch.tensor([[1.0, 0.0], [0.0, 1.0], [math.nan, 1.0], [1.0, 1.0], [0.5, math.nan]],
                            dtype=torch.float64)
    unit = features / features.norm(dim=1, keepdim=True)

    def distance(a, b):
        return 1.0 - float(unit[a] @ unit[b])  # NaN when an item lacks a feature

    lists = [[0, 1, 2], [2, 4], [2], [0, 3, 4], [], [3, 1]]
    ranked = torch.full((len(lists), 3), -1, dtype=torch.long)
    for row, items in enumerate(lists):
        ranked[row, : len(items)] = torch.tensor(items, dtype=torch.long)
    targets = torch.zeros(len(lists), 1, dtype=torch.long)
    expected = ref.rectools_ild(lists, distance)
    for metric in (tre.IntraListDiversity(k=3, item_features=features, convention="rectools"),
                   tre.IntraListDiversity(k=3, item_features=features, single_item="zero", featureless="nan")):
        metric.update(ranked_ids=ranked, target_ids=targets)
        _close(metric.compute(), expected)
        per_query = metric.per_query(ranked_ids=ranked, target_ids=targets)
        assert torch.isnan(per_query[[1, 4]]).all() and per_query[2] == 0  # no known pair; no list; one item
    # a similarity matrix with NaN where a distance is unknown: the same rule
    similarity = unit @ unit.T
    metric = tre.IntraListDiversity(k=3, item_similarity=similarity, convention="rectools")
    metric.update(ranked_ids=ranked, target_ids=targets)
    _close(metric.compute(), expected)
    with pytest.raises(ValueError, match="featureless='nan'"):
        tre.IntraListDiversity(k=3, item_features=features)


def test_rectools_average_popularity_is_zero_without_interactions():
    lists = [[0, 1], [2], [1, 2]]
    ranked = torch.tensor([[0, 1], [2, -1], [1, 2]])
    targets = torch.zeros(3, 1, dtype=torch.long)
    for prev, popularity in (([], torch.zeros(3)), ([0, 0, 2], torch.tensor([2.0, 0.0, 1.0]))):
        expected = ref.rectools_avg_rec_popularity(lists, prev)
        metric = tre.AveragePopularity(k=2, item_popularity=popularity, convention="rectools")
        metric.update(ranked_ids=ranked, target_ids=targets)
        _close(metric.compute(), expected)
    assert expected != 0.0
    with pytest.raises(ValueError, match="all_zero='zero'"):
        tre.AveragePopularity(k=2, item_popularity=torch.zeros(3))
    suite = tre.RankingMetrics(["average_popularity@2"], convention="rectools",
                               options={"average_popularity": {"item_popularity": torch.zeros(3)}})
    suite.update(ranked_ids=ranked, target_ids=targets)
    assert float(suite.compute()["average_popularity@2"]) == 0.0
