"""The ranked run trec_eval's measures read (:class:`Judgements`), per-query statistics shared by the
measures (:class:`Queries`) and the array helpers they use, for every query at once.

Sums over a query's documents are taken in rank order, as trec_eval's loops take them, so that the
floating-point results are the same: ``np.bincount`` with weights adds in input order, and a running
sum restarted at each query is :func:`segment_cumsum` (a sequential ``np.add.accumulate`` per query).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np
from numpy.typing import NDArray

__all__ = ["Judgements", "Queries", "first_of_groups", "lround", "ratio", "segment_cumsum", "suffix_max"]


@dataclass
class Judgements:
    """A ranked run against its qrels, trec_eval's ``RES_RELS`` for Q queries at once.

    Attributes:
        qids: [Q] the evaluated query ids, in trec_eval's order (sorted).
        num_ret: [Q] documents retrieved (after ``-M`` and ``-J``).
        hit_query, hit_rank, hit_rel: [J] the retrieved documents that have a judgement, in query
            then rank order: their query row, 1-based rank and judged relevance (< 0: unjudged).
        judged_query, judged_rel: [T] every judgement of the evaluated queries, by query row.
        all_relevant: judgements ``> 0`` in the whole qrels (trec_eval's ``num_rel`` summary with -c).
        runid: the run's tag.
        complete: trec_eval ``-c`` (judged queries missing from the run are evaluated, empty).
        missing: [Q] bool, the rows of those queries (None: none, or -J, which drops the one unjudged
            document trec_eval gives them).
    """

    qids: np.ndarray
    num_ret: np.ndarray
    hit_query: np.ndarray
    hit_rank: np.ndarray
    hit_rel: np.ndarray
    judged_query: np.ndarray
    judged_rel: np.ndarray
    all_relevant: int = 0
    runid: str = ""
    complete: bool = False
    missing: np.ndarray | None = None


def first_of_groups(groups: np.ndarray, num: int) -> tuple[np.ndarray, np.ndarray]:
    """(count [num], index of the first element [num]) of each group of a sorted group array."""
    count = np.bincount(groups, minlength=num)
    return count, np.cumsum(count) - count


def group_sum(groups: np.ndarray, weights: np.ndarray, num: int) -> np.ndarray:
    """[num] float64 sums of ``weights`` by group, added in order (``np.bincount``, which returns
    integers when ``groups`` is empty)."""
    return np.bincount(groups, weights=weights, minlength=num).astype(np.float64, copy=False)


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (trec_eval leaves those values at 0)."""
    out = np.zeros(len(denominator))
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def suffix_max(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Within each run of equal ``groups``, the maximum of ``values`` from each position to the end
    (pointer doubling: exact, log2 of the longest run passes)."""
    out = values.copy()
    step = 1
    while step < len(out):
        same = groups[step:] == groups[:-step]
        if not same.any():
            break
        np.maximum(out[:-step], np.where(same, out[step:], -np.inf), out=out[:-step])
        step *= 2
    return out


def lround(x: np.ndarray) -> np.ndarray:
    """C's ``lround``: the nearest integer, halves away from zero."""
    whole = np.trunc(x)
    return (whole + np.sign(x) * (np.abs(x - whole) >= 0.5)).astype(np.int64)


def segment_cumsum(values: np.ndarray, groups: np.ndarray, num: int) -> np.ndarray:
    """The running sum of ``values`` within each group of a sorted ``groups`` array, added one by one
    from the group's start as a C loop adds them (rows of similar length laid out side by side)."""
    count, first = first_of_groups(groups, num)
    position = np.arange(len(values)) - first[groups]
    out = np.empty(len(values))
    length_class = np.ceil(np.log2(np.maximum(count, 1))).astype(np.int64)[groups]
    for cls in np.unique(length_class):
        members = np.flatnonzero(length_class == cls)
        rows, row_of = np.unique(groups[members], return_inverse=True)
        table = np.zeros((len(rows), 1 << int(cls)))
        table[row_of, position[members]] = values[members]
        np.add.accumulate(table, axis=1, out=table)
        out[members] = table[row_of, position[members]]
    return out


class Queries:
    """Per-query statistics of :class:`Judgements` at one relevance level, shared by the measures.

    ``query``, ``rank``, ``seen``, ``precision``: [R] the relevant retrieved documents (query row, rank,
    how many relevant so far including this one, precision there); ``first`` [Q]: index of each
    query's first; ``num_rel``, ``num_nonrel``, ``num_rel_ret`` [Q].
    """

    def __init__(self, j: Judgements, level: int, version: int = 10, num_docs: int = 0) -> None:
        self.j, self.level, self.size, self.version, self.num_docs = j, level, len(j.qids), version, num_docs
        rel = j.judged_rel
        self.num_rel = np.bincount(j.judged_query[(rel >= 0) & (rel >= level)], minlength=self.size)
        self.num_nonrel = np.bincount(j.judged_query[(rel >= 0) & (rel < level)], minlength=self.size)
        relevant = j.hit_rel >= level  # unjudged (< 0) documents are never relevant, as level >= 0
        self.query, self.rank = j.hit_query[relevant], j.hit_rank[relevant]
        self.num_rel_ret, first = first_of_groups(self.query, self.size)
        self.seen = np.arange(1, len(self.query) + 1) - first[self.query]  # relevant so far, this one included
        self.precision = self.seen / self.rank  # at each relevant document
        self.first = first

    @cached_property
    def best_precision(self) -> np.ndarray:
        """[R] the highest precision at or after each relevant document (interpolated precision)."""
        return suffix_max(self.precision, self.query)

    def hits_within(self, k: np.ndarray | float) -> np.ndarray:
        """[Q] relevant documents at ranks <= k (k per query or one number)."""
        within = self.rank <= (k[self.query] if isinstance(k, np.ndarray) else k)
        return np.bincount(self.query[within], minlength=self.size)

    def judged_within(self, k: float) -> np.ndarray:
        """[Q] retrieved documents judged (relevance >= 0) at ranks <= k."""
        j = self.j
        return np.bincount(j.hit_query[(j.hit_rel >= 0) & (j.hit_rank <= k)], minlength=self.size)

    def average_precision(self, k: float = math.inf) -> np.ndarray:
        total = group_sum(self.query, self.precision * (self.rank <= k), self.size)
        return ratio(total, self.num_rel)

    def bpref(self) -> np.ndarray:
        j = self.j
        judged = j.hit_rel >= 0
        query, rel = j.hit_query[judged], j.hit_rel[judged]
        nonrel = rel < self.level
        # judged non-relevant ranked above, over all queries (numpy's stubs type a bool cumsum as bool)
        before = cast(NDArray[np.intp], np.cumsum(nonrel)) - nonrel
        _, first = first_of_groups(query, self.size)
        before = before - before[first[query]] if len(query) else before
        r, n = self.num_rel[query], self.num_nonrel[query]
        term = np.ones(len(query))
        some = (before > 0) & ~nonrel
        term[some] = 1.0 - np.minimum(before[some], r[some]) / np.minimum(n[some], r[some])
        return ratio(group_sum(query[~nonrel], term[~nonrel], self.size), self.num_rel)

    def at_relevant(self, cut: np.ndarray) -> np.ndarray:
        """[Q] the interpolated precision at the ``cut``-th relevant document of each query (the first
        for ``cut`` 0), 0 where the query has fewer than ``cut`` (or none: 0 / num_ret)."""
        out = np.zeros(self.size)
        found = (cut <= self.num_rel_ret) & (self.num_rel_ret > 0)
        position = self.first + np.maximum(cut, 1) - 1
        out[found] = self.best_precision[position[found]]
        out[(cut == 0) & self.empty] = -np.nan  # trec_eval's 0 / 0 (num_rel_ret / num_ret), printed -nan
        return out

    @cached_property
    def empty(self) -> np.ndarray:
        """[Q] queries that retrieve nothing (with -J, also those absent from the run under -c; not those
        without -J, which trec_eval evaluates as retrieving one unjudged document)."""
        empty = self.j.num_ret == 0
        return empty if self.j.missing is None else empty & ~self.j.missing

    def iprec_at_recall(self, point: float) -> np.ndarray:
        exact = point * self.num_rel
        if self.version >= 10:
            return self.at_relevant(lround(exact))
        return self.at_relevant(np.trunc(exact + 0.9).astype(np.int64))

    def recip_rank(self) -> np.ndarray:
        out = np.zeros(self.size)
        some = self.num_rel_ret > 0
        out[some] = 1.0 / self.rank[self.first[some]]
        return out
