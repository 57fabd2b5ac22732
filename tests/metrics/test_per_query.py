"""``per_query``: every metric of a suite for each query of a batch, consistent with ``compute()``.

* For a suite of every family, under several options and presets: after ``update`` on the same batch,
  ``compute()`` is the mean of the per-query values over the counted (not NaN) queries, or for a
  pooled ratio their mean weighted by each query's denominator, the weights computed here by the
  brute-force references (R, concordant + discordant pairs, items shown).
* Per-query values against the brute-force references of ``tests/reference`` query by query, NaN where
  the reference has no value; the four input forms give the same values.
* The state, the update count and the flat stream are untouched; bad input raises as ``update`` does.
* The DataFrame: query ids (the flat form's ``indexes``), groups, NaN, and a clear error without pandas.
"""

from __future__ import annotations

import math
import sys

import pytest
import torch

import torchrec_eval as tre
from tests.reference import beyond as ref_beyond
from tests.reference import pairwise as ref_pairwise
from tests.reference import ranking as ref
from torchrec_eval.comparison.uncertainty import PairedComparison

B, N = 14, 10
TOPK = ["precision", "recall", "f1", "hitrate", "mrr", "arhr", "map", "mar", "dcg", "ndcg", "cg"]
CATALOGUE = ["coverage@5", "gini@5", "entropy@5", "inter_list_diversity@5"]
PER_QUERY_BEYOND = ["intra_list_diversity@5", "novelty@5", "serendipity@5", "average_popularity@5"]
METRICS = ([f"{family}@{k}" for family in TOPK for k in (3, 10)]
           + ["rprecision", "auc", "gauc", "mpr", "fcp", "ctr@3", *CATALOGUE, *PER_QUERY_BEYOND])
POOLED = {"gauc", "mpr", "fcp", "ctr@3"}  # ratios of sums: weighted means of the per-query ratios


def _tables(seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    popularity = torch.randint(0, 20, (N,), generator=gen).double()
    return {
        **{family.partition("@")[0]: {"num_items": N} for family in CATALOGUE},
        "intra_list_diversity": {"item_features": torch.randn(N, 4, generator=gen, dtype=torch.float64)},
        "novelty": {"item_popularity": popularity},
        "serendipity": {"item_popularity": popularity, "baseline_size": 3},
        "average_popularity": {"item_popularity": popularity},
    }


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scores with ties, graded targets, a mask; queries without a relevant item, with every candidate
    relevant, with one candidate, and with none."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randint(-3, 4, (B, N), generator=gen).double() / 2
    target = torch.randint(0, 4, (B, N), generator=gen) * (torch.rand(B, N, generator=gen) < 0.4)
    mask = torch.rand(B, N, generator=gen) < 0.85
    target[0] = 0                      # no relevant item
    target[1], mask[1] = 2, True       # every candidate relevant: AUC undefined
    mask[2] = False                    # no candidate
    mask[3] = False
    mask[3, 4] = True                  # one candidate
    return preds, target, mask


def _suite(**kwargs) -> tre.RankingMetrics:
    options = _tables()
    extra = kwargs.pop("options", {})
    for family, values in extra.items():
        options[family] = {**options.get(family, {}), **values}
    return tre.RankingMetrics(METRICS, options=options, **kwargs)


def _weights(key: str, preds, target, mask, threshold=None) -> list[float]:
    """The denominator of a pooled ratio for each query, from the brute-force references."""
    weights = []
    for scores, gains in ref_pairwise.split_rows(preds, target, mask):
        if key in ("gauc", "mpr"):
            weights.append(ref_pairwise.num_relevant(gains, threshold))
        elif key == "fcp":
            weights.append(sum(ref_pairwise.fcp_pairs(scores, gains)))
        else:  # ctr@3: the items shown in the top 3
            weights.append(min(3, len(scores)))
    return weights


SETTINGS = [
    {},
    {"empty_target_action": "neg"},
    {"empty_target_action": "pos"},
    {"convention": "trec"},
    {"convention": "rectools"},
    {"convention": "jurity"},
    {"ties": "average"},
    {"ties": "pessimistic", "relevance_threshold": 2},
    {"options": {"mpr": {"average": "query"}, "ndcg": {"gain": "exp"}, "map": {"normalizer": "r"},
                 "precision": {"denominator": "retrieved"}}},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default")
def test_compute_is_the_mean_of_the_per_query_values(settings):
    preds, target, mask = _batch()
    suite = _suite(**settings)
    values = suite.per_query(preds, target, mask=mask)
    suite.update(preds, target, mask=mask)
    result = suite.compute()
    assert list(values) == [key for key in METRICS if key not in CATALOGUE]  # compute's order
    pooled = POOLED - ({"mpr"} if settings.get("options", {}).get("mpr") else set())
    for key, per_query in values.items():
        assert per_query.shape == (B,) and per_query.dtype == torch.float64
        counted = ~torch.isnan(per_query)
        if key in pooled:
            weight = torch.tensor(_weights(key, preds, target, mask, settings.get("relevance_threshold")),
                                  dtype=torch.float64)
            expected = (per_query[counted] * weight[counted]).sum() / weight[counted].sum()
        else:
            expected = per_query[counted].mean()
        torch.testing.assert_close(result[key], expected, rtol=1e-12, atol=1e-12, msg=key)
    assert torch.isnan(values["ctr@3"][2])  # the query without a candidate weighs nothing, in every setting


def _ranked_lists(preds, mask, k) -> list[list[int]]:
    return [ref.rank(preds[b], mask=mask[b])[:k] for b in range(preds.shape[0])]


def _nan(value) -> float:
    return math.nan if value is None else float(value)


def test_per_query_values_match_the_brute_force_references():
    preds, target, mask = _batch(1)
    values = _suite(empty_target_action="skip").per_query(preds, target, mask=mask)

    def close(key, expected):
        torch.testing.assert_close(values[key], torch.tensor(expected, dtype=torch.float64), equal_nan=True,
                                   rtol=1e-12, atol=1e-12, msg=key)

    for name, k in (("ndcg", 3), ("map", 10), ("recall", 3), ("mrr", 10), ("precision", 10), ("arhr", 3)):
        close(f"{name}@{k}", ref.evaluate_dense(name, preds, target, k, mask=mask))
    close("rprecision", ref.evaluate_dense("rprecision", preds, target, None, mask=mask))
    rows = ref_pairwise.split_rows(preds, target, mask)
    close("auc", [_nan(ref_pairwise.auc(s, t)) for s, t in rows])
    close("gauc", [_nan(ref_pairwise.auc(s, t)) for s, t in rows])  # GAUC weighs the query's AUC by R
    percentiles = [ref_pairwise.mpr_items(s, t) for s, t in rows]
    close("mpr", [sum(p) / len(p) if p else math.nan for p in percentiles])
    pairs = [ref_pairwise.fcp_pairs(s, t) for s, t in rows]
    close("fcp", [nc / (nc + nd) if nc + nd else math.nan for nc, nd in pairs])
    ctr = [ref_pairwise.ctr_counts(s, t, 3) for s, t in rows]
    close("ctr@3", [clicks / shown if shown else math.nan for clicks, shown in ctr])
    lists = _ranked_lists(preds, mask, 5)
    tables = _tables()
    close("novelty@5", [_nan(v) for v in ref_beyond.novelty_per_query(lists, tables["novelty"]["item_popularity"].tolist())])
    features = tables["intra_list_diversity"]["item_features"].tolist()
    close("intra_list_diversity@5", [ref_beyond.intra_list_diversity([items], features=features) for items in lists])
    popularity = tables["average_popularity"]["item_popularity"].tolist()
    close("average_popularity@5", [ref_beyond.average_popularity([items], popularity) for items in lists])
    relevant = [{i for i in range(N) if mask[b, i] and target[b, i] > 0} for b in range(B)]
    close("serendipity@5", [ref_beyond.serendipity([items], [rel], popularity, 5, baseline_size=3)
                            for items, rel in zip(lists, relevant, strict=True)])


def _ids_form(target, mask):
    rows = [[i for i in range(N) if target[b, i] > 0 and mask[b, i]] for b in range(target.shape[0])]
    width = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), width), -1, dtype=torch.long)
    gains = torch.zeros(len(rows), width, dtype=torch.float64)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor(r, dtype=torch.long)
        gains[b, : len(r)] = target[b, r].double()
    return ids, gains


def test_the_input_forms_give_the_same_per_query_values():
    preds, target, mask = _batch(2)
    keys = [key for key in METRICS if key not in CATALOGUE]
    dense = _suite().per_query(preds, target, mask=mask)
    ids, gains = _ids_form(target, mask)
    by_ids = _suite().per_query(preds, target_ids=ids, target_gains=gains, mask=mask)
    rows = torch.arange(B).unsqueeze(1).expand(B, N)
    # flat: every row of every query (a row's position in its query is its item id), `mask` as a column
    flat = _suite().per_query(preds.reshape(-1), target.reshape(-1), indexes=rows.reshape(-1) * 7,
                              mask=mask.reshape(-1))  # query ids need not be 0..B-1
    ranked = torch.full((B, N), -1, dtype=torch.long)
    for b, order in enumerate(_ranked_lists(preds, mask, N)):
        ranked[b, : len(order)] = torch.tensor(order, dtype=torch.long)
    top_k_keys = [key for key in keys if key.partition("@")[0] not in ("auc", "gauc", "mpr", "fcp", "ctr")]
    by_ranked = tre.RankingMetrics(top_k_keys, options={f: v for f, v in _tables().items()
                                                        if f + "@5" in top_k_keys}).per_query(
        ranked_ids=ranked, target_ids=ids, target_gains=gains)
    for key in keys:
        torch.testing.assert_close(by_ids[key], dense[key], equal_nan=True, msg=key)
        torch.testing.assert_close(flat[key], dense[key], equal_nan=True, msg=key)
        if key in top_k_keys:
            torch.testing.assert_close(by_ranked[key], dense[key], equal_nan=True, msg=key)


def _state(metric) -> tuple:
    return ({name: value.clone() for name, value in metric.metric_state.items()}, metric._update_count,
            metric._flat)


def _same_state(metric, before) -> None:
    states, count, flat = _state(metric)
    assert count == before[1] and flat is before[2]
    for name, value in before[0].items():
        assert torch.equal(states[name], value), name


def test_per_query_leaves_the_state_and_the_flat_stream_as_they_were():
    preds, target, mask = _batch(3)
    suite = _suite()
    rows = torch.arange(B).unsqueeze(1).expand(B, N)
    suite.update(preds[mask], target[mask], indexes=rows[mask])  # holds the last query back
    before = _state(suite)
    suite.per_query(preds, target, mask=mask)
    suite.per_query(preds[mask], target[mask], indexes=rows[mask] + 100)
    _same_state(suite, before)
    assert suite._flat.pending is not None  # the held-back query is still there


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda s, p, t: s.per_query(p.masked_fill(p > 1, float("nan")), t), "`preds`"),
        (lambda s, p, t: s.per_query(p, t, exclude_id=torch.tensor([[0]])), "exclude_id"),
        (lambda s, p, t: s.per_query(p, t[:, :3]), "shape"),
        (lambda s, p, t: s.per_query(p, t, query_ids=list(range(B))), "as_frame=True"),
        (lambda s, p, t: s.per_query(ranked_ids=p.argsort(1, descending=True), target_ids=t), "AUC"),
    ],
    ids=["nan-score", "misspelt-keyword", "shape", "query-ids-without-frame", "ranked-with-auc"],
)
def test_bad_input_raises_as_update_does_and_changes_nothing(call, message):
    preds, target, _ = _batch(4)
    suite = _suite()
    suite.update(preds, target)
    before = _state(suite)
    with pytest.raises(ValueError, match=message):
        call(suite, preds, target)
    _same_state(suite, before)


def test_errors_of_the_options():
    preds, target, _ = _batch(5)
    with pytest.raises(ValueError, match="no relevant"):
        tre.RankingMetrics(["ndcg@3"], empty_target_action="error").per_query(preds, target)
    with pytest.raises(ValueError, match="`groups` must be given"):
        tre.RankingMetrics(["ndcg@3"], num_groups=2).per_query(preds, target)
    with pytest.raises(ValueError, match="no per-query values: catalogue"):
        tre.Coverage(k=5, num_items=N).per_query(preds, target)


def test_single_metric_classes_return_what_compute_returns():
    preds, target, mask = _batch(6)
    suite_values = _suite().per_query(preds, target, mask=mask)
    one = tre.NDCG(k=3).per_query(preds, target, mask=mask)
    assert isinstance(one, torch.Tensor)
    torch.testing.assert_close(one, suite_values["ndcg@3"], equal_nan=True)
    both = tre.NDCG(k=[3, 10]).per_query(preds, target, mask=mask)
    assert list(both) == ["ndcg@3", "ndcg@10"]
    ctr = tre.CTR(k=3, ignore_index=-1).per_query(preds, target.masked_fill(~mask, -1))  # unobserved = -1
    torch.testing.assert_close(ctr, suite_values["ctr@3"], equal_nan=True)


def test_paired_differences_of_two_runs_give_the_paired_comparison():
    preds, target, mask = _batch(7)
    other = torch.randn(B, N, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    suite = tre.RankingMetrics(["ndcg@10", "mrr@10"])
    run_a, run_b = suite.per_query(preds, target, mask=mask), suite.per_query(other, target, mask=mask)
    compare = PairedComparison(["ndcg@10", "mrr@10"])
    compare.update(preds, other, target, mask=mask)
    result = compare.compute()
    for key in ("ndcg@10", "mrr@10"):
        both = ~torch.isnan(run_a[key]) & ~torch.isnan(run_b[key])
        torch.testing.assert_close(result[f"{key}/diff"], (run_a[key] - run_b[key])[both].mean())


def test_dataframe_with_query_ids_and_groups():
    pd = pytest.importorskip("pandas")
    preds, target, mask = _batch(8)
    rows = torch.tensor([30, 10, 20]).repeat_interleave(4)  # flat form: three queries of four rows
    suite = tre.RankingMetrics(["ndcg@3", "auc", "coverage@3"], options={"coverage": {"num_items": N}},
                               prefix="val/")
    frame = suite.per_query(preds[:3, :4].reshape(-1), target[:3, :4].reshape(-1), indexes=rows, as_frame=True)
    values = suite.per_query(preds[:3, :4].reshape(-1), target[:3, :4].reshape(-1), indexes=rows)
    assert list(frame.index) == [10, 20, 30] and frame.index.name == "query_id"
    assert list(frame.columns) == ["val/ndcg@3", "val/auc"]
    for key in frame.columns:
        assert frame[key].tolist() == pytest.approx(values[key].tolist(), nan_ok=True)

    grouped = tre.RankingMetrics(["mrr@5"], num_groups=2)
    groups = torch.arange(B) % 2
    frame = grouped.per_query(preds, target, mask=mask, groups=groups, as_frame=True,
                              query_ids=[f"user{b}" for b in range(B)])
    assert list(frame.columns) == ["group", "mrr@5"] and frame.index[3] == "user3"
    assert frame["group"].tolist() == groups.tolist()
    assert frame["mrr@5"].isna().tolist() == torch.isnan(grouped.per_query(preds, target, mask=mask,
                                                                           groups=groups)["mrr@5"]).tolist()
    assert isinstance(frame, pd.DataFrame)
    with pytest.raises(ValueError, match="one label per query"):
        grouped.per_query(preds, target, groups=groups, as_frame=True, query_ids=[1, 2])


def test_without_pandas_the_frame_error_says_so(monkeypatch):
    preds, target, _ = _batch(9)
    monkeypatch.setitem(sys.modules, "pandas", None)
    suite = tre.RankingMetrics(["ndcg@3"])
    with pytest.raises(ImportError, match="needs pandas"):
        suite.per_query(preds, target, as_frame=True)
    assert list(suite.per_query(preds, target)) == ["ndcg@3"]  # tensors need nothing
