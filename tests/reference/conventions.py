"""Plain re-implementations of other libraries' ranking metrics, one function per metric.

Each function follows the named file and function of that library's own source, line by line where
it matters (which items count as relevant, the denominators, the ideal DCG, which users are averaged),
so that the ``convention=`` presets can be checked against libraries that are not installed here.

A query is ``(ranked, truth)``: ``ranked`` the recommended item ids in rank order (already cut to
the recommendation list; it may be shorter than k, or empty), ``truth`` a dict ``{item: grade}`` of
the query's ground truth (grade > 0; an empty dict is a query with no relevant item). Every function
returns the per-query value, or ``None`` when that library leaves the query out of its mean.
:func:`mean` averages the values that are not ``None``.

Sources read (upstream paths):

* RecBole ``recbole/evaluator/metrics.py`` (``Hit``, ``MRR``, ``MAP``, ``Recall``, ``NDCG``,
  ``Precision`` ``.metric_info``); users without a positive item never reach the evaluator.
* Jurity 2.1.0 ``jurity/recommenders/precision.py`` (``precision``), ``recall.py`` (``recall``),
  ``map.py`` (``MAP.get_score``), ``ndcg.py`` (``idcg``, ``NDCG.get_score``), ``ctr.py``
  (``CTR.get_score``, ``_get_matching_ctr``, ``_get_matches``); ``jurity/utils.py``
  (``get_sorted_clicks``).
* Microsoft Recommenders ``recommenders/evaluation/python_evaluation.py``
  (``merge_ranking_true_pred``, ``precision_at_k``, ``recall_at_k``, ``map_at_k``, ``map``,
  ``ndcg_at_k``, ``r_precision_at_k``, ``_get_reciprocal_rank``, ``get_top_k_items``).
* Apache Spark ``mllib/src/main/scala/org/apache/spark/mllib/evaluation/RankingMetrics.scala``
  (``precisionAt``, ``recallAt``, ``meanAveragePrecisionAt``, ``averagePrecision``, ``ndcgAt``,
  ``countRelevantItemRatio``).
* RecTools ``rectools/metrics/classification.py`` (``calc_confusions``, ``Precision``, ``Recall``,
  ``F1Beta``, ``HitRate``),
  ``rectools/metrics/ranking.py`` (``MAP.fit`` / ``calc_per_user_from_fitted``,
  ``NDCG.calc_per_user_from_merged``, ``MRR.calc_per_user_from_merged``),
  ``rectools/metrics/base.py`` (``merge_reco``: interactions LEFT JOIN recommendations).
* LensKit 2026 ``src/lenskit/metrics/ranking/``: ``_pr.py`` (``Precision``, ``Recall``), ``_map.py``
  (``AveragePrecision``), ``_dcg.py`` (``NDCG``, ``DCG``, ``fixed_dcg``), ``_weighting.py``
  (``LogRankWeight``, ``GeometricRankWeight``), ``_rbp.py`` (``RBP``), ``_recip.py`` (``RecipRank``),
  ``_hit.py`` (``Hit``); every ``measure_list`` truncates the list to k first. LensKit's users come from
  the test set, so a user without a test item does not occur there: ``None`` (left out) here.
"""

import math


def mean(values):
    """Mean over the queries the library keeps (NaN if none)."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else math.nan


def _hits(ranked, truth, k):
    """0/1 relevance of the first min(k, len(ranked)) recommended items."""
    return [1 if item in truth else 0 for item in ranked[:k]]


# ==============================================================================================
# RecBole: recbole/evaluator/metrics.py. ``pos_index`` is the [users, max_k] 0/1 hit matrix of the
# top-k, ``pos_len`` the number of positive items of each user. A user with no positive item is
# dropped by RecBole's data loader before evaluation (None here).
# ==============================================================================================
def _recbole_pos_index(ranked, truth, k):
    """One row of ``pos_index``, padded with 0 to k (RecBole ranks every item: a row is k long)."""
    row = _hits(ranked, truth, k)
    return row + [0] * (k - len(row))


def recbole_hit(ranked, truth, k):
    """``Hit.metric_info``: cumsum(pos_index) > 0, read at column k."""
    if not truth:
        return None
    return 1.0 if sum(_recbole_pos_index(ranked, truth, k)) > 0 else 0.0


def recbole_mrr(ranked, truth, k):
    """``MRR.metric_info``: idx = argmax(pos_index); 1 / (idx + 1) if pos_index[idx] > 0 else 0."""
    if not truth:
        return None
    row = _recbole_pos_index(ranked, truth, k)
    idx = row.index(max(row))
    return 1.0 / (idx + 1) if row[idx] > 0 else 0.0


def recbole_precision(ranked, truth, k):
    """``Precision.metric_info``: pos_index.cumsum / arange(1, K + 1): hits / k."""
    if not truth:
        return None
    return sum(_recbole_pos_index(ranked, truth, k)) / k


def recbole_recall(ranked, truth, k):
    """``Recall.metric_info``: pos_index.cumsum / pos_len."""
    if not truth:
        return None
    return sum(_recbole_pos_index(ranked, truth, k)) / len(truth)


def recbole_map(ranked, truth, k):
    """``MAP.metric_info``: sum_pre = cumsum(precision@j * rel_j); actual_len = min(pos_len, K);
    ranges = arange(1, K + 1) with ranges[actual_len:] = actual_len; result = sum_pre / ranges."""
    if not truth:
        return None
    row = _recbole_pos_index(ranked, truth, k)
    pre = [sum(row[: j + 1]) / (j + 1) for j in range(k)]
    sum_pre = sum(p * r for p, r in zip(pre, row, strict=True))
    actual_len = min(len(truth), k)
    ranges = list(range(1, k + 1))
    for j in range(actual_len, k):
        ranges[j] = ranges[actual_len - 1]
    return sum_pre / ranges[k - 1]


def recbole_ndcg(ranked, truth, k):
    """``NDCG.metric_info``: binary gains, log2 discount; idcg over idcg_len = min(pos_len, K)."""
    if not truth:
        return None
    row = _recbole_pos_index(ranked, truth, k)
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(row))
    idcg_len = min(len(truth), k)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(idcg_len))
    return dcg / idcg


RECBOLE = {"hitrate": recbole_hit, "mrr": recbole_mrr, "precision": recbole_precision,
           "recall": recbole_recall, "map": recbole_map, "ndcg": recbole_ndcg}


# ==============================================================================================
# Jurity 2.1.0: jurity/recommenders/*.py. ``get_sorted_clicks`` sorts the predictions by score and
# keeps ``head(k)`` per user; clicks are cast to bool (graded relevance becomes binary).
# ==============================================================================================
def jurity_precision(ranked, truth, k):
    """``precision``: users with both clicks and predictions; the mean of "clicked" over the user's
    top-k predictions, i.e. hits / len(P[1:k]) = hits / min(k, len(ranked))."""
    if not truth or not ranked:
        return None
    top = _hits(ranked, truth, k)
    return sum(top) / len(top)


def jurity_recall(ranked, truth, k):
    """``recall``: actual clicks LEFT JOIN top-k predictions; mean of "was predicted" per user with
    clicks (a user without predictions scores 0): hits / |A|."""
    if not truth:
        return None
    return sum(_hits(ranked, truth, k)) / len(truth)


def jurity_map(ranked, truth, k):
    """``MAP.get_score``: users with both clicks and predictions; sum over the top k of
    cumsum / (cumcount + 1) * clicked, divided by np.minimum(k, clicks_per_user)."""
    if not truth or not ranked:
        return None
    top = _hits(ranked, truth, k)
    total = sum(sum(top[: j + 1]) / (j + 1) * top[j] for j in range(len(top)))
    return total / min(k, len(truth))


def jurity_idcg(num_clicks):
    """``ndcg.idcg``: np.sum(1 / np.log2(np.arange(2, 2 + num_clicks))): every click, not cut at k."""
    return sum(1.0 / math.log2(r) for r in range(2, 2 + num_clicks))


def jurity_ndcg(ranked, truth, k):
    """``NDCG.get_score``: over users with clicks; dcg = nansum(1 / log2(1 + rank)) over the clicked
    items' ranks in the top k (NaN when not in it: a user without predictions scores 0);
    divided by idcg(|A|)."""
    if not truth:
        return None
    rank_of = {item: r + 1 for r, item in enumerate(ranked[:k])}
    dcg = sum(1.0 / math.log2(1 + rank_of[item]) for item in truth if item in rank_of)
    return dcg / jurity_idcg(len(truth))


JURITY = {"precision": jurity_precision, "recall": jurity_recall, "map": jurity_map, "ndcg": jurity_ndcg}


def jurity_ctr(predicted, actual, k=None):
    """``CTR.get_score`` (``jurity/recommenders/ctr.py``, ``estimation="matching"``) over every user at
    once: ``get_sorted_clicks`` keeps each user's ``head(k)`` of the predictions sorted by score
    (every prediction with ``k=None``), ``_get_matches`` inner-joins them to the logged responses
    on (user, item), and the CTR is ``np.mean`` of the matched responses, pooled over users (NaN
    when nothing matches). Here ``predicted`` is ``{user: [(item, score), ...]}`` and ``actual``
    ``{user: {item: response}}`` (the logged rows; a predicted item without a row is unlogged)."""
    matched = []
    for user, rows in predicted.items():
        top = sorted(rows, key=lambda row: -row[1])
        for item, _ in top if k is None else top[:k]:
            if item in actual.get(user, {}):
                matched.append(actual[user][item])
    return sum(matched) / len(matched) if matched else math.nan


# ==============================================================================================
# Microsoft Recommenders: recommenders/evaluation/python_evaluation.py. Every row of ``rating_true``
# is a relevant item (``actual`` = their count). ``merge_ranking_true_pred`` keeps the users present
# in both frames (``n_users``); ``get_top_k_items`` keeps the top k by prediction, rank = 1..k.
# ==============================================================================================
def recommenders_precision_at_k(ranked, truth, k):
    """``precision_at_k``: (hit / k).sum() / n_users over the common users."""
    if not truth or not ranked:
        return None
    return sum(_hits(ranked, truth, k)) / k


def recommenders_recall_at_k(ranked, truth, k):
    """``recall_at_k``: (hit / actual).sum() / n_users over the common users."""
    if not truth or not ranked:
        return None
    return sum(_hits(ranked, truth, k)) / len(truth)


def _recommenders_rr(ranked, truth, k):
    """``_get_reciprocal_rank``: rr = sum over the hits of (cumcount + 1) / rank."""
    top = _hits(ranked, truth, k)
    total, count = 0.0, 0
    for rank, hit in enumerate(top, start=1):
        if hit:
            count += 1
            total += count / rank
    return total


def recommenders_map_at_k(ranked, truth, k):
    """``map_at_k``: (rr / actual.apply(lambda x: min(x, k))).sum() / n_users."""
    if not truth or not ranked:
        return None
    return _recommenders_rr(ranked, truth, k) / min(len(truth), k)


def recommenders_map(ranked, truth, k):
    """``map``: (rr / actual).sum() / n_users."""
    if not truth or not ranked:
        return None
    return _recommenders_rr(ranked, truth, k) / len(truth)


def recommenders_ndcg_at_k(ranked, truth, k, score_type="binary", discfun_type="loge"):
    """``ndcg_at_k``: hits of the top k (with their rank) OUTER JOIN rating_true, so every user of
    rating_true is averaged (one without predictions scores 0). rel = 1 ("binary"), the rating
    ("raw") or 2**rating - 1 ("exp"); dcg = rel / discfun(1 + rank); the ideal sorts the user's true
    rows by rating, irank = 1.., keeps head(k): idcg = sum rel / discfun(1 + irank)."""
    if not truth:
        return None
    discfun = math.log if discfun_type == "loge" else math.log2

    def rel(grade):
        return {"binary": 1.0, "raw": float(grade), "exp": 2.0 ** grade - 1}[score_type]

    rank_of = {item: r + 1 for r, item in enumerate(ranked[:k])}
    dcg = sum(rel(g) / discfun(1 + rank_of[item]) for item, g in truth.items() if item in rank_of)
    ideal = sorted(truth.values(), reverse=True)[:k]
    idcg = sum(rel(g) / discfun(1 + irank) for irank, g in enumerate(ideal, start=1))
    return dcg / idcg


def recommenders_user_dcg(ranked, truth, k, score_type="binary", discfun_type="loge"):
    """The ``df_user["dcg"]`` column of ``ndcg_at_k`` (before the division by idcg): the sum over the
    hits in the top k of rel / discfun(1 + rank)."""
    if not truth:
        return None
    discfun = math.log if discfun_type == "loge" else math.log2
    rel = {"binary": lambda g: 1.0, "raw": float, "exp": lambda g: 2.0 ** g - 1}[score_type]
    rank_of = {item: r + 1 for r, item in enumerate(ranked[:k])}
    return sum(rel(g) / discfun(1 + rank_of[item]) for item, g in truth.items() if item in rank_of)


def recommenders_r_precision_at_k(ranked, truth, k):
    """``r_precision_at_k``: the hits of the top k (``df_hit``, common users) with rank <= actual, i.e.
    in the top min(k, R); ``groupby(user).size() / actual``, so a user without such a hit is NaN and
    ``.mean()`` leaves it out. (Over all users: 0.0 if ``df_hit`` is empty, a NaN mean if every hit
    lies past rank R.)"""
    if not truth or not ranked:
        return None
    hits = sum(_hits(ranked, truth, min(k, len(truth))))
    return hits / len(truth) if hits else None


def recommenders_score(fn, queries, k):
    """What the MS function returns over every user: 0.0 when ``df_hit`` (the common users' relevant
    items in their top k) is empty -- the early ``return 0.0`` of ``precision_at_k``, ``recall_at_k``,
    ``r_precision_at_k``, ``ndcg_at_k`` and ``map_at_k`` / ``map`` (``_get_reciprocal_rank`` gives
    None) -- else the per-user values of ``fn`` averaged (NaN over no user: ``r_precision_at_k``
    when every hit lies past rank R)."""
    if not any(ranked and truth and any(_hits(ranked, truth, k)) for ranked, truth in queries):
        return 0.0
    return mean(fn(ranked, truth, k) for ranked, truth in queries)


RECOMMENDERS = {"precision": recommenders_precision_at_k, "recall": recommenders_recall_at_k,
                "map": recommenders_map_at_k, "ndcg": recommenders_ndcg_at_k,
                "rprecision": recommenders_r_precision_at_k}


# ==============================================================================================
# Spark: mllib/.../evaluation/RankingMetrics.scala. ``pred`` the predicted ranking (any length),
# ``lab`` the ground-truth array; an empty ground truth scores 0 (with a log warning) and is
# averaged (``.mean()`` over every row).
# ==============================================================================================
def _spark_count_relevant_item_ratio(pred, lab, k, denominator):
    """``countRelevantItemRatio``: hits among pred[:min(len(pred), k)] / denominator; 0 if lab empty."""
    lab_set = set(lab)
    if not lab_set:
        return 0.0
    n = min(len(pred), k)
    return sum(1 for i in range(n) if pred[i] in lab_set) / denominator


def spark_precision_at(pred, lab, k):
    """``precisionAt(k)``: countRelevantItemRatio(pred, lab, k, k)."""
    return _spark_count_relevant_item_ratio(pred, lab, k, k)


def spark_recall_at(pred, lab, k):
    """``recallAt(k)``: countRelevantItemRatio(pred, lab, k, lab.toSet.size)."""
    return _spark_count_relevant_item_ratio(pred, lab, k, len(set(lab)))


def spark_average_precision(pred, lab, k):
    """``averagePrecision``: precSum over pred[:min(k, len(pred))] / min(lab.size, k); 0 if empty."""
    lab = set(lab)
    if not lab:
        return 0.0
    cnt, prec_sum = 0, 0.0
    for i in range(min(k, len(pred))):
        if pred[i] in lab:
            cnt += 1
            prec_sum += cnt / (i + 1)
    return prec_sum / min(len(lab), k)


def spark_map_at(pred, lab, k):
    """``meanAveragePrecisionAt(k)``."""
    return spark_average_precision(pred, lab, k)


def spark_mean_average_precision(pred, lab):
    """``meanAveragePrecision`` (no k): k = max(pred.length, labSet.size), so the divisor is |lab|."""
    return spark_average_precision(pred, lab, max(len(pred), len(set(lab))))


def spark_ndcg_at(pred, lab, k, rel=()):
    """``ndcgAt(k)``: n = min(max(len(pred), |labSet|), k). Binary (``rel`` empty): gain 1 / ln(i + 2)
    for a predicted item in labSet, maxDcg adds the same for i < |labSet|. Graded: dcg adds
    (2^relMap(pred(i)) - 1) / ln(i + 2); maxDcg adds (2^relMap(lab(i)) - 1) / ln(i + 2) for i < |labSet|,
    in the order the labels are GIVEN (not sorted). maxDcg == 0 or empty ground truth: 0."""
    lab_set = set(lab)
    if not lab_set:
        return 0.0
    use_binary = len(rel) == 0
    rel_map = dict(zip(lab, rel, strict=False))  # Scala's zip stops at the shorter
    n = min(max(len(pred), len(lab_set)), k)
    max_dcg = dcg = 0.0
    for i in range(n):
        if use_binary:
            gain = 1.0 / math.log(i + 2)
            if i < len(pred) and pred[i] in lab_set:
                dcg += gain
            if i < len(lab_set):
                max_dcg += gain
        else:
            if i < len(pred):
                dcg += (2.0 ** rel_map.get(pred[i], 0.0) - 1) / math.log(i + 2)
            if i < len(lab_set):
                max_dcg += (2.0 ** rel_map.get(lab[i], 0.0) - 1) / math.log(i + 2)
    return 0.0 if max_dcg == 0.0 else dcg / max_dcg


def spark_dcg_at(pred, lab, k):
    """The binary ``dcg`` accumulator of ``ndcgAt(k)`` (before dcg / maxDcg): 1 / ln(i + 2) for each
    i < min(max(len(pred), |labSet|), k) with i < len(pred) and pred(i) in labSet."""
    lab_set = set(lab)
    n = min(max(len(pred), len(lab_set)), k)
    return sum(1.0 / math.log(i + 2) for i in range(n) if i < len(pred) and pred[i] in lab_set)


def _spark(fn):
    """Adapt a Spark function to ``(ranked, truth, k)``: lab = the truth's items."""
    return lambda ranked, truth, k: fn(list(ranked), list(truth), k)


SPARK = {"precision": _spark(spark_precision_at), "recall": _spark(spark_recall_at),
         "map": _spark(spark_map_at), "ndcg": _spark(spark_ndcg_at)}


# ==============================================================================================
# RecTools: rectools/metrics/. ``merge_reco`` = interactions LEFT JOIN reco on (user, item), so the
# users are those with interactions (a user without any is absent: None here) and an interaction
# that was not recommended has rank NaN. Ranks are the caller's (1 = top).
# ==============================================================================================
def _rectools_merged(ranked, truth):
    """Rows (item, rank or None) of ``merge_reco`` for one user."""
    rank_of = {item: r + 1 for r, item in enumerate(ranked)}
    return [(item, rank_of.get(item)) for item in truth]


def _rectools_tp(ranked, truth, k):
    """``calc_confusions``: TP = sum(rank <= k) (NaN <= k is False); LIKED = interactions."""
    return sum(1 for _, rank in _rectools_merged(ranked, truth) if rank is not None and rank <= k)


def rectools_precision(ranked, truth, k, r_precision=False):
    """``Precision._calc_per_user_from_confusion_df``: TP / k, or TP / min(k, TP + FN) (r_precision)."""
    if not truth:
        return None
    tp = _rectools_tp(ranked, truth, k)
    return tp / (min(k, len(truth)) if r_precision else k)


def rectools_recall(ranked, truth, k):
    """``Recall``: TP / LIKED."""
    if not truth:
        return None
    return _rectools_tp(ranked, truth, k) / len(truth)


def rectools_map(ranked, truth, k, divide_by_k=False):
    """``MAP.fit`` + ``calc_per_user_from_fitted``: for each relevant rank r <= k the precision
    (relevant items at rank <= r) / r; their sum / k (divide_by_k) or / n_relevant_items."""
    if not truth:
        return None
    ranks = sorted(rank for _, rank in _rectools_merged(ranked, truth) if rank is not None and rank <= k)
    total = sum((j + 1) / rank for j, rank in enumerate(ranks))
    return total / (k if divide_by_k else len(truth))


def rectools_ndcg(ranked, truth, k, log_base=2, divide_by_achievable=False):
    """``NDCG.calc_per_user_from_merged``: __DCG = (rank <= k) / log_base(rank + 1); IDCG = the sum
    of 1 / log_base(i + 1) over i = 1..k (default: the same for every user), or over
    i = 1..min(n_items, k) (divide_by_achievable)."""
    if not truth:
        return None

    def log_at_base(x):
        return math.log(x) / math.log(log_base)

    dcg = sum(1.0 / log_at_base(rank + 1) for _, rank in _rectools_merged(ranked, truth)
              if rank is not None and rank <= k)
    n_ideal = min(len(truth), k) if divide_by_achievable else k
    idcg = sum(1.0 / log_at_base(i + 1) for i in range(1, n_ideal + 1))
    return dcg / idcg


def rectools_mrr(ranked, truth, k):
    """``MRR.calc_per_user_from_merged``: 1 / min(rank where rank <= k), fillna(0)."""
    if not truth:
        return None
    ranks = [rank for _, rank in _rectools_merged(ranked, truth) if rank is not None and rank <= k]
    return 1.0 / min(ranks) if ranks else 0.0


def rectools_f1beta(ranked, truth, k, beta=1.0):
    """``F1Beta``: p = TP / k, r = TP / LIKED, (1 + b^2) p r / (b^2 p + r), set to 0 where p == r == 0."""
    if not truth:
        return None
    tp = _rectools_tp(ranked, truth, k)
    p, r = tp / k, tp / len(truth)
    return 0.0 if p == 0.0 and r == 0.0 else (1 + beta ** 2) * p * r / (beta ** 2 * p + r)


def rectools_hitrate(ranked, truth, k):
    """``HitRate``: (TP > 0).astype(float)."""
    if not truth:
        return None
    return float(_rectools_tp(ranked, truth, k) > 0)


RECTOOLS = {"precision": rectools_precision, "recall": rectools_recall, "map": rectools_map,
            "ndcg": rectools_ndcg, "mrr": rectools_mrr, "f1": rectools_f1beta, "hitrate": rectools_hitrate}


LIBRARIES = {"recbole": RECBOLE, "jurity": JURITY, "recommenders": RECOMMENDERS, "spark": SPARK,
             "rectools": RECTOOLS}


def rectools_miuf(lists, prev_interactions):
    """``MeanInvUserFreq`` (rectools/metrics/novelty.py): per user, the mean over the list of
    -log2(users(i) / n_users), n_users = distinct users in ``prev_interactions`` [(user, item)], and a
    cold item (no previous interaction) counted as consumed by one user (``fillna(1)``)."""
    users_per_item: dict = {}
    for _user, item in set(prev_interactions):
        users_per_item[item] = users_per_item.get(item, 0) + 1
    n_users = len({user for user, _ in prev_interactions})
    per_user = [
        sum(-math.log2(users_per_item.get(item, 1) / n_users) for item in items) / len(items)
        for items in lists
        if items
    ]
    return sum(per_user) / len(per_user)


def rectools_ild(lists, distance):
    """``IntraListDiversity`` (rectools/metrics/diversity.py): per user with a list, the mean of
    ``distance(i, j)`` over the pairs of the list, 0 for a one-item list (no pair); the mean over users.
    A distance may be NaN (``PairwiseHammingDistanceCalculator``: an item with a NaN feature or no
    row): ``groupby(user)["dist"].agg("mean")`` skips it, a user whose every pair is NaN gets NaN, and
    ``per_user.mean()`` skips that user."""
    per_user = []
    for items in lists:
        if not items:
            continue  # a user without recommendations is not in RecTools' table
        pairs = [(a, b) for i, a in enumerate(items) for b in items[i + 1:]]
        if not pairs:
            per_user.append(0.0)
            continue
        known = [d for d in (distance(a, b) for a, b in pairs) if not math.isnan(d)]
        if known:
            per_user.append(sum(known) / len(known))
    return sum(per_user) / len(per_user)


def rectools_avg_rec_popularity(lists, prev_items):
    """``AvgRecPopularity.calc`` (rectools/metrics/popularity.py): popularity = the number of rows of
    ``prev_interactions`` with the item (``value_counts``), 0 for an item without any (``fillna(0)``);
    per user the mean over the list; the mean over the users with a list. No previous interaction:
    every popularity is 0, and so is the value."""
    counts: dict = {}
    for item in prev_items:
        counts[item] = counts.get(item, 0) + 1
    per_user = [sum(counts.get(item, 0) for item in items) / len(items) for items in lists if items]
    return sum(per_user) / len(per_user)


# ==============================================================================================
# LensKit (src/lenskit/metrics/ranking/)
# ==============================================================================================
def _lenskit_weight(rank, log_base=2.0):
    """``LogRankWeight()`` (offset 0): 1 / log_b(max(rank, 2))."""
    return math.log(log_base) / math.log(max(rank, 2))


def lenskit_precision(ranked, truth, k):
    """``Precision.measure_list``: hits / len(recs[:k]); NaN (left out) for an empty list."""
    recs = ranked[:k]
    if not truth or not recs:
        return None
    return sum(1 for item in recs if item in truth) / len(recs)


def lenskit_recall(ranked, truth, k):
    """``Recall.measure_list``: hits / min(len(test), k)."""
    if not truth:
        return None
    return sum(1 for item in ranked[:k] if item in truth) / min(len(truth), k)


def lenskit_average_precision(ranked, truth, k):
    """``AveragePrecision.measure_list``: sum of precision at each good rank / min(len(test), len(recs));
    NaN (left out) for an empty list."""
    recs = ranked[:k]
    if not truth or not recs:
        return None
    good, total = 0, 0.0
    for rank, item in enumerate(recs, start=1):
        if item in truth:
            good += 1
            total += good / rank
    return total / min(len(truth), len(recs))


def lenskit_dcg(ranked, truth, k, graded=False):
    """``_binary_dcg`` / ``_graded_dcg`` with ``LogRankWeight()``: the good items' weights (times their gain)."""
    return sum((truth[item] if graded else 1.0) * _lenskit_weight(rank)
               for rank, item in enumerate(ranked[:k], start=1) if item in truth)


def lenskit_ndcg(ranked, truth, k, graded=False):
    """``NDCG.measure_list``: binary ideal ``fixed_dcg(min(len(test), k))``; graded ideal the test gains'
    k largest, weighted by rank."""
    if not truth:
        return None
    best = sorted(truth.values(), reverse=True)[:k] if graded else [1.0] * min(len(truth), k)
    ideal = sum(gain * _lenskit_weight(rank) for rank, gain in enumerate(best, start=1))
    return lenskit_dcg(ranked, truth, k, graded) / ideal


def lenskit_rbp(ranked, truth, k, patience=0.85):
    """``RBP.measure_list`` with ``GeometricRankWeight(patience)`` (p^(rank - 1)), normalised by its series
    sum 1 / (1 - p)."""
    if not truth:
        return None
    return (1 - patience) * sum(patience ** (rank - 1) for rank, item in enumerate(ranked[:k], start=1)
                                if item in truth)


def lenskit_rbp_log(ranked, truth, k, offset=1, normalize=False, base=2.0):
    """``RBP.measure_list`` with ``LogRankWeight(base=base, offset=offset)``: w(rank) = 1 / log_b(rank + offset)
    for an offset > 0, else 1 / log_b(max(rank, 2)); no series sum, so divided by the weights of the truncated
    list's ranks, or with ``normalize`` of its first min(len(test), len(list)); None (left out) for a user without
    test items, and for an empty list, which LensKit divides 0 by 0 (NaN)."""
    recs = ranked[:k]
    if not truth or not recs:
        return None
    weights = [1 / math.log(rank + offset if offset > 0 else max(rank, 2), base) for rank in range(1, len(recs) + 1)]
    normalization = sum(weights[:min(len(truth), len(recs))] if normalize else weights)
    return sum(weight for weight, item in zip(weights, recs, strict=True) if item in truth) / normalization


def lenskit_rbp_field(ranked, truth, k, weights):
    """``RBP.measure_list`` with ``weight_field``: the field's weights of the list cut at k (``weights`` {item:
    weight}), the good items' over all of them (``normalize`` is not read on this path); None (left out) for a
    user without test items and for weights summing to 0 (an empty list: LensKit's 0 / 0 is NaN)."""
    recs = ranked[:k]
    if not truth:
        return None
    listed = [weights[item] for item in recs]
    normalization = sum(listed)
    if normalization == 0:
        return None
    return sum(weight for weight, item in zip(listed, recs, strict=True) if item in truth) / normalization


def lenskit_reciprocal_rank(ranked, truth, k):
    """``RecipRank.measure_list``: 1 / the rank of the first good item in recs[:k], else 0."""
    if not truth:
        return None
    return next((1.0 / rank for rank, item in enumerate(ranked[:k], start=1) if item in truth), 0.0)


def lenskit_hit(ranked, truth, k):
    """``Hit.measure_list``: 1 if any of recs[:k] is good."""
    if not truth:
        return None
    return 1.0 if any(item in truth for item in ranked[:k]) else 0.0
