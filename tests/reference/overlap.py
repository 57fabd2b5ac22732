"""Brute-force references for the overlap of two ranked lists, one query at a time, written from the peers'
definitions (not from ``torchrec_eval/beyond/overlap.py``):

* RecTools 0.17 ``Intersection`` (``rectools/metrics/intersection.py``): the top ``k`` of ``reco`` becomes the
  user's "interactions", and the value is RecTools' ``Recall(k=ref_k)`` of ``ref_reco`` against them
  (``rectools/metrics/classification.py``: hits among the reference's top ref_k over the number of
  interactions). A user with no interaction has no row; a user without reference rows scores 0.
* LensKit 2025.6-2026.3 ``rank_biased_overlap`` (``src/lenskit/metrics/reranking/_rbo.py``): the sum over
  depths d = 1..n of ``|reference[:d] & reranked[:d]| / d`` weighted by ``GeometricRankWeight(p)`` =
  ``p ** (d - 1)``, over the sum of the weights (p = 0.85, n = 10 by default).
* Webber, Moffat and Zobel (2010), eq. 32: the extrapolated RBO of two lists of uneven lengths.
* The Jaccard index of two sets.

``own`` and ``reference`` are lists of item ids in rank order, without padding (not cut: each function cuts).
``None`` is "no value for this query".
"""

from __future__ import annotations

import math


def ranked(scores, candidates=None, reverse_index=False):
    """The items of one row of scores in rank order: higher score first, equal scores by the lower item index
    (the higher with ``reverse_index``), without the items that are not candidates (``-inf`` or False in
    ``candidates``)."""
    items = [i for i, s in enumerate(scores) if s != -math.inf and (candidates is None or candidates[i])]
    return sorted(items, key=lambda i: (-scores[i], -i if reverse_index else i))


def rectools_intersection(own, reference, k, ref_k=None):
    interactions = set(own[:k])  # reco filtered by rank <= k: the "interactions" of Recall
    if not interactions:
        return None  # the user is not in the interactions table: no row
    ref_k = k if ref_k is None else ref_k
    hits = sum(1 for item in reference[:ref_k] if item in interactions)  # TP of Recall@ref_k
    return hits / len(interactions)  # / LIKED


def jaccard(own, reference, k):
    a, b = set(own[:k]), set(reference[:k])
    if not a | b:
        return None
    return len(a & b) / len(a | b)


def lenskit_rbo(reference, reranked, n=10, p=0.85):
    total, total_weights = 0.0, 0.0
    for d in range(1, n + 1):
        weight = p ** (d - 1)
        overlap = len(set(reference[:d]) & set(reranked[:d]))
        total += overlap / d * weight
        total_weights += weight
    return total / total_weights


def webber_rbo_ext(first, second, p, k):
    """RBO_ext of the two lists cut at ``k`` (eq. 32); 0 when a list is empty (no depth to extrapolate from)."""
    first, second = first[:k], second[:k]
    short, long = (first, second) if len(first) <= len(second) else (second, first)
    s, l = len(short), len(long)  # noqa: E741 - the paper's names
    if s == 0:
        return 0.0

    def x(d):  # the overlap at depth d; past its end the short list counts whole
        return len(set(short[:d]) & set(long[:d]))

    first_sum = sum(x(d) / d * p ** d for d in range(1, l + 1))
    second_sum = sum(x(s) * (d - s) / (s * d) * p ** d for d in range(s + 1, l + 1))
    return (1 - p) / p * (first_sum + second_sum) + ((x(l) - x(s)) / l + x(s) / s) * p ** l


def rbo(own, reference, k, p=0.85, variant="lenskit"):
    if variant == "ext":
        return webber_rbo_ext(own, reference, p, k)
    return lenskit_rbo(reference, own, n=k, p=p)


def mean(values):
    """The mean of the values that are not None (NaN if none), as ``compute`` averages counted queries."""
    kept = [value for value in values if value is not None]
    return sum(kept) / len(kept) if kept else math.nan
