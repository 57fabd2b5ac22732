"""The ``convention=`` presets side by side with the libraries themselves (not collected by pytest).

Runs MS Recommenders (``recommenders.evaluation.python_evaluation``), Jurity
(``jurity.recommenders``) and RecTools (``rectools.metrics``) on random tables -- users without
recommendations, users with recommendations but no relevant item, short lists, distinct scores --
and this library on the same tables through the tensor route (``frames.to_batch(..., users="relevance")``,
then ``update`` under the library's preset), and prints one line per library x metric x k with both
values and whether they agree (|difference| <= 1e-9). Exit status 1 if any line disagrees.

The peers cannot be installed in the project's CI; install them in a separate environment::

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install torch numpy pandas scipy scikit-learn torchmetrics
    /tmp/peers/bin/pip install rectools && /tmp/peers/bin/pip install --no-deps recommenders jurity
    PYTHONPATH=. /tmp/peers/bin/python tests/scripts/presets_side_by_side.py
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pandas as pd
import torch

import torchrec_eval as tre
from torchrec_eval.data.frames import to_batch

KS = (1, 3, 5, 10)
TOLERANCE = 1e-9
ROWS: list[tuple[str, str, str, float, float, bool]] = []


def record(library: str, metric: str, k: object, theirs: float, ours: float) -> None:
    agree = (math.isnan(theirs) and math.isnan(ours)) or abs(theirs - ours) <= TOLERANCE
    ROWS.append((library, metric, str(k), float(theirs), float(ours), agree))


def tables(seed: int, num_users: int = 60, num_items: int = 40, max_len: int = 12):
    """(recommendations with a score and a rank, relevance rows): users 0..4 have relevant items but
    no recommendation, users 5..9 recommendations but no relevant item."""
    rng = np.random.default_rng(seed)
    recs, truth = [], []
    for user in range(num_users):
        if user >= 5:
            length = int(rng.integers(1, max_len + 1))
            items = rng.permutation(num_items)[:length]
            scores = rng.permutation(length) + rng.random()  # distinct scores
            for item, score in zip(items, scores, strict=True):
                recs.append((user, int(item), float(score)))
        if not 5 <= user < 10:
            for item in rng.permutation(num_items)[: int(rng.integers(1, 9))]:
                truth.append((user, int(item)))
    recs = pd.DataFrame(recs, columns=["user", "item", "score"])
    recs["rank"] = recs.groupby("user")["score"].rank(ascending=False, method="first").astype(int)
    return recs, pd.DataFrame(truth, columns=["user", "item"])


def ours(names: list[str], recs: pd.DataFrame, truth: pd.DataFrame, convention: str, **options) -> dict:
    """The tensor route: to_batch (every relevance user, an empty list where it has none), update."""
    suite = tre.RankingMetrics(names, convention=convention, **options)
    suite.update(**to_batch(recs, truth, score_col="score"))
    return {key: float(value) for key, value in suite.compute().items()}


def recommenders_no_hit(recs: pd.DataFrame, truth: pd.DataFrame) -> None:
    """MS Recommenders' 0.0 for a mean over no user: no user has a hit in the top k (the relevant
    items are never recommended), and no user has both relevant items and recommendations."""
    recommenders(recs, truth.assign(item=truth["item"] + 1000), label=" (no hit)")
    recommenders(recs[recs["user"] >= 5], truth[truth["user"] < 5], label=" (no common user)")


def recommenders(recs: pd.DataFrame, truth: pd.DataFrame, label: str = "") -> None:
    from recommenders.evaluation import python_evaluation as pe

    rating_true = truth.assign(rating=1.0)
    rating_pred = recs.rename(columns={"score": "prediction"})[["user", "item", "prediction"]]
    columns = {"col_user": "user", "col_item": "item", "col_prediction": "prediction", "col_rating": "rating"}
    for k in KS:
        names = [f"precision@{k}", f"recall@{k}", f"map@{k}", f"ndcg@{k}", f"rprecision@{k}"]
        mine = ours(names, recs, truth, "recommenders")
        mine_map_r = ours([f"map@{k}"], recs, truth, "recommenders", options={"map": {"normalizer": "r"}})
        for metric, fn, key in (
            ("precision_at_k", pe.precision_at_k, f"precision@{k}"),
            ("recall_at_k", pe.recall_at_k, f"recall@{k}"),
            ("map_at_k", pe.map_at_k, f"map@{k}"),
            ("ndcg_at_k", pe.ndcg_at_k, f"ndcg@{k}"),
            ("r_precision_at_k", pe.r_precision_at_k, f"rprecision@{k}"),
        ):
            record("recommenders", metric + label, k, fn(rating_true, rating_pred, k=k, **columns), mine[key])
        record("recommenders", "map (normalizer='r')" + label, k, pe.map(rating_true, rating_pred, k=k, **columns),
               mine_map_r[f"map@{k}"])


def jurity(recs: pd.DataFrame, truth: pd.DataFrame) -> None:
    from jurity.recommenders import MAP, NDCG, Precision, Recall

    actual = truth.rename(columns={"user": "user_id", "item": "item_id"}).assign(click=1)
    predicted = recs.rename(columns={"user": "user_id", "item": "item_id", "score": "click"})[
        ["user_id", "item_id", "click"]]
    for k in KS:
        mine = ours([f"precision@{k}", f"recall@{k}", f"map@{k}", f"ndcg@{k}"], recs, truth, "jurity")
        for name, cls in (("precision", Precision), ("recall", Recall), ("map", MAP), ("ndcg", NDCG)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # pandas on Jurity's fillna(False)
                theirs = cls(click_column="click", k=k).get_score(actual, predicted)
            record("jurity", name, k, theirs, mine[f"{name}@{k}"])
    jurity_ctr(recs, seed=int(recs["score"].sum() * 1000) % 2**31)


def jurity_ctr(recs: pd.DataFrame, seed: int) -> None:
    """Jurity's CTR@k on logged responses: about half the recommended items have one (a click or
    not), and some items outside the recommendations too; CTR(ignore_index=-1, convention="jurity")."""
    from jurity.recommenders import CTR

    rng = np.random.default_rng(seed)
    num_users, num_items = int(recs["user"].max()) + 1, int(recs["item"].max()) + 1
    logged = rng.random((num_users, num_items)) < 0.5
    clicks = (rng.random((num_users, num_items)) < 0.4).astype(int)
    users, items = np.nonzero(logged)
    actual = pd.DataFrame({"user_id": users, "item_id": items, "click": clicks[users, items]})
    predicted = recs.rename(columns={"user": "user_id", "item": "item_id", "score": "click"})[
        ["user_id", "item_id", "click"]]
    scores = torch.zeros(num_users, num_items, dtype=torch.float64)
    recommended = torch.zeros(num_users, num_items, dtype=torch.bool)
    scores[recs["user"].to_numpy(), recs["item"].to_numpy()] = torch.as_tensor(recs["score"].to_numpy())
    recommended[recs["user"].to_numpy(), recs["item"].to_numpy()] = True
    responses = torch.where(torch.as_tensor(logged), torch.as_tensor(clicks), -1)
    metric = tre.CTR(k=list(KS), ignore_index=-1, convention="jurity")
    metric.update(scores, responses, mask=recommended)
    mine = metric.compute()
    for k in KS:
        record("jurity", "ctr", k, CTR(click_column="click", k=k).get_score(actual, predicted), float(mine[f"ctr@{k}"]))


def rectools(recs: pd.DataFrame, truth: pd.DataFrame, seed: int) -> None:
    from rectools import Columns
    from rectools.metrics import (
        MAP,
        MRR,
        NDCG,
        AvgRecPopularity,
        F1Beta,
        HitRate,
        IntraListDiversity,
        MeanInvUserFreq,
        Precision,
        Recall,
    )
    from rectools.metrics.distances import PairwiseHammingDistanceCalculator

    reco = recs.rename(columns={"user": Columns.User, "item": Columns.Item, "rank": Columns.Rank})[
        [Columns.User, Columns.Item, Columns.Rank]]
    interactions = truth.rename(columns={"user": Columns.User, "item": Columns.Item}).assign(weight=1.0, datetime=0)
    for k in KS:
        names = [f"precision@{k}", f"recall@{k}", f"map@{k}", f"ndcg@{k}", f"mrr@{k}", f"hitrate@{k}", f"f1@{k}"]
        mine = ours(names, recs, truth, "rectools")
        for name, metric in (("precision", Precision(k)), ("recall", Recall(k)), ("map", MAP(k)), ("ndcg", NDCG(k)),
                             ("mrr", MRR(k)), ("hitrate", HitRate(k)), ("f1", F1Beta(k))):
            record("rectools", name, k, metric.calc(reco, interactions), mine[f"{name}@{k}"])

    # beyond accuracy: popularity from previous interactions (none at all, then some), Hamming
    # features with items that have none (NaN), inverse user frequency
    rng = np.random.default_rng(seed)
    num_items = int(max(recs["item"].max(), truth["item"].max())) + 1
    batch = to_batch(recs, truth, score_col="score", users="all")  # RecTools: every user of `reco`
    batch_items = torch.as_tensor(batch.items.to_numpy())
    ranked = torch.where(batch["ranked_ids"] >= 0, batch_items[batch["ranked_ids"].clamp(min=0)], -1)
    update = {"ranked_ids": ranked, "target_ids": torch.zeros(ranked.shape[0], 1, dtype=torch.long)}
    prev = pd.DataFrame({Columns.User: rng.integers(0, 80, 300), Columns.Item: rng.integers(0, num_items, 300)})
    empty = prev.iloc[:0]
    features = rng.integers(0, 2, (num_items, 4)).astype(float)
    features[rng.permutation(num_items)[:6], rng.integers(0, 4, 6)] = np.nan  # items without features
    hamming = (features[:, None, :] != features[None, :, :]).sum(2).astype(float)
    unknown = np.isnan(features).any(1)
    hamming[unknown, :] = np.nan
    hamming[:, unknown] = np.nan
    calculator = PairwiseHammingDistanceCalculator(pd.DataFrame(features, index=np.arange(num_items)))
    for k in KS:
        for label, previous in (("average_popularity (no previous interaction)", empty),
                                ("average_popularity", prev)):
            counts = torch.zeros(num_items, dtype=torch.float64)
            items, n = np.unique(previous[Columns.Item].to_numpy(), return_counts=True)
            counts[torch.as_tensor(items, dtype=torch.long)] = torch.as_tensor(n, dtype=torch.float64)
            metric = tre.AveragePopularity(k=k, item_popularity=counts, convention="rectools")
            metric.update(**update)
            record("rectools", label, k, AvgRecPopularity(k).calc(reco, previous), float(metric.compute()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Some items has absent feature values"
            theirs = IntraListDiversity(k, calculator).calc(reco)
        metric = tre.IntraListDiversity(k=k, item_similarity=torch.as_tensor(1.0 - hamming), convention="rectools")
        metric.update(**update)
        record("rectools", "intra_list_diversity (Hamming, NaN features)", k, theirs, float(metric.compute()))
        users = prev[Columns.User].nunique()
        per_item = torch.zeros(num_items, dtype=torch.float64)
        pairs = prev.drop_duplicates()
        items, n = np.unique(pairs[Columns.Item].to_numpy(), return_counts=True)
        per_item[torch.as_tensor(items, dtype=torch.long)] = torch.as_tensor(n, dtype=torch.float64)
        metric = tre.Novelty(k=k, item_popularity=per_item, num_users=users, convention="rectools")
        metric.update(**update)
        record("rectools", "novelty (MeanInvUserFreq)", k, MeanInvUserFreq(k).calc(reco, prev), float(metric.compute()))


def main() -> int:
    for seed in (0, 1, 2):
        recs, truth = tables(seed)
        for name, run, extra in (("recommenders", recommenders, ()), ("recommenders", recommenders_no_hit, ()),
                                 ("jurity", jurity, ()),
                                 ("rectools", rectools, (seed,))):
            try:
                run(recs, truth, *extra)
            except ImportError as error:
                print(f"{name}: not installed ({error})")
    width = max(len(row[1]) for row in ROWS) if ROWS else 10
    print(f"{'library':<13}{'metric':<{width + 2}}{'k':>3}  {'theirs':>12}  {'ours':>12}  agree")
    for library, metric, k, theirs, mine, agree in ROWS:
        print(f"{library:<13}{metric:<{width + 2}}{k:>3}  {theirs:>12.8f}  {mine:>12.8f}  {'yes' if agree else 'NO'}")
    summary: dict[tuple[str, str], list[bool]] = {}
    for library, metric, _, _, _, agree in ROWS:
        summary.setdefault((library, metric), []).append(agree)
    print("\nagreement per library x metric (3 random table pairs x k in", KS, "):")
    for (library, metric), agrees in summary.items():
        print(f"  {library:<13}{metric:<{width + 2}}{sum(agrees)}/{len(agrees)}")
    disagreements = sum(not row[-1] for row in ROWS)
    print(f"\n{len(ROWS) - disagreements}/{len(ROWS)} values agree")
    return 1 if disagreements or not ROWS else 0


if __name__ == "__main__":
    sys.exit(main())
