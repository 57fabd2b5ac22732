"""Brute-force per-query references for AUC, GAUC, MPR, FCP and CTR@k (the formulas of
``docs/metrics/full-ranking.md`` and ``docs/metrics/clicks-ratings.md``).

Plain Python on lists, one query at a time, every pair of candidates looked at explicitly: written to
be obviously right rather than fast. A query is given by the scores and the target values of its
valid candidates only (non-candidates already removed); functions return ``None`` where the value is
undefined for the query.
"""

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
