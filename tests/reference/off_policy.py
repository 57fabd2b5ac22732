"""Brute-force off-policy CTR@k, pair by pair in plain Python (Jurity's ``CTR(estimation=...)`` as its docstring and
Dudik et al. define IPS and DR; SNIPS as Open Bandit Pipeline's self-normalised IPW).

A query is (scores, logged): ``scores`` {item: score} of its candidates (the new ranking: higher first, ties by the
lower item), ``logged`` {item: (reward, propensity)} of its logged items; ``estimates`` {item: r-hat}.
"""

from __future__ import annotations

import math


def top_k(scores: dict[int, float], k: int) -> list[int]:
    return sorted(scores, key=lambda item: (-scores[item], item))[:k]


def terms(query, k, estimates=None):
    """(n, sum I r / p, sum I / p, sum r-hat + I (r - r-hat) / p) over the query's top k."""
    scores, logged = query
    n = weighted = weights = dr = 0.0
    for item in top_k(scores, k):
        estimate = (estimates or scores).get(item, 0.0)
        n += 1
        dr += estimate
        if item in logged:
            reward, propensity = logged[item]
            weighted += reward / propensity
            weights += 1 / propensity
            dr += (reward - estimate) / propensity
    return n, weighted, weights, dr


def value(sums, estimator):
    n, weighted, weights, dr = sums
    numerator, denominator = {"ips": (weighted, n), "snips": (weighted, weights), "dr": (dr, n)}[estimator]
    return numerator / denominator if denominator else math.nan


def pooled(queries, k, estimator, estimates=None):
    """The estimate pooled over the queries' recommended pairs."""
    estimates = estimates or [None] * len(queries)
    totals = [sum(column) for column in zip(*(terms(q, k, e) for q, e in zip(queries, estimates, strict=True)),
                                             strict=True)]
    return value(totals, estimator)


def per_query(queries, k, estimator, estimates=None):
    estimates = estimates or [None] * len(queries)
    return [value(terms(q, k, e), estimator) for q, e in zip(queries, estimates, strict=True)]
