"""``convention=`` presets against each library's own numbers.

* trec_eval (pytrec_eval): P_k, map_cut_k, ndcg_cut_k, recall_k, recip_rank, with tied scores (trec_eval
  breaks ties by docno descending = ``ties="reverse_index"`` when item index order is docno order),
  judged queries without a relevant document, short runs and k beyond the run;
* ranx: precision, recall, ndcg, map, mrr, hit_rate, with queries without a relevant item and short runs;
* torchmetrics.retrieval: the functional ``retrieval_*`` per query and the ``Retrieval*`` classes;
* RecBole, Jurity, Microsoft Recommenders, Spark and RecTools: the plain references of
  ``tests/reference/conventions.py``, each following that library's source (Jurity needs cvxpy, so it
  is not installed for the tests).

Every comparison covers k larger than the list, short recommendation lists (the ranked form), queries
with no relevant item, queries with fewer relevant items than k, and graded relevance. Then: explicit
options override a preset, unknown names raise, and the classes and ``RankingMetrics`` equal the
functional values.
"""

import math

import pytest
import torch

import torchrec_eval as tre
from tests.ranx_ids import PLACEHOLDER, doc_id
from tests.reference import conventions as ref
from torchrec_eval import functional as F
from torchrec_eval.conventions import PRESETS

TOL = {"rtol": 1e-9, "atol": 1e-12}
N = 12  # items per query in the dense data
KS = (1, 3, 10, N + 5)  # N + 5: k larger than the list


def _close(actual, expected, msg=""):
    actual = torch.as_tensor(actual, dtype=torch.float64 if isinstance(actual, float) else None)
    actual = actual.detach().to("cpu", torch.float64)
    expected = torch.as_tensor(expected, dtype=torch.float64).reshape(actual.shape)
    torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{msg}\n{m}", **TOL)


def _close_f32(actual, expected, msg=""):
    actual = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    expected = torch.as_tensor(expected).double().reshape(actual.shape)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6, equal_nan=True,
                               msg=lambda m: f"{msg}\n{m}")


def _nan(values):
    return [math.nan if v is None else v for v in values]


def _nanmean(values):
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


# ----------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------
def _dense(seed, B=40, ties=False):
    """[B, N] positive scores (distinct, or integers with many ties), graded relevance 0..3 with
    empty queries (rows 0, 5), a query where every item is relevant (row 1), and queries with one
    relevant item (rows 2, 3: fewer relevant items than k)."""
    g = torch.Generator().manual_seed(seed)
    if ties:
        preds = torch.randint(1, 5, (B, N), generator=g).double()
    else:
        preds = torch.rand(B, N, generator=g, dtype=torch.float64) + 0.01
    grades = torch.randint(1, 4, (B, N), generator=g)
    target = torch.where(torch.rand(B, N, generator=g) < 0.3, grades, torch.zeros_like(grades))
    target[0] = 0
    target[5] = 0
    target[1] = grades[1]
    for row in (2, 3):
        target[row] = 0
        target[row, row + 4] = 2
    return preds, target


def _dense_queries(preds, target):
    """(ranked item ids best first, {item: grade}) per row; scores must be distinct."""
    queries = []
    for s, t in zip(preds.tolist(), target.tolist(), strict=True):
        assert len(set(s)) == len(s)
        ranked = sorted(range(len(s)), key=lambda i: -s[i])
        queries.append((ranked, {i: g for i, g in enumerate(t) if g > 0}))
    return queries


def _ranked(seed, B=30, num_items=20, max_len=8):
    """The ranked form: short recommendation lists (0..max_len ids, -1 padded), ground truth ids with
    graded gains, some of it outside the list. Row 0: relevant items but an empty list; row 1: a list
    but no relevant item; row 2: a single relevant item; row 3: the whole list relevant."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (B,), generator=g).tolist()
    lengths[0], lengths[3] = 0, max_len
    ranked_ids = torch.full((B, max_len), -1, dtype=torch.long)
    target_ids = torch.full((B, num_items), -1, dtype=torch.long)
    target_gains = torch.zeros(B, num_items)
    queries = []
    for b in range(B):
        perm = torch.randperm(num_items, generator=g).tolist()
        ranked = perm[: lengths[b]]
        ranked_ids[b, : len(ranked)] = torch.tensor(ranked, dtype=torch.long)
        pool = torch.randperm(num_items, generator=g).tolist()
        size = int(torch.randint(1, 9, (1,), generator=g))
        truth_items = {1: [], 2: pool[:1], 3: ranked}.get(b, pool[:size])
        truth = {i: int(torch.randint(1, 4, (1,), generator=g)) for i in truth_items}
        for j, (item, grade) in enumerate(truth.items()):
            target_ids[b, j] = item
            target_gains[b, j] = grade
        queries.append((ranked, truth))
    return {"ranked_ids": ranked_ids, "target_ids": target_ids, "target_gains": target_gains}, queries


# ==============================================================================================
# trec_eval (pytrec_eval)
# ==============================================================================================
TREC_MEASURES = {"P": F.precision, "recall": F.recall, "map_cut": F.map, "ndcg_cut": F.ndcg}


def _pytrec(qrels, run, measures):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    return pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)


def test_trec_dense_with_ties():
    """convention="trec" reproduces trec_eval on tied scores: docno order == item index order."""
    preds, target = _dense(seed=1, ties=True)
    B = preds.shape[0]
    qid, did = [f"q{b:03d}" for b in range(B)], [f"d{i:04d}" for i in range(N)]
    P, T = preds.tolist(), target.tolist()
    qrels = {qid[b]: {did[i]: int(T[b][i]) for i in range(N)} for b in range(B)}  # judged, some all 0
    run = {qid[b]: {did[i]: P[b][i] for i in range(N)} for b in range(B)}
    measures = [f"{m}.{k}" for m in TREC_MEASURES for k in KS] + ["recip_rank"]
    res = _pytrec(qrels, run, measures)
    differs_without_convention = False
    for name, fn in TREC_MEASURES.items():
        for k in KS:
            expected = [res[q][f"{name}_{k}"] for q in qid]
            _close(fn(preds, target, k=k, convention="trec", reduction="none"), expected, f"{name}_{k}")
            _close(fn(preds, target, k=k, convention="trec"), sum(expected) / B, f"{name}_{k} mean")
            default_ties = fn(preds, target, k=k, convention="trec", ties="index", reduction="none")
            differs_without_convention |= not torch.allclose(default_ties, torch.tensor(expected).double())
    expected = [res[q]["recip_rank"] for q in qid]
    _close(F.mrr(preds, target, k=N, convention="trec", reduction="none"), expected, "recip_rank")
    assert differs_without_convention  # the data has ties that matter


def test_trec_short_runs():
    """Short runs (the ranked form): P_k divides by k past the run, recall and map_cut by every
    relevant document, ndcg_cut's ideal from all judged documents. A judged query without relevant
    documents scores 0 and is counted; a query with an empty run is not in pytrec_eval's output
    (trec_eval -c scores it 0, as this library does)."""
    inputs, queries = _ranked(seed=2)
    qrels, run, with_run = {}, {}, []
    for b, (ranked, truth) in enumerate(queries):
        q = f"q{b:03d}"
        qrels[q] = {f"d{i:04d}": g for i, g in truth.items()} or {"d9999": 0}
        if ranked:
            run[q] = {f"d{i:04d}": float(len(ranked) - r) for r, i in enumerate(ranked)}
            with_run.append(b)
    res = _pytrec(qrels, run, [f"{m}.{k}" for m in TREC_MEASURES for k in KS] + ["recip_rank"])
    empty_run = [b for b in range(len(queries)) if b not in with_run]
    for name, fn in [*TREC_MEASURES.items(), ("recip_rank", F.mrr)]:
        for k in KS if name != "recip_rank" else (inputs["ranked_ids"].shape[1],):
            key = name if name == "recip_rank" else f"{name}_{k}"
            got = fn(k=k, convention="trec", reduction="none", **inputs)
            _close(got[with_run], [res[f"q{b:03d}"][key] for b in with_run], key)
            assert (got[empty_run] == 0).all()


# ==============================================================================================
# ranx
# ==============================================================================================
RANX = {"precision": F.precision, "recall": F.recall, "ndcg": F.ndcg, "map": F.map, "mrr": F.mrr,
        "hit_rate": F.hitrate}


def _ranx(queries, metrics):
    ranx = pytest.importorskip("ranx")
    qrels, run = {}, {}
    for b, (ranked, truth) in enumerate(queries):
        qrels[f"q{b:03d}"] = {doc_id(i): g for i, g in truth.items()} or {PLACEHOLDER: 0}
        run[f"q{b:03d}"] = {doc_id(i): float(len(ranked) - r) for r, i in enumerate(ranked)}
    res = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics, return_mean=False, make_comparable=True)
    return {m: [float(v) for v in res[m]] for m in metrics}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
def test_ranx_dense_and_short_lists():
    preds, target = _dense(seed=3)
    dense_queries = _dense_queries(preds, target)
    inputs, ranked_queries = _ranked(seed=4)
    for queries, call in ((dense_queries, {"preds": preds, "target": target}), (ranked_queries, inputs)):
        res = _ranx(queries, [f"{m}@{k}" for m in RANX for k in KS])
        for name, fn in RANX.items():
            for k in KS:
                expected = res[f"{name}@{k}"]  # a query without a relevant item: 0, counted
                _close(fn(k=k, convention="ranx", reduction="none", **call), expected, f"{name}@{k}")
                _close(fn(k=k, convention="ranx", **call), sum(expected) / len(expected), f"{name}@{k}")


# ==============================================================================================
# torchmetrics.retrieval
# ==============================================================================================
def test_torchmetrics_functional_per_query():
    tmf = pytest.importorskip("torchmetrics.functional.retrieval")
    preds, target = _dense(seed=5)
    binary = target > 0
    cases = [
        (F.precision, lambda p, t, k: tmf.retrieval_precision(p, t > 0, top_k=k)),
        (F.recall, lambda p, t, k: tmf.retrieval_recall(p, t > 0, top_k=k)),
        (F.map, lambda p, t, k: tmf.retrieval_average_precision(p, t > 0, top_k=k)),
        (F.mrr, lambda p, t, k: tmf.retrieval_reciprocal_rank(p, t > 0, top_k=k)),
        (F.hitrate, lambda p, t, k: tmf.retrieval_hit_rate(p, t > 0, top_k=k)),
        (F.ndcg, lambda p, t, k: tmf.retrieval_normalized_dcg(p, t, top_k=k)),  # graded, linear gain
    ]
    assert binary.any(1).sum() < preds.shape[0]  # some queries without a relevant item
    for fn, theirs in cases:
        for k in KS:
            expected = [float(theirs(preds[b].float(), target[b], k)) for b in range(preds.shape[0])]
            got = fn(preds, target, k=k, convention="torchmetrics", reduction="none")
            _close_f32(got, expected, f"{fn.__name__}@{k}")


def test_torchmetrics_ndcg_averages_ties_under_the_preset_alone():
    """torchmetrics' NDCG averages tied scores (sklearn style); the preset does too, by itself, in a
    function, a class and a suite (whose other metrics keep the index order)."""
    tmf = pytest.importorskip("torchmetrics.functional.retrieval")
    tmr = pytest.importorskip("torchmetrics.retrieval")
    preds, target = _dense(seed=6, ties=True)
    for k in KS:
        expected = [float(tmf.retrieval_normalized_dcg(p, t, top_k=k))
                    for p, t in zip(preds, target, strict=True)]
        got = F.ndcg(preds, target, k=k, convention="torchmetrics", reduction="none")
        _close_f32(got, expected, f"ndcg@{k}")
    indexes = torch.arange(preds.shape[0]).repeat_interleave(N)
    theirs = tmr.RetrievalNormalizedDCG(top_k=3)
    theirs.update(preds.flatten().float(), target.flatten(), indexes=indexes)
    cls, suite = tre.NDCG(k=3, convention="torchmetrics"), tre.RankingMetrics(["ndcg@3", "map@3"], convention="torchmetrics")
    for ours in (cls, suite):
        ours.update(preds.flatten(), target.flatten(), indexes=indexes)
    _close_f32(cls.compute(), theirs.compute(), "NDCG class")
    _close_f32(suite.compute()["ndcg@3"], theirs.compute(), "suite ndcg@3")
    index_order = F.map(preds, target, k=3, convention="torchmetrics", ties="index")
    assert torch.allclose(suite.compute()["map@3"], index_order)  # MAP keeps the index order
    # an explicit `ties` wins over the preset's averaging
    explicit = F.ndcg(preds, target, k=3, convention="torchmetrics", ties="index")
    assert torch.allclose(explicit, F.ndcg(preds, target, k=3, ties="index", empty_target_action="neg"))
    assert not torch.allclose(explicit, F.ndcg(preds, target, k=3, convention="torchmetrics"))


@pytest.mark.parametrize("k", [2, N + 5])
def test_torchmetrics_classes_flat(k):
    tmr = pytest.importorskip("torchmetrics.retrieval")
    preds, target = _dense(seed=7)
    indexes = torch.arange(preds.shape[0]).repeat_interleave(N)
    perm = torch.randperm(indexes.numel(), generator=torch.Generator().manual_seed(0))
    p, t, i = preds.flatten()[perm], target.flatten()[perm], indexes[perm]
    cases = [(tre.Precision, tmr.RetrievalPrecision), (tre.Recall, tmr.RetrievalRecall),
             (tre.MAP, tmr.RetrievalMAP), (tre.MRR, tmr.RetrievalMRR), (tre.HitRate, tmr.RetrievalHitRate),
             (tre.NDCG, tmr.RetrievalNormalizedDCG)]
    for ours_cls, theirs_cls in cases:
        ours = ours_cls(k=k, convention="torchmetrics")
        theirs = theirs_cls(top_k=k)
        rel = t if theirs_cls is tmr.RetrievalNormalizedDCG else t > 0
        ours.update(p, t, indexes=i)
        theirs.update(p.float(), rel, indexes=i)
        _close_f32(ours.compute(), theirs.compute(), ours_cls.__name__)


# ==============================================================================================
# RecBole, Jurity, Microsoft Recommenders, Spark, RecTools: references following their source
# ==============================================================================================
FUNCTIONAL = {"precision": F.precision, "recall": F.recall, "map": F.map, "ndcg": F.ndcg, "mrr": F.mrr,
              "hitrate": F.hitrate, "f1": F.f1, "rprecision": F.rprecision}
# users a library drops from the mean although they have relevant items: those with an empty
# recommendation list, for these metrics; the presets set empty_list_action="skip" there
DROPS_EMPTY_LISTS = {"jurity": {"precision", "map"}, "recommenders": {"precision", "recall", "map", "rprecision"}}


@pytest.mark.parametrize("library", sorted(ref.LIBRARIES))
def test_reference_dense(library):
    preds, target = _dense(seed=8 + len(library))
    queries = _dense_queries(preds, target)
    for name, theirs in ref.LIBRARIES[library].items():
        for k in KS:
            expected = [theirs(ranked, truth, k) for ranked, truth in queries]
            got = FUNCTIONAL[name](preds, target, k=k, convention=library, reduction="none")
            _close(got, _nan(expected), f"{library} {name}@{k}")
            _close(FUNCTIONAL[name](preds, target, k=k, convention=library), ref.mean(expected),
                   f"{library} {name}@{k} mean")


@pytest.mark.parametrize("library", sorted(ref.LIBRARIES))
def test_reference_short_lists(library):
    inputs, queries = _ranked(seed=20 + len(library))
    empty_list = [not ranked and bool(truth) for ranked, truth in queries]
    assert any(empty_list)
    for name, theirs in ref.LIBRARIES[library].items():
        for k in KS:
            expected = [theirs(ranked, truth, k) for ranked, truth in queries]
            got = FUNCTIONAL[name](k=k, convention=library, reduction="none", **inputs)
            if name in DROPS_EMPTY_LISTS.get(library, ()):
                # the library leaves these users out, and so does the preset (empty_list_action="skip")
                assert all(expected[b] is None for b in range(len(queries)) if empty_list[b])
            _close(got, _nan(expected), f"{library} {name}@{k}")
            _close(FUNCTIONAL[name](k=k, convention=library, **inputs), ref.mean(expected), f"{library} {name}@{k} mean")


def test_reference_recommenders_ndcg_counts_users_without_predictions():
    """MS ndcg_at_k averages every user of rating_true (outer join): an empty list scores 0, counted."""
    inputs, queries = _ranked(seed=31)
    for k in KS:
        expected = [ref.recommenders_ndcg_at_k(ranked, truth, k) for ranked, truth in queries]
        assert expected[0] == 0.0
        _close(F.ndcg(k=k, convention="recommenders", **inputs), ref.mean(expected))


# ==============================================================================================
# explicit options override a preset
# ==============================================================================================
def test_override_trec():
    preds, target = _dense(seed=40, ties=True)
    for k in KS:
        # normalizer: trec's map_cut divides by R; min(k, R) on request, all else of the preset kept
        _close(F.map(preds, target, k=k, convention="trec", normalizer="min_k_r", reduction="none"),
               F.map(preds, target, k=k, normalizer="min_k_r", empty_target_action="neg",
                     ties="reverse_index", reduction="none"))
        # empty_target_action and ties
        skipped = F.ndcg(preds, target, k=k, convention="trec", empty_target_action="skip", reduction="none")
        assert torch.isnan(skipped[[0, 5]]).all()
        _close(F.ndcg(preds, target, k=k, convention="trec", ties="index", empty_target_action="skip"),
               F.ndcg(preds, target, k=k))
    with pytest.raises(ValueError):
        F.map(preds, target, k=3, convention="trec", normalizer="bogus")


def test_override_rectools_options():
    """RecTools' own switches: NDCG(divide_by_achievable=True) -> ideal="cut", Precision(r_precision=True)
    -> denominator="min_k_r", MAP(divide_by_k=True) -> normalizer="k"."""
    preds, target = _dense(seed=41)
    queries = _dense_queries(preds, target)
    for k in KS:
        cases = [
            (F.ndcg, {"ideal": "cut"}, ref.rectools_ndcg, {"divide_by_achievable": True}),
            (F.ndcg, {"log_base": 10.0}, ref.rectools_ndcg, {"log_base": 10}),
            (F.precision, {"denominator": "min_k_r"}, ref.rectools_precision, {"r_precision": True}),
            (F.map, {"normalizer": "k"}, ref.rectools_map, {"divide_by_k": True}),
        ]
        for fn, options, theirs, their_options in cases:
            expected = [theirs(ranked, truth, k, **their_options) for ranked, truth in queries]
            _close(fn(preds, target, k=k, convention="rectools", reduction="none", **options), _nan(expected),
                   f"{fn.__name__} {options} @{k}")


def test_override_recommenders_graded_ndcg():
    """MS ndcg_at_k(score_type="raw" | "exp") -> gain="linear" | "exp"; discfun_type="log2" -> log_base=2
    (NDCG is a ratio: the base cancels)."""
    preds, target = _dense(seed=42)
    queries = _dense_queries(preds, target)
    for k in KS:
        for gain, score_type in (("linear", "raw"), ("exp", "exp")):
            for base, discfun in ((math.e, "loge"), (2.0, "log2")):
                expected = [ref.recommenders_ndcg_at_k(r, t, k, score_type, discfun) for r, t in queries]
                got = F.ndcg(preds, target, k=k, convention="recommenders", gain=gain, log_base=base,
                             reduction="none")
                _close(got, _nan(expected), f"{score_type} {discfun} @{k}")
    # MS map (not map_at_k) divides by every relevant item
    for k in KS:
        expected = [ref.recommenders_map(r, t, k) for r, t in queries]
        _close(F.map(preds, target, k=k, convention="recommenders", normalizer="r", reduction="none"),
               _nan(expected))


def test_override_spark_graded_ndcg_and_map():
    """Spark ndcgAt with relevance values: gain 2^rel - 1, ideal from the labels in the order given,
    which equals gain="exp" when the labels come sorted by relevance. meanAveragePrecision (no k)
    divides by |lab|: normalizer="r"."""
    preds, target = _dense(seed=43)
    queries = _dense_queries(preds, target)
    for k in KS:
        expected = []
        for ranked, truth in queries:
            lab = sorted(truth, key=lambda i: -truth[i])
            expected.append(ref.spark_ndcg_at(ranked, lab, k, [float(truth[i]) for i in lab]))
        _close(F.ndcg(preds, target, k=k, convention="spark", gain="exp", reduction="none"), expected)
    expected = [ref.spark_mean_average_precision(ranked, list(truth)) for ranked, truth in queries]
    _close(F.map(preds, target, k=N, convention="spark", normalizer="r", reduction="none"), expected)


def test_dcg_log_base_of_presets():
    """NDCG is a ratio, so its log base cancels; the base shows in DCG: natural log for MS Recommenders
    (ndcg_at_k's per-user dcg) and Spark (ndcgAt's dcg accumulator), log2 for RecBole, with binary gains."""
    inputs, queries = _ranked(seed=46)
    for k in KS:
        for convention, theirs in (
            ("recommenders", ref.recommenders_user_dcg),
            ("spark", lambda r, t, k: ref.spark_dcg_at(r, list(t), k) if t else 0.0),
            ("recbole", lambda r, t, k: ref.recommenders_user_dcg(r, t, k, discfun_type="log2")),
        ):
            expected = [theirs(ranked, truth, k) for ranked, truth in queries]
            _close(F.dcg(k=k, convention=convention, reduction="none", **inputs), _nan(expected),
                   f"{convention} dcg@{k}")


def test_override_jurity_precision_denominator():
    inputs, queries = _ranked(seed=44)
    for k in KS:
        got = F.precision(k=k, convention="jurity", denominator="k", reduction="none", **inputs)
        # hits / k; empty queries and (Jurity's users without predictions) empty lists skipped
        expected = [ref.recbole_precision(r, t, k) if r else None for r, t in queries]
        _close(got, _nan(expected))
        counted = F.precision(k=k, convention="jurity", empty_list_action="neg", reduction="none", **inputs)
        assert counted[0] == 0 and torch.isnan(got[0])  # row 0: relevant items, an empty list


def test_override_in_classes_and_suite():
    preds, target = _dense(seed=45, ties=True)
    expected = F.map(preds, target, k=3, convention="trec", normalizer="min_k_r")
    m = tre.MAP(k=3, convention="trec", normalizer="min_k_r")
    m.update(preds, target)
    _close(m.compute(), expected)
    suite = tre.RankingMetrics(["map@3"], convention="trec", options={"map": {"normalizer": "min_k_r"}})
    suite.update(preds, target)
    _close(suite.compute()["map@3"], expected)


# ==============================================================================================
# unknown names; classes and RankingMetrics equal the functional values
# ==============================================================================================
def test_unknown_convention():
    preds, target = _dense(seed=50)
    for call in (lambda: F.ndcg(preds, target, k=3, convention="trec_eval"),
                 lambda: tre.NDCG(k=3, convention="trec_eval"),
                 lambda: tre.RankingMetrics(["ndcg@3", "map@3"], convention="trec_eval")):
        with pytest.raises(ValueError, match="trec_eval") as info:
            call()
        for name in PRESETS:
            assert repr(name) in str(info.value)


CLASSES = {"precision": tre.Precision, "recall": tre.Recall, "f1": tre.F1, "hitrate": tre.HitRate,
           "mrr": tre.MRR, "arhr": tre.ARHR, "map": tre.MAP, "mar": tre.MAR, "ndcg": tre.NDCG, "dcg": tre.DCG,
           "cg": tre.CG, "rprecision": tre.RPrecision}
SUITE = ["precision@3", "recall@3", "f1@3", "hitrate@3", "mrr@3", "arhr@3", "map@3", "mar@3", "ndcg@3",
         "dcg@3", "cg@3", "precision@17", "map@17", "ndcg@17", "rprecision"]


@pytest.mark.parametrize("convention", sorted(PRESETS))
def test_suite_and_classes_equal_functional(convention):
    preds, target = _dense(seed=51, ties=True)
    suite = tre.RankingMetrics(SUITE, convention=convention)
    suite.update(preds[:17], target[:17])
    suite.update(preds[17:], target[17:])
    out = suite.compute()
    assert list(out) == SUITE
    for key in SUITE:
        name, _, k = key.partition("@")
        k = int(k) if k else None
        fn = getattr(F, name)
        expected = fn(preds, target, k=k, convention=convention)
        _close(out[key], expected, f"{convention} {key}")
        cls = CLASSES[name]
        m = cls(k=k, convention=convention)
        m.update(preds[:9], target[:9])
        m.update(preds[9:], target[9:])
        _close(m.compute(), expected, f"{convention} {cls.__name__}")


def test_rprecision_with_a_cap_is_not_rectools_r_precision_and_says_which_is():
    """RecTools' R-Precision counts hits in the top k (not the top min(k, R)) over min(k, R)."""
    ranked, truth = [3, 0, 1, 2], {0, 1}  # R = 2 < k = 4; hits at ranks 2 and 3
    rectools = ref.rectools_precision(ranked, truth, 4, r_precision=True)  # 2 / min(4, 2) = 1
    scores = torch.tensor([[0.7, 0.6, 0.5, 0.9]])  # ranks item 3, 0, 1, 2
    target = torch.tensor([[1, 1, 0, 0]])
    assert F.precision(scores, target, k=4, denominator="min_k_r").item() == pytest.approx(rectools)
    assert F.rprecision(scores, target, k=4).item() == pytest.approx(0.5)  # hits@2 / 2
    for doc in (tre.RPrecision.__doc__, F.rprecision.__doc__):
        assert 'denominator="min_k_r"' in doc and "(RecTools)" not in doc


def test_rectools_novelty_counts_a_cold_item_as_seen_by_one_user():
    """RecTools' MeanInvUserFreq fills the user count of an item nobody interacted with by 1."""
    prev = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (3, 2), (4, 2)]  # item 3 is cold; least popular: 2 users
    lists = [[3, 0], [2, 1, 3], [0]]
    popularity = torch.tensor([3.0, 2.0, 2.0, 0.0])
    expected = ref.rectools_miuf(lists, prev)
    ranked = torch.tensor([[3, 0, -1], [2, 1, 3], [0, -1, -1]])
    kwargs = dict(k=3, item_popularity=popularity, num_users=5)
    for metric in (tre.Novelty(convention="rectools", **kwargs), tre.Novelty(cold_items="one_user", **kwargs)):
        metric.update(ranked_ids=ranked, target_ids=torch.tensor([[0], [1], [0]]))
        assert float(metric.compute()) == pytest.approx(expected, abs=1e-12)
    suite = tre.RankingMetrics(["novelty@3"], convention="rectools",
                               options={"novelty": {"item_popularity": popularity, "num_users": 5}})
    suite.update(ranked_ids=ranked, target_ids=torch.tensor([[0], [1], [0]]))
    assert float(suite.compute()["novelty@3"]) == pytest.approx(expected, abs=1e-12)
    default = tre.Novelty(**kwargs)  # the least popular observed item: 2 users
    default.update(ranked_ids=ranked, target_ids=torch.tensor([[0], [1], [0]]))
    assert float(default.compute()) != pytest.approx(expected)


def test_rectools_intra_list_diversity_scores_a_one_item_list_zero():
    features = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.2]], dtype=torch.float64)
    unit = features / features.norm(dim=1, keepdim=True)
    lists = [[0, 1, 2], [3], [2, 0], []]
    expected = ref.rectools_ild(lists, lambda a, b: 1.0 - float(unit[a] @ unit[b]))
    ranked = torch.tensor([[0, 1, 2], [3, -1, -1], [2, 0, -1], [-1, -1, -1]])
    targets = torch.tensor([[0], [1], [2], [3]])
    for metric in (tre.IntraListDiversity(k=3, item_features=features, convention="rectools"),
                   tre.IntraListDiversity(k=3, item_features=features, single_item="zero")):
        metric.update(ranked_ids=ranked, target_ids=targets)
        assert float(metric.compute()) == pytest.approx(expected, abs=1e-12)
    skipping = tre.IntraListDiversity(k=3, item_features=features)  # Jurity, MS Recommenders
    skipping.update(ranked_ids=ranked, target_ids=targets)
    assert float(skipping.compute()) == pytest.approx(expected * 3 / 2, abs=1e-12)  # the 0 is not averaged


def test_the_presets_and_docs_name_every_metric_a_library_drops_empty_lists_from():
    """The references (from the libraries' source) drop these users; the presets set the option, and
    the module text names each metric."""
    import torchrec_eval.conventions as conventions

    names = {"precision": "precision", "recall": "recall", "map": "MAP"}
    note = " ".join(conventions.__doc__.split())
    for library, label in (("jurity", "``\"jurity\"`` leaves users"), ("recommenders", "``\"recommenders\"`` out of")):
        said = note.split(label)[1].split("(")[0]
        for metric in DROPS_EMPTY_LISTS[library]:
            assert PRESETS[library].options[metric]["empty_list_action" if metric in names else "no_hit_action"] == "skip"
            assert metric not in names or names[metric] in said, (library, metric, said)


def test_jurity_ctr_cut_with_the_ranked_form():
    """Jurity's CTR@k (top k of every item, then the logged ones) with the ranked form: the top k of
    every item as ``ranked_ids``, unlogged ones set to -1."""
    gen = torch.Generator().manual_seed(4)
    scores = torch.rand(30, 12, generator=gen)
    logged = torch.rand(30, 12, generator=gen) < 0.6
    clicked = (torch.rand(30, 12, generator=gen) < 0.4) & logged
    k = 5
    top = torch.topk(scores, k).indices
    shown = logged.gather(1, top)
    want = int((clicked.gather(1, top) & shown).sum()) / int(shown.sum())  # pooled, as Jurity's CTR
    clicked_ids = torch.where(clicked, torch.arange(12), -1)
    got = tre.functional.ctr(ranked_ids=torch.where(shown, top, -1), target_ids=clicked_ids, k=k)
    assert float(got) == pytest.approx(want, abs=1e-12)


def _jurity_tables(scores, recommended, responses):
    """Dense rows as Jurity's frames: the recommended items with their scores, the logged responses
    (``responses`` >= 0; -1 unlogged)."""
    predicted = {u: [(i, float(scores[u, i])) for i in range(scores.shape[1]) if recommended[u, i]]
                 for u in range(scores.shape[0])}
    actual = {u: {i: int(responses[u, i]) for i in range(scores.shape[1]) if responses[u, i] >= 0}
              for u in range(scores.shape[0])}
    return predicted, actual


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jurity_ctr_takes_the_top_k_of_every_item_then_the_logged_ones(seed):
    """convention="jurity": CTR@k cuts at k before dropping the unlogged items (Jurity's CTR.get_score);
    items outside the recommendations are ``mask`` False. The default drops them first."""
    gen = torch.Generator().manual_seed(seed)
    scores = torch.rand(40, 15, generator=gen, dtype=torch.float64)
    recommended = torch.rand(40, 15, generator=gen) < 0.8
    responses = torch.where(torch.rand(40, 15, generator=gen) < 0.5, (torch.rand(40, 15, generator=gen) < 0.4).long(), -1)
    predicted, actual = _jurity_tables(scores, recommended, responses)
    ks = [1, 3, 5, 20]
    metric = tre.CTR(k=ks, ignore_index=-1, convention="jurity")
    metric.update(scores[:25], responses[:25], mask=recommended[:25])
    metric.update(scores[25:], responses[25:], mask=recommended[25:])
    got = metric.compute()
    functional = F.ctr(scores, responses, k=ks, ignore_index=-1, unlogged="rank", mask=recommended)
    default = tre.CTR(k=ks, ignore_index=-1, convention="jurity", unlogged="drop")
    default.update(scores, responses, mask=recommended)
    for k in ks:
        want = ref.jurity_ctr(predicted, actual, k)
        assert float(got[f"ctr@{k}"]) == pytest.approx(want, abs=1e-12)
        assert float(functional[f"ctr@{k}"]) == pytest.approx(want, abs=1e-12)
        logged_first = {u: [(i, s) for i, s in rows if i in actual[u]] for u, rows in predicted.items()}
        assert float(default.compute()[f"ctr@{k}"]) == pytest.approx(ref.jurity_ctr(logged_first, actual, k), abs=1e-12)
    assert any(float(got[key]) != pytest.approx(float(value)) for key, value in default.compute().items())


def test_jurity_ctr_on_jurity_own_test_cases():
    """jurity tests/test_reco_binary.py: test_ctr (all recommendations: 1/3, support 3) and
    test_ctr_on_secondary_col (k=1, responses of the 'kpi' column: 1/3, support 3). Users are rows,
    item ids columns; a cell without a prediction is ``mask`` False, one without a response -1."""
    def dense(cells, width=4):
        scores, responses = torch.zeros(4, width, dtype=torch.float64), torch.full((4, width), -1)
        recommended = torch.zeros(4, width, dtype=torch.bool)
        for user, item, score in cells["predicted"]:
            scores[user - 1, item], recommended[user - 1, item] = score, True
        for user, item, response in cells["actual"]:
            responses[user - 1, item] = response
        return scores, responses, recommended

    first = {"predicted": [(1, 1, 0.8), (2, 2, 0.7), (3, 2, 0.8), (4, 3, 0.7)],
             "actual": [(1, 1, 0), (2, 2, 1), (3, 0, 0), (4, 3, 0)]}
    second = {"predicted": [(1, 1, 0.8), (2, 1, 0.7), (2, 3, 0.6), (3, 2, 0.8), (4, 3, 0.7)],
              "actual": [(1, 1, 1), (2, 1, 0), (2, 2, 1), (3, 0, 0), (4, 3, 0)]}  # the 'kpi' responses
    for cells, k in ((first, 4), (second, 1)):
        scores, responses, recommended = dense(cells)
        metric = tre.CTR(k=k, ignore_index=-1, convention="jurity")
        metric.update(scores, responses, mask=recommended)
        assert float(metric.compute()) == pytest.approx(1 / 3, abs=1e-12)
        predicted, actual = _jurity_tables(scores, recommended, responses)
        assert ref.jurity_ctr(predicted, actual, k) == pytest.approx(1 / 3, abs=1e-12)
    # in the second case the cut matters: user 2's top 1 is item 1 (logged), before item 3 (unlogged)
    scores, responses, recommended = dense(second)
    assert float(F.ctr(scores, responses, k=1, ignore_index=-1, mask=recommended)) == pytest.approx(1 / 3)
    responses[1, 1], responses[1, 3] = -1, 1  # user 2: top item unlogged, the next one clicked
    predicted, actual = _jurity_tables(scores, recommended, responses)
    assert ref.jurity_ctr(predicted, actual, 1) == pytest.approx(1 / 2)  # user 2 has no logged item in its top 1
    assert float(F.ctr(scores, responses, k=1, ignore_index=-1, mask=recommended, unlogged="rank")) == pytest.approx(1 / 2)
    assert float(F.ctr(scores, responses, k=1, ignore_index=-1, mask=recommended)) == pytest.approx(2 / 3)


def test_ctr_unlogged_ties_and_arguments():
    """``unlogged="rank"`` under ties="average" is the mean over the orders of the tied items; a bad
    value raises, naming the argument, and changes no state; without ``ignore_index`` it changes nothing."""
    import itertools

    scores = torch.tensor([[1.0, 1.0, 1.0, 0.5]])
    responses = torch.tensor([[1, -1, 0, 1]])
    values = []
    for order in itertools.permutations(range(3)):  # every order of the three tied items
        top = list(order)[:2]
        logged = [i for i in top if responses[0, i] >= 0]
        values.append((sum(int(responses[0, i]) for i in logged), len(logged)))
    want = sum(c for c, _ in values) / sum(n for _, n in values)  # pooled expectation: E[clicks] / E[shown]
    got = F.ctr(scores, responses, k=2, ignore_index=-1, unlogged="rank", ties="average")
    assert float(got) == pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError, match="`unlogged`.*'all'"):
        tre.CTR(k=2, ignore_index=-1, unlogged="all")
    with pytest.raises(ValueError, match="`unlogged`.*'all'"):
        F.ctr(scores, responses, k=2, ignore_index=-1, unlogged="all")
    metric = tre.CTR(k=2, ignore_index=-1, convention="jurity")
    before = metric.pairwise_ctr_at_2.clone()
    with pytest.raises(ValueError):
        metric.update(scores, None)
    assert torch.equal(metric.pairwise_ctr_at_2, before)
    plain = tre.CTR(k=2, convention="jurity")  # no unlogged item marked: the same as the default
    plain.update(scores, responses.clamp(min=0))
    assert float(plain.compute()) == pytest.approx(float(F.ctr(scores, responses.clamp(min=0), k=2)))
    assert "unlogged" not in repr(plain) and "unlogged='drop'" in repr(tre.CTR(unlogged="drop"))


def _as_ranked(queries, width=4):
    ranked_ids = torch.full((len(queries), width), -1, dtype=torch.long)
    target_ids = torch.full((len(queries), width), -1, dtype=torch.long)
    for b, (ranked, truth) in enumerate(queries):
        ranked_ids[b, : len(ranked)] = torch.tensor(ranked, dtype=torch.long)
        target_ids[b, : len(truth)] = torch.tensor(list(truth), dtype=torch.long)
    return {"ranked_ids": ranked_ids, "target_ids": target_ids}


MS_EMPTY_CASES = {  # (ranked, truth) per user
    "no hit in any top k": [([0, 1, 2], {5: 1}), ([3, 4], {6: 1, 7: 1}), ([1], {})],
    "no user with a list": [([], {5: 1}), ([], {6: 1})],
    "no user with relevant items": [([0, 1], {}), ([2], {})],
    "no user": [],
    "hits past rank R only": [([0, 1, 2], {1: 1}), ([3, 4], {9: 1})],  # r_precision_at_k: NaN
    "hits": [([0, 1, 2], {0: 1, 2: 1}), ([3, 4], {9: 1}), ([], {1: 1})],
}


@pytest.mark.filterwarnings("ignore:The ``compute`` method")
@pytest.mark.parametrize("case", sorted(MS_EMPTY_CASES))
def test_recommenders_mean_over_no_user_is_zero_where_ms_returns_zero(case):
    """MS Recommenders returns 0.0 when no user has a hit in the top k (``df_hit`` empty), NaN from
    r_precision_at_k when hits exist but none in the top min(k, R): ``empty_mean="zero"``."""
    queries, k = MS_EMPTY_CASES[case], 2
    names = ["precision", "recall", "map", "ndcg", "rprecision"]
    suite = tre.RankingMetrics([f"{name}@{k}" for name in names], convention="recommenders")
    classes = {"precision": tre.Precision, "recall": tre.Recall, "map": tre.MAP, "ndcg": tre.NDCG,
               "rprecision": tre.RPrecision}
    if queries:
        suite.update(**_as_ranked(queries))
    got = suite.compute()
    for name in names:
        want = ref.recommenders_score(ref.RECOMMENDERS[name], queries, k)
        _close(float(got[f"{name}@{k}"]), want, f"{case} {name}")
        one = classes[name](k=k, convention="recommenders")
        if queries:
            one.update(**_as_ranked(queries))
            _close(float(getattr(F, name)(**_as_ranked(queries), k=k, convention="recommenders")), want, name)
        _close(float(one.compute()), want, f"{case} {name} class")
    if case == "no user with a list":  # an explicit empty_mean="nan" wins: NaN over no user, as before
        nan = tre.Precision(k=k, convention="recommenders", empty_mean="nan")
        nan.update(**_as_ranked(queries))
        assert math.isnan(float(nan.compute()))


def test_empty_mean_groups_and_bad_values():
    """Per group: a group whose users have no hit is 0.0, another keeps its mean; a bad value raises,
    naming the argument."""
    queries = [([0, 1], {5: 1}), ([0, 1], {0: 1})]
    metric = tre.Precision(k=2, empty_mean="zero", empty_list_action="skip", num_groups=3)
    metric.update(**_as_ranked(queries), groups=torch.tensor([0, 1]))
    got = metric.compute()
    assert got.tolist() == [0.0, 0.5, 0.0]  # group 2 has no query: 0.0
    assert math.isnan(float(tre.Precision(k=2).compute()))  # the default: NaN over no query
    with pytest.raises(ValueError, match="`empty_mean` of precision must be one of .*got 'zeros'"):
        tre.Precision(k=2, empty_mean="zeros")


# ==============================================================================================
# LensKit (a plain re-implementation of its 2026 source: tests/reference/conventions.py)
# ==============================================================================================
LENSKIT = [
    (F.precision, {}, ref.lenskit_precision, {}),
    (F.recall, {}, ref.lenskit_recall, {}),
    (F.map, {}, ref.lenskit_average_precision, {}),
    (F.ndcg, {"gain": "binary"}, ref.lenskit_ndcg, {}),
    (F.ndcg, {}, ref.lenskit_ndcg, {"graded": True}),
    (F.dcg, {"gain": "binary"}, ref.lenskit_dcg, {}),
    (F.rbp, {}, ref.lenskit_rbp, {}),
    # LensKit's LogRankWeight(offset=1) and its default LogRankWeight() (clipped), plain and normalized; an
    # empty list is 0 / 0 there: left out
    (F.rbp, {"weight": "log", "empty_list_action": "skip"}, ref.lenskit_rbp_log, {}),
    (F.rbp, {"weight": "clipped_log", "empty_list_action": "skip"}, ref.lenskit_rbp_log, {"offset": 0}),
    (F.rbp, {"weight": "log", "normalize": True, "empty_list_action": "skip"}, ref.lenskit_rbp_log,
     {"normalize": True}),
    (F.rbp, {"weight": "log", "log_base": 10.0, "empty_list_action": "skip"}, ref.lenskit_rbp_log, {"base": 10.0}),
    (F.mrr, {}, ref.lenskit_reciprocal_rank, {}),
    (F.hitrate, {}, ref.lenskit_hit, {}),
]


def test_lenskit_preset_on_short_lists_and_the_dense_form():
    """convention="lenskit": precision over the list's length (an empty list left out), recall over
    min(R, k), AP over min(R, list length) (an empty list left out), the clipped discount
    1 / log2(max(i, 2)) in DCG and NDCG and their ideal, RBP with patience 0.85."""
    inputs, ranked_queries = _ranked(seed=43)
    preds, target = _dense(seed=44)
    for queries, call in ((ranked_queries, inputs), (_dense_queries(preds, target), {"preds": preds, "target": target})):
        for k in KS:
            for fn, options, theirs, their_options in LENSKIT:
                expected = [theirs(ranked, truth, k, **their_options) for ranked, truth in queries]
                if fn is F.dcg:  # DCG has no ideal: LensKit's value for a user without test items is 0
                    expected = [0.0 if value is None else value for value in expected]
                    options = {**options, "empty_target_action": "neg"}
                _close(fn(k=k, convention="lenskit", reduction="none", **options, **call), _nan(expected),
                       f"{fn.__name__} {options} @{k}")
    # the clipped discount and the list-length normaliser are what the preset changes
    assert not torch.allclose(F.ndcg(k=3, gain="binary", **inputs), F.ndcg(k=3, gain="binary", convention="lenskit", **inputs))
    assert not torch.allclose(F.map(k=10, normalizer="min_k_r", **inputs), F.map(k=10, convention="lenskit", **inputs))
