"""DataFrames in (``torchrec_eval.data.frames``), against independent oracles.

* ranx (``Qrels``/``Run`` built from the same DataFrames, ``ranx.evaluate`` with ``make_comparable``)
  with the ``"ranx"`` preset: graded relevance, users without recommendations, users without a
  relevant item, string and integer ids;
* trec_eval (pytrec_eval) with the ``"trec"`` preset, ``users="both"`` and ``ties="reverse_index"`` on
  tied scores: trec_eval evaluates the run's judged queries and orders ties by docno descending;
* a brute-force pandas reference (a Python loop over users, ``tests/reference/ranking.py``) for
  (user, item, rank) rows with gaps in the ranks, rows in random order and ``users="all"``;
* the tie orders, against Python's ``sorted`` with the documented keys;
* every bad input raises a ``ValueError`` naming it, and a missing pandas an ``ImportError`` naming it.
"""

import math
import sys

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from tests.reference import ranking as ref
from torchrec_eval import functional as F

pd = pytest.importorskip("pandas")
from torchrec_eval.data.frames import evaluate, to_batch  # noqa: E402 - after the pandas check

TOL = {"rtol": 1e-9, "atol": 1e-12}


def _tables(seed, ids="str", tied=False, num_users=40, num_items=30):
    """Recommendations (scores) and graded relevance of random users: some users only in one table,
    some with only grade-0 relevance rows, some with an empty recommendation list."""
    rng = np.random.default_rng(seed)
    recs, rels = [], []
    for user in range(num_users):
        length = int(rng.integers(0, 12)) if user % 7 else 0  # every 7th user: no recommendations
        items = rng.choice(num_items, size=length, replace=False)
        scores = rng.integers(0, 3, size=length) if tied else rng.permutation(length) + rng.random()
        recs += [(user, int(i), float(s)) for i, s in zip(items, scores, strict=True)]
        if user % 5 == 4:
            continue  # not in the relevance table
        judged = rng.choice(num_items, size=int(rng.integers(1, 8)), replace=False)
        grades = np.zeros(len(judged), dtype=int) if user % 6 == 1 else rng.integers(0, 4, size=len(judged))
        rels += [(user, int(i), int(g)) for i, g in zip(judged, grades, strict=True)]
    recs = pd.DataFrame(recs, columns=["user", "item", "score"])
    rels = pd.DataFrame(rels, columns=["user", "item", "relevance"])
    if ids == "str":  # "u10" < "u9": string order differs from numeric order
        for frame in (recs, rels):
            frame["user"] = "u" + frame["user"].astype(str)
            frame["item"] = "i" + frame["item"].astype(str)
    return recs.sample(frac=1, random_state=seed), rels.sample(frac=1, random_state=seed + 1)


def _per_user(batch, name, k, **options):
    """{user id: value} of one metric on the batch, NaN for a skipped user."""
    values = getattr(F, name)(**batch, k=k, reduction="none", **options)
    return dict(zip(batch.users, values.tolist(), strict=True))


def _close(actual, expected, msg):
    torch.testing.assert_close(torch.tensor(actual, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64),
                               equal_nan=True, msg=lambda m: f"{msg}\n{m}", **TOL)


# ==============================================================================================
# ranx
# ==============================================================================================
_RANX_ON_STRING_IDS: dict[str, tuple] = {}
RANX = {"precision": "precision", "recall": "recall", "ndcg": "ndcg", "map": "map", "mrr": "mrr",
        "hitrate": "hit_rate"}


def _ranx(recs, rels, metrics):
    ranx = pytest.importorskip("ranx")
    as_str = {"user": str, "item": str}
    run = recs.astype(as_str).astype({"user": object, "item": object})
    qrels = rels.astype(as_str).astype({"user": object, "item": object})
    run = ranx.Run.from_df(run, q_id_col="user", doc_id_col="item", score_col="score")
    qrels = ranx.Qrels.from_df(qrels, q_id_col="user", doc_id_col="item", score_col="relevance")
    means = ranx.evaluate(qrels, run, metrics, make_comparable=True)
    return means, run.scores


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
@pytest.mark.parametrize("ids", ["str", "int"])
def test_ranx_preset_on_dataframes_equals_ranx(ids):
    """Both id kinds against ranx on the string ids (the same tables; ranx evaluated once: its first call
    compiles its numba functions, 20 s and more in a fresh environment)."""
    recs, rels = _tables(seed=1, ids=ids)
    ks = (1, 5, 20)
    ranx_names = [f"{RANX[name]}@{k}" for name in RANX for k in ks]
    if "ranx" not in _RANX_ON_STRING_IDS:
        _RANX_ON_STRING_IDS["ranx"] = _ranx(*_tables(seed=1, ids="str"), ranx_names)
    means, per_query = _RANX_ON_STRING_IDS["ranx"]
    ranx_id = str if ids == "str" else "u{}".format  # the string tables' name of a user
    ours = evaluate([f"{name}@{k}" for name in RANX for k in ks], recs, rels, convention="ranx",
                    score_col="score", relevance_col="relevance")
    batch = to_batch(recs, rels, score_col="score", relevance_col="relevance")
    assert sorted(map(ranx_id, batch.users)) == sorted(per_query[ranx_names[0]])  # every judged user, no other
    for name in RANX:
        for k in ks:
            key = f"{RANX[name]}@{k}"
            _close(float(ours[f"{name}@{k}"]), float(means[key]), key)
            values = _per_user(batch, name, k, convention="ranx")
            _close([values[u] for u in batch.users], [per_query[key][ranx_id(u)] for u in batch.users], key)


# ==============================================================================================
# trec_eval
# ==============================================================================================
@pytest.mark.parametrize("seed", [2, 3])
def test_trec_preset_users_both_reverse_index_ties_equals_trec_eval(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    recs, rels = _tables(seed=seed, ids="str", tied=True)
    qrels, run = {}, {}
    for user, item, grade in rels.itertuples(index=False):
        qrels.setdefault(user, {})[item] = int(grade)
    for user, item, score in recs.itertuples(index=False):
        run.setdefault(user, {})[item] = float(score)
    measures = {"P_5": "precision", "recall_5": "recall", "ndcg_cut_5": "ndcg", "map_cut_5": "map"}
    res = pytrec_eval.RelevanceEvaluator(qrels, {*measures, "recip_rank"}).evaluate(run)
    batch = to_batch(recs, rels, score_col="score", relevance_col="relevance", users="both",
                     ties="reverse_index")
    assert sorted(batch.users) == sorted(res)  # the run's judged queries
    for measure, name in measures.items():
        values = _per_user(batch, name, 5, convention="trec")
        _close([values[u] for u in res], [res[u][measure] for u in res], measure)
    rr = F.mrr(**batch, k=10_000, convention="trec", reduction="none").tolist()
    _close(rr, [res[u]["recip_rank"] for u in batch.users], "recip_rank")


# ==============================================================================================
# rank rows: a brute-force pandas reference
# ==============================================================================================
def _rank_tables(seed):
    rng = np.random.default_rng(seed)
    recs, _ = _tables(seed, ids="int")
    recs = recs.drop(columns="score")
    recs["rank"] = rng.permutation(len(recs)) * 3 + 1  # distinct, with gaps, unrelated to row order
    _, rels = _tables(seed + 100, ids="int")
    return recs, rels


def _reference_lists(recs, rels):
    """Per user, by a loop: the gains of the ranked list and of every relevance row."""
    lists = {user: group.sort_values("rank")["item"].tolist() for user, group in recs.groupby("user")}
    truth = {user: dict(zip(group["item"], group["relevance"], strict=True)) for user, group in rels.groupby("user")}
    return {user: ([truth.get(user, {}).get(item, 0) for item in lists.get(user, [])],
                   list(truth.get(user, {}).values())) for user in set(lists) | set(truth)}


@pytest.mark.parametrize("seed", [4, 5])
def test_rank_rows_equal_a_brute_force_reference(seed):
    recs, rels = _rank_tables(seed)
    reference = _reference_lists(recs, rels)
    batch = to_batch(recs, rels, rank_col="rank", relevance_col="relevance", users="all")
    assert sorted(batch.users) == sorted(reference)
    for name in ("precision", "recall", "ndcg", "map", "mrr", "hitrate", "dcg", "arhr"):
        for k in (1, 3, 10):
            ours = _per_user(batch, name, k)
            expected = [getattr(ref, name)(*reference[u], k) for u in batch.users]
            _close([ours[u] for u in batch.users], [math.nan if v is None else v for v in expected],
                   f"{name}@{k}")


def test_rank_rows_users_relevance_and_both_select_the_documented_users():
    recs, rels = _rank_tables(6)
    in_recs, in_rels = set(recs["user"]), set(rels["user"])
    assert sorted(to_batch(recs, rels, rank_col="rank").users) == sorted(in_rels)
    assert sorted(to_batch(recs, rels, rank_col="rank", users="both").users) == sorted(in_recs & in_rels)
    batch = to_batch(recs, rels, rank_col="rank")
    empty = [u for u in batch.users if u not in in_recs]
    assert empty and all((batch["ranked_ids"][list(batch.users).index(u)] == -1).all() for u in empty)


# ==============================================================================================
# tie order and ids
# ==============================================================================================
@pytest.mark.parametrize("ties", ["index", "reverse_index", "pessimistic", "optimistic"])
@pytest.mark.parametrize("ids", ["str", "int"])
def test_tied_scores_follow_the_documented_order(ties, ids):
    recs, rels = _tables(seed=7, ids=ids, tied=True)
    gains = {(u, i): g for u, i, g in rels.itertuples(index=False)}
    keys = {
        "index": lambda row: (-row[2], row[1]),
        "reverse_index": lambda row: (-row[2], _Reverse(row[1])),
        "pessimistic": lambda row: (-row[2], gains.get(row[:2], 0), row[1]),
        "optimistic": lambda row: (-row[2], -gains.get(row[:2], 0), row[1]),
    }
    batch = to_batch(recs, rels, score_col="score", relevance_col="relevance", users="all", ties=ties)
    for row, user in enumerate(batch.users):
        rows = [r for r in recs.itertuples(index=False) if r[0] == user]
        expected = [r[1] for r in sorted(rows, key=keys[ties])]
        got = [batch.items[j] for j in batch["ranked_ids"][row].tolist() if j >= 0]
        assert got == expected, (ties, user)


class _Reverse:
    def __init__(self, value):
        self.value = value

    def __lt__(self, other):
        return self.value > other.value

    def __eq__(self, other):
        return self.value == other.value


def test_ties_change_the_metric_as_the_library_ties_do():
    """Constant scores: the frame tie orders give the dense form's pessimistic/optimistic values."""
    recs = pd.DataFrame({"user": ["a"] * 4, "item": ["w", "x", "y", "z"], "score": [1.0] * 4})
    rels = pd.DataFrame({"user": ["a", "a"], "item": ["w", "z"]})
    dense = torch.tensor([[1, 0, 0, 1]])
    for ties, value in (("index", 1.0), ("pessimistic", 0.0), ("optimistic", 1.0), ("reverse_index", 1.0)):
        batch = to_batch(recs, rels, score_col="score", ties=ties)
        assert F.precision(**batch, k=1).item() == value
        if ties in ("index", "pessimistic", "optimistic"):
            assert F.precision(torch.ones(1, 4), dense, k=1, ties=ties).item() == value


def test_string_and_integer_ids_give_the_same_values():
    recs_int, rels_int = _tables(seed=8, ids="int")
    recs_str, rels_str = _tables(seed=8, ids="str")
    names = ["ndcg@10", "map@10", "recall@5", "precision@3", "mrr@10"]
    for convention in (None, "ranx", "recbole"):
        a = evaluate(names, recs_int, rels_int, convention=convention, score_col="score", relevance_col="relevance")
        b = evaluate(names, recs_str, rels_str, convention=convention, score_col="score", relevance_col="relevance")
        for name in names:
            _close(float(a[name]), float(b[name]), f"{convention} {name}")


def test_users_without_a_relevant_item_follow_empty_target_action():
    recs = pd.DataFrame({"user": [1, 1, 2], "item": [5, 6, 5], "score": [0.9, 0.1, 0.3]})
    rels = pd.DataFrame({"user": [1, 2], "item": [6, 5], "relevance": [1, 0]})  # user 2: judged, none relevant
    batch = to_batch(recs, rels, score_col="score", relevance_col="relevance")
    assert torch.isnan(F.recall(**batch, k=1, reduction="none")[1])  # skipped by default
    assert evaluate(["recall@2"], recs, rels, score_col="score", relevance_col="relevance")["recall@2"] == 1.0
    assert evaluate(["recall@2"], recs, rels, convention="ranx", score_col="score",
                    relevance_col="relevance")["recall@2"] == 0.5  # counted as 0, as ranx does


def test_batch_feeds_any_metric_and_suite_and_moves_to_a_device():
    recs, rels = _tables(seed=9)
    batch = to_batch(recs, rels, score_col="score", relevance_col="relevance", device="cpu")
    assert set(batch) == {"ranked_ids", "target_ids", "target_gains"}
    assert batch["target_gains"].dtype == torch.float64 and batch["ranked_ids"].dtype == torch.long
    metric = tre.NDCG(k=[5, 10])
    metric.update(**batch)
    suite = tre.RankingMetrics(["ndcg@5", "ndcg@10"])
    assert evaluate(suite, recs, rels, score_col="score", relevance_col="relevance") == metric.compute()
    without_gains = to_batch(recs, rels, score_col="score")
    assert "target_gains" not in without_gains


# ==============================================================================================
# bad input
# ==============================================================================================
RECS = pd.DataFrame({"user": [1, 1, 2], "item": [5, 6, 5], "score": [0.9, 0.1, 0.3]})
RELS = pd.DataFrame({"user": [1, 2], "item": [6, 5], "relevance": [1, 2]})


@pytest.mark.parametrize(
    ("recs", "rels", "kwargs", "match"),
    [
        (pd.concat([RECS, RECS.iloc[:1]]), RELS, {}, r"`recommendations` has 2 rows that repeat a \(user, item\)"),
        (RECS, pd.concat([RELS, RELS.iloc[:1]]), {}, r"`relevance` has 2 rows that repeat"),
        (RECS.assign(rank=[1, 1, 1]).drop(columns="score"), RELS, {"score_col": None, "rank_col": "rank"},
         r"repeat a \(user, rank\) pair"),
        (RECS, RELS, {"rank_col": "rank"}, "exactly one of `score_col` and `rank_col`"),
        (RECS, RELS, {"score_col": None}, "exactly one of `score_col` and `rank_col`"),
        (RECS.drop(columns="item"), RELS, {}, r"`recommendations` must have the columns .*no \['item'\]"),
        (RECS, RELS, {"relevance_col": "grade"}, r"`relevance` must have the columns .*no \['grade'\]"),
        (RECS.assign(score=[0.9, math.nan, 0.3]), RELS, {}, "missing value in column 'score'"),
        (RECS.assign(score=[0.9, math.inf, 0.3]), RELS, {}, "'score' of `recommendations` must be finite"),
        (RECS.assign(score=["a", "b", "c"]), RELS, {}, "'score' of `recommendations` must be numeric"),
        (RECS, RELS.assign(relevance=[1, -2]), {}, "'relevance' of `relevance` must be finite and >= 0, got .* in row 1"),
        (RECS, RELS.astype({"item": str}), {}, "ids of one kind in both tables"),
        (RECS, RELS, {"users": "run"}, "`users` must be one of"),
        (RECS, RELS, {"ties": "average"}, "it needs the scores"),
        (RECS.assign(user=[7, 7, 8]), RELS, {"users": "both"}, "No user to evaluate"),
        (RECS.to_dict(), RELS, {}, "`recommendations` must be a pandas DataFrame, got dict"),
    ],
)
def test_bad_tables_raise_a_named_value_error(recs, rels, kwargs, match):
    kwargs = {"score_col": "score", "relevance_col": "relevance", **kwargs}
    with pytest.raises(ValueError, match=match):
        to_batch(recs, rels, **kwargs)


def test_convention_with_a_metric_object_is_an_error_and_leaves_it_unchanged():
    metric = tre.MRR(k=2)
    with pytest.raises(ValueError, match="`convention` goes to the metric's constructor"):
        evaluate(metric, RECS, RELS, convention="ranx", score_col="score")
    assert metric.update_count == 0


def test_missing_pandas_raises_an_import_error_naming_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now fails
    with pytest.raises(ImportError, match="needs pandas, which is not installed: pip install pandas"):
        to_batch(RECS, RELS, score_col="score")
