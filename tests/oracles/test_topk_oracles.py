"""Top-k metrics against independent oracles.

* the worked examples of ``docs/metrics/graded.md`` (DCG/NDCG), ``docs/metrics/hits.md`` (Recall@5,
  Precision@2) and ``docs/metrics/rank.md`` (AP@6, MRR);
* trec_eval (pytrec_eval), ranx, scikit-learn and torchmetrics.retrieval on the conventions they share
  with this library (distinct continuous scores, so no library's tie rule matters);
* the brute-force loop reference in ``tests/reference/ranking.py`` for every metric and option, with
  ties, masks, k larger than the number of items, queries without relevant items under each
  ``empty_target_action``, and both ``ties`` modes.
"""

import math

import pytest
import torch

import torchrec_eval as tre
from tests.ranx_ids import PLACEHOLDER, doc_id
from tests.reference import ranking as ref
from torchrec_eval import functional as F

TOL = {"rtol": 1e-9, "atol": 1e-12}


def _close(actual, expected):
    """float64 comparison, NaN == NaN (a skipped query)."""
    actual = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    expected = torch.as_tensor(expected, dtype=torch.float64)
    torch.testing.assert_close(actual, expected.reshape(actual.shape), equal_nan=True, **TOL)


def _close_f32(actual, expected_f32):
    """Against torchmetrics, whose results are float32."""
    actual = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    torch.testing.assert_close(actual, torch.as_tensor(expected_f32).double().reshape(actual.shape),
                               rtol=1e-6, atol=1e-7, equal_nan=True)


def _nanmean(values):
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def _graded_data(seed, B=120, N=25, binary=False, empty_rows=(0, 7, 33)):
    """Distinct continuous scores, sparse graded (0..3) or binary relevance, some empty rows."""
    g = torch.Generator().manual_seed(seed)
    preds = torch.rand(B, N, generator=g, dtype=torch.float64) + 0.01  # positive, distinct
    levels = torch.ones(B, N, dtype=torch.long) if binary else torch.randint(1, 4, (B, N), generator=g)
    target = torch.where(torch.rand(B, N, generator=g) < 0.25, levels, torch.zeros_like(levels))
    for r in empty_rows:
        if r < B:
            target[r] = 0
    target[1] = levels[1]  # a query where every item is relevant
    for row in preds.tolist():
        assert len(set(row)) == len(row)
    return preds, target


# ==============================================================================================
# the worked examples of docs/metrics/graded.md, hits.md and rank.md
# ==============================================================================================
GRADED_EXAMPLE = torch.tensor([[3.0, 1.0, 0.0, 2.0, 0.0]])
DESC_SCORES = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0]])


def test_reference_reproduces_worked_examples():
    """The oracle itself reproduces the published numbers (so it can be trusted below)."""
    q = ref.dense_queries(DESC_SCORES, GRADED_EXAMPLE)[0]
    assert ref.dcg(*q, k=5) == pytest.approx(4.492, abs=5e-4)
    assert ref.dcg([3, 2, 1, 0, 0], q[1], k=5) == pytest.approx(4.762, abs=5e-4)
    assert ref.ndcg(*q, k=5) == pytest.approx(0.943, abs=5e-4)
    assert ref.recall([1, 0, 0, 1, 0], [1, 1, 1, 1], k=5) == 0.5
    mrrs = [ref.mrr([0, 0, 1], [1], 10), ref.mrr([1, 0, 0], [1], 10), ref.mrr([0, 0, 1], [1], 10),
            ref.mrr([], [1], 10)]
    assert ref.mean(mrrs) == pytest.approx(5 / 12)
    assert ref.map([1, 0, 0, 1, 1, 0], [1, 0, 0, 1, 1, 0], k=6) == pytest.approx(0.7)
    assert ref.mean([ref.precision([1, 0], [1], 2), ref.precision([1, 1], [1, 1], 2)]) == 0.75
    assert ref.mean([ref.mrr([1, 0, 1, 0, 1], [1] * 5, 5), ref.mrr([0, 0, 1, 1, 0], [1] * 5, 5)]) == \
        pytest.approx(2 / 3)
    # ranking helper: ties by index, or pessimistic (lower gain first)
    assert ref.rank([1, 2, 2, 0], [0, 3, 1, 0]) == [1, 2, 0, 3]
    assert ref.rank([1, 2, 2, 0], [0, 3, 1, 0], ties="pessimistic") == [2, 1, 0, 3]
    assert ref.rank([1, 2, 2, 0], mask=[True, False, True, True]) == [2, 0, 3]


def test_example_dcg_idcg_ndcg():
    exact_dcg = 3 + 1 / math.log2(3) + 2 / math.log2(5)
    exact_idcg = 3 + 2 / math.log2(3) + 1 / 2
    dcg = F.dcg(DESC_SCORES, GRADED_EXAMPLE, k=5)
    idcg = F.dcg(GRADED_EXAMPLE, GRADED_EXAMPLE, k=5)  # scored by the gains themselves = ideal order
    ndcg = F.ndcg(DESC_SCORES, GRADED_EXAMPLE, k=5)
    assert dcg.dtype == torch.float64 and dcg.ndim == 0
    assert dcg.item() == pytest.approx(4.492, abs=5e-4)
    assert idcg.item() == pytest.approx(4.762, abs=5e-4)
    assert ndcg.item() == pytest.approx(0.943, abs=5e-4)
    _close(dcg, exact_dcg)
    _close(idcg, exact_idcg)
    _close(ndcg, exact_dcg / exact_idcg)
    m = tre.NDCG(k=5)
    m.update(DESC_SCORES, GRADED_EXAMPLE)
    _close(m.compute(), exact_dcg / exact_idcg)


def test_example_recall_at_5():
    A, B, C, D, X, Y, Z = range(7)
    ranked = torch.tensor([[A, X, Y, C, Z]])
    truth = torch.tensor([[A, B, C, D]])
    _close(F.recall(ranked_ids=ranked, target_ids=truth, k=5), 0.5)
    # the same query in the dense form
    preds = torch.tensor([[10.0, 0.0, 0.0, 7.0, 9.0, 8.0, 6.0]])
    target = torch.tensor([[1, 1, 1, 1, 0, 0, 0]])
    _close(F.recall(preds, target, k=5), 0.5)
    m = tre.Recall(k=5)
    m.update(ranked_ids=ranked, target_ids=truth)
    _close(m.compute(), 0.5)


def test_example_mrr_with_an_empty_list():
    # first relevant item at ranks 3, 1, 3; the fourth query has targets but an empty list
    ranked = torch.tensor([[5, 6, 0], [0, 5, 6], [5, 6, 0], [-1, -1, -1]])
    truth = torch.tensor([[0], [0], [0], [0]])
    expected = (1 / 3 + 1 + 1 / 3 + 0) / 4
    for action in ("skip", "neg", "pos"):  # about targets, not hits: every query has a target
        value = F.mrr(ranked_ids=ranked, target_ids=truth, k=10, empty_target_action=action)
        assert value.item() == pytest.approx(0.417, abs=5e-4)
        _close(value, expected)
    _close(F.mrr(ranked_ids=ranked, target_ids=truth, k=10, reduction="none"), [1 / 3, 1, 1 / 3, 0])
    m = tre.MRR(k=10)
    m.update(ranked_ids=ranked[:2], target_ids=truth[:2])
    m.update(ranked_ids=ranked[2:], target_ids=truth[2:])
    _close(m.compute(), expected)


def test_example_ap_at_6():
    preds = torch.tensor([[6.0, 5.0, 4.0, 3.0, 2.0, 1.0]])
    target = torch.tensor([[1, 0, 0, 1, 1, 0]])
    value = F.map(preds, target, k=6)
    assert value.item() == pytest.approx(0.7, abs=1e-12)
    m = tre.MAP(k=6)
    m.update(preds, target)
    _close(m.compute(), 0.7)
    # ranked form of the same list
    ranked, truth = torch.tensor([[0, 1, 2, 3, 4, 5]]), torch.tensor([[0, 3, 4]])
    _close(F.map(ranked_ids=ranked, target_ids=truth, k=6), 0.7)


def test_example_precision_at_2_ranked():
    ranked = torch.tensor([[1, 2], [4, 5]])
    truth = torch.tensor([[1, -1], [4, 5]])
    _close(F.precision(ranked_ids=ranked, target_ids=truth, k=2), 0.75)
    _close(F.precision(ranked_ids=ranked, target_ids=truth, k=2, reduction="none"), [0.5, 1.0])
    m = tre.Precision(k=2)
    m.update(ranked_ids=ranked, target_ids=truth)
    _close(m.compute(), 0.75)


def test_example_mrr_ranked():
    ranked = torch.tensor([[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]])
    truth = torch.tensor([[0, 2, 4, 5, 6], [1, 3, 6, 7, 0]])
    value = F.mrr(ranked_ids=ranked, target_ids=truth, k=5)
    assert value.item() == pytest.approx(0.67, abs=5e-3)
    _close(value, (1 + 1 / 3) / 2)


# ==============================================================================================
# trec_eval (pytrec_eval)
# ==============================================================================================
pytrec_eval = pytest.importorskip("pytrec_eval")


def _trec(preds, target, measures):
    """Per-query trec_eval results as {measure: [B]}; every query is judged (all items in qrels)."""
    B, N = preds.shape
    qid = [f"q{b:04d}" for b in range(B)]
    did = [f"d{i:04d}" for i in range(N)]
    P, T = preds.tolist(), target.tolist()
    qrels = {qid[b]: {did[i]: int(T[b][i]) for i in range(N)} for b in range(B)}
    run = {qid[b]: {did[i]: float(P[b][i]) for i in range(N)} for b in range(B)}
    res = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
    assert set(res) == set(qid)
    out = {}
    for m in measures:
        key = m.replace(".", "_")
        out[m] = [res[q][key] for q in qid]
    return out


@pytest.mark.parametrize("binary", [False, True], ids=["graded", "binary"])
@pytest.mark.parametrize("k", [1, 5, 10, 40])  # 40 > N
def test_pytrec_eval(k, binary):
    preds, target = _graded_data(seed=k + 100 * binary, binary=binary)
    N = preds.shape[1]
    measures = [f"ndcg_cut.{k}", f"P.{k}", f"recall.{k}", f"map_cut.{k}", "recip_rank", "Rprec"]
    trec = _trec(preds, target, measures)
    has_rel = (target > 0).any(1).tolist()
    cases = [
        (f"ndcg_cut.{k}", F.ndcg, {"k": k}),
        (f"P.{k}", F.precision, {"k": k}),
        (f"recall.{k}", F.recall, {"k": k}),
        (f"map_cut.{k}", F.map, {"k": k, "normalizer": "r"}),
        ("recip_rank", F.mrr, {"k": N}),  # trec recip_rank has no cut-off: the full list
        ("Rprec", F.rprecision, {"k": None}),
    ]
    for measure, fn, kw in cases:
        expected = trec[measure]
        # trec_eval: a judged query without relevant documents scores 0 and is averaged
        per_query = fn(preds, target, reduction="none", empty_target_action="neg", **kw)
        assert per_query.shape == (preds.shape[0],), measure
        _close(per_query, expected)
        _close(fn(preds, target, empty_target_action="neg", **kw), sum(expected) / len(expected))
        # skip: only the queries with a relevant item are averaged
        skipped = fn(preds, target, reduction="none", **kw)
        expected_skip = [e if h else math.nan for e, h in zip(expected, has_rel, strict=True)]
        _close(skipped, expected_skip)
        _close(fn(preds, target, **kw), _nanmean(expected_skip))


def test_pytrec_eval_class_api_several_batches():
    preds, target = _graded_data(seed=3, B=90)
    trec = _trec(preds, target, ["ndcg_cut.10", "map_cut.10", "P.10", "recall.10"])
    metrics = {
        "ndcg_cut.10": tre.NDCG(k=10, empty_target_action="neg"),
        "map_cut.10": tre.MAP(k=10, normalizer="r", empty_target_action="neg"),
        "P.10": tre.Precision(k=10, empty_target_action="neg"),
        "recall.10": tre.Recall(k=10, empty_target_action="neg"),
    }
    for measure, m in metrics.items():
        for lo, hi in ((0, 17), (17, 60), (60, 90)):
            m.update(preds[lo:hi], target[lo:hi])
        _close(m.compute(), sum(trec[measure]) / len(trec[measure]))


# ==============================================================================================
# ranx
# ==============================================================================================
def _ranx_eval(preds, target, metrics):
    ranx = pytest.importorskip("ranx")
    B, N = preds.shape
    P, T = preds.tolist(), target.tolist()
    qrels = {}
    for b in range(B):
        rel = {doc_id(i): int(T[b][i]) for i in range(N) if T[b][i] > 0}
        qrels[f"q{b:04d}"] = rel or {PLACEHOLDER: 0}  # a query with nothing relevant
    run = {f"q{b:04d}": {doc_id(i): float(P[b][i]) for i in range(N)} for b in range(B)}
    res = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics, return_mean=False)
    if len(metrics) == 1:
        res = {metrics[0]: res}
    return {m: [float(v) for v in res[m]] for m in metrics}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
def test_ranx():
    preds, target = _graded_data(seed=11, B=80, N=20)
    ks = (1, 3, 10, 30)
    names = ["precision", "recall", "ndcg", "ndcg_burges", "mrr", "map", "hit_rate"]
    res = _ranx_eval(preds, target, [f"{n}@{k}" for n in names for k in ks])
    ours = {
        "precision": (F.precision, {}),
        "recall": (F.recall, {}),
        "ndcg": (F.ndcg, {}),
        "ndcg_burges": (F.ndcg, {"gain": "exp"}),
        "mrr": (F.mrr, {}),
        "map": (F.map, {"normalizer": "r"}),
        "hit_rate": (F.hitrate, {}),
    }
    for name, (fn, kw) in ours.items():
        for k in ks:
            expected = res[f"{name}@{k}"]
            # ranx: queries without a relevant document score 0 and are counted
            _close(fn(preds, target, k=k, reduction="none", empty_target_action="neg", **kw), expected)
            _close(fn(preds, target, k=k, empty_target_action="neg", **kw), sum(expected) / len(expected))


# ==============================================================================================
# scikit-learn
# ==============================================================================================
@pytest.mark.parametrize("k", [1, 4, 10, None])
def test_sklearn_ndcg_score(k):
    ndcg_score = pytest.importorskip("sklearn.metrics").ndcg_score
    preds, target = _graded_data(seed=21 if k is None else k, B=60, N=15)
    kk = preds.shape[1] if k is None else k
    y_true, y_score = target.double().numpy(), preds.numpy()
    # sklearn scores a query without relevant items 0 and averages it
    per_row = [float(ndcg_score(y_true[i:i + 1], y_score[i:i + 1], k=k)) for i in range(len(y_true))]
    _close(F.ndcg(preds, target, k=kk, reduction="none", empty_target_action="neg"), per_row)
    _close(F.ndcg(preds, target, k=kk, empty_target_action="neg"), float(ndcg_score(y_true, y_score, k=k)))
    has_rel = (target > 0).any(1).numpy()
    _close(F.ndcg(preds, target, k=kk), float(ndcg_score(y_true[has_rel], y_score[has_rel], k=k)))


# ==============================================================================================
# torchmetrics.retrieval, flat form
# ==============================================================================================
def _flat_data(seed, Q=40, binary=True):
    """Ragged queries (3..20 candidates), positive distinct scores, indexes shuffled."""
    g = torch.Generator().manual_seed(seed)
    sizes = torch.randint(3, 21, (Q,), generator=g)
    indexes = torch.repeat_interleave(torch.arange(Q), sizes)
    M = len(indexes)
    preds = torch.rand(M, generator=g, dtype=torch.float64) + 0.01
    rel = torch.ones(M, dtype=torch.long) if binary else torch.randint(1, 4, (M,), generator=g)
    target = torch.where(torch.rand(M, generator=g) < 0.3, rel, torch.zeros_like(rel))
    target[indexes == 2] = 0  # an empty query
    perm = torch.randperm(M, generator=g)
    return preds[perm], target[perm], indexes[perm]


@pytest.mark.parametrize("k", [1, 5, 25])
@pytest.mark.parametrize("action", ["skip", "neg", "pos"])
def test_torchmetrics_retrieval_flat(k, action):
    tmr = pytest.importorskip("torchmetrics.retrieval")
    cases = [
        (tre.NDCG, tmr.RetrievalNormalizedDCG, False),
        (tre.Recall, tmr.RetrievalRecall, True),
        (tre.HitRate, tmr.RetrievalHitRate, True),
        (tre.Precision, tmr.RetrievalPrecision, True),
    ]
    for ours_cls, theirs_cls, binary in cases:
        preds, target, indexes = _flat_data(seed=k, binary=binary)
        ours = ours_cls(k=k, empty_target_action=action)
        theirs = theirs_cls(top_k=k, empty_target_action=action)
        first = indexes < 20  # two updates; each query is complete within one of them
        for sel in (first, ~first):
            ours.update(preds[sel], target[sel], indexes=indexes[sel])
            theirs.update(preds[sel], target[sel], indexes=indexes[sel])
        _close_f32(ours.compute(), theirs.compute())


def test_torchmetrics_flat_functional_per_query():
    preds, target, indexes = _flat_data(seed=5, Q=25, binary=False)
    per_query = F.ndcg(preds, target, indexes=indexes, k=5, reduction="none")
    # queries come out in ascending `indexes` order
    expected = []
    for q in range(25):
        sel = indexes == q
        expected.append(ref.ndcg(*ref.dense_queries(preds[sel][None], target[sel][None])[0], k=5))
    _close(per_query, ref.apply_empty(expected, "skip"))


def test_negative_logits_rank_as_usual():
    """Scores are any real numbers: negative logits rank normally (torchmetrics' precision, recall,
    MAP and MRR count scores <= 0 as not retrieved, which is why the comparisons above use positive
    scores). A monotone transform of the scores changes nothing."""
    g = torch.Generator().manual_seed(7)
    logits = -torch.rand(30, 12, generator=g, dtype=torch.float64) * 5 - 0.1  # all negative
    target = (torch.rand(30, 12, generator=g) < 0.3).long()
    target[0, 0] = 1
    for name in ("precision", "recall", "mrr", "map", "ndcg", "hitrate"):
        fn = getattr(F, name)
        expected = ref.evaluate_dense(name, logits, target, 5)
        got = fn(logits, target, k=5, reduction="none")
        _close(got, expected)
        _close(fn(torch.sigmoid(logits), target, k=5, reduction="none"), expected)
    assert F.precision(logits, target, k=5).item() > 0
    # flat form: identical to torchmetrics on the sigmoid of the same logits (positive scores)
    tmr = pytest.importorskip("torchmetrics.retrieval")
    idx = torch.arange(30).repeat_interleave(12)
    theirs = tmr.RetrievalPrecision(top_k=5)(torch.sigmoid(logits).flatten(), target.flatten(), indexes=idx)
    ours = tre.Precision(k=5, empty_target_action="neg")
    ours.update(logits.flatten(), target.flatten(), indexes=idx)
    _close_f32(ours.compute(), theirs)


# ==============================================================================================
# brute-force reference, every metric and option
# ==============================================================================================
CONFIGS = (
    [("precision", {"denominator": d}) for d in ("k", "retrieved", "min_k_r")]
    + [("recall", {"denominator": d}) for d in ("r", "min_k_r")]
    + [("f1", {}), ("hitrate", {}), ("mrr", {}), ("arhr", {})]
    + [("map", {"normalizer": n}) for n in ("min_k_r", "r", "hits", "k", "min_list_r")]
    + [("mar", {"normalizer": n}) for n in ("min_k_r", "r", "hits", "k", "min_list_r")]
    + [(m, {"gain": gain, "log_base": base}) for m in ("dcg", "ndcg")
       for gain in ("linear", "exp") for base in (2.0, math.e, 10.0)]
    + [(m, {"gain": gain, "log_base": base, "discount": "clipped_log"}) for m in ("dcg", "ndcg")
       for gain in ("linear", "exp") for base in (2.0, math.e)]
    + [("cg", {})]
)
CLASSES = {"precision": "Precision", "recall": "Recall", "f1": "F1", "hitrate": "HitRate", "mrr": "MRR",
           "arhr": "ARHR", "map": "MAP", "mar": "MAR", "dcg": "DCG", "ndcg": "NDCG", "cg": "CG",
           "rprecision": "RPrecision"}
BINARY = {"precision", "recall", "f1", "hitrate", "mrr", "arhr", "map", "mar", "rprecision"}


def _config_id(c):
    name, opts = c
    return name + "".join(f"-{v:.3g}" if isinstance(v, float) else f"-{v}" for v in opts.values())


def _tied_data(seed, B=24, N=9, with_mask=True):
    """Integer scores from a small range (many ties), gains in {0, 0.5, 1, 2, 3}, a random mask,
    an empty query, a fully masked query, a query with every item relevant."""
    g = torch.Generator().manual_seed(seed)
    preds = torch.randint(-2, 3, (B, N), generator=g).double()
    gains = torch.tensor([0.5, 1.0, 2.0, 3.0], dtype=torch.float64)[torch.randint(0, 4, (B, N), generator=g)]
    target = torch.where(torch.rand(B, N, generator=g) < 0.35, gains, torch.zeros_like(gains))
    target[0] = 0
    target[1] = gains[1]
    mask = torch.rand(B, N, generator=g) < 0.8 if with_mask else None
    if with_mask:
        mask[2] = False  # no candidate at all
        mask[3] = True
        mask[4] = target[4] == 0  # relevant items exist but are all masked -> no relevant item
    return preds, target, mask


@pytest.mark.parametrize("config", CONFIGS, ids=_config_id)
@pytest.mark.parametrize("ties", ["index", "pessimistic"])
def test_reference_every_metric(config, ties):
    name, opts = config
    fn = getattr(F, name)
    preds, target, mask = _tied_data(seed=len(name) + 31 * len(opts))
    N = preds.shape[1]
    for k in (1, 3, N, N + 4):
        for action in ("skip", "neg", "pos"):
            expected = ref.evaluate_dense(name, preds, target, k, mask=mask, ties=ties,
                                          empty_target_action=action, **opts)
            got = fn(preds, target, k=k, mask=mask, ties=ties, empty_target_action=action,
                     reduction="none", **opts)
            assert got.dtype == torch.float64
            _close(got, expected)
            _close(fn(preds, target, k=k, mask=mask, ties=ties, empty_target_action=action, **opts),
                   _nanmean(expected))
    # class API, two batches, several cut-offs at once
    ks = [1, 3, N + 4]
    m = getattr(tre, CLASSES[name])(k=ks, ties=ties, **opts)
    m.update(preds[:10], target[:10], mask=mask[:10])
    m.update(preds[10:], target[10:], mask=mask[10:])
    out = m.compute()
    assert set(out) == {f"{name}@{k}" for k in ks}
    for k in ks:
        _close(out[f"{name}@{k}"], _nanmean(ref.evaluate_dense(name, preds, target, k, mask=mask,
                                                                ties=ties, **opts)))


@pytest.mark.parametrize("ties", ["index", "pessimistic"])
@pytest.mark.parametrize("cap", [None, 1, 2, 4, 20])
def test_reference_rprecision(ties, cap):
    preds, target, mask = _tied_data(seed=77)
    for action in ("skip", "neg", "pos"):
        expected = ref.evaluate_dense("rprecision", preds, target, cap, mask=mask, ties=ties,
                                      empty_target_action=action)
        got = F.rprecision(preds, target, k=cap, mask=mask, ties=ties, empty_target_action=action,
                           reduction="none")
        _close(got, expected)
    m = tre.RPrecision(k=cap, ties=ties)
    m.update(preds, target, mask=mask)
    out = m.compute()
    value = out[("rprecision" if cap is None else f"rprecision@{cap}")] if isinstance(out, dict) else out
    _close(value, _nanmean(ref.evaluate_dense("rprecision", preds, target, cap, mask=mask, ties=ties)))


@pytest.mark.parametrize("name", sorted(BINARY - {"rprecision"}))
def test_reference_relevance_threshold(name):
    preds, target, mask = _tied_data(seed=5)
    for t in (1.0, 2.0, 3.0):
        for ties in ("index", "pessimistic"):
            expected = ref.evaluate_dense(name, preds, target, 4, mask=mask, ties=ties, threshold=t)
            got = getattr(F, name)(preds, target, k=4, mask=mask, ties=ties, relevance_threshold=t,
                                   reduction="none")
            _close(got, expected)


@pytest.mark.parametrize("name", ["dcg", "ndcg", "cg"])
def test_reference_threshold_with_graded_metrics(name):
    """relevance_threshold decides which queries have a relevant item (empty_target_action); the
    gains stay the raw target values, including those below the threshold."""
    preds, target, mask = _tied_data(seed=6)
    for t in (1.0, 2.0, 3.0):
        for action in ("skip", "neg"):
            expected = ref.evaluate_dense(name, preds, target, 4, mask=mask, threshold=t,
                                          empty_target_action=action)
            got = getattr(F, name)(preds, target, k=4, mask=mask, relevance_threshold=t,
                                   empty_target_action=action, reduction="none")
            _close(got, expected)


def test_reference_graded_gains_ignore_threshold_for_dcg():
    """DCG/NDCG gains are the raw target values whatever the binary relevance threshold."""
    preds, target, _ = _tied_data(seed=9, with_mask=False)
    target[target == 0.5] = 1.0  # every positive gain >= 1: relevance_threshold=1 == default relevance
    for name in ("dcg", "ndcg", "cg"):
        expected = ref.evaluate_dense(name, preds, target, 5)
        _close(getattr(F, name)(preds, target, k=5, relevance_threshold=1.0, reduction="none"), expected)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_empty_target_error(name):
    preds, target, _ = _tied_data(seed=1, with_mask=False)
    k = None if name == "rprecision" else 3
    with pytest.raises(ValueError):
        getattr(F, name)(preds, target, k=k, empty_target_action="error")
    m = getattr(tre, CLASSES[name])(k=k, empty_target_action="error")
    with pytest.raises(ValueError):
        m.update(preds, target)
        m.compute()
    # no empty query: "error" behaves like any other action
    ok = target.clone()
    ok[:, 0] = torch.where(ok[:, 0] > 0, ok[:, 0], 1.0)
    _close(getattr(F, name)(preds, ok, k=k, empty_target_action="error"),
           _nanmean(ref.evaluate_dense(name, preds, ok, k)))


def test_all_skipped_is_nan():
    preds = torch.rand(3, 5, dtype=torch.float64)
    target = torch.zeros(3, 5)
    for name in sorted(CLASSES):
        k = None if name == "rprecision" else 3
        assert math.isnan(getattr(F, name)(preds, target, k=k).item()), name
        assert getattr(F, name)(preds, target, k=k, empty_target_action="neg").item() == 0.0, name
        assert getattr(F, name)(preds, target, k=k, empty_target_action="pos").item() == 1.0, name


def test_constant_scores_pessimistic_is_worst():
    """ties="pessimistic": a constant-score model cannot look good."""
    target = torch.tensor([[0, 0, 1, 0, 1, 0]])
    preds = torch.zeros(1, 6)
    _close(F.precision(preds, target, k=2, ties="pessimistic"), 0.0)
    _close(F.mrr(preds, target, k=6, ties="pessimistic"), 1 / 5)
    _close(F.mrr(preds, target, k=6, ties="index"), 1 / 3)
    _close(F.ndcg(preds, target, k=4, ties="pessimistic"), 0.0)


def test_bool_and_int_targets_equal_float():
    preds, target, mask = _tied_data(seed=4)
    binary = target > 0
    for name in ("precision", "recall", "map", "ndcg", "mrr"):
        fn = getattr(F, name)
        expected = ref.evaluate_dense(name, preds, binary.double(), 3, mask=mask)
        for t in (binary, binary.long(), binary.float(), binary.double()):
            _close(fn(preds, t, k=3, mask=mask, reduction="none"), expected)
    _close(F.ndcg(preds.float(), target.float(), k=3, mask=mask, reduction="none"),
           ref.evaluate_dense("ndcg", preds, target, 3, mask=mask))


@pytest.mark.parametrize("ties", ["index", "pessimistic"])
@pytest.mark.parametrize("validate_args", [True, False])
def test_reference_wide_rows_with_boundary_ties(ties, validate_args):
    """Many items, few distinct scores: the k-th score is tied with items outside the top k."""
    g = torch.Generator().manual_seed(12)
    B, N = 16, 203
    preds = torch.randint(0, 4, (B, N), generator=g).float()
    target = torch.where(torch.rand(B, N, generator=g) < 0.1, torch.randint(1, 4, (B, N), generator=g), 0)
    mask = torch.rand(B, N, generator=g) < 0.9
    for name, opts in [("ndcg", {}), ("map", {}), ("precision", {}), ("mrr", {}), ("recall", {}),
                       ("dcg", {"gain": "exp"})]:
        for k in (1, 10, 64):
            expected = ref.evaluate_dense(name, preds, target, k, mask=mask, ties=ties, **opts)
            got = getattr(F, name)(preds, target, k=k, mask=mask, ties=ties, validate_args=validate_args,
                                   reduction="none", **opts)
            _close(got, expected)


def test_ids_form_default_gain_is_one():
    g = torch.Generator().manual_seed(2)
    preds = torch.rand(10, 12, generator=g, dtype=torch.float64)
    ids = torch.stack([torch.randperm(12, generator=g)[:4] for _ in range(10)])
    ids[0, 2:] = -1
    target = torch.zeros(10, 12, dtype=torch.float64)
    for b in range(10):
        for i in ids[b].tolist():
            if i >= 0:
                target[b, i] = 1.0
    for name in ("ndcg", "dcg", "cg", "map", "recall", "precision"):
        expected = ref.evaluate_dense(name, preds, target, 5)
        _close(getattr(F, name)(preds, target_ids=ids, k=5, reduction="none"), expected)


def test_functional_sequence_k_returns_dict():
    preds, target, mask = _tied_data(seed=8)
    out = F.ndcg(preds, target, k=[2, 5], mask=mask, reduction="none")
    assert set(out) == {"ndcg@2", "ndcg@5"}
    for k in (2, 5):
        _close(out[f"ndcg@{k}"], ref.evaluate_dense("ndcg", preds, target, k, mask=mask))
    means = F.map(preds, target, k=(1, 4), mask=mask)
    _close(means["map@4"], _nanmean(ref.evaluate_dense("map", preds, target, 4, mask=mask)))


def test_ranking_metrics_collection_matches_reference():
    preds, target, mask = _tied_data(seed=19)
    names = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@10", "rprecision",
             "ndcg@3", "arhr@5", "f1@5", "mar@5", "cg@5", "dcg@5"]
    for ties in ("index", "pessimistic"):
        suite = tre.RankingMetrics(names, ties=ties, empty_target_action="neg")
        suite.update(preds[:11], target[:11], mask=mask[:11])
        suite.update(preds[11:], target[11:], mask=mask[11:])
        out = suite.compute()
        assert set(out) == set(names)
        for key in names:
            name, _, k = key.partition("@")
            expected = ref.evaluate_dense(name, preds, target, int(k) if k else None, mask=mask, ties=ties,
                                          empty_target_action="neg")
            _close(out[key], _nanmean(expected))
    suite = tre.RankingMetrics(metrics=["ndcg", "map"], k=[5, 10])
    suite.update(preds, target, mask=mask)
    out = suite.compute()
    assert set(out) == {"ndcg@5", "ndcg@10", "map@5", "map@10"}
    for key, value in out.items():
        name, _, k = key.partition("@")
        _close(value, _nanmean(ref.evaluate_dense(name, preds, target, int(k), mask=mask)))
