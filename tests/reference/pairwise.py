"""Brute-force per-query references for AUC, GAUC, MPR, FCP, CTR@k and pAUC@k (the formulas of
``docs/metrics/full-ranking.md`` and ``docs/metrics/clicks-ratings.md``), and RecTools' ``PartialAUC``
transcribed from its source.

Plain Python on lists, one query at a time, every pair of candidates looked at explicitly: written to
be obviously right rather than fast. A query is given by the scores and the target values of its
valid candidates only (non-candidates already removed); functions return ``None`` where the value is
undefined for the query.
"""

import itertools
import math


def _list(x):
    return x.tolist() if hasattr(x, "tolist") else list(x)


def _relevant(t, threshold=None):
    return t > 0 if threshold is None else t >= threshold


def auc(scores, target, threshold=None):
    """Share of (relevant, non-relevant) pairs with the relevant item scored higher, ties 1/2."""
    scores, target = _list(scores), _list(target)
    pos = [s for s, t in zip(scores, target, strict=True) if _relevant(t, threshold)]
    neg = [s for s, t in zip(scores, target, strict=True) if not _relevant(t, threshold)]
    if not pos or not neg:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def num_relevant(target, threshold=None):
    return sum(1 for t in _list(target) if _relevant(t, threshold))


def percentile_ranks(scores):
    """100 * (rank - 1) / (N - 1) of each item, rank = 1-based by descending score, mean rank for ties."""
    scores = _list(scores)
    n = len(scores)
    out = []
    for s in scores:
        above = sum(1 for o in scores if o > s)
        equal = sum(1 for o in scores if o == s)  # includes s itself
        rank = above + (equal + 1) / 2
        out.append(0.0 if n == 1 else 100.0 * (rank - 1) / (n - 1))
    return out


def mpr_items(scores, target, threshold=None):
    """Percentile ranks of the relevant items of the query (a list, possibly empty)."""
    ranks = percentile_ranks(scores)
    return [p for p, t in zip(ranks, _list(target), strict=True) if _relevant(t, threshold)]


def fcp_pairs(scores, target):
    """(concordant, discordant) over the pairs with different target values; equal scores are neither."""
    scores, target = _list(scores), _list(target)
    nc = nd = 0
    for i in range(len(scores)):
        for j in range(len(scores)):
            if target[i] > target[j]:
                if scores[i] > scores[j]:
                    nc += 1
                elif scores[i] < scores[j]:
                    nd += 1
    return nc, nd


def rank_desc(scores, target=None, ties="index"):
    """Indices by score descending; equal scores: lower index first, or lower target first (pessimistic)."""
    scores = _list(scores)
    if ties == "pessimistic":
        target = _list(target)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], target[i], i))
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def ctr_counts(scores, target, k, threshold=None, ties="index"):
    """(clicks among the top k, shown = min(k, N)) for one query's observed items."""
    order = rank_desc(scores, target, ties)[:k]
    target = _list(target)
    return sum(1 for i in order if _relevant(target[i], threshold)), len(order)


def apply_empty(value, action, worst=0.0, best=1.0):
    """Resolve an undefined per-query value: None (skip), worst (neg), best (pos), or raise (error)."""
    if value is not None:
        return value
    if action == "skip":
        return None
    if action == "neg":
        return worst
    if action == "pos":
        return best
    raise ValueError("empty")


def mean(values):
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else math.nan


def split_rows(preds, target, mask=None):
    """Per query: (scores, target) lists of its valid candidates."""
    preds, target = _list(preds), _list(target)
    mask = _list(mask) if mask is not None else [[True] * len(row) for row in preds]
    out = []
    for pr, tr, mr in zip(preds, target, mask, strict=True):
        keep = [i for i, m in enumerate(mr) if m]
        out.append(([pr[i] for i in keep], [tr[i] for i in keep]))
    return out


# ----------------------------------------------------------------------------------------------
# pAUC@k (RecTools' PartialAUC)
# ----------------------------------------------------------------------------------------------
def partial_auc_of_ranking(relevance, k, num_relevant=None):
    """RecTools' pAUC@k of one strict ranking (relevance flags in rank order): each relevant item earns
    k - (non-relevant items before it) while that is positive; over k times ``num_relevant`` (default: the
    relevant items in the ranking). None without a relevant item."""
    relevance = [bool(r) for r in relevance]
    num_relevant = sum(relevance) if num_relevant is None else num_relevant
    if not num_relevant:
        return None
    total, negatives_before = 0, 0
    for r in relevance:
        if r:
            total += max(k - negatives_before, 0)
        else:
            negatives_before += 1
    return total / (k * num_relevant)


def partial_auc(scores, target, k, threshold=None):
    """pAUC@k of one query's valid candidates, tied scores in expectation over the orders of each tie
    group: a relevant item with ``above`` non-relevant items scored higher and ``tied`` scored equal has
    every count above..above + tied of non-relevant items before it with the same probability. None
    without a relevant item."""
    scores, target = _list(scores), _list(target)
    relevant = [_relevant(t, threshold) for t in target]
    if not any(relevant):
        return None
    negatives = [s for s, r in zip(scores, relevant, strict=True) if not r]
    total = 0.0
    for s, r in zip(scores, relevant, strict=True):
        if r:
            above = sum(1 for n in negatives if n > s)
            tied = sum(1 for n in negatives if n == s)
            total += sum(max(k - c, 0) for c in range(above, above + tied + 1)) / (tied + 1)
    return total / (k * sum(relevant))


def partial_auc_over_tie_orders(scores, target, k):
    """The mean of :func:`partial_auc_of_ranking` over every order of the tied items (every ranking by
    descending score): written without the expectation's closed form, for small queries."""
    scores, target = _list(scores), _list(target)
    groups = {}
    for i, s in enumerate(scores):
        groups.setdefault(s, []).append(i)
    levels = [groups[s] for s in sorted(groups, reverse=True)]
    values = []
    for orders in itertools.product(*(itertools.permutations(group) for group in levels)):
        ranking = [i for order in orders for i in order]
        values.append(partial_auc_of_ranking([target[i] > 0 for i in ranking], k))
    return None if values[0] is None else sum(values) / len(values)


def rectools_partial_auc(reco, interactions, k, insufficient_handling="ignore"):
    """RecTools' ``PartialAUC(k, insufficient_handling).calc_per_user`` (rectools/metrics/auc.py and
    ``outer_merge_reco`` in rectools/metrics/base.py, 0.17.0), step by step on plain lists.

    ``reco``: (user, item, rank) rows; ``interactions``: (user, item) rows (repeats allowed). Returns
    {user: value} for the users it reports (sorted), or raises ValueError (``"raise"``).
    """
    positives = {}
    for user, item in interactions:  # reindex + drop_duplicates, __test_positive = True
        positives.setdefault(user, set()).add(item)
    ranked = {}  # test users only
    for user, item, rank in reco:
        if user in positives:
            ranked.setdefault(user, {})[rank] = item
    result, insufficient = {}, []
    for user in sorted(positives):
        ranks = ranked.get(user, {})
        # every rank 1..max rank (a missing rank is a row without an item: a false positive), then the test
        # positives that were not recommended (null rank, sorted last)
        rows = [(ranks.get(rank), rank) for rank in range(1, max(ranks, default=0) + 1)]
        recommended = set(ranks.values())
        rows += [(item, None) for item in sorted(positives[user] - recommended)]
        fp_cumsum, numerator, num_fp = 0, 0, 0
        for item, rank in rows:
            positive = item in positives[user]
            tp, fp = rank is not None and positive, rank is not None and not positive
            fp_cumsum += fp
            num_fp += fp
            if fp_cumsum < k and rank is not None and tp:  # cropped: the rows before the k-th false positive
                numerator += k - fp_cumsum
        has_fn = any(rank is None for _, rank in rows)
        if has_fn and num_fp < k:
            insufficient.append(user)
        result[user] = numerator / (len(positives[user]) * k)
    if insufficient_handling != "ignore" and insufficient:
        if insufficient_handling == "exclude":
            return {user: value for user, value in result.items() if user not in insufficient}
        raise ValueError(f"PartialAUC@{k} metric requires at least {k} negatives in recommendations for each user")
    return result
