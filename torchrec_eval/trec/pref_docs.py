"""The documents of a run and of a judgement table (prefs, qrels_jg) grouped by (query row, docno):
shared by trec_eval's preference measures and its judgement-group measures."""

from __future__ import annotations

from typing import Literal, overload

import numpy as np
from numpy.typing import NDArray

from torchrec_eval.trec.matching import lookup, run_codes
from torchrec_eval.trec.order import docid_descending, grouped_order
from torchrec_eval.trec.parse import decode_keys, index_dtype
from torchrec_eval.trec.tables import Prefs, Run

JGCounts = dict[str, NDArray[np.int64]]  # the preference counters of each JG, by name (prefs_counts)


def word_columns(keys: np.ndarray) -> list[np.ndarray]:
    """np.lexsort keys (least significant first) ordering [M, k] byte keys as strcmp orders them."""
    return [keys[:, w] for w in range(keys.shape[1] - 1, -1, -1)]


def group_starts(groups: np.ndarray) -> np.ndarray:
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
    dtype = index_dtype(len(run))  # run-long: int32 where it holds
    position_of = np.full(len(run), -1, dtype=dtype)
    for start in range(0, len(entries), ENTRY_CHUNK):  # (no run-long range of positions)
        part = entries[start : start + ENTRY_CHUNK]
        position_of[part] = np.arange(start, start + len(part), dtype=dtype)
    position = np.where(found >= 0, position_of[found], -1)
    return ids, row_of, position


def _row_order(rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """An order of entries by (row, docno): the keys sorted first (equal keys in any order: one document),
    then a stable sort of the rows, a radix sort when they fit 16 bits."""
    order = np.argsort(keys[:, 0]) if keys.shape[1] == 1 else np.lexsort(word_columns(keys))
    return order[np.argsort(radix(rows[order]), kind="stable")]


def position_in_group(groups: np.ndarray) -> np.ndarray:
    """0-based position of each element within its run of equal (sorted) ``groups``."""
    dtype = index_dtype(len(groups))  # as long as the table
    head = np.flatnonzero(group_starts(groups)).astype(dtype)
    return np.arange(len(groups), dtype=dtype) - np.repeat(head, np.diff(np.append(head, len(groups))))


@overload
def ranked_run(run: Run, run_rows: np.ndarray, max_docs: int | None, docno_ascending: bool,
               ranks: Literal[True] = True) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def ranked_run(run: Run, run_rows: np.ndarray, max_docs: int | None, docno_ascending: bool,
               ranks: bool) -> tuple[np.ndarray, np.ndarray | None]: ...
def ranked_run(run: Run, run_rows: np.ndarray, max_docs: int | None, docno_ascending: bool,
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
    rank = position_in_group(run_rows[entries])
    if max_docs is not None:
        keep = rank < max_docs
        entries, rank = entries[keep], rank[keep]
    return entries, rank


def radix(values: np.ndarray) -> np.ndarray:
    """Non-negative integers as uint16 where they fit: numpy's stable sort of them is a radix sort."""
    return values.astype(np.uint16) if len(values) and values.max() < (1 << 16) else values


def doc_text(prefs: Prefs, source: np.ndarray, i: int) -> str:
    return str(decode_keys(prefs.doc_key[source[[i]]])[0])


# entries whose temporaries (some fifteen int64 arrays, 2 MB) are computed at once when counting classes
ENTRY_CHUNK = 1 << 14
