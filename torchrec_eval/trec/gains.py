"""trec_eval's measures of graded gains, for every query at once: ``ndcg``, ``dcg``, ``ideal_dcg``,
``ndcg_rel``, ``Rndcg``, ``G``, ``rbp`` (parameters ``level=gain`` pairs, ``p=`` for ``rbp``) and
``ndcg_cut`` (the judged relevance as gain).

A document's gain is its judged relevance value, or the gain given to that value (``ndcg.1=3,2=9``);
unjudged documents gain 0. The ideal ranking lists the query's judged documents of positive gain,
highest gain first. With ``g_i`` the gain at rank ``i`` (1-based), ``I_i`` the ideal one:

* ``dcg = sum_i g_i / log2(i + 1)``; ``ideal_dcg`` the same of the ideal; ``ndcg = dcg / ideal_dcg``
* ``ndcg_rel``: the mean of ``dcg_i / ideal_dcg_i`` over the ideal's documents, taken at each retrieved
  document of positive gain, the rest at the end of the ranking
* ``Rndcg``: the mean of ``dcg / ideal_dcg`` taken where the ideal gain changes (and after the ideal)
* ``G = sum_i g_i / log2(2 + C_i - S_i) / sum_i I_i`` with ``C_i`` the ideal gains so far, each at
  least 1, and ``S_i`` the gains so far
* ``rbp = (1 - p) sum_i g_i p^(i - 1)`` (``p = 0.9``), gains scaled into [0, 1] when some are outside

Sums run in rank order, as trec_eval's loops, for the same floating-point values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property
from typing import TypeVar

import numpy as np

from torchrec_eval.trec.spec import Measure, atol
from torchrec_eval.trec.stats import Queries, first_of_groups, group_sum, ratio, segment_cumsum

__all__ = ["MEASURES", "Gains"]

_T = TypeVar("_T")
Pairs = tuple[tuple[str, float], ...]  # a measure's ``level=gain`` (and ``p=``) parameters


def valid_level(name: str) -> bool:
    digits = name[1:] if name[:1] in "+-" else name
    return digits.isdigit()


def level_gains(pairs: Pairs, max_level: int, family: str = "ndcg") -> np.ndarray:
    """[max_level + 1] the gain of each relevance value: its own value, or the first pair's gain."""
    try:  # one entry per level up to the largest, as trec_eval's table
        table = np.arange(max(max_level, 0) + 1, dtype=np.float64)
    except MemoryError:
        raise ValueError(f"measure {family!r}: the largest relevance level, {max_level:,}, needs a table of "
                         f"{max_level + 1:,} gains, more than this machine can allocate") from None
    for name, gain in reversed([(atol(name), gain) for name, gain in pairs if valid_level(name)]):
        if name < 0:
            raise ValueError(f"measure {family!r}: a gain for relevance {name} (unjudged documents) is not "
                             f"supported, got the pairs {pairs!r}")
        if name <= max_level:
            table[name] = gain
    return table


def glibc_msort(items: list[_T], compare: Callable[[_T, _T], int]) -> list[_T]:
    """glibc's ``qsort`` (a top-down merge sort) with its comparison: the same order for
    comparisons that are not transitive, such as trec_eval's gain order."""
    if len(items) <= 1:
        return items
    left, right = glibc_msort(items[: len(items) // 2], compare), glibc_msort(items[len(items) // 2 :], compare)
    out: list[_T] = []
    while left and right:
        out.append(left.pop(0) if compare(left[0], right[0]) <= 0 else right.pop(0))
    return out + left + right


def _ideal_places(pairs: Pairs, levels: np.ndarray, max_level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """trec_eval's ``setup_gains`` for each query whose relevance values run 0 .. L - 1: its pairs, then
    its other values, sorted by ``(int)(gain - gain)`` (gains less than 1 apart compare equal, so their
    order is the merge sort's). Returns, each indexed by L (rows 0 .. max L):

    * ``places`` [L + 1, max_level + 1]: each value's place in that order; a value given twice counts
      its documents at its first pair (the ideal ranking's)
    * ``top_dead`` [L + 1]: whether the top gain is 0 or less: trec_eval's ideal ranking starts there
      and stops at once, even when no document has that value
    * ``lookup`` [L + 1, max_level + 1]: ``get_gain``, the gain of a value's first entry in sorted order
      (a value given twice: the pair sorted first, which the ideal ranking may not use)
    """
    given = [(atol(name), gain) for name, gain in pairs if valid_level(name)]
    places = np.zeros((int(levels.max(initial=0)) + 1, max_level + 1), dtype=np.int64)
    lookup = np.zeros(places.shape)
    top_dead = np.ones(len(places), dtype=bool)
    for count in np.unique(levels).tolist():
        named = {level for level, _ in given}
        entries = [(index, level, gain) for index, (level, gain) in enumerate(given)]
        entries += [(len(given) + level, level, float(level)) for level in range(count) if level not in named]
        ranked = glibc_msort(entries, lambda a, b: int(a[2] - b[2]))
        top_dead[count] = not ranked or ranked[-1][2] <= 0
        first: dict[int, int] = {}
        for index, level, _ in entries:
            first.setdefault(level, index)
        looked_up = set()
        for place, (index, level, gain) in enumerate(ranked):
            if 0 <= level <= max_level and first[level] == index:
                places[count, level] = place
            if 0 <= level <= max_level and level not in looked_up:
                looked_up.add(level)
                lookup[count, level] = gain
    return places, top_dead, lookup


class Gains:
    """The retrieved documents of non-zero gain and the ideal ranking of each query."""

    def __init__(self, stats: Queries, pairs: Pairs = (), family: str = "ndcg") -> None:
        j, self.stats, self.size = stats.j, stats, stats.size
        max_level = int(max(j.judged_rel.max(initial=0), j.hit_rel.max(initial=0)))
        self.table = level_gains(pairs, max_level, family)  # each value's gain in the ideal ranking
        judged = np.flatnonzero(j.judged_rel >= 0)
        query, rel = j.judged_query[judged], j.judged_rel[judged]
        self.levels = levels = np.zeros(self.size, dtype=np.int64)  # the query's relevance levels: 0 .. its highest
        np.maximum.at(levels, query, rel + 1)
        places, top_dead, self.lookup = _ideal_places(pairs, levels, max_level)
        hit_gain = self.of(j.hit_query, j.hit_rel)
        keep = hit_gain != 0
        self.query, self.rank, self.gain = j.hit_query[keep], j.hit_rank[keep], hit_gain[keep]
        place = places[levels[query], rel]
        stop = np.full(self.size, -1)  # the ideal ends at the first level (from the top) without gain
        np.maximum.at(stop, query[self.table[rel] <= 0], place[self.table[rel] <= 0])
        kept = (place > stop[query]) & ~top_dead[levels[query]]
        order = np.lexsort((-place[kept], query[kept]))
        self.ideal_query = query[kept][order]
        self.ideal_gain = self.table[rel[kept][order]]
        self.num_ideal, self.ideal_first = first_of_groups(self.ideal_query, self.size)
        self.ideal_position = np.arange(len(self.ideal_query)) - self.ideal_first[self.ideal_query]  # 0-based

    def of(self, query: np.ndarray, rel: np.ndarray) -> np.ndarray:
        """trec_eval's ``get_gain`` of judged documents: 0 where ``rel`` is below 0 (unjudged)."""
        judged = rel >= 0
        return np.where(judged, self.lookup[self.levels[query], np.where(judged, rel, 0)], 0.0)

    @cached_property
    def terms(self) -> np.ndarray:
        return self.gain / np.log2(self.rank + 1.0)

    @cached_property
    def ideal_terms(self) -> np.ndarray:
        return self.ideal_gain / np.log2(self.ideal_position + 2.0)

    def dcg(self, k: float = math.inf) -> np.ndarray:
        return group_sum(self.query, self.terms * (self.rank <= k), self.size)

    def ideal_dcg(self, k: float = math.inf) -> np.ndarray:
        within = self.ideal_position < k
        return group_sum(self.ideal_query, self.ideal_terms * within, self.size)

    @cached_property
    def dcg_so_far(self) -> np.ndarray:
        return segment_cumsum(self.terms, self.query, self.size)

    @cached_property
    def ideal_so_far(self) -> np.ndarray:
        return segment_cumsum(self.ideal_terms, self.ideal_query, self.size)

    def ideal_at(self, query: np.ndarray, position: np.ndarray) -> np.ndarray:
        """The ideal DCG of ``query`` down to 0-based ``position`` (its whole ideal past its end)."""
        if not len(self.ideal_so_far):
            return np.zeros(len(query))
        last = np.minimum(position, self.num_ideal[query] - 1)
        at = np.clip(self.ideal_first[query] + last, 0, len(self.ideal_so_far) - 1)
        return np.where(last >= 0, self.ideal_so_far[at], 0.0)  # no ideal: trec_eval's ideal_dcg 0

    def dcg_at(self, query: np.ndarray, position: np.ndarray) -> np.ndarray:
        """The DCG of ``query`` down to 0-based ``position`` (0 where no gain yet)."""
        if not len(self.query):
            return np.zeros(len(query))
        width = int(self.rank.max()) + int(position.max(initial=0)) + 2
        keys = self.query * width + self.rank
        found = np.maximum(np.searchsorted(keys, query * width + position + 1, side="right") - 1, 0)
        ok = (self.query[found] == query) & (self.rank[found] <= position + 1)
        return np.where(ok, self.dcg_so_far[found], 0.0)


def _ndcg_family(stats: Queries, measure: Measure) -> np.ndarray:
    gains = Gains(stats, measure.args, measure.family)
    if measure.family == "dcg":
        return gains.dcg()
    if measure.family == "ideal_dcg":
        return gains.ideal_dcg()
    return ratio(gains.dcg(), gains.ideal_dcg())


def _ndcg_cut(stats: Queries, measure: Measure) -> np.ndarray:
    gains = Gains(stats)
    return ratio(gains.dcg(measure.cut), gains.ideal_dcg(measure.cut))


def _ndcg_rel(stats: Queries, measure: Measure) -> np.ndarray:
    g = Gains(stats, measure.args, measure.family)
    positive = np.flatnonzero(g.gain > 0)
    query = g.query[positive]
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = g.dcg_so_far[positive] / g.ideal_at(query, g.rank[positive] - 1)
        total = group_sum(query, steps, g.size)
        unretrieved = (g.num_ideal - np.bincount(query, minlength=g.size)).astype(np.float64)
        total = total + unretrieved * g.dcg() / g.ideal_dcg()
    return np.where(total > 0, total / np.maximum(g.num_ideal, 1), 0.0)


def _rndcg_steps(g: Gains, num_ret: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(query, dcg / ideal dcg) where the ideal gain changes, in query then rank order."""
    inner = np.flatnonzero((g.ideal_position > 0) & (g.ideal_gain != np.roll(g.ideal_gain, 1)))
    ends = np.flatnonzero(g.num_ideal > 0)
    query = np.concatenate([g.ideal_query[inner], ends])
    position = np.concatenate([g.ideal_position[inner], g.num_ideal[ends]])  # ig_i differs from ig_{i-1}
    order = np.argsort(query, kind="stable")
    query, position = query[order], position[order]
    seen = np.minimum(position - 1, num_ret[query] - 1)
    return query, g.dcg_at(query, seen) / g.ideal_at(query, position - 1)


def _rndcg(stats: Queries, measure: Measure) -> np.ndarray:
    g = Gains(stats, measure.args, measure.family)
    num_ret = stats.j.num_ret
    query, steps = _rndcg_steps(g, num_ret)
    total = group_sum(query, steps, g.size)
    count = np.bincount(query, minlength=g.size).astype(np.float64)
    past = (num_ret > g.num_ideal + 1) & (g.num_ideal > 0)  # the ranking goes on past the ideal
    total[past] += g.dcg()[past] / g.ideal_dcg()[past]
    count[past] += 1
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.divide(total, count)  # 0 / 0 is trec_eval's NaN too
    out[stats.num_rel == 0] = 0.0
    return out


def _g(stats: Queries, measure: Measure) -> np.ndarray:
    g = Gains(stats, measure.args, measure.family)
    cost = segment_cumsum(np.maximum(g.ideal_gain, 1.0), g.ideal_query, g.size)  # each ideal gain, at least 1
    position = g.rank - 1
    last = np.minimum(position, g.num_ideal[g.query] - 1)
    has_ideal = last >= 0
    at = np.minimum(g.ideal_first[g.query] + np.maximum(last, 0), len(cost) - 1)  # a query without ideal: any
    so_far = np.where(has_ideal, cost[at], 0.0) if len(cost) else 0.0
    so_far = so_far + (position - np.where(has_ideal, last, -1))  # 1 for each rank past the ideal
    results = segment_cumsum(g.gain, g.query, g.size)
    terms = g.gain / np.log2(2 + so_far - results)
    ideal = group_sum(g.ideal_query, g.ideal_gain, g.size)
    return ratio(group_sum(g.query, terms, g.size), ideal)


def rbp_persistence(args: Pairs) -> float:
    """``rbp``'s ``p``: the last ``p=`` pair, else 0.9."""
    values = [value for name, value in args if name == "p"]
    return values[-1] if values else 0.9


def powers(p: float, count: int) -> np.ndarray:
    """[count] ``p**i`` as a loop multiplies it out (``cur_p *= p``)."""
    steps = np.full(max(count, 1), p)
    steps[0] = 1.0
    return np.multiply.accumulate(steps)


def _rbp(stats: Queries, measure: Measure) -> np.ndarray:
    g = Gains(stats, measure.args, measure.family)
    p = rbp_persistence(measure.args)
    j = stats.j
    # the query's gains: its relevance values 0 .. max and the pairs; scaled into [0, 1] when outside
    levels = g.levels - 1  # the query's highest relevance value, -1 when it has none
    pair_gains = [gain for name, gain in measure.args if valid_level(name)]
    low = np.minimum(0.0, min(pair_gains, default=0.0))
    high = np.maximum(0.0, max(pair_gains, default=0.0))
    cumulative_min = np.minimum.accumulate(g.table)
    cumulative_max = np.maximum.accumulate(g.table)
    low = np.where(levels >= 0, np.minimum(low, cumulative_min[np.maximum(levels, 0)]), low)
    high = np.where(levels >= 0, np.maximum(high, cumulative_max[np.maximum(levels, 0)]), high)
    # every retrieved judged document: scaling moves a gain of 0 too (unjudged ones keep 0)
    query, rank = j.hit_query, j.hit_rank
    gain = g.of(query, j.hit_rel)
    scale = ((low < 0) | (high > 1))[query] & (j.hit_rel >= 0)
    gain[scale] = (gain[scale] - low[query][scale]) / (high - low)[query][scale]
    keep = gain != 0
    terms = gain[keep] * powers(p, int(rank.max(initial=1)))[rank[keep] - 1]
    return (1.0 - p) * group_sum(query[keep], terms, g.size)


MEASURES = {"ndcg": _ndcg_family, "dcg": _ndcg_family, "ideal_dcg": _ndcg_family, "ndcg_cut": _ndcg_cut,
            "ndcg_rel": _ndcg_rel, "Rndcg": _rndcg, "G": _g, "rbp": _rbp}
