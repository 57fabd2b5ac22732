"""trec_eval's preference judgements (``-R prefs``, ``-R qrels_prefs``) and measures (``-m all_prefs``).

A **prefs** file has one line per judged document: ``qid jg jsg docno rel_level``. Within a judgement
group (JG, one user's information need) and one of its sub-groups (JSG), a document with a higher
``rel_level`` is preferred to one with a lower level; a JG with several JSGs is a partial order whose
preferences are closed under transitivity. ``-R qrels_prefs`` reads a qrels file (``qid jg docno rel``)
as prefs: each distinct second column is a JG with one JSG. ``rel_level == 0`` means non-relevant.

The run's documents are ranked by score descending, **equal scores by docno ascending** (trec_eval's
prefs code breaks ties the other way round from its qrels code), cut to ``-M`` documents. Each
preference A > B of a JG is then

* *fulfilled* when A is retrieved above B, or A is retrieved and B is not;
* in area ``ret`` when both are retrieved, ``imp`` (implied) when one is, ``notoccur`` when neither is.

Per query (``ful`` / ``poss``: fulfilled / possible preferences, summed over its JGs):

* ``prefs_num_prefs_poss`` = all preferences; ``prefs_num_prefs_ful`` = ``ful_ret + ful_imp``;
  ``prefs_num_prefs_ful_ret`` = ``ful_ret`` (summaries: sums over queries)
* ``prefs_simp`` = ``ful / poss`` (``_ret``: both retrieved only; ``_imp``: at least one retrieved)
* ``prefs_pair``: per document pair, ``n(A>B) / (n(A>B) + n(B>A))`` over the JGs, averaged over the
  pairs (``_ret``, ``_imp`` as above; the pairs of unretrieved documents count 0)
* ``prefs_avgjg`` = mean over JGs of ``ful_jg / poss_jg`` (``_ret``, ``_imp``)
* ``prefs_avgjg_Rnonrel``: as ``prefs_avgjg`` with the JG's non-relevant documents set to ``R`` (its
  relevant ones): ``R * (R - N)`` fulfilled preferences added when ``N < R``, only the first ``R``
  non-relevant documents kept when ``N > R`` (``_ret``: among the retrieved ones), trec_eval's
  recalculation reproduced exactly, including how it pairs the kept non-relevant documents.

Everything is computed for all queries at once: preference pairs are enumerated as arrays (an
equivalence-class JG: every document against every document of a lower level; a partial-order JG:
the transitive closure of its sub-groups' orders, one boolean matrix per such JG) and counted with
``np.bincount`` in trec_eval's summation order, so the printed values are trec_eval's.

Example:
    >>> import os, tempfile
    >>> from torchrec_eval.trec import read_run
    >>> from torchrec_eval.trec.prefs import evaluate_prefs, prefs_measures, read_prefs
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "prefs"), "w") as f:
    ...     _ = f.write("q1 u1 s1 d1 2\\nq1 u1 s1 d2 1\\nq1 u1 s1 d3 0\\n")
    >>> with open(os.path.join(folder, "run"), "w") as f:
    ...     _ = f.write("q1 Q0 d2 1 0.9 sys\\nq1 Q0 d1 2 0.5 sys\\n")
    >>> result = evaluate_prefs(read_run(os.path.join(folder, "run")), read_prefs(os.path.join(folder, "prefs")),
    ...                         prefs_measures(["prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_simp"]))
    >>> print(result.format().replace("\\t", " | "))
    prefs_num_prefs_poss   | all | 3
    prefs_num_prefs_ful    | all | 2
    prefs_simp             | all | 0.6667
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from torchrec_eval.trec.keys import code_queries, lookup, run_codes
from torchrec_eval.trec.measures import Evaluation
from torchrec_eval.trec.order import docid_descending, grouped_order
from torchrec_eval.trec.parse import decode_keys, line_numbers, read_columns
from torchrec_eval.trec.ranked import evaluated_rows
from torchrec_eval.trec.tables import Run

__all__ = ["PREFS_MEASURES", "Prefs", "PrefsMeasure", "evaluate_prefs", "prefs_measures", "read_prefs",
           "read_qrels_prefs"]

PREFS_COLUMNS = ("qid", "jg", "jsg", "docno", "rel_level")
QRELS_PREFS_COLUMNS = ("qid", "jg", "docno", "rel")
# trec_eval's measures on preferences, in its order (measures.c): the order of its output lines
PREFS_MEASURES = ("prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp",
                  "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret",
                  "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp")
_COUNTS = {"prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret"}
NICKNAMES = {"all_prefs": ("runid", "num_q", *PREFS_MEASURES),
             "prefs": ("runid", "num_q", *PREFS_MEASURES[:6])}


@dataclass(frozen=True)
class PrefsMeasure:
    """One output value of a measure that is not a qrels measure: its printed ``name``, ``kind``
    (``"long"``, ``"double"``, ``"runid"``, ``"num_q"``: how trec_eval prints and sums it) and, for a
    measure with cut-offs, its family and parameter."""

    name: str
    kind: str
    family: str = ""
    param: float | None = None


def prefs_measures(names: Sequence[str]) -> list[PrefsMeasure] | None:
    """The measures ``names`` ask for (``all_prefs``, ``prefs``, ``runid``, ``num_q``, ``prefs_*``), each
    once, in trec_eval's order; None if one of the names is not one of them."""
    wanted: set[str] = set()
    for name in names:
        if name in NICKNAMES:
            wanted.update(NICKNAMES[name])
        elif name in PREFS_MEASURES or name in ("runid", "num_q"):
            wanted.add(name)
        else:
            return None
    return [PrefsMeasure(name, _kind(name)) for name in NICKNAMES["all_prefs"] if name in wanted]


def _kind(name: str) -> str:
    return name if name in ("runid", "num_q") else "long" if name in _COUNTS else "double"


@dataclass
class Prefs:
    """Preference judgements: query codes into the sorted ``queries`` (as :class:`torchrec_eval.trec.Qrels`),
    ``jg_key`` / ``jsg_key`` / ``doc_key`` [M, k] uint64 byte keys, ``rel`` [M] the rel_level and the
    1-based ``line`` of each entry in ``path``."""

    path: str
    queries: np.ndarray
    query_index: np.ndarray
    jg_key: np.ndarray
    jsg_key: np.ndarray
    doc_key: np.ndarray
    rel: np.ndarray
    lines: np.ndarray | None  # None: entry i is on line i + 1

    @property
    def line(self) -> np.ndarray:
        """[M] the 1-based line of each entry in ``path``."""
        return line_numbers(self.lines, len(self.rel))


def _prefs(path: str | os.PathLike, columns: tuple[str, ...], progress, jsg: int | None) -> Prefs:
    rel_column = len(columns) - 1
    doc_column = rel_column - 1
    keys = (0, 1, doc_column) if jsg is None else (0, 1, jsg, doc_column)
    table = read_columns(path, columns, "prefs" if jsg is not None else "qrels", keys=keys, numbers=(rel_column,),
                         comment="column0", progress=progress)
    rel = table.finite(rel_column, columns[rel_column])
    queries, _, query_index = code_queries(table.keys[0])
    # qrels_prefs: one sub-group "0" per JG, a read-only view of one zero key (no [M] column)
    jsg_key = table.keys[jsg] if jsg is not None else np.broadcast_to(np.zeros((1, 1), dtype=np.uint64), (len(rel), 1))
    return Prefs(path=table.path, queries=queries, query_index=query_index, jg_key=table.keys[1], jsg_key=jsg_key,
                 doc_key=table.keys[doc_column], rel=rel, lines=table.lines)


def read_prefs(path: str | os.PathLike, progress: Callable[[int], None] | None = None) -> Prefs:
    """Read a trec_eval prefs file (``-R prefs``): ``qid jg jsg docno rel_level`` per line, whitespace
    separated; blank lines and lines with ``#`` in the first column are skipped.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line without 5 columns or a rel_level that is not a number.
    """
    return _prefs(path, PREFS_COLUMNS, progress, jsg=2)


def read_qrels_prefs(path: str | os.PathLike, progress: Callable[[int], None] | None = None) -> Prefs:
    """Read a qrels file as preferences (``-R qrels_prefs``): ``qid jg docno rel``, the second column
    naming the judgement group, each group one sub-group.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line without 4 columns or a rel that is not a number.
    """
    return _prefs(path, QRELS_PREFS_COLUMNS, progress, jsg=None)


# ---------------------------------------------------------------------------------------------
# shared: documents of a run and a judgement table grouped by (query row, docno)
# ---------------------------------------------------------------------------------------------
def _word_columns(keys: np.ndarray) -> list[np.ndarray]:
    """np.lexsort keys (least significant first) ordering [M, k] byte keys as strcmp orders them."""
    return [keys[:, w] for w in range(keys.shape[1] - 1, -1, -1)]


def _starts(groups: np.ndarray) -> np.ndarray:
    """[n] bool: the first element of each run of equal values (rows of a 2-d array)."""
    change = np.ones(len(groups), dtype=bool)
    if len(groups) > 1:
        differ = groups[1:] != groups[:-1]
        change[1:] = differ.any(axis=1) if differ.ndim > 1 else differ
    return change


def judged_docs(run: Run, qids: np.ndarray, entries: np.ndarray, rows: np.ndarray,
                keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (row, document) of judgement entries (query ``rows`` into ``qids``, document
    ``keys``), numbered in (row, docno) order, and where the ranked run ``entries`` (run entries in
    ranked order) has them: (id of each judgement entry, row of each id, position in ``entries`` of
    each id's document, -1 where not retrieved). Only the judgements are sorted; the run is searched
    by its pair hashes."""
    order = _row_order(rows, keys)
    rows, keys = rows[order], keys[order]
    head = np.ones(len(rows), dtype=bool)
    head[1:] = (rows[1:] != rows[:-1]) | (keys[1:] != keys[:-1]).any(axis=1)
    ids = np.empty(len(rows), dtype=np.int32)
    ids[order] = np.cumsum(head, dtype=np.int32) - 1
    del order
    row_of, keys = rows[head], keys[head]
    found = lookup(run, run_codes(run, qids)[row_of], keys)
    dtype = np.int32 if len(run) < (1 << 31) else np.int64  # run-long: int32 where it holds
    position_of = np.full(len(run), -1, dtype=dtype)
    for start in range(0, len(entries), ENTRY_CHUNK):  # (no run-long range of positions)
        part = entries[start : start + ENTRY_CHUNK]
        position_of[part] = np.arange(start, start + len(part), dtype=dtype)
    position = np.where(found >= 0, position_of[found], -1)
    return ids, row_of, position


def _row_order(rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """An order of entries by (row, docno): the keys sorted first (equal keys in any order: one document),
    then a stable sort of the rows, a radix sort when they fit 16 bits."""
    order = np.argsort(keys[:, 0]) if keys.shape[1] == 1 else np.lexsort(_word_columns(keys))
    return order[np.argsort(_radix(rows[order]), kind="stable")]


def _position_in_group(groups: np.ndarray) -> np.ndarray:
    """0-based position of each element within its run of equal (sorted) ``groups``."""
    dtype = np.int32 if len(groups) < (1 << 31) else np.int64  # as long as the table: int32
    head = np.flatnonzero(_starts(groups)).astype(dtype)
    return np.arange(len(groups), dtype=dtype) - np.repeat(head, np.diff(np.append(head, len(groups))))


def _ranked_run(run: Run, run_rows: np.ndarray, max_docs: int | None, docno_ascending: bool,
                ranks: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """(run entries of evaluated queries in ranked order, their 0-based ranks, None unless ``ranks`` or
    ``max_docs``): score descending, equal scores by docno ascending (trec_eval's prefs order) or
    descending; ``-M`` applied."""
    # the file's order, usually by query and score already: the sort is of tied scores only
    entries = docid_descending(grouped_order(run.query_index, run.score), run.query_index, run.score, run.doc_key,
                                descending=not docno_ascending)
    entries = entries[run_rows[entries] >= 0]
    if max_docs is None and not ranks:
        return entries, None
    rank = _position_in_group(run_rows[entries])
    if max_docs is not None:
        keep = rank < max_docs
        entries, rank = entries[keep], rank[keep]
    return entries, rank


# ---------------------------------------------------------------------------------------------
# preference counts
# ---------------------------------------------------------------------------------------------
@dataclass
class _Counts:
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
    pair_sums: tuple | None = None


def _docid_ranks(run: Run, prefs: Prefs, complete: bool, max_docs: int | None):
    """trec_eval's docid ranks: each judged document of a query gets 0 .. njr - 1 if retrieved (in rank
    order), njr .. nj - 1 if not (in docno order). Returns (qids, prefs entries evaluated, their rows,
    their docid ranks, njr [Q], nj [Q])."""
    qids, run_rows, prefs_rows = evaluated_rows(run, prefs, complete)
    size = len(qids)
    entries, _ = _ranked_run(run, run_rows, max_docs, docno_ascending=True, ranks=False)
    del run_rows  # each of the run's per-entry arrays is as large as the judgements' here: freed early
    # int32: the entries' arrays, each as long as the judgements, are what the counting holds
    judged_entries = np.flatnonzero(prefs_rows >= 0).astype(np.int32)
    judged_rows = prefs_rows[judged_entries].astype(np.int32)
    del prefs_rows
    judged_group, group_row, position = judged_docs(run, qids, entries, judged_rows, prefs.doc_key[judged_entries])
    docid = np.full(len(group_row), -1, dtype=np.int32)
    # the retrieved ones in ranked order (by query, then rank): their positions in the ranking, sorted
    retrieved = position >= 0
    hit_at = np.full(len(entries), -1, dtype=np.int64 if len(group_row) >= (1 << 31) else np.int32)
    hit_at[position[retrieved]] = np.flatnonzero(retrieved)
    hits = hit_at[hit_at >= 0]
    del hit_at
    docid[hits] = _position_in_group(group_row[hits])
    njr = np.bincount(group_row[hits], minlength=size)
    missed = np.flatnonzero(~retrieved)  # (row, docno) order already
    docid[missed] = njr[group_row[missed]] + _position_in_group(group_row[missed])
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


def _counts(run: Run, prefs: Prefs, complete: bool, max_docs: int | None) -> _Counts:
    qids, entries, rows, docid, njr, nj = _docid_ranks(run, prefs, complete, max_docs)
    rel = prefs.rel[entries]
    # trec_eval's order: jg, jsg, rel_level descending, docid rank; as small integer codes, each
    # sorted by a radix sort (16 bits) where they fit. The codes are of the whole table, in (query,
    # strcmp) order, the order of the evaluated rows too: no copy of the byte keys is made
    jg_code = _block_codes(prefs.query_index, prefs.jg_key)[entries]
    jsg_code = _block_codes(prefs.query_index, prefs.jg_key, prefs.jsg_key)[entries]
    levels = np.sort(rel)
    levels = levels[_starts(levels)]
    descending = len(levels) - 1 - np.searchsorted(levels, rel)
    order = np.lexsort([_radix(docid), _radix(descending), _radix(jsg_code)])
    del descending
    rows, docid, rel, jg_code, jsg_code = rows[order], docid[order], rel[order], jg_code[order], jsg_code[order]
    source = entries[order]  # each sorted entry's place in the table: its line and docno for errors
    del entries, order
    jg_head = _starts(jg_code)
    jsg_head = _starts(jsg_code)
    ec_head = jsg_head | _starts(rel)
    del jg_code, jsg_code
    jg = np.cumsum(jg_head, dtype=np.int32) - 1
    num_jgs = int(jg_head.sum())
    jg_start = np.flatnonzero(jg_head)
    jg_end = np.append(jg_start[1:], len(rows))
    jg_row = rows[jg_start]
    n_entry = njr.astype(np.int32)[rows]
    subgroups = np.bincount(jg[jsg_head], minlength=num_jgs)
    ec_jg = subgroups[jg] == 1  # one sub-group: equivalence classes of rel_level

    out = {name: np.zeros(num_jgs, dtype=np.int64) for name in (
        "ful_ret", "poss_ret", "ful_imp", "poss_imp", "notoccur", "num_rel", "num_nonrel", "num_rel_ret",
        "num_nonrel_ret", "recalc_ful", "recalc_poss", "recalc_ret_ful", "recalc_ret_poss")}

    # ---- equivalence-class JGs: every entry against every entry of a lower class of its JG
    ec = np.cumsum(ec_head, dtype=np.int32) - 1
    ec_start = np.flatnonzero(ec_head)
    big = int(nj.max(initial=0)) + 1
    last_ec = ec[jg_end - 1]  # each JG's last class (used for the equivalence-class JGs)
    _count_ec(out, jg, ec, ec_start, ec_jg, last_ec, docid, n_entry, num_jgs, big, (prefs, source, rel, rows, qids))
    # masks over all entries, not an index array of the equivalence-class ones (as long as the table)
    relevant = ec_jg & (rel > 0)
    retrieved = ec_jg & (docid < n_entry)
    for name, mask in (("num_rel", relevant), ("num_nonrel", ec_jg & ~relevant), ("num_rel_ret", relevant & retrieved),
                       ("num_nonrel_ret", retrieved & ~relevant)):
        out[name] += np.bincount(jg[mask], minlength=num_jgs)
    del relevant, retrieved
    _recalc_ec(out, jg, ec, ec_jg, last_ec, docid, n_entry, num_jgs, big)
    # the document pairs, for prefs_pair: counted from the areas in a query of one equivalence-class JG
    # without a repeated document (each pair once, its ratio 1 or 0); enumerated in the others
    repeated = np.zeros(num_jgs, dtype=bool)
    repeated[jg[1:][(ec[1:] == ec[:-1]) & (docid[1:] == docid[:-1])]] = True
    simple = np.bincount(jg_row, minlength=len(qids)) == 1
    simple[jg_row[repeated | (subgroups > 1)]] = False
    listed = np.flatnonzero(ec_jg & ~simple[rows])
    heads = ec_head[listed]
    cls_jg = jg[listed[heads]]
    pair = {"pair_row": rows[listed], "pair_doc": docid[listed], "pair_cls": np.cumsum(heads, dtype=np.int32) - 1,
            "cls_end": np.searchsorted(cls_jg, cls_jg, "right"), "cls_row": rows[listed[heads]]}
    del listed, heads, cls_jg

    # ---- partial-order JGs (several sub-groups): transitive closure of stacked matrices, batched by size
    partial = np.flatnonzero(subgroups > 1)

    def error(k: int) -> None:
        _partial_order_error(int(jg_start[k]), int(jg_end[k]), docid, rel, jsg_head, prefs, source, str(qids[jg_row[k]]))

    po_jg, po_a, po_b = _partial_orders(out, partial, jg, jg_start, jg_end, ec_head, jsg_head, docid, rel, n_entry,
                                        error)
    for name, mask in zip(("ful_ret", "poss_ret", "ful_imp", "poss_imp", "notoccur"),
                          _areas(po_a, po_b, njr[jg_row[po_jg]]), strict=True):
        out[name] += np.bincount(po_jg[mask], minlength=num_jgs)
    out["poss_ret"] += out["ful_ret"]
    out["poss_imp"] += out["ful_imp"]
    return _Counts(qids=qids, jg_row=jg_row, **out, **{key: value.astype(np.int32, copy=False) for key, value in pair.items()},
                   po_row=jg_row[po_jg].astype(np.int32), po_a=po_a, po_b=po_b,
                   njr=njr, nj=nj, simple=simple)


def _block_codes(rows: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """[M] the rank of each entry's (row, keys...) among the distinct ones, in (row, strcmp) order:
    files list a group's entries together, so only the first entry of each run of equal values is sorted."""
    change = np.ones(len(rows), dtype=bool)
    change[1:] = rows[1:] != rows[:-1]
    for key in keys:
        change[1:] |= (key[1:] != key[:-1]).any(axis=1)
    heads = np.flatnonzero(change)
    head_keys = [key[heads] for key in keys]
    order = np.lexsort([column for key in reversed(head_keys) for column in _word_columns(key)] + [rows[heads]])
    distinct = _starts(np.column_stack([rows[heads][order].astype(np.uint64)] + [key[order] for key in head_keys]))
    code = np.empty(len(heads), dtype=np.int32)
    code[order] = np.cumsum(distinct) - 1
    return np.repeat(code, np.diff(np.append(heads, len(rows))))


def _radix(values: np.ndarray) -> np.ndarray:
    """Non-negative integers as uint16 where they fit: numpy's stable sort of them is a radix sort."""
    return values.astype(np.uint16) if len(values) and values.max() < (1 << 16) else values


def _text(prefs: Prefs, source: np.ndarray, i: int) -> str:
    return str(decode_keys(prefs.doc_key[source[[i]]])[0])


# entries whose temporaries (some fifteen int64 arrays, 2 MB) are computed at once when counting classes
ENTRY_CHUNK = 1 << 14


def _count_ec(out: dict, jg: np.ndarray, ec: np.ndarray, ec_start: np.ndarray, ec_jg: np.ndarray, last_ec: np.ndarray,
              docid: np.ndarray, n: np.ndarray, num_jgs: int, big: int, where: tuple) -> None:
    """The preferences of the equivalence-class JGs, counted by area without enumerating them: entry a
    against each lower class e of its JG (a loop over class distance), with ``searchsorted`` on the
    (class, docid) keys: how many of e's documents rank before a, and how many are retrieved."""
    if not ec_jg.any():
        return
    keys = ec.astype(np.int64) * big + docid  # sorted: classes in order, docids ascending within each
    ec_end = np.append(ec_start[1:], len(keys))
    first_error = None  # (distance, entry, its other entry): the one the loop over distances met first
    # chunks of entries, each against its lower classes: the temporaries stay the chunk's size (the
    # counts are integers, their order of summation does not matter)
    for chunk in range(0, len(ec_jg), ENTRY_CHUNK):
        part = chunk + np.flatnonzero(ec_jg[chunk:chunk + ENTRY_CHUNK])
        a_ec, a_jg, x, nn = ec[part].astype(np.int64), jg[part], docid[part], n[part]
        a_ret = x < nn
        distance = 1
        while True:
            live = np.flatnonzero(a_ec + distance <= last_ec[a_jg])
            if not live.size:
                break
            e = a_ec[live] + distance
            base = e * big
            size = ec_end[e] - ec_start[e]
            below = np.searchsorted(keys, base + x[live]) - ec_start[e]
            equal = np.searchsorted(keys, base + x[live], "right") - ec_start[e] - below
            if equal.any():
                i = np.flatnonzero(equal)[0]
                found = (distance, int(part[live[i]]), int(ec_start[e[i]] + below[i]))
                first_error = found if first_error is None else min(first_error, found)
            ret = np.minimum(np.searchsorted(keys, base + nn[live]) - ec_start[e], size)
            k, r = a_jg[live], a_ret[live]
            for name, count in (("ful_ret", np.where(r, ret - below, 0)), ("poss_ret", np.where(r, below, 0)),
                                ("ful_imp", np.where(r, size - ret, 0)), ("poss_imp", np.where(r, 0, ret)),
                                ("notoccur", np.where(r, 0, size - ret))):
                out[name] += np.bincount(k, weights=count, minlength=num_jgs).astype(np.int64)
            # Rnonrel recalculation, first part: the pairs of classes other than the last
            inner = e != last_ec[k]
            out["recalc_ful"] += np.bincount(k[inner], weights=np.where(r, size - below, 0)[inner],
                                             minlength=num_jgs).astype(np.int64)
            out["recalc_poss"] += np.bincount(k[inner], weights=size[inner], minlength=num_jgs).astype(np.int64)
            out["recalc_ret_ful"] += np.bincount(k[inner], weights=np.where(r, ret - below, 0)[inner],
                                                 minlength=num_jgs).astype(np.int64)
            out["recalc_ret_poss"] += np.bincount(k[inner], weights=np.where(r, ret, 0)[inner],
                                                  minlength=num_jgs).astype(np.int64)
            distance += 1
    if first_error is not None:
        _two_levels(where, first_error[1], first_error[2])


def _two_levels(where: tuple, i: int, j: int) -> None:
    prefs, source, rel, rows, qids = where
    line = prefs.line[source]
    first, second = sorted((i, j), key=lambda e: line[e])
    raise ValueError(f"{prefs.path}:{int(line[second])}: document {_text(prefs, source, second)!r} has two "
                     f"rel_levels ({rel[first]:g} at line {int(line[first])}, {rel[second]:g}) in one judgement "
                     f"sub-group of query {str(qids[rows[first]])!r}")


def _recalc_ec(out: dict, jg: np.ndarray, ec: np.ndarray, ec_jg: np.ndarray, last_ec: np.ndarray, docid: np.ndarray,
               n: np.ndarray, num_jgs: int, big: int) -> None:
    """trec_eval's ``prefs_avgjg_Rnonrel`` recalculation of an equivalence-class JG with more
    non-relevant than relevant documents (``recalculate`` in m_prefs_avgjg_Rnonrel*.c), its second part
    (the pairs of classes other than the last are counted by :func:`_count_ec`): every entry of the JG
    (the last class's too) against the first R entries of the last class; for ``_ret`` retrieved
    entries only, R the relevant retrieved ones."""
    # every entry against the first R of the last class
    in_last = np.flatnonzero(ec_jg & (ec == last_ec[jg]))
    place = _position_in_group(jg[in_last])
    for suffix, limit in (("", out["num_rel"]), ("_ret", out["num_rel_ret"])):
        chosen = in_last[place < limit[jg[in_last]]]
        if suffix:
            chosen = chosen[docid[chosen] < n[chosen]]
        keys = jg[chosen].astype(np.int64) * big + docid[chosen]  # sorted: by JG, then docid within the class
        entries = np.zeros(num_jgs, dtype=np.int64)
        for chunk in range(0, len(ec_jg), ENTRY_CHUNK):  # bounded temporaries
            x = chunk + np.flatnonzero(ec_jg[chunk:chunk + ENTRY_CHUNK])
            retrieved = docid[x] < n[x]
            if suffix:
                x, retrieved = x[retrieved], retrieved[retrieved]
            k = jg[x].astype(np.int64)
            after = np.searchsorted(keys, (k + 1) * big) - np.searchsorted(keys, k * big + docid[x], "right")
            out[f"recalc{suffix}_ful"] += np.bincount(k, weights=np.where(retrieved, after, 0),
                                                      minlength=num_jgs).astype(np.int64)
            entries += np.bincount(k, minlength=num_jgs)
        out[f"recalc{suffix}_poss"] += entries * np.bincount(jg[chosen], minlength=num_jgs)


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenated index ranges ``starts[i] .. ends[i] - 1``."""
    lengths = ends - starts
    total = int(lengths.sum())
    return np.arange(total) - np.repeat(np.cumsum(lengths) - lengths - starts, lengths)


def _size_batches(size: np.ndarray, cost: np.ndarray, budget: int) -> list[np.ndarray]:
    """Batches of the items (indices into ``size``): items of one size class (``size`` rounded up to a
    power of two) together, in their order, about ``budget`` padded cells (``cost`` of the class's
    largest item) a batch; an item over the budget is a batch alone."""
    bucket = np.ceil(np.log2(np.maximum(size, 1))).astype(np.int64)
    order = np.argsort(bucket, kind="stable")
    batches = []
    for cls in np.flatnonzero(np.bincount(bucket)):  # (not np.unique: it imports numpy.ma)
        items = order[bucket[order] == cls]
        per = max(1, budget // max(int(cost[items].max()), 1))
        batches += [items[i:i + per] for i in range(0, len(items), per)]
    return batches


def _lower_products(slot: np.ndarray, doc: np.ndarray, cls: np.ndarray, cls_end: np.ndarray, batch: int, n: int,
                    k: int) -> np.ndarray:
    """[batch, n, n] int32: entry (b, i, j) the number of pairs of entries (x, y) of block b with
    document i of x, j of y, and y in a later class than x's but before ``cls_end`` of x's class.
    Entries: ``slot`` (block), ``doc`` (< n), ``cls`` (block-local class < k); ``cls_end`` [batch, k]
    (<= k: the block-local end of each class's segment, k for padding)."""
    flat = (slot * n + doc) * (k + 1) + cls
    members = np.bincount(flat, minlength=batch * n * (k + 1)).astype(np.int32).reshape(batch, n, k + 1)
    del flat
    after = members[:, :, ::-1].cumsum(axis=2, dtype=np.int32)[:, :, ::-1]  # after[.., c]: entries of classes >= c
    following = np.minimum(np.arange(1, k + 1), cls_end)[:, None, :]
    lower = np.take_along_axis(after, following, axis=2) - np.take_along_axis(after, cls_end[:, None, :], axis=2)
    del after
    # einsum's own loop, not BLAS: these are thin products, and BLAS threads contend on shared cores
    return np.einsum("bic,bcj->bij", members[:, :, :k], np.ascontiguousarray(lower.transpose(0, 2, 1)))


# cells (documents x documents of a block, padded) of the matrices built at once for partial orders
# and for prefs_pair
CELL_BUDGET = 1 << 19


def _partial_orders(out: dict, partial: np.ndarray, jg: np.ndarray, jg_start: np.ndarray, jg_end: np.ndarray,
                    ec_head: np.ndarray, jsg_head: np.ndarray, docid: np.ndarray, rel: np.ndarray,
                    n_entry: np.ndarray, error: Callable[[int], None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The JGs ``partial`` (several sub-groups), all at once: each sub-group's order (a document with a
    higher level preferred), closed under transitivity by repeated boolean matrix products on the JGs'
    stacked document x document matrices (batched by size); fills their counts in ``out``. Returns
    their preferences (JG, preferred docid rank, other docid rank), in JG order; ``error(k)`` raises
    for the first JG ``k`` with a document of levels 0 and non-0, or a preference both ways."""
    empty = np.zeros(0, dtype=np.int32)
    if not partial.size:
        return empty.astype(np.int64), empty, empty
    num_jgs = len(out["num_rel"])
    entry = _ranges(jg_start[partial], jg_end[partial])
    k = jg[entry]
    # the documents of each JG: in (JG, docid) order; each keeps its last entry's level
    order = np.lexsort((entry, docid[entry], k))
    doc_head = _starts(np.column_stack([k[order], docid[entry[order]]]))
    uid = np.empty(len(entry), dtype=np.int64)
    uid[order] = np.cumsum(doc_head) - 1
    u_last = entry[order][np.append(np.flatnonzero(doc_head)[1:] - 1, len(order) - 1)]
    u_doc, u_level, u_jg = docid[u_last], rel[u_last], jg[u_last]
    num_docs = len(u_doc)
    positive = np.bincount(uid, weights=rel[entry] > 0, minlength=num_docs) > 0
    zero = np.bincount(uid, weights=rel[entry] == 0, minlength=num_docs) > 0
    bad = np.zeros(num_jgs, dtype=bool)
    bad[u_jg[positive & zero]] = True
    u_start = np.searchsorted(u_jg, partial)
    size = np.diff(np.append(u_start, num_docs))
    relevant, nonrel = u_level > 0, u_level == 0
    retrieved = u_doc < n_entry[u_last]
    for name, mask in (("num_rel", relevant), ("num_nonrel", nonrel), ("num_rel_ret", relevant & retrieved),
                       ("num_nonrel_ret", nonrel & retrieved)):
        out[name] += np.bincount(u_jg[mask], minlength=num_jgs)
    # Rnonrel recalculation: non-relevant documents after the first R (in docid order) are dropped
    seen = np.cumsum(nonrel)
    seen -= np.repeat(seen[u_start] - nonrel[u_start], size)
    dropped = nonrel & (seen > out["num_rel"][u_jg])
    # classes (sub-group, level) of each JG, numbered within it; a class's segment ends with its sub-group
    cls_id = np.cumsum(ec_head) - 1
    jsg_id = np.cumsum(jsg_head) - 1
    jsg_first_cls = cls_id[jsg_head]
    first_cls = cls_id[jg_start[partial]]
    classes = cls_id[jg_end[partial] - 1] + 1 - first_cls
    p_of = np.zeros(num_jgs, dtype=np.int64)
    p_of[partial] = np.arange(len(partial))
    heads = entry[ec_head[entry]]  # each class's first entry
    head_p = p_of[jg[heads]]
    next_jsg = jsg_id[heads] + 1
    seg_end = np.where(next_jsg < len(jsg_first_cls), jsg_first_cls[np.minimum(next_jsg, len(jsg_first_cls) - 1)],
                       cls_id[-1] + 1)
    head_local = cls_id[heads] - first_cls[head_p]
    seg_end_local = np.minimum(seg_end - first_cls[head_p], classes[head_p])
    pairs = []
    for items in _size_batches(size, np.maximum(size, classes) * size, CELL_BUDGET):
        batch, n, kk = len(items), int(size[items].max()), int(classes[items].max())
        slot_of = np.full(len(partial), -1, dtype=np.int64)
        slot_of[items] = np.arange(batch)
        sel = np.flatnonzero(slot_of[p_of[k]] >= 0)
        slot = slot_of[p_of[k[sel]]]
        local_doc = uid[sel] - u_start[p_of[k[sel]]]
        local_cls = cls_id[entry[sel]] - first_cls[p_of[k[sel]]]
        ends = np.full((batch, kk), kk, dtype=np.int64)
        hsel = np.flatnonzero(slot_of[head_p] >= 0)
        ends[slot_of[head_p[hsel]], head_local[hsel]] = seg_end_local[hsel]
        prefer = _lower_products(slot, local_doc, local_cls, ends, batch, n, kk) > 0
        del sel, slot, local_doc, local_cls, ends
        valid = np.arange(n)[None, :] < size[items][:, None]
        closure = prefer
        closure[:, np.arange(n), np.arange(n)] = valid
        while True:
            f = closure.astype(np.float32)
            step = (f @ f) > 0
            del f
            if np.array_equal(step, closure):
                break
            closure = step
        closure[:, np.arange(n), np.arange(n)] = False
        bad[partial[items[(closure & closure.transpose(0, 2, 1)).any(axis=(1, 2))]]] = True
        g, i, j = np.nonzero(closure)
        del closure, step, prefer
        base = u_start[items[g]]
        pairs.append((items[g], base + i, base + j))
    if bad.any():
        error(int(np.flatnonzero(bad)[0]))
    p, a, b = (np.concatenate(x) for x in zip(*pairs, strict=True))
    order = np.argsort(p, kind="stable")
    p, a, b = p[order], a[order], b[order]
    po_jg = partial[p]
    kept = ~dropped[a] & ~dropped[b]
    ka, kb = u_doc[a[kept]], u_doc[b[kept]]
    n_pair = n_entry[u_last[a[kept]]]
    kjg = po_jg[kept]
    out["recalc_ful"] += np.bincount(kjg[(ka < kb) & (ka < n_pair)], minlength=num_jgs)
    out["recalc_poss"] += np.bincount(kjg, minlength=num_jgs)
    both = (ka < n_pair) & (kb < n_pair)
    out["recalc_ret_ful"] += np.bincount(kjg[both & (ka < kb)], minlength=num_jgs)
    out["recalc_ret_poss"] += np.bincount(kjg[both], minlength=num_jgs)
    return po_jg, u_doc[a].astype(np.int32), u_doc[b].astype(np.int32)


def _partial_order_error(start: int, end: int, docid: np.ndarray, rel: np.ndarray, jsg_head: np.ndarray,
                         prefs: Prefs, source: np.ndarray, qid: str) -> None:
    """Raises the error of the JG of entries ``start .. end - 1`` (several sub-groups): a document with
    rel_levels 0 and non-0, or two documents each preferred to the other (its closure recomputed alone)."""
    line = prefs.line[source]
    docs, levels = docid[start:end], rel[start:end]
    subgroup = np.cumsum(jsg_head[start:end])
    unique, local = np.unique(docs, return_inverse=True)
    size = len(unique)
    positive = np.zeros(size, dtype=bool)
    positive[local[levels > 0]] = True
    zero = np.zeros(size, dtype=bool)
    zero[local[levels == 0]] = True
    clash = np.flatnonzero(positive[local] & zero[local])
    if clash.size:
        j = start + int(clash[-1])
        raise ValueError(f"{prefs.path}:{int(line[j])}: document {_text(prefs, source, j)!r} has both 0 and "
                         f"non-0 rel_levels in one judgement group of query {qid!r}")
    prefer = np.zeros((size, size), dtype=bool)
    i, j = np.nonzero((subgroup[:, None] == subgroup[None, :]) & (levels[:, None] > levels[None, :]))
    prefer[local[i], local[j]] = True
    closure = prefer | np.eye(size, dtype=bool)
    while True:
        step = (closure.astype(np.float32) @ closure.astype(np.float32)) > 0
        if (step == closure).all():
            break
        closure = step
    np.fill_diagonal(closure, False)
    conflict = np.argwhere(closure & closure.T)
    first = start + int(np.flatnonzero(local == conflict[0, 0])[0])
    second = start + int(np.flatnonzero(local == conflict[0, 1])[0])
    raise ValueError(f"{prefs.path}:{int(line[first])}: inconsistent preferences in a judgement group of query "
                     f"{qid!r}: documents {_text(prefs, source, first)!r} and "
                     f"{_text(prefs, source, second)!r} (line {int(line[second])}) are each preferred, "
                     f"through its sub-groups, to the other")


# ---------------------------------------------------------------------------------------------
# measures
# ---------------------------------------------------------------------------------------------
def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    out = np.zeros(len(denominator))
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _per_jg_mean(counts: _Counts, values: np.ndarray, size: int) -> np.ndarray:
    """trec_eval's average over JGs: the sum in JG order, kept when > 0 (NaN too is dropped)."""
    total = np.bincount(counts.jg_row, weights=values, minlength=size)
    jgs = np.bincount(counts.jg_row, minlength=size)
    with np.errstate(invalid="ignore"):
        return np.where(total > 0, total / np.maximum(jgs, 1), 0.0)


def _pairs(counts: _Counts, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query, for ``prefs_pair``: (sum of ratios of pairs both retrieved, sum of ratios of pairs with
    one retrieved, [Q, 3] pair counts of the three kinds), summed in trec_eval's order.

    A query of one JG of classes without a repeated document has each pair once, its ratio 1 or 0: its
    sums are its area counts. The others' pairs are counted in a judged x judged matrix per query, as
    trec_eval does, queries of one size class at a time (:func:`_size_batches`): the equivalence
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
    for rows in _size_batches(nj, np.maximum(nj, classes) * nj, CELL_BUDGET):
        _pair_batch(c, listed[rows], entry_start, cls_start, po_start, both, one, kinds)
    simple = c.simple
    per_query = {key: np.bincount(c.jg_row, weights=getattr(c, key), minlength=size)
                 for key in ("ful_ret", "poss_ret", "ful_imp", "poss_imp", "notoccur")}
    both = np.where(simple, per_query["ful_ret"], both)
    one = np.where(simple, per_query["ful_ret"] + per_query["ful_imp"], one)
    kinds[simple] = np.column_stack([per_query["poss_ret"], per_query["poss_imp"], per_query["notoccur"]])[simple]
    return both, one, kinds


def _pair_batch(c: _Counts, rows: np.ndarray, entry_start: np.ndarray, cls_start: np.ndarray, po_start: np.ndarray,
                both: np.ndarray, one: np.ndarray, kinds: np.ndarray) -> None:
    """The prefs_pair sums of the queries ``rows`` (not simple), written into ``both``, ``one`` and
    ``kinds``: count[i, j], the times document i is preferred to j over the query's JGs, in a padded
    [queries, n, n] stack; each pair i < j preferred either way has the ratio count[i, j] / (count[i, j]
    + count[j, i]), summed in (i, j) order, the retrieved pairs first, then the implied ones."""
    batch = len(rows)
    n, k = int(c.nj[rows].max()), int((cls_start[rows + 1] - cls_start[rows]).max())
    entry = _ranges(entry_start[rows], entry_start[rows + 1])
    slot = np.repeat(np.arange(batch), entry_start[rows + 1] - entry_start[rows])
    first = cls_start[rows]
    local_cls = c.pair_cls[entry] - first[slot]
    cls = _ranges(cls_start[rows], cls_start[rows + 1])
    cls_slot = np.repeat(np.arange(batch), cls_start[rows + 1] - cls_start[rows])
    ends = np.full((batch, k), k, dtype=np.int64)
    ends[cls_slot, cls - first[cls_slot]] = c.cls_end[cls] - first[cls_slot]
    count = _lower_products(slot, c.pair_doc[entry], local_cls, ends, batch, n, k)
    del entry, slot, local_cls, cls, cls_slot, ends
    po = _ranges(po_start[rows], po_start[rows + 1])
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


def _values(counts: _Counts, name: str) -> np.ndarray:
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


def evaluate_prefs(run: Run, prefs: Prefs, measures: Sequence[PrefsMeasure], *, complete: bool = False,
                   max_docs: int | None = None) -> Evaluation:
    """trec_eval's values of the preference ``measures`` (:func:`prefs_measures`).

    Args:
        run: from :func:`torchrec_eval.trec.read_run`.
        prefs: from :func:`read_prefs` or :func:`read_qrels_prefs`.
        measures: what to compute, in output order.
        complete: evaluate every judged query, those missing from the run as empty (trec_eval ``-c``).
        max_docs: keep the first ``max_docs`` documents of each ranking (trec_eval ``-M``).

    Raises:
        ValueError: ``"FILE:LINE: ..."`` for a document with two rel_levels in one sub-group (or 0 and
            non-0 in one JG), and for inconsistent preferences within a JG.
    """
    counts = _counts(run, prefs, complete, max_docs)
    size = len(counts.qids)
    result = Evaluation(counts.qids, list(measures))
    for measure in measures:
        if measure.kind == "runid":
            result.summary[measure.name] = run.tag
        elif measure.kind == "num_q":
            result.summary[measure.name] = size
        else:
            values = _values(counts, measure.name)
            result.per_query[measure.name] = values
            if measure.kind == "long":
                result.summary[measure.name] = int(values.sum())
            else:
                result.summary[measure.name] = float(np.cumsum(values)[-1] / size) if size else 0.0
    return result

