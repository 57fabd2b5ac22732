"""trec_eval's other measures of ``all_trec``, for every query at once: ``infAP``, ``Rprec_mult``,
``utility``, ``11pt_avg``, ``binG``, ``relative_P``, ``set_relative_P``, ``set_map``, ``set_F``, ``unj``,
``rbp_resid``, ``relstring`` and ``yaap`` (``set_P``, ``set_recall``: :mod:`torchrec_eval.trec.measures`).

With ``R`` relevant judged documents, ``num_ret`` retrieved, ``rel_ret`` of them relevant, ``r_i`` the
rank of the i-th relevant retrieved one and ``hits(k)`` the relevant ones at ranks ``<= k``:

* ``infAP = mean over relevant retrieved of 1/r + ((r-1)/r) (a / (r-1)) ((i-1+e) / (i-1+n+2e))`` over ``R``,
  with ``a`` the pooled documents above (relevant, judged non-relevant ``n``, pooled unjudged), ``e = 1e-5``
* ``Rprec_mult_m = hits(c) / c``, ``c = (long)(m R + 0.9)``; ``relative_P_k = hits(k) / min(k, R)``
* ``utility = a rel_ret + b (num_ret - rel_ret) + c (R - rel_ret) + d (N + rel_ret - num_ret - R)``
* ``11pt_avg``: the mean interpolated precision at the recall points (``lround(point R)``-th relevant)
* ``binG = sum_i 1 / log2(2 + r_i - i) / R``; ``yaap = log((1 + s) / (1 + R - s))``, ``s`` the sum of
  precisions at the relevant retrieved documents
* ``set_relative_P = rel_ret / min(num_ret, R)``; ``set_map = rel_ret^2 / (num_ret R)``;
  ``set_F = (b + 1) P R / (b P + R)`` (``b = 1``)
* ``unj_k``: the share of the first k ranks that is not judged; ``rbp_resid = p^num_ret + (1 - p) sum of
  p^(i-1)`` over unjudged ranks ``i`` (when there are some)
* ``relstring``: each of the first N documents' relevance as a character (``-`` not judged, ``.`` judged
  unjudged (< 0), ``>`` above 9)
"""

from __future__ import annotations

import numpy as np

from torchrec_eval.trec.gains import powers, rbp_persistence
from torchrec_eval.trec.spec import Measure
from torchrec_eval.trec.stats import Queries, first_of_groups, group_sum, lround, ratio

__all__ = ["MEASURES"]

INFAP_EPSILON = 1e-5


def _counts_before(flags: np.ndarray, groups: np.ndarray, num: int) -> np.ndarray:
    """For each element, how many elements of its group before it have ``flags`` set (exact integers)."""
    total = np.cumsum(flags) - flags
    _, first = first_of_groups(groups, num)
    return total - total[first[groups]] if len(groups) else total


def _infap(s: Queries, m: Measure) -> np.ndarray:
    j = s.j
    query, rel = j.hit_query, j.hit_rel
    relevant = rel >= s.level
    rel_before = _counts_before(relevant, query, s.size)[relevant].astype(np.float64)
    nonrel_before = _counts_before((rel >= 0) & ~relevant, query, s.size)[relevant]
    unjudged_before = _counts_before(rel < 0, query, s.size)[relevant]
    fj = j.hit_rank[relevant] - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        term = (1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel_before + nonrel_before + unjudged_before) / fj)
                * ((rel_before + INFAP_EPSILON) / (rel_before + nonrel_before + 2 * INFAP_EPSILON)))
    term[fj == 0] = 1.0
    return ratio(group_sum(query[relevant], term, s.size), s.num_rel)


def _rprec_mult(s: Queries, m: Measure) -> np.ndarray:
    cut = np.trunc(m.cut * s.num_rel + 0.9).astype(np.int64)
    return np.where(cut > 0, s.hits_within(cut) / np.maximum(cut, 1), 0.0)


def _utility(s: Queries, m: Measure) -> np.ndarray:
    a, b, c, d = m.args
    rel_ret, num_ret, num_rel = s.num_rel_ret.astype(np.float64), s.j.num_ret, s.num_rel
    value = a * rel_ret + b * (num_ret - rel_ret) + c * (num_rel - rel_ret) + d * (
        s.num_docs + rel_ret - num_ret - num_rel)
    missing = _missing(s)
    if missing.any():  # -c: trec_eval's stand-in ranking (one unjudged document), reset by name "utility" only
        value[missing] = 0.0 if m.name == "utility" else (b + c * num_rel + d * (s.num_docs - 1 - num_rel))[missing]
    return value


def _missing(s: Queries) -> np.ndarray:
    """[Q] the queries absent from the run (-c): trec_eval evaluates them as retrieving one document
    without a judgement, then resets a few values (``num_ret``, ``utility``, ``relstring``,
    ``rbp_resid``: only under those exact names, not with parameters; ``unj``)."""
    return np.zeros(s.size, dtype=bool) if s.j.missing is None else s.j.missing


def _eleven_point(s: Queries, m: Measure) -> np.ndarray:
    """trec_eval's loop over the recall points, last first: a point past ``rel_ret`` at the end is skipped;
    the others take the interpolated precision at their relevant document, or (out of order, or 0) the
    highest precision of the ranking."""
    cuts = [lround(p * s.num_rel) for p in m.args]
    top = s.at_relevant(np.zeros(s.size, dtype=np.int64))
    total = np.zeros(s.size)
    skipping = np.ones(s.size, dtype=bool)
    stuck = np.zeros(s.size, dtype=bool)
    reached = s.num_rel_ret.copy()
    for cut in reversed(cuts):
        skipping &= cut > s.num_rel_ret
        matched = ~skipping & ~stuck & (cut >= 1) & (cut <= reached)
        stuck |= ~skipping & ~matched
        total += np.where(matched, s.at_relevant(cut), np.where(stuck, top, 0.0))
        reached = np.where(matched, cut, reached)
    return total / len(cuts)


def _bin_g(s: Queries, m: Measure) -> np.ndarray:
    terms = 1.0 / np.log2((2 + s.rank - s.seen).astype(np.float64))
    return ratio(group_sum(s.query, terms, s.size), s.num_rel)


def _relative_p(s: Queries, m: Measure) -> np.ndarray:
    return ratio(s.hits_within(m.cut), np.minimum(m.cut, s.num_rel) * (s.num_rel > 0))


def _set_relative_p(s: Queries, m: Measure) -> np.ndarray:
    return ratio(s.num_rel_ret, np.minimum(s.j.num_ret, s.num_rel) * (s.j.num_ret > 0))


def _set_map(s: Queries, m: Measure) -> np.ndarray:
    rel_ret = s.num_rel_ret.astype(np.float64)
    return ratio(rel_ret * rel_ret, s.j.num_ret.astype(np.float64) * s.num_rel.astype(np.float64))


def _set_f(s: Queries, m: Measure) -> np.ndarray:
    beta = m.args[0]
    p, r = ratio(s.num_rel_ret, s.j.num_ret), ratio(s.num_rel_ret, s.num_rel)
    out = np.zeros(s.size)
    some = s.num_rel_ret > 0
    out[some] = (beta + 1.0) * p[some] * r[some] / (beta * p[some] + r[some])
    return out


def _unj(s: Queries, m: Measure) -> np.ndarray:
    shown = np.minimum(m.cut, s.j.num_ret)
    return (shown - s.judged_within(m.cut)) / m.cut


def _rbp_resid(s: Queries, m: Measure) -> np.ndarray:
    """The unjudged ranks' p^(rank-1), summed in rank order over every retrieved rank."""
    j, p = s.j, rbp_persistence(m.args)
    num_ret = j.num_ret.astype(np.int64)
    start = np.cumsum(num_ret) - num_ret
    judged = np.zeros(int(num_ret.sum()), dtype=bool)
    keep = j.hit_rel >= 0
    judged[start[j.hit_query[keep]] + j.hit_rank[keep] - 1] = True
    rows = np.repeat(np.arange(s.size), num_ret)
    table = powers(p, int(num_ret.max(initial=0)) + 1)
    position = np.arange(len(rows)) - start[rows]
    total = group_sum(rows, table[position] * ~judged, s.size)
    unjudged = num_ret - np.bincount(rows[judged], minlength=s.size)
    out = np.where(unjudged > 0, table[num_ret] + (1 - p) * total, 0.0)
    if m.name != "rbp_resid":
        out[_missing(s)] = 1.0 * p + (1 - p) * 1.0  # the stand-in document, unjudged at rank 1
    return out


def _relstring(s: Queries, m: Measure) -> np.ndarray:
    j = s.j
    width = max(int(m.args[0]), 0)
    chars = np.zeros((s.size, max(width, 1)), dtype=np.uint8)
    shown = np.minimum(j.num_ret + (_missing(s) & (m.name != "relstring")), width)
    chars[np.arange(width) < shown[:, None]] = ord("-")
    shown = j.hit_rank <= width
    rel = j.hit_rel[shown]
    char = np.where(rel > 9, ord(">"), np.where(rel >= 0, ord("0") + np.clip(rel, 0, 9), ord(".")))
    chars[j.hit_query[shown], j.hit_rank[shown] - 1] = char
    return np.char.decode(chars.view(f"S{chars.shape[1]}").ravel(), "ascii")


def _yaap(s: Queries, m: Measure) -> np.ndarray:
    total = group_sum(s.query, s.precision, s.size)
    return np.log((1.0 + total) / (1.0 + s.num_rel - total))


MEASURES = {"infAP": _infap, "Rprec_mult": _rprec_mult, "utility": _utility, "11pt_avg": _eleven_point,
            "binG": _bin_g, "relative_P": _relative_p, "set_relative_P": _set_relative_p, "set_map": _set_map,
            "set_F": _set_f, "unj": _unj, "rbp_resid": _rbp_resid, "relstring": _relstring, "yaap": _yaap}
