"""Which run entry each judgement names: (query, document) pairs of one table looked up in another's
:class:`~torchrec_eval.trec.keys.PairIndex` by hash, each candidate checked word by word."""

from __future__ import annotations

import numpy as np

from torchrec_eval.trec.keys import LOOKUP_CHUNK, PairIndex, pad_words
from torchrec_eval.trec.parse import index_dtype, translate_long
from torchrec_eval.trec.tables import Qrels, Run, Table


def _str_keys(values: np.ndarray) -> np.ndarray:
    """[n, k] uint64 big-endian keys of strings (as :mod:`torchrec_eval.trec.parse` reads them)."""
    raw = np.char.encode(np.asarray(values, dtype=str), "utf-8") if len(values) else np.zeros(0, dtype="S8")
    width = 8 * max(1, (raw.dtype.itemsize + 7) // 8)
    return np.ascontiguousarray(raw.astype(f"S{width}")).view(">u8").reshape(len(raw), -1).astype(np.uint64)


def _pair_index(table: Table) -> PairIndex:
    """The table's pair index (built here for a table made by hand)."""
    if table.pairs is None:
        table.pairs = PairIndex.of(_str_keys(table.queries), table.query_index, table.doc_key)
    return table.pairs


def judging_entries(run: Run, qrels: Qrels) -> np.ndarray:
    """[M] the qrels entry judging each run entry (same query and document), -1 where none does."""
    found = lookup(run, run_codes(run, qrels.queries)[qrels.query_index], qrels.doc_key)
    judged = np.flatnonzero(found >= 0)
    entry_of_run = np.full(len(run), -1, dtype=np.int64)
    entry_of_run[found[judged]] = judged
    return entry_of_run


def run_codes(run: Run, queries: np.ndarray) -> np.ndarray:
    """The position of each of ``queries`` in ``run.queries``, -1 where the run has no such query."""
    if not len(run.queries):
        return np.full(len(queries), -1, dtype=np.int64)
    code = np.searchsorted(run.queries, queries).clip(max=len(run.queries) - 1)
    return np.where(run.queries[code] == queries, code, -1)


def lookup(run: Run, codes: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """[n] the run entry of each (query code into ``run.queries``, document key) pair, -1 where the run
    has none: its hash looked up in the run's sorted pair hashes, each candidate checked exactly (long
    ids, :class:`~torchrec_eval.trec.parse.LongKeys`, first numbered as the run numbers them)."""
    index = _pair_index(run)
    found = np.full(len(codes), -1, dtype=index_dtype(len(run)))
    keys = translate_long(keys, run.doc_key)
    words = max(run.doc_key.shape[1], keys.shape[1])
    run_keys, keys = pad_words(np.asarray(run.doc_key), words), pad_words(keys, words)
    for start in range(0, len(codes), LOOKUP_CHUNK):  # chunks: the temporaries stay small
        wanted = start + np.flatnonzero(codes[start : start + LOOKUP_CHUNK] >= 0)
        prefix = index.prefix_of(keys[wanted], codes[wanted])
        position = np.searchsorted(index.sorted, prefix << index.shift)
        pending = np.arange(len(wanted))
        while len(pending):  # each round tries the next entry of the run with the same hash prefix
            inside = position < len(index.sorted)
            pending, position = pending[inside], position[inside]
            candidate = index.prefix(position) == prefix[pending]
            pending, position = pending[candidate], position[candidate]
            entry, want = index.entry(position), wanted[pending]
            equal = (run.query_index[entry] == codes[want]) & (run_keys[entry] == keys[want]).all(axis=1)
            found[want[equal]] = entry[equal]
            pending, position = pending[~equal], position[~equal] + 1
    return found
