"""Brute-force references for trec_eval's measures that pytrec_eval lacks, one query at a time, written
from their definitions in trec_eval 10's source (plain loops over the ranking, nothing vectorised).

``ranking(docs, judged)`` is trec_eval's ranked list of relevance values: score descending, document
id descending (byte order); ``-1`` for a document without a judgement, ``-2`` for one judged ``< 0``.
"""

from __future__ import annotations

import math

NONPOOL, UNJUDGED = -1, -2


def ranking(docs: dict[str, float], judged: dict[str, int]) -> list[int]:
    order = sorted(docs, key=lambda doc: (docs[doc], doc.encode()), reverse=True)
    return [NONPOOL if doc not in judged else (UNJUDGED if judged[doc] < 0 else judged[doc]) for doc in order]


def gain_of(rel: int, pairs: dict[int, float]) -> float:
    """A relevance value's gain: the pair's, else the value itself; 0 for unjudged documents."""
    if rel < 0:
        return 0.0
    return pairs.get(rel, float(rel))


def dcg(rels: list[int], pairs: dict[int, float]) -> float:
    total = 0.0
    for i, rel in enumerate(rels):
        gain = gain_of(rel, pairs)
        if gain != 0:
            total += gain / math.log2(i + 2)
    return total


def ideal_dcg(judged: dict[str, int], pairs: dict[int, float]) -> float:
    gains = sorted((gain_of(rel, pairs) for rel in judged.values() if rel >= 0), reverse=True)
    total = 0.0
    for i, gain in enumerate(g for g in gains if g > 0):
        total += gain / math.log2(i + 2)
    return total


def setup_gains(judged: dict[str, int], pairs: list[tuple[int, float]]) -> list[list]:
    """trec_eval's gain entries ``[level, gain, documents]`` of one query: the pairs in their order (a
    level given twice counts its documents at its first pair only), then the query's other relevance
    values 0 .. its highest, merge sorted by ``(int)(a - b)`` (glibc's qsort: a top-down merge sort)."""
    counts = {rel: sum(1 for r in judged.values() if r == rel) for rel in range(max(judged.values(), default=-1) + 1)}
    named = [level for level, _ in pairs]
    entries = [[level, gain, counts.get(level, 0) if named.index(level) == i else 0]
               for i, (level, gain) in enumerate(pairs)]
    entries += [[level, float(level), counts[level]] for level in counts if level not in named]

    def merge_sort(items):
        if len(items) <= 1:
            return items
        left, right = merge_sort(items[: len(items) // 2]), merge_sort(items[len(items) // 2:])
        out = []
        while left and right:
            out.append(left.pop(0) if int(left[0][1] - right[0][1]) <= 0 else right.pop(0))
        return out + left + right

    return merge_sort(entries)


def get_gain(entries: list[list], rel: int) -> float:
    """The gain of the first sorted entry of ``rel``'s level; 0.0 where none (unjudged documents)."""
    return next((gain for level, gain, _ in entries if level == rel), 0.0)


def entries_dcg(rels: list[int], entries: list[list]) -> float:
    total = 0.0
    for i, rel in enumerate(rels):
        gain = get_gain(entries, rel)
        if gain != 0:
            total += gain / math.log2(i + 2)
    return total


def setup_gains_ideal_dcg(judged: dict[str, int], pairs: list[tuple[int, float]]) -> float:
    """trec_eval's ideal DCG as m_ndcg.c computes it: its sorted gain entries (:func:`setup_gains`)
    walked from the top; the walk ends at the top entry when its gain is 0 or less, or at an entry
    with documents and such a gain."""
    entries = setup_gains(judged, pairs)
    level = len(entries) - 1
    gain = entries[level][1] if level >= 0 else 0.0
    total, at_level, i = 0.0, 0, 0
    while gain > 0.0:
        at_level += 1
        while level >= 0 and at_level > entries[level][2]:
            at_level, level = 1, level - 1
            gain = entries[level][1] if level >= 0 else 0.0
        if gain > 0.0:
            total += gain / math.log2(i + 2)
        i += 1
    return total


def rbp_with_gains(rels: list[int], judged: dict[str, int], pairs: list[tuple[int, float]], p: float) -> float:
    """m_rbp.c with gain pairs: every entry's gain scaled into [0, 1] when one lies outside (its min and
    max start at 0), so a judged document of gain 0 may gain; an unjudged one has no entry (0)."""
    entries = setup_gains(judged, pairs)
    low = min([0.0] + [gain for _, gain, _ in entries])
    high = max([0.0] + [gain for _, gain, _ in entries])
    if low < 0 or high > 1:
        entries = [[level, (gain - low) / (high - low), n] for level, gain, n in entries]
    total, weight = 0.0, 1.0
    for rel in rels:
        gain = get_gain(entries, rel)
        if gain != 0:
            total += gain * weight
        weight *= p
    return (1.0 - p) * total


def ndcg(rels: list[int], judged: dict[str, int], pairs: dict[int, float]) -> float:
    ideal = ideal_dcg(judged, pairs)
    return dcg(rels, pairs) / ideal if ideal > 0 else 0.0


def rbp(rels: list[int], judged: dict[str, int], p: float = 0.9) -> float:
    """Gains scaled by the query's highest relevance value when it is above 1."""
    top = max([rel for rel in judged.values() if rel >= 0], default=0)
    scale = top if top > 1 else 1
    total, weight = 0.0, 1.0
    for rel in rels:
        if rel > 0:
            total += rel / scale * weight
        weight *= p
    return (1.0 - p) * total


def rbp_resid(rels: list[int], p: float = 0.9) -> float:
    total, weight, unjudged = 0.0, 1.0, 0
    for rel in rels:
        if rel < 0:
            unjudged += 1
            total += weight
        weight *= p
    return weight + (1 - p) * total if unjudged else 0.0


def unj(rels: list[int], k: int) -> float:
    return sum(1 for rel in rels[:k] if rel < 0) / k


def yaap(rels: list[int], num_rel: int, level: int) -> float:
    total, found = 0.0, 0
    for i, rel in enumerate(rels):
        if rel >= level:
            found += 1
            total += found / (i + 1)
    return math.log((1.0 + total) / (1.0 + num_rel - total))


def relstring(rels: list[int], length: int) -> str:
    chars = {NONPOOL: "-", UNJUDGED: "."}
    return "".join(">" if rel > 9 else str(rel) if rel >= 0 else chars[rel] for rel in rels[:length])


def eleven_point(rels: list[int], num_rel: int, level: int, points: list[float]) -> float:
    """The mean over the points of the best precision at or after the lround(point * R)-th relevant
    document (points past the relevant retrieved ones score 0, point 0 the best precision overall)."""
    precisions = []
    found = 0
    for i, rel in enumerate(rels):
        if rel >= level:
            found += 1
            precisions.append(found / (i + 1))
    best = [max(precisions[i:]) for i in range(len(precisions))]
    total = 0.0
    for point in points:
        cut = math.floor(point * num_rel + 0.5)
        if cut == 0:
            total += best[0] if best else 0.0
        elif cut <= len(best):
            total += best[cut - 1]
    return total / len(points)
