"""Brute-force oracles for the beyond-accuracy metrics (the formulas of ``torchrec_eval/beyond/`` and ``docs/metrics/beyond.md``).

Plain Python, one list and one pair of lists at a time: every pair of users for inter-list
diversity, every pair of items for intra-list diversity, written to be obviously right rather than
fast. ``lists`` is a list of recommendation lists (item ids in rank order, already cut at k, no
padding); ``relevant`` a list of sets of relevant ids per list.
"""

import math


def _counts(lists, num_items):
    counts = [0] * num_items
    for items in lists:
        for i in items:
            counts[i] += 1
    return counts


def coverage(lists, num_items):
    return len({i for items in lists for i in items}) / num_items


def gini(lists, num_items):
    counts = sorted(_counts(lists, num_items))
    total = sum(counts)
    if total == 0:
        return math.nan
    # Gini as the mean absolute difference over all ordered pairs / (2 * mean): the textbook formula
    n = num_items
    mad = sum(abs(a - b) for a in counts for b in counts) / (n * n)
    return mad / (2 * total / n)


def entropy(lists, num_items, base=2.0, normalization="none"):
    counts = _counts(lists, num_items)
    total = sum(counts)
    if total == 0:
        return math.nan
    h = -sum(c / total * math.log(c / total) for c in counts if c > 0)
    if normalization == "log_num_items":
        return h / math.log(num_items)
    if normalization == "distinct":
        h = h / sum(1 for c in counts if c > 0)
    return h / math.log(base)


def inter_list_diversity(lists):
    lists = [set(items) for items in lists if items]
    if len(lists) < 2:
        return math.nan
    distances = [
        1 - len(a & b) / math.sqrt(len(a) * len(b)) for x, a in enumerate(lists) for b in lists[x + 1 :]
    ]
    return sum(distances) / len(distances)


def _cosine(u, v):
    nu = math.sqrt(sum(x * x for x in u))
    nv = math.sqrt(sum(x * x for x in v))
    if nu == 0 or nv == 0:
        return 0.0
    return sum(a * b for a, b in zip(u, v, strict=True)) / (nu * nv)


def intra_list_diversity(lists, features=None, similarity=None):
    """Mean over lists of >= 2 items of the mean pairwise 1 - sim (features: cosine; else the matrix)."""
    values = []
    for items in lists:
        if len(items) < 2:
            continue
        pairs = [(a, b) for x, a in enumerate(items) for b in items[x + 1 :]]
        sims = [
            _cosine(features[a], features[b]) if features is not None else similarity[a][b] for a, b in pairs
        ]
        values.append(sum(1 - s for s in sims) / len(pairs))
    return sum(values) / len(values) if values else math.nan


def cooccurrence_similarity(matrix):
    """count(i, j) / sqrt(c_i c_j) from a [users][items] 0/1 list of lists."""
    num_items = len(matrix[0])
    users = [{i for i in range(num_items) if row[i]} for row in matrix]
    out = [[0.0] * num_items for _ in range(num_items)]
    for i in range(num_items):
        for j in range(num_items):
            both = sum(1 for u in users if i in u and j in u)
            ci = sum(1 for u in users if i in u)
            cj = sum(1 for u in users if j in u)
            out[i][j] = both / math.sqrt(ci * cj) if ci and cj else 0.0
    return out


def _self_information(popularity, num_users=None):
    denominator = num_users if num_users is not None else sum(popularity)
    floor = min(p for p in popularity if p > 0)
    return [-math.log2((p if p > 0 else floor) / denominator) for p in popularity]


def novelty(lists, popularity, num_users=None):
    info = _self_information(popularity, num_users)
    values = [sum(info[i] for i in items) / len(items) for items in lists if items]
    return sum(values) / len(values) if values else math.nan


def novelty_per_query(lists, popularity, num_users=None):
    info = _self_information(popularity, num_users)
    return [sum(info[i] for i in items) / len(items) if items else None for items in lists]


def average_popularity(lists, popularity):
    values = [sum(popularity[i] for i in items) / len(items) for items in lists if items]
    return sum(values) / len(values) if values else math.nan


def serendipity(lists, relevant, popularity, k, baseline_size=None, empty_target_action="skip"):
    size = k if baseline_size is None else baseline_size
    order = sorted(range(len(popularity)), key=lambda i: (-popularity[i], i))
    popular = set(order[:size])
    values = []
    for items, rel in zip(lists, relevant, strict=True):
        if not rel:
            if empty_target_action == "skip":
                continue
            values.append(1.0 if empty_target_action == "pos" else 0.0)
            continue
        values.append(sum(1 for i in items if i in rel and i not in popular) / k)
    return sum(values) / len(values) if values else math.nan


def elliot_long_tail(popularity, pop_ratio=0.8):
    """Elliot ``elliot/evaluation/popularity_utils.py`` ``Popularity.get_long_tail``: the items sorted by
    popularity (descending, stable) join the short head until its popularity reaches ``transactions *
    pop_ratio``; every other item is the long tail."""
    order = sorted(range(len(popularity)), key=lambda i: popularity[i], reverse=True)
    limit, head = sum(popularity) * pop_ratio, set()
    for i in order:
        head.add(i)
        limit -= popularity[i]
        if limit <= 0:
            break
    return {i for i in range(len(popularity)) if i not in head}


def recbole_tail(popularity, tail_ratio):
    """RecBole ``recbole/evaluator/metrics.py`` ``TailPercentage.get_tail``: ``count_items`` holds the items
    seen in training; a ratio > 1 keeps those seen at most that often, else the first
    ``max(int(len * ratio), 1)`` sorted by (count, item)."""
    count_items = {i: c for i, c in enumerate(popularity) if c > 0}
    if tail_ratio > 1:
        return {i for i, c in count_items.items() if c <= tail_ratio}
    ordered = sorted(count_items.items(), key=lambda kv: (kv[1], kv[0]))
    return {i for i, _ in ordered[: max(int(len(ordered) * tail_ratio), 1)]}


def long_tail_share(lists, tail):
    """Elliot's APLT, RecBole's TailPercentage: mean over non-empty lists of |L & T| / |L|."""
    values = [sum(1 for i in items if i in tail) / len(items) for items in lists if items]
    return sum(values) / len(values) if values else math.nan


def long_tail_count(lists, tail):
    """Elliot's ACLT: mean over non-empty lists of |L & T|."""
    values = [sum(1 for i in items if i in tail) for items in lists if items]
    return sum(values) / len(values) if values else math.nan


def lenskit_exposure_gini(lists, num_items, patience=0.85):
    """LensKit ``ExposureGini``: each list gives its item at rank r the weight ``patience^(r - 1)``
    (``GeometricRankWeight``), summed per item over lists, items never shown at 0; ``lenskit.stats.gini``:
    sum((2 j - n - 1) x_(j)) / (n sum(x)) over the values sorted ascending."""
    exposure = [0.0] * num_items
    for items in lists:
        for rank, item in enumerate(items, start=1):
            exposure[item] += patience ** (rank - 1)
    ordered = sorted(exposure)
    total = sum(ordered)
    return sum((2 * j - num_items - 1) * x for j, x in enumerate(ordered, start=1)) / (num_items * total)


def lenskit_entropy(lists, categories, patience=None, smoothing=1e-6):
    """LensKit ``entropy`` / ``rank_biased_entropy`` (``_entropy.py``, ``matrix_column_entropy``): the list's
    category rows (weighted by ``patience^(r - 1)`` at rank r when rank-biased) summed per category, plus 1e-6
    each, as shares; -sum p log2 p. An empty list: NaN (left out of the mean here)."""
    values = []
    for items in lists:
        if not items:
            continue
        sums = [smoothing] * len(categories[0])
        for rank, item in enumerate(items, start=1):
            weight = 1.0 if patience is None else patience ** (rank - 1)
            for j, value in enumerate(categories[item]):
                sums[j] += weight * value
        total = sum(sums)
        values.append(-sum(s / total * math.log2(s / total) for s in sums if s > 0))
    return sum(values) / len(values) if values else math.nan
