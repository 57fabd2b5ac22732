"""trec_eval's ``-D LEVEL`` printouts of its qrels measures, byte for byte, for every query at once.

trec_eval prints them on stdout from the measures' calc functions, per query as it evaluates it (before
that query's ``-q`` lines), measures in its measure table's order: ``binG``, ``G``, ``dcg`` /
``ideal_dcg`` / ``ndcg`` (all three print ``ndcg:`` lines), ``ndcg_rel``, ``Rndcg``, ``ndcg_cut``,
``rbp`` at ``-D 1`` and above, ``gm_bpref`` (one line per query, *without* a newline, as trec_eval's
``printf`` has none) and ``ndcg_cut``'s per-document lines at ``-D 2`` and above. (``ndcg_p`` prints
too, but it is not in trec_eval 10's measure table; the preference formats' levels 3-5 are
:mod:`torchrec_eval.trec.debug_prefs`.)

Each printed number follows the C loop that prints it: a document's line at every rank, running sums
added in rank order (:func:`torchrec_eval.trec.stats.segment_cumsum`), trec_eval's sorted gains
(``setup_gains``: level places, levels without documents kept, ``qsort`` order) for the level it prints,
and C's ``%6.4f`` / ``%3.1f`` (``nan``/``-nan`` as glibc prints them). The lines of all queries are
built as numpy arrays and joined; this runs only when ``-D`` is above 0.

Example:
    >>> import re

import numpy as np
    >>> from torchrec_eval.trec.debug import debug_blocks
    >>> from torchrec_eval.trec.measures import Judgements, parse_measures
    >>> j = Judgements(qids=np.array(["q1"]), num_ret=np.array([3]), hit_query=np.array([0, 0]),
    ...                hit_rank=np.array([1, 3]), hit_rel=np.array([1, 2]), judged_query=np.array([0, 0]),
    ...                judged_rel=np.array([1, 2]))
    >>> print(debug_blocks(j, parse_measures("binG"), 1, 1)[0], end="")
    binG: 0 1 1.0000
    binG: 2 2 1.6309
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from torchrec_eval.trec.gains import Pairs, glibc_msort, powers, rbp_persistence, valid_level
from torchrec_eval.trec.spec import Measure, atol
from torchrec_eval.trec.stats import Judgements, Queries, first_of_groups, segment_cumsum

__all__ = ["DEBUG_FAMILIES", "debug_blocks"]

MIN_GEO_MEAN = 1e-5
_Lines = tuple[np.ndarray, np.ndarray, np.ndarray]  # a measure's printed lines: (query row, sort key, text)


# ----------------------------------------------------------------------------------------------- formatting
def _f(spec: str, values: np.ndarray) -> np.ndarray:
    """C's printf ``spec`` (``%6.4f``, ``%3.1f``) of each double: an object array of str."""
    values = np.asarray(values, dtype=np.float64)
    out = np.char.mod(spec, values).astype(object) if len(values) else np.zeros(0, dtype=object)
    nan = np.isnan(values)
    if nan.any():
        width = int(spec[1:].split(".")[0])
        out[nan] = [f"{'-nan' if sign else 'nan':>{width}}" for sign in np.signbit(values[nan]).tolist()]
    return out


def _d(values: np.ndarray) -> np.ndarray:
    """``%ld``."""
    values = np.asarray(values, dtype=np.int64)
    return np.char.mod("%d", values).astype(object) if len(values) else np.zeros(0, dtype=object)


_CONVERSION = re.compile(r"%(\d*\.\d+f|d)")


def _printf(fmt: str, *columns: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """C's ``printf(fmt, ...)`` of each row of ``columns`` (``%d`` and ``%W.Pf`` conversions), at the
    rows ``where`` (all by default): an object array of str."""
    if where is not None:
        columns = tuple(np.asarray(column)[where] for column in columns)
    floats = [np.asarray(c) for c in columns if np.asarray(c).dtype.kind == "f"]
    if not any(np.isnan(c).any() for c in floats):  # Python's % is C's printf here
        rows = list(map(fmt.__mod__, zip(*(np.asarray(c).tolist() for c in columns), strict=True)))
        out = np.empty(len(rows), dtype=object)
        out[:] = rows
        return out
    texts, parts = _CONVERSION.split(fmt), []  # NaN: glibc prints its sign (-nan)
    for index, text in enumerate(texts):
        if index % 2 == 0:
            parts.append(text)
        else:
            column = columns[index // 2]
            parts.append(_d(column) if text == "d" else _f("%" + text, column))
    return _join(*parts)


def _segments(size: int, *pieces: tuple[Any, ...]) -> np.ndarray:
    """[size] lines from (rows, fmt, columns...) pieces, each printed at its rows only."""
    out = np.empty(size, dtype=object)
    for rows, fmt, *columns in pieces:
        out[rows] = _printf(fmt, *columns, where=rows)
    return out


def _join(*parts: np.ndarray | str) -> np.ndarray:
    """Concatenate str and object arrays of str elementwise (the first part must be an array or str)."""
    out = parts[0]
    for part in parts[1:]:
        out = out + part
    return cast(np.ndarray, out)  # an array once one part is (the caller's formats have a conversion)


# ------------------------------------------------------------------------------------------ the ranked lists
class _Ranking:
    """Every query's retrieved documents, each rank present (``results_rel_list``): [N] arrays."""

    def __init__(self, j: Judgements) -> None:
        self.size = len(j.qids)
        self.n = j.num_ret.astype(np.int64).copy()
        if j.missing is not None:  # trec_eval -c: a query missing from the run gets one unjudged document
            self.n += j.missing.astype(np.int64)
        self.first = np.cumsum(self.n) - self.n
        total = int(self.n.sum())
        self.query = np.repeat(np.arange(self.size), self.n)
        self.position = np.arange(total) - self.first[self.query]  # 0-based (trec_eval's i)
        self.rel = np.full(total, -1, dtype=np.int64)  # not judged
        self.rel[self.first[j.hit_query] + j.hit_rank - 1] = j.hit_rel

    def at(self, values: np.ndarray, query: np.ndarray, position: np.ndarray, empty: float = 0.0) -> np.ndarray:
        """``values`` (per retrieved document) at ``position``, clamped to the query's last; ``empty`` for
        a query that retrieves nothing."""
        if not len(values):
            return np.full(len(query), empty)
        index = self.first[query] + np.clip(position, 0, np.maximum(self.n[query] - 1, 0))
        return np.where(self.n[query] > 0, values[np.minimum(index, len(values) - 1)], empty)


class _SortedGains:
    """trec_eval's ``setup_gains`` for every query: its gains sorted by ``qsort`` ([Q, P] ``gain``,
    ``level``, ``count`` (documents at that place; 0 for a level without documents or a repeated
    pair), ``num`` [Q]) and ``get_gain`` (:meth:`of`)."""

    def __init__(self, j: Judgements, pairs: Pairs) -> None:
        size = len(j.qids)
        judged = j.judged_rel >= 0
        query, rel = j.judged_query[judged], j.judged_rel[judged]
        levels = _levels_of(j)
        width = int(levels.max(initial=0))
        counts = np.zeros((size, max(width, 1)), dtype=np.int64)
        np.add.at(counts, (query, rel), 1)
        given = [(atol(name), gain) for name, gain in pairs if valid_level(name)]
        distinct = np.unique(levels)
        places = len(given) + width
        gain = np.zeros((len(distinct), max(places, 1)))
        level = np.full((len(distinct), max(places, 1)), -1, dtype=np.int64)
        counted = np.zeros((len(distinct), max(places, 1)), dtype=bool)
        lookup = np.zeros((len(distinct), max(width, 1)))
        num = np.zeros(len(distinct), dtype=np.int64)
        for row, count in enumerate(distinct.tolist()):
            named = {name for name, _ in given}
            entries = [(index, name, value) for index, (name, value) in enumerate(given)]
            entries += [(len(given) + lvl, lvl, float(lvl)) for lvl in range(count) if lvl not in named]
            first: dict[int, int] = {}
            for index, name, _ in entries:
                first.setdefault(name, index)
            ranked = glibc_msort(entries, lambda a, b: int(a[2] - b[2]))
            num[row] = len(ranked)
            seen: set[int] = set()
            for place, (index, name, value) in enumerate(ranked):
                gain[row, place], level[row, place] = value, name
                counted[row, place] = 0 <= name < count and first[name] == index
                if 0 <= name < count and name not in seen:  # get_gain: the first in sorted order
                    seen.add(name)
                    lookup[row, name] = value
        kind = np.searchsorted(distinct, levels)
        self.gain, self.level, self.num, self.lookup, self.kind = gain[kind], level[kind], num[kind], lookup, kind
        self.count = np.where(counted[kind], counts[np.arange(size)[:, None], np.clip(self.level, 0, counts.shape[1] - 1)], 0)
        self.levels = levels

    def of(self, query: np.ndarray, rel: np.ndarray) -> np.ndarray:
        """``get_gain``: the gain of each document's relevance (0 when not judged or judged < 0)."""
        ok = rel >= 0
        return np.where(ok, self.lookup[self.kind[query], np.where(ok, rel, 0)], 0.0)


class _Walk:
    """The ideal ranking as trec_eval's gain measures walk it (``cur_level`` down the sorted gains) and
    their lines: ranks 0 .. max(num_ret, T + 1) - 1 of each query, T the rank where the ideal gain
    drops to 0 or less (-1 when the top gain already is: no ideal)."""

    def __init__(self, j: Judgements, ranking: _Ranking, pairs: Pairs) -> None:
        g = self.gains = _SortedGains(j, pairs)
        size, width = len(j.qids), g.gain.shape[1]
        rows = np.arange(size)
        top = g.num - 1
        self.walk = (top >= 0) & (g.gain[rows, np.maximum(top, 0)] > 0)
        place = np.arange(width)[None, :]
        valid = place < g.num[:, None]
        stopper = valid & (g.count > 0) & (g.gain <= 0)
        stop = np.where(stopper, place, -1).max(axis=1, initial=-1)
        ideal = valid & (g.count > 0) & (place > stop[:, None]) & self.walk[:, None]
        counts = np.where(ideal, g.count, 0)[:, ::-1]  # query by query, top place first
        self.ideal_place = np.repeat(np.tile(np.arange(width)[::-1], size), counts.ravel())
        self.ideal_query = np.repeat(rows, counts.sum(axis=1))
        self.num_ideal, self.ideal_first = first_of_groups(self.ideal_query, size)
        self.ideal_gain = g.gain[self.ideal_query, self.ideal_place]
        position = np.arange(len(self.ideal_query)) - self.ideal_first[self.ideal_query]
        self.ideal_dcg = segment_cumsum(self.ideal_gain / np.log2(position + 2.0), self.ideal_query, size)
        self.ideal_total = _last_of(self.ideal_dcg, self.ideal_first, self.num_ideal)
        self.T = np.where(self.walk, self.num_ideal, -1)
        self.stop = np.where(self.walk, stop, top)  # cur_level once the ideal has ended
        self.stop_gain = np.where(self.walk & (stop >= 0), g.gain[rows, np.maximum(stop, 0)], 0.0)
        self.start_gain = np.where(top >= 0, g.gain[rows, np.maximum(top, 0)], 0.0)
        # the retrieved documents' gains and DCG
        r = self.ranking = ranking
        self.gain = g.of(r.query, r.rel)
        self.dcg = segment_cumsum(self.gain / np.log2(r.position + 2.0), r.query, size)
        # the lines
        n = r.n
        self.lines = np.maximum(n, self.T + 1)
        self.query = np.repeat(rows, self.lines)
        self.i = np.arange(len(self.query)) - (np.cumsum(self.lines) - self.lines)[self.query]
        q, i = self.query, self.i
        self.retrieved = i < n[q]
        self.rg = np.where(self.retrieved, r.at(self.gain, q, i), 0.0)
        self.rdcg = r.at(self.dcg, q, i)
        before = i < self.T[q]
        index = np.where(before, self.ideal_first[q] + i, 0)
        safe = np.minimum(index, max(len(self.ideal_gain) - 1, 0))
        pick = (lambda values: values[safe]) if len(self.ideal_gain) else (lambda values: np.zeros(len(q)))
        self.in_walk = i <= self.T[q]
        self.cur = np.where(before, pick(self.ideal_place) if len(self.ideal_gain) else 0, self.stop[q])
        self.ig = np.where(before, pick(self.ideal_gain), np.where(i == self.T[q], self.stop_gain[q], 0.0))
        self.idcg = np.where(before, pick(self.ideal_dcg), self.ideal_total[q])


def _last_of(running: np.ndarray, first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """[Q] each group's last running value (0.0 for an empty group)."""
    if not len(running):
        return np.zeros(len(count))
    return np.where(count > 0, running[np.clip(first + count - 1, 0, len(running) - 1)], 0.0)


# ----------------------------------------------------------------------------------------------- measures
def _ndcg(ctx: _Context, measures: list[Measure]) -> _Lines:
    w = ctx.walk(measures[0].args)
    text = _printf("ndcg: %d %d %3.1f %6.4f %3.1f %6.4f\n", w.i, w.cur, w.rg, w.rdcg, w.ig, w.idcg)
    return w.query, w.i, text


def _g(ctx: _Context, measures: list[Measure]) -> _Lines:
    w = ctx.walk(measures[0].args)
    r, size = w.ranking, ctx.size
    T = w.T[r.query]
    ideal_at = w.ideal_first[r.query] + np.minimum(r.position, np.maximum(w.num_ideal[r.query] - 1, 0))
    ig = (np.where(r.position < T, w.ideal_gain[np.minimum(ideal_at, len(w.ideal_gain) - 1)], 0.0)
          if len(w.ideal_gain) else np.zeros(len(r.query)))
    cost = np.where((r.position < T) & (ig >= 1.0), ig, 1.0)
    sum_cost = segment_cumsum(cost, r.query, size)
    sum_results = segment_cumsum(w.gain, r.query, size)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w.gain != 0, w.gain / np.log2(2 + sum_cost - sum_results), 0.0)
    results_g = segment_cumsum(terms, r.query, size)
    sum_ideal = _ideal_sums(w)
    q, i = w.query, w.i
    first, last = w.retrieved & w.in_walk, w.retrieved & ~w.in_walk
    results, cost, g = r.at(sum_results, q, i), r.at(sum_cost, q, i), r.at(results_g, q, i)
    text = _segments(len(q), (first, "G: %d %d %3.1f %6.4f %3.1f %6.4f %6.4f %6.4f\n", i, w.cur, w.rg, results, w.ig,
                              sum_ideal, cost, g),
                     (last, "G: %d %d %3.1f %6.4f 0.0 %6.4f %6.4f\n", i, w.cur, w.rg, results, sum_ideal, g),
                     (~w.retrieved, "G: %d %d 0.0 %6.4f %3.1f %6.4f\n", i, w.cur, results, w.ig, sum_ideal))
    return q, i, text


def _ideal_sums(w: _Walk) -> np.ndarray:
    """G's ``sum_ideal`` at each line: the ideal gains so far (all of them once the ideal has ended)."""
    running = segment_cumsum(w.ideal_gain, w.ideal_query, w.ranking.size)
    total = _last_of(running, w.ideal_first, w.num_ideal)
    q, i = w.query, w.i
    before = i < w.T[q]
    if not len(running):
        return total[q]
    return np.where(before, running[np.minimum(w.ideal_first[q] + i, len(running) - 1)], total[q])


def _rndcg(ctx: _Context, measures: list[Measure]) -> _Lines:
    w = ctx.walk(measures[0].args)
    q, i = w.query, w.i
    keep = ctx.stats.num_rel[q] > 0  # trec_eval returns before its loops for a query without relevant
    previous_ig = np.where(i > 0, np.roll(w.ig, 1), w.start_gain[q])
    changed = w.retrieved & w.in_walk & (i > 0) & (w.ig != previous_ig)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(changed, np.roll(w.rdcg, 1) / np.roll(w.idcg, 1), 0.0)
    ratio = np.where(changed & (np.roll(w.idcg, 1) > 0), ratio, 0.0)
    total = segment_cumsum(ratio, q, ctx.size)
    first, last, ideal = w.retrieved & w.in_walk & keep, w.retrieved & ~w.in_walk & keep, ~w.retrieved & keep
    text = _segments(len(q), (first, "Rndcg: %d %d %3.1f %6.4f %3.1f %6.4f %6.4f\n", i, w.cur, w.rg, w.rdcg, w.ig,
                              w.idcg, total),
                     (last, "Rndcg: %d %d %3.1f %6.4f 0.0 %6.4f\n", i, w.cur, w.rg, w.rdcg, w.idcg),
                     (ideal, "Rndcg: %d %d 0.0 %6.4f %3.1f %6.4f\n", i, w.cur, w.rdcg, w.ig, w.idcg))
    return q[keep], i[keep], text[keep]


def _ndcg_rel(ctx: _Context, measures: list[Measure]) -> _Lines:
    w = ctx.walk(measures[0].args)
    q, i, size = w.query, w.i, ctx.size
    positive = w.retrieved & (w.rg > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = np.where(positive, w.rdcg / w.idcg, 0.0)
    total = segment_cumsum(steps, q, size)
    ig = np.where(w.in_walk, w.ig, 0.0)
    text = _segments(len(q), (w.retrieved, "ndcg_rel: %d %d %3.1f %6.4f %3.1f %6.4f %6.4f\n", i, w.cur, w.rg,
                              w.rdcg, ig, w.idcg, total),
                     (~w.retrieved, "ndcg_rel: %d %d 0.0 %6.4f %3.1f %6.4f\n", i, w.cur, w.rdcg, w.ig, w.idcg))
    # the closing line: sum += (num_rel - num_rel_ret) * dcg / ideal_dcg
    rows = np.arange(size)
    ends = np.cumsum(w.lines) - 1
    has = w.lines > 0
    sum_before = np.where(has, total[np.maximum(ends, 0)] if len(total) else 0.0, 0.0)
    sum_before = np.where(has & (w.ranking.n > 0), sum_before, 0.0)
    rdcg = w.ranking.at(w.dcg, rows, w.ranking.n - 1)
    num_rel_ret = np.bincount(w.ranking.query[w.gain > 0], minlength=size)
    with np.errstate(divide="ignore", invalid="ignore"):
        final = sum_before + (w.num_ideal - num_rel_ret).astype(np.float64) * rdcg / w.ideal_total
    closing = _printf("ndcg_rel: %d %d %6.4f %6.4f %6.4f\n", w.lines, w.stop, rdcg, w.ideal_total, final)
    return np.concatenate([q, rows]), np.concatenate([i, w.lines]), np.concatenate([text, closing])


def _ndcg_cut(ctx: _Context, measures: list[Measure]) -> _Lines:
    cutoffs = np.array(sorted({int(m.cut) for m in measures}), dtype=np.int64)
    r, size, level = ctx.ranking, ctx.size, ctx.level
    rows = np.arange(size)
    last_cut = int(cutoffs[-1])
    # the run's DCG (gain: the relevance value, > 0 only)
    rel = r.rel.astype(np.float64)
    keep = (rel > 0) & (r.position < last_cut)
    dcg = segment_cumsum(np.where(keep, rel / np.log2(r.position + 2.0), 0.0), r.query, size)
    out_q, out_key, out_text = [], [], []
    # cut-offs reached inside the loop (not the last one), then those past the ranking
    cq, cc = np.repeat(rows, len(cutoffs)), np.tile(cutoffs, size)
    n = r.n[cq]
    inside = (cc < n) & (cc != last_cut)
    past = (cc >= n)
    value = np.where(inside, r.at(dcg, cq, cc - 1), r.at(dcg, cq, n - 1))
    chosen = inside | past
    out_q.append(cq[chosen])
    out_key.append(np.where(inside, 2 * cc, 2 * (n + 1) + np.searchsorted(cutoffs, cc))[chosen])
    out_text.append(_printf("ndcg_cut: cutoff %d dcg %6.4f\n", cc, value, where=chosen))
    if level > 1:
        docs = keep
        out_q.append(r.query[docs])
        out_key.append(2 * r.position[docs] + 1)
        out_text.append(_printf("ndcg_cut:%d %3.1f %6.4f\n", r.position, rel, dcg, where=docs))
    # the ideal DCG: relevance values > 0, highest first, down to the last cut-off
    judged = ctx.judgements.judged_rel > 0
    iq, irel = ctx.judgements.judged_query[judged], ctx.judgements.judged_rel[judged]
    order = np.lexsort((-irel, iq))
    iq, irel = iq[order], irel[order]
    levels = _levels_of(ctx.judgements)
    nothing = np.flatnonzero(levels == 0)  # no judgement >= 0: trec_eval walks level -1 to the last cut-off
    iq = np.concatenate([iq, np.repeat(nothing, last_cut)])
    irel = np.concatenate([irel, np.full(len(nothing) * last_cut, -1)])
    order = np.argsort(iq, kind="stable")
    iq, irel = iq[order], irel[order]
    m, start = first_of_groups(iq, size)
    ipos = np.arange(len(iq)) - start[iq]
    term = irel.astype(np.float64) / np.log2(ipos + 2.0)
    idcg = segment_cumsum(term, iq, size)
    base = 2 * (last_cut + int(r.n.max(initial=0)) + len(cutoffs) + 4)

    def ideal_at(query: np.ndarray, position: np.ndarray) -> np.ndarray:
        if not len(idcg):
            return np.zeros(len(query))
        index = start[query] + np.clip(position, 0, np.maximum(m[query] - 1, 0))
        return np.where((m[query] > 0) & (position >= 0), idcg[np.minimum(index, len(idcg) - 1)], 0.0)

    mm = m[cq]
    inside = cc < mm
    value = np.where(inside, ideal_at(cq, cc - 1), ideal_at(cq, mm - 1))
    out_q.append(cq)
    out_key.append(base + np.where(inside, 2 * cc, 2 * (mm + last_cut + 1) + np.searchsorted(cutoffs, cc)))
    out_text.append(_printf("ndcg_cut: cutoff %d idcg %6.4f\n", cc, value))
    terms = ipos < last_cut
    out_q.append(iq[terms])
    out_key.append(base + 2 * ipos[terms] + 1)
    out_text.append(_printf("ndcg_cut:%d %d %3.1f %6.4f\n", ipos, irel, irel.astype(np.float64), idcg, where=terms))
    return np.concatenate(out_q), np.concatenate(out_key), np.concatenate(out_text)


def _rbp(ctx: _Context, measures: list[Measure]) -> _Lines:
    args = measures[0].args
    r, size = ctx.ranking, ctx.size
    g = _SortedGains(ctx.judgements, args)
    valid = np.arange(g.gain.shape[1])[None, :] < g.num[:, None]
    low = np.minimum(np.where(valid, g.gain, np.inf).min(axis=1, initial=np.inf), 0.0)
    high = np.maximum(np.where(valid, g.gain, -np.inf).max(axis=1, initial=-np.inf), 0.0)
    scale = (low < 0) | (high > 1)
    lookup = g.of(r.query, r.rel)
    judged = r.rel >= 0
    q = r.query
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(judged & scale[q], (lookup - low[q]) / (high - low)[q], np.where(judged, lookup, 0.0))
    p = rbp_persistence(args)
    cur = powers(p, int(r.n.max(initial=1)))[r.position] if len(q) else np.zeros(0)
    total = segment_cumsum(np.where(gain != 0, gain * cur, 0.0), q, size)
    shown = gain != 0
    text = _printf("rbp:%d %3.1f %6.4f\n", r.position, gain, total, where=shown)
    return q[shown], r.position[shown], text


def _bin_g(ctx: _Context, measures: list[Measure]) -> _Lines:
    s = ctx.stats
    terms = 1.0 / np.log2((2 + s.rank - s.seen).astype(np.float64))
    total = segment_cumsum(terms, s.query, s.size)
    return s.query, s.rank, _printf("binG: %d %d %6.4f\n", s.rank - 1, s.seen, total)


def _gm_bpref(ctx: _Context, measures: list[Measure]) -> _Lines:
    if ctx.level < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    bpref = ctx.stats.bpref()
    value = np.log(np.maximum(bpref, MIN_GEO_MEAN))
    rows = np.arange(ctx.size)
    text = _printf("gm_bpref: bpref %6.4f, gm_bpref %6.4f", bpref, value)  # trec_eval prints no newline here
    return rows, np.zeros(ctx.size, dtype=np.int64), text


DEBUG_FAMILIES = {"binG": _bin_g, "G": _g, "dcg": _ndcg, "ideal_dcg": _ndcg, "ndcg": _ndcg, "ndcg_rel": _ndcg_rel,
                  "Rndcg": _rndcg, "ndcg_cut": _ndcg_cut, "rbp": _rbp, "gm_bpref": _gm_bpref}


class _Context:
    def __init__(self, j: Judgements, relevance_level: int, level: int) -> None:
        self.judgements, self.size, self.level = j, len(j.qids), level
        self.stats = Queries(j, relevance_level)
        self.ranking = _Ranking(j)
        self._walks: dict[Pairs, _Walk] = {}

    def walk(self, pairs: Pairs) -> _Walk:
        if pairs not in self._walks:
            self._walks[pairs] = _Walk(self.judgements, self.ranking, pairs)
        return self._walks[pairs]


def _levels_of(j: Judgements) -> np.ndarray:
    levels = np.zeros(len(j.qids), dtype=np.int64)
    judged = j.judged_rel >= 0
    np.maximum.at(levels, j.judged_query[judged], j.judged_rel[judged] + 1)
    return levels


def debug_blocks(judgements: Judgements, measures: Sequence[Measure], relevance_level: int,
                 debug_level: int) -> list[str]:
    """trec_eval's ``-D debug_level`` printouts of each evaluated query ([Q] str, in query order; empty
    when ``debug_level`` is 0 or less or no measure prints any): its measures' lines in ``measures``'
    order (trec_eval's table order), exactly as trec_eval writes them (``gm_bpref``'s without newline)."""
    size = len(judgements.qids)
    families: dict[str, list[Measure]] = {}
    for measure in measures:
        if measure.family in DEBUG_FAMILIES:
            families.setdefault(measure.family, []).append(measure)
    if debug_level <= 0 or not families or not size:
        return [""] * size
    ctx = _Context(judgements, relevance_level, debug_level)
    queries, ranks, keys, texts = [], [], [], []
    for index, (family, group) in enumerate(families.items()):
        query, key, text = DEBUG_FAMILIES[family](ctx, group)
        queries.append(np.asarray(query, dtype=np.int64))
        ranks.append(np.full(len(query), index, dtype=np.int64))
        keys.append(np.asarray(key, dtype=np.int64))
        texts.append(np.asarray(text, dtype=object))
    query, rank, key, text = (np.concatenate(parts) for parts in (queries, ranks, keys, texts))
    order = np.lexsort((key, rank, query))
    text, query = text[order], query[order]
    whole = "".join(text.tolist())
    lengths = np.fromiter((len(t) for t in text.tolist()), dtype=np.int64, count=len(text))
    ends = np.cumsum(np.bincount(query, weights=lengths, minlength=size).astype(np.int64))
    starts = ends - np.bincount(query, weights=lengths, minlength=size).astype(np.int64)
    return [whole[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
