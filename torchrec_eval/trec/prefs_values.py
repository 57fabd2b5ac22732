"""trec_eval's preference measures of the counted preferences: ``prefs_simp``, ``prefs_pair``,
``prefs_avgjg`` and ``prefs_avgjg_Rnonrel`` (``_ret``, ``_imp``), and the counts."""

from __future__ import annotations

import numpy as np

from torchrec_eval.trec.prefs_counts import PrefCounts
from torchrec_eval.trec.prefs_partial import CELL_BUDGET, lower_products, ranges, size_batches


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    out = np.zeros(len(denominator))
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _per_jg_mean(counts: PrefCounts, values: np.ndarray, size: int) -> np.ndarray:
    """trec_eval's average over JGs: the sum in JG order, kept when > 0 (NaN too is dropped)."""
    total = np.bincount(counts.jg_row, weights=values, minlength=size)
    jgs = np.bincount(counts.jg_row, minlength=size)
    with np.errstate(invalid="ignore"):
        return np.where(total > 0, total / np.maximum(jgs, 1), 0.0)


def _pairs(counts: PrefCounts, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query, for ``prefs_pair``: (sum of ratios of pairs both retrieved, sum of ratios of pairs with
    one retrieved, [Q, 3] pair counts of the three kinds), summed in trec_eval's order.

    A query of one JG of classes without a repeated document has each pair once, its ratio 1 or 0: its
    sums are its area counts. The others' pairs are counted in a judged x judged matrix per query, as
    trec_eval does, queries of one size class at a time (:func:`size_batches`): the equivalence
    classes' pairs as a product of class-membership matrices, the partial orders' pairs added."""
    c = counts
    both, one = np.zeros(size), np.zeros(size)
    kinds = np.zeros((size, 3), dtype=np.int64)
    listed = np.flatnonzero(~c.simple)
    queries = np.arange(size + 1)
    entry_start = np.searchsorted(c.pair_row, queries)
    cls_start = np.searchsorted(c.cls_row, queries)
    po_start = np.searchsorted(c.po_row, queries)
    classes = np.diff(cls_start)[listed]
    nj = c.nj[listed]
    for rows in size_batches(nj, np.maximum(nj, classes) * nj, CELL_BUDGET):
        _pair_batch(c, listed[rows], entry_start, cls_start, po_start, both, one, kinds)
    simple = c.simple
    per_query = {key: np.bincount(c.jg_row, weights=getattr(c, key), minlength=size)
                 for key in ("ful_ret", "poss_ret", "ful_imp", "poss_imp", "notoccur")}
    both = np.where(simple, per_query["ful_ret"], both)
    one = np.where(simple, per_query["ful_ret"] + per_query["ful_imp"], one)
    kinds[simple] = np.column_stack([per_query["poss_ret"], per_query["poss_imp"], per_query["notoccur"]])[simple]
    return both, one, kinds


def _pair_batch(c: PrefCounts, rows: np.ndarray, entry_start: np.ndarray, cls_start: np.ndarray, po_start: np.ndarray,
                both: np.ndarray, one: np.ndarray, kinds: np.ndarray) -> None:
    """The prefs_pair sums of the queries ``rows`` (not simple), written into ``both``, ``one`` and
    ``kinds``: count[i, j], the times document i is preferred to j over the query's JGs, in a padded
    [queries, n, n] stack; each pair i < j preferred either way has the ratio count[i, j] / (count[i, j]
    + count[j, i]), summed in (i, j) order, the retrieved pairs first, then the implied ones."""
    batch = len(rows)
    n, k = int(c.nj[rows].max()), int((cls_start[rows + 1] - cls_start[rows]).max())
    entry = ranges(entry_start[rows], entry_start[rows + 1])
    slot = np.repeat(np.arange(batch), entry_start[rows + 1] - entry_start[rows])
    first = cls_start[rows]
    local_cls = c.pair_cls[entry] - first[slot]
    cls = ranges(cls_start[rows], cls_start[rows + 1])
    cls_slot = np.repeat(np.arange(batch), cls_start[rows + 1] - cls_start[rows])
    ends = np.full((batch, k), k, dtype=np.int64)
    ends[cls_slot, cls - first[cls_slot]] = c.cls_end[cls] - first[cls_slot]
    count = lower_products(slot, c.pair_doc[entry], local_cls, ends, batch, n, k)
    del entry, slot, local_cls, cls, cls_slot, ends
    po = ranges(po_start[rows], po_start[rows + 1])
    if po.size:
        po_slot = np.repeat(np.arange(batch), po_start[rows + 1] - po_start[rows])
        np.add.at(count, (po_slot, c.po_a[po], c.po_b[po]), 1)
        del po_slot
    total = count + count.transpose(0, 2, 1)
    index = np.arange(n)
    upper = (index[:, None] < index[None, :]) & (total > 0)
    njr = c.njr[rows][:, None, None]
    row_ret, col_ret = index[None, :, None] < njr, index[None, None, :] < njr
    kinds[rows, 2] += np.count_nonzero(upper & ~row_ret, axis=(1, 2))
    r, low = int(njr.max()), int(njr.min())  # the rows of the pairs with a retrieved document
    count, total, upper, row_ret = count[:, :r], total[:, :r], upper[:, :r], row_ret[:, :r]
    # the ratios of the retrieved pairs (columns < r), then those of the implied ones (columns >= low),
    # each query's in one row: a running sum along it adds them in trec_eval's order (the zeros between
    # them change nothing)
    sums = np.zeros((batch, r * r + r * (n - low)))
    parts = sums[:, :r * r].reshape(batch, r, r), sums[:, r * r:].reshape(batch, r, n - low)
    masks = upper & col_ret, upper & row_ret & ~col_ret
    for part, (out, columns, mask) in enumerate(zip(parts, (slice(0, r), slice(low, n)), masks, strict=True)):
        np.divide(count[:, :, columns], total[:, :, columns], out=out, where=mask[:, :, columns], dtype=np.float64)
        kinds[rows, part] += np.count_nonzero(mask, axis=(1, 2))
    del count, total, upper, masks
    np.cumsum(sums, axis=1, out=sums)
    both[rows] = sums[:, r * r - 1] if r else 0.0
    one[rows] = sums[:, -1] if r else 0.0


def measure_values(counts: PrefCounts, name: str) -> np.ndarray:
    size = len(counts.qids)
    c = counts
    per_query = {key: np.bincount(c.jg_row, weights=getattr(c, key), minlength=size).astype(np.int64)
                 for key in ("ful_ret", "poss_ret", "ful_imp", "poss_imp", "notoccur")}
    ful_all = per_query["ful_ret"] + per_query["ful_imp"]
    poss_all = per_query["poss_ret"] + per_query["poss_imp"] + per_query["notoccur"]
    if name == "prefs_num_prefs_poss":
        return poss_all
    if name == "prefs_num_prefs_ful":
        return ful_all
    if name == "prefs_num_prefs_ful_ret":
        return per_query["ful_ret"]
    if name == "prefs_simp":
        return _ratio(ful_all, poss_all)
    if name == "prefs_simp_ret":
        return _ratio(per_query["ful_ret"], per_query["poss_ret"])
    if name == "prefs_simp_imp":
        return _ratio(ful_all, per_query["poss_ret"] + per_query["poss_imp"])
    if name in ("prefs_avgjg", "prefs_avgjg_ret", "prefs_avgjg_imp"):
        ful = c.ful_ret + (c.ful_imp if name != "prefs_avgjg_ret" else 0)
        poss = c.poss_ret + (c.poss_imp if name != "prefs_avgjg_ret" else 0) + (c.notoccur if name == "prefs_avgjg"
                                                                                else 0)
        return _per_jg_mean(c, _ratio(ful, poss), size)
    if name in ("prefs_avgjg_Rnonrel", "prefs_avgjg_Rnonrel_ret"):
        ret = name.endswith("_ret")
        r, n = (c.num_rel_ret, c.num_nonrel_ret) if ret else (c.num_rel, c.num_nonrel)
        extra = np.maximum(r - n, 0)
        if ret:
            ful = c.ful_ret + c.num_rel_ret * extra
            poss = c.poss_ret + c.num_rel * extra
            ful, poss = np.where(r >= n, ful, c.recalc_ret_ful), np.where(r >= n, poss, c.recalc_ret_poss)
        else:
            ful = c.ful_ret + c.ful_imp + c.num_rel_ret * extra
            poss = c.poss_ret + c.poss_imp + c.notoccur + c.num_rel * extra
            ful, poss = np.where(r >= n, ful, c.recalc_ful), np.where(r >= n, poss, c.recalc_poss)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = ful / poss.astype(np.float64)  # no guard: 0 / 0 is NaN and drops the query's value
        return _per_jg_mean(c, ratio, size)
    if name in ("prefs_pair", "prefs_pair_ret", "prefs_pair_imp"):
        if c.pair_sums is None:
            c.pair_sums = _pairs(c, size)
        both, one, kinds = c.pair_sums
        if name == "prefs_pair_ret":
            return _ratio(both, kinds[:, 0])
        pairs = kinds[:, 0] + kinds[:, 1] + (kinds[:, 2] if name == "prefs_pair" else 0)
        return _ratio(one, pairs)
    raise ValueError(f"not a prefs measure: {name!r}")
