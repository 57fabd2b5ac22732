"""The preferences of each judgement group counted by area (both retrieved, one, neither) and
fulfilment, for every query at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from torchrec_eval.trec.parse import index_dtype
from torchrec_eval.trec.pref_docs import (
    JGCounts,
    group_starts,
    judged_docs,
    position_in_group,
    radix,
    ranked_run,
    word_columns,
)
from torchrec_eval.trec.prefs_classes import count_classes, recalc_classes
from torchrec_eval.trec.prefs_partial import count_partial_orders, partial_order_error
from torchrec_eval.trec.ranked import evaluated_rows
from torchrec_eval.trec.tables import Prefs, Run


@dataclass
class PrefCounts:
    """Per JG (``jg_row`` its query row, JGs in (row, jg) order) counts of preferences by area, the
    relevant / non-relevant document counts and the Rnonrel recalculations; per query ``njr`` (judged
    retrieved documents) and the document pairs for the ``prefs_pair`` measures."""

    qids: np.ndarray
    jg_row: np.ndarray
    ful_ret: np.ndarray
    poss_ret: np.ndarray
    ful_imp: np.ndarray
    poss_imp: np.ndarray
    notoccur: np.ndarray
    num_rel: np.ndarray
    num_nonrel: np.ndarray
    num_rel_ret: np.ndarray
    num_nonrel_ret: np.ndarray
    recalc_ful: np.ndarray
    recalc_poss: np.ndarray
    recalc_ret_ful: np.ndarray
    recalc_ret_poss: np.ndarray
    # for prefs_pair, the equivalence-class JGs' entries of the queries that are not simple, in (query,
    # JG, class) order: each is preferred to the entries of the later classes of its JG; the
    # partial-order JGs' pairs are listed
    pair_row: np.ndarray  # int32 query row of each such entry
    pair_doc: np.ndarray  # int32 its docid rank
    pair_cls: np.ndarray  # int32 its class, numbered 0, 1, ... over these entries
    cls_end: np.ndarray  # int32 per class: the end (exclusive) of its JG's classes
    cls_row: np.ndarray  # int32 per class: its query row
    po_row: np.ndarray  # int32, the partial-order JGs' pairs (a preferred to b), in query row order
    po_a: np.ndarray
    po_b: np.ndarray
    njr: np.ndarray
    nj: np.ndarray
    simple: np.ndarray  # [Q] queries whose pairs are not listed (one JG of classes, no repeated document)
    pair_sums: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # prefs_values: made on first use


def _docid_ranks(run: Run, prefs: Prefs, complete: bool, max_docs: int | None) -> tuple[
        np.ndarray, NDArray[np.int32], NDArray[np.int32], NDArray[np.int32], NDArray[np.intp], NDArray[np.intp]]:
    """trec_eval's docid ranks: each judged document of a query gets 0 .. njr - 1 if retrieved (in rank
    order), njr .. nj - 1 if not (in docno order). Returns (qids, prefs entries evaluated, their rows,
    their docid ranks, njr [Q], nj [Q])."""
    qids, run_rows, prefs_rows = evaluated_rows(run, prefs, complete)
    size = len(qids)
    entries, _ = ranked_run(run, run_rows, max_docs, docno_ascending=True, ranks=False)
    del run_rows  # each of the run's per-entry arrays is as large as the judgements' here: freed early
    # int32: the entries' arrays, each as long as the judgements, are what the counting holds
    judged_entries = np.flatnonzero(prefs_rows >= 0).astype(np.int32)
    judged_rows = prefs_rows[judged_entries].astype(np.int32)
    del prefs_rows
    judged_group, group_row, position = judged_docs(run, qids, entries, judged_rows, prefs.doc_key[judged_entries])
    docid = np.full(len(group_row), -1, dtype=np.int32)
    # the retrieved ones in ranked order (by query, then rank): their positions in the ranking, sorted
    retrieved = position >= 0
    hit_at = np.full(len(entries), -1, dtype=index_dtype(len(group_row)))
    hit_at[position[retrieved]] = np.flatnonzero(retrieved)
    hits = hit_at[hit_at >= 0]
    del hit_at
    docid[hits] = position_in_group(group_row[hits])
    njr = np.bincount(group_row[hits], minlength=size)
    missed = np.flatnonzero(~retrieved)  # (row, docno) order already
    docid[missed] = njr[group_row[missed]] + position_in_group(group_row[missed])
    nj = np.bincount(group_row, minlength=size)
    return qids, judged_entries, judged_rows, docid[judged_group], njr, nj


def _areas(a: np.ndarray, b: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, ...]:
    """For preferences a > b (docid ranks, ``n`` judged retrieved): masks of fulfilled-retrieved,
    possible-retrieved (not fulfilled), fulfilled-implied, possible-implied (not fulfilled), neither."""
    a_ret, b_ret = a < n, b < n
    ful_ret = b_ret & (a < b)
    poss_ret = a_ret & b_ret & (a > b)
    ful_imp = a_ret & ~b_ret
    poss_imp = ~a_ret & b_ret
    return ful_ret, poss_ret, ful_imp, poss_imp, ~a_ret & ~b_ret


class _Sorted(NamedTuple):
    """The evaluated judgements in trec_eval's order: query, jg, jsg, rel_level descending, docid rank."""

    rows: np.ndarray  # each entry's query row
    docid: np.ndarray  # its docid rank
    rel: np.ndarray  # its rel_level
    source: np.ndarray  # its place in the table: its line and docno for errors
    jg_head: np.ndarray  # the first entry of each judgement group (JG)
    jsg_head: np.ndarray  # ... of each sub-group
    ec_head: np.ndarray  # ... of each class (sub-group, rel_level)


def _sort_judgements(prefs: Prefs, entries: np.ndarray, rows: np.ndarray, docid: np.ndarray) -> _Sorted:
    """The judgements ``entries`` (their query ``rows``, ``docid`` ranks) in trec_eval's order."""
    rel = prefs.rel[entries]
    # as small integer codes, each sorted by a radix sort (16 bits) where they fit. The codes are of the
    # whole table, in (query, strcmp) order, the order of the evaluated rows too: no copy of the byte
    # keys is made
    jg_code = _block_codes(prefs.query_index, prefs.jg_key)[entries]
    jsg_code = _block_codes(prefs.query_index, prefs.jg_key, prefs.jsg_key)[entries]
    levels = np.sort(rel)
    levels = levels[group_starts(levels)]
    descending = len(levels) - 1 - np.searchsorted(levels, rel)
    order = np.lexsort([radix(docid), radix(descending), radix(jsg_code)])
    del descending
    rel = rel[order]
    jg_head = group_starts(jg_code[order])
    jsg_head = group_starts(jsg_code[order])
    return _Sorted(rows[order], docid[order], rel, entries[order], jg_head, jsg_head, jsg_head | group_starts(rel))


class _Groups(NamedTuple):
    """The judgement groups (JGs) of the sorted judgements, in (query row, jg) order."""

    jg: np.ndarray  # [M] int32 each entry's JG
    start: np.ndarray  # [J] each JG's first entry
    end: np.ndarray  # [J] its end (exclusive)
    row: np.ndarray  # [J] its query row
    subgroups: np.ndarray  # [J] its number of sub-groups (1: equivalence classes of rel_level)


def _judgement_groups(judgements: _Sorted) -> _Groups:
    jg = np.cumsum(judgements.jg_head, dtype=np.int32) - 1
    start = np.flatnonzero(judgements.jg_head)
    end = np.append(start[1:], len(judgements.rows))
    subgroups = np.bincount(jg[judgements.jsg_head], minlength=len(start))
    return _Groups(jg, start, end, judgements.rows[start], subgroups)


def _count_class_jgs(out: JGCounts, judgements: _Sorted, groups: _Groups, ec: np.ndarray, n_entry: np.ndarray,
                     nj: np.ndarray, prefs: Prefs, qids: np.ndarray) -> None:
    """Adds the counts of the equivalence-class JGs (one sub-group) to ``out``: every entry against
    every entry of a lower class of its JG (``ec``: each entry's class)."""
    num_jgs = len(groups.row)
    rows, docid, rel = judgements.rows, judgements.docid, judgements.rel
    ec_jg = groups.subgroups[groups.jg] == 1
    ec_start = np.flatnonzero(judgements.ec_head)
    big = int(nj.max(initial=0)) + 1
    last_ec = ec[groups.end - 1]  # each JG's last class (used for the equivalence-class JGs)
    count_classes(out, groups.jg, ec, ec_start, ec_jg, last_ec, docid, n_entry, num_jgs, big,
                  (prefs, judgements.source, rel, rows, qids))
    # masks over all entries, not an index array of the equivalence-class ones (as long as the table)
    relevant = ec_jg & (rel > 0)
    retrieved = ec_jg & (docid < n_entry)
    for name, mask in (("num_rel", relevant), ("num_nonrel", ec_jg & ~relevant), ("num_rel_ret", relevant & retrieved),
                       ("num_nonrel_ret", retrieved & ~relevant)):
        out[name] += np.bincount(groups.jg[mask], minlength=num_jgs)
    del relevant, retrieved
    recalc_classes(out, groups.jg, ec, ec_jg, last_ec, docid, n_entry, num_jgs, big)


def _pair_lists(judgements: _Sorted, groups: _Groups, ec: np.ndarray,
                num_queries: int) -> tuple[np.ndarray, dict[str, NDArray[np.int32]]]:
    """The document pairs, for prefs_pair: counted from the areas in a query of one equivalence-class
    JG without a repeated document (each pair once, its ratio 1 or 0), enumerated in the others.
    Returns the ``simple`` queries [Q] and the entries listed for the others (:class:`PrefCounts`)."""
    jg, docid, rows = groups.jg, judgements.docid, judgements.rows
    repeated = np.zeros(len(groups.row), dtype=bool)
    repeated[jg[1:][(ec[1:] == ec[:-1]) & (docid[1:] == docid[:-1])]] = True
    simple = np.bincount(groups.row, minlength=num_queries) == 1
    simple[groups.row[repeated | (groups.subgroups > 1)]] = False
    listed = np.flatnonzero((groups.subgroups[jg] == 1) & ~simple[rows])
    heads = judgements.ec_head[listed]
    cls_jg = jg[listed[heads]]
    pair = {"pair_row": rows[listed], "pair_doc": docid[listed], "pair_cls": np.cumsum(heads, dtype=np.int32) - 1,
            "cls_end": np.searchsorted(cls_jg, cls_jg, "right"), "cls_row": rows[listed[heads]]}
    return simple, {key: value.astype(np.int32, copy=False) for key, value in pair.items()}


def _count_partial_jgs(out: JGCounts, judgements: _Sorted, groups: _Groups, n_entry: np.ndarray, njr: np.ndarray,
                       prefs: Prefs, qids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Adds the counts of the partial-order JGs (several sub-groups) to ``out``, their preferences by
    area among them; returns the preferences (JG, preferred docid rank, other docid rank)."""
    partial = np.flatnonzero(groups.subgroups > 1)
    docid, rel = judgements.docid, judgements.rel

    def error(k: int) -> None:
        partial_order_error(int(groups.start[k]), int(groups.end[k]), docid, rel, judgements.jsg_head, prefs,
                            judgements.source, str(qids[groups.row[k]]))

    po_jg, po_a, po_b = count_partial_orders(out, partial, groups.jg, groups.start, groups.end, judgements.ec_head,
                                             judgements.jsg_head, docid, rel, n_entry, error)
    for name, mask in zip(("ful_ret", "poss_ret", "ful_imp", "poss_imp", "notoccur"),
                          _areas(po_a, po_b, njr[groups.row[po_jg]]), strict=True):
        out[name] += np.bincount(po_jg[mask], minlength=len(groups.row))
    return po_jg, po_a, po_b


def count_prefs(run: Run, prefs: Prefs, complete: bool, max_docs: int | None) -> PrefCounts:
    """trec_eval's preference counts of every evaluated query (``form_prefs_counts``, all queries at once)."""
    qids, entries, rows, docid, njr, nj = _docid_ranks(run, prefs, complete, max_docs)
    judgements = _sort_judgements(prefs, entries, rows, docid)
    del entries, rows, docid
    groups = _judgement_groups(judgements)
    n_entry = njr.astype(np.int32)[judgements.rows]
    out: JGCounts = {name: np.zeros(len(groups.row), dtype=np.int64) for name in (
        "ful_ret", "poss_ret", "ful_imp", "poss_imp", "notoccur", "num_rel", "num_nonrel", "num_rel_ret",
        "num_nonrel_ret", "recalc_ful", "recalc_poss", "recalc_ret_ful", "recalc_ret_poss")}
    ec = np.cumsum(judgements.ec_head, dtype=np.int32) - 1
    _count_class_jgs(out, judgements, groups, ec, n_entry, nj, prefs, qids)
    simple, pair = _pair_lists(judgements, groups, ec, len(qids))
    del ec
    po_jg, po_a, po_b = _count_partial_jgs(out, judgements, groups, n_entry, njr, prefs, qids)
    out["poss_ret"] += out["ful_ret"]
    out["poss_imp"] += out["ful_imp"]
    return PrefCounts(qids=qids, jg_row=groups.row, **out, **pair, po_row=groups.row[po_jg].astype(np.int32),
                      po_a=po_a, po_b=po_b, njr=njr, nj=nj, simple=simple,
                      pair_sums=None)  # named: the arrays of ``out`` and ``pair`` fill the other fields


def _block_codes(rows: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """[M] the rank of each entry's (row, keys...) among the distinct ones, in (row, strcmp) order:
    files list a group's entries together, so only the first entry of each run of equal values is sorted."""
    change = np.ones(len(rows), dtype=bool)
    change[1:] = rows[1:] != rows[:-1]
    for key in keys:
        change[1:] |= (key[1:] != key[:-1]).any(axis=1)
    heads = np.flatnonzero(change)
    head_keys = [key[heads] for key in keys]
    order = np.lexsort([column for key in reversed(head_keys) for column in word_columns(key)] + [rows[heads]])
    distinct = group_starts(np.column_stack([rows[heads][order].astype(np.uint64)] + [key[order] for key in head_keys]))
    code = np.empty(len(heads), dtype=np.int32)
    code[order] = np.cumsum(distinct) - 1
    return np.repeat(code, np.diff(np.append(heads, len(rows))))
