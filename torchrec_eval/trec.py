"""Read TREC run and qrels files and rank them, as trec_eval does, without a Python loop over lines.

* A **run** file has one line per retrieved document: ``qid Q0 docid rank score tag``. The rank
  column is ignored, as trec_eval ignores it: documents are ranked by ``score`` descending, and equal
  scores by ``docid`` descending (byte order, ``strcmp``), which is trec_eval's order. Other tie
  orders: ``ties="file"`` keeps the file's order among equal scores, ``ties="ranx"`` is the order
  ``ranx.Run`` gives them (see :func:`ranking_order`).
* A **qrels** file has one line per judged document: ``qid iter docid rel``. The ``iter`` column is
  ignored; ``rel > 0`` is relevant (or ``rel >= relevance_level`` when one is given) and is the
  document's gain; ``rel <= 0`` is judged non-relevant, and trec_eval counts ``rel < 0`` as unjudged.

Ids stay bytes: a document id is a row of uint64 words (:mod:`torchrec_eval.trec_parse`), and a run's
documents are matched with the qrels by a 64-bit hash of (query, document) checked word by word, so
no string is made per line. :func:`to_ranked` returns, for each evaluated query, ``ranked_ids`` [Q, L]
and ``target_ids`` / ``target_gains`` [Q, T], ``-1`` padded: what ``RankingMetrics.update(ranked_ids=...,
target_ids=..., target_gains=...)`` takes. :func:`rank_judgements` returns the same ranking in the
sparse form trec_eval's measures need (:class:`torchrec_eval.trec_measures.Judgements`).

A malformed line raises a ``ValueError`` that starts with ``FILE:LINE:``, as do a document listed
twice for one query (trec_eval refuses those too) and non-finite scores.

Example:
    >>> import tempfile, os
    >>> from torchrec_eval.trec import read_run, read_qrels, to_ranked
    >>> folder = tempfile.mkdtemp()
    >>> run_path, qrels_path = os.path.join(folder, "run"), os.path.join(folder, "qrels")
    >>> with open(run_path, "w") as f:
    ...     _ = f.write("q1 Q0 d1 1 0.5 sys\\nq1 Q0 d2 2 0.5 sys\\nq1 Q0 d3 3 0.9 sys\\n")
    >>> with open(qrels_path, "w") as f:
    ...     _ = f.write("q1 0 d1 2\\nq1 0 d3 0\\n")
    >>> data = to_ranked(read_run(run_path), read_qrels(qrels_path))
    >>> data.qids, data.docids[data.ranked_ids.numpy()].tolist()
    (['q1'], [['d3', 'd2', 'd1']])
    >>> data.docids[data.target_ids.numpy()].tolist(), data.target_gains.tolist()
    ([['d1']], [[2.0]])
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from torchrec_eval.trec_parse import decode_keys, line_numbers, read_columns

if TYPE_CHECKING:
    from torch import Tensor

    from torchrec_eval.trec_measures import Judgements

__all__ = ["Qrels", "Run", "TIES", "TrecRanked", "rank_judgements", "ranking_order", "read_qrels", "read_run",
           "to_ranked"]

RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")
QRELS_COLUMNS = ("qid", "iter", "docid", "rel")
TIES = ("trec", "file", "ranx")
_RANX_INSERTION_SORT = 15  # numba's quicksort sorts lists this short by insertion: stably


@dataclass
class _Table:
    path: str
    queries: np.ndarray  # the distinct query ids, sorted (numpy str array)
    query_index: np.ndarray  # [M] int32: entry -> position in ``queries``
    doc_key: np.ndarray  # [M, k] uint64: the document id's bytes as big-endian words
    lines: np.ndarray | None  # [M] int32 (int64 past 2**31 lines): 1-based line of each entry; None: i + 1
    pairs: _PairIndex | None = field(default=None, repr=False)  # (query, document) look-up

    def __len__(self) -> int:
        return len(self.query_index)

    @property
    def line(self) -> np.ndarray:
        """[M] the 1-based line of each entry in ``path``."""
        return line_numbers(self.lines, len(self))

    @property
    def qid(self) -> np.ndarray:
        """[M] query id of each entry."""
        return self.queries[self.query_index]

    @property
    def docid(self) -> np.ndarray:
        """[M] document id of each entry (decoded on demand)."""
        return decode_keys(self.doc_key)


@dataclass
class Run(_Table):
    """A TREC run: query codes into the sorted ``queries``, document keys, ``score`` [M] float64, the
    1-based ``line`` of each entry and ``tag``, the run tag of the last line (trec_eval's runid)."""

    score: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tag: str = ""


@dataclass
class Qrels(_Table):
    """TREC relevance judgements: query codes and document keys as in :class:`Run`, ``rel`` [M]
    float64 and the 1-based ``line`` of each entry."""

    rel: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _code_queries(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct query ids, their keys, [M] index into them) from [M, k] keys; files list a
    query's lines together, so only the first line of each block is decoded."""
    if not len(keys):
        return np.zeros(0, dtype=str), keys, np.zeros(0, dtype=np.int32)
    heads = np.flatnonzero(np.concatenate([[True], (keys[1:] != keys[:-1]).any(axis=1)]))
    head_keys = keys[heads]
    # distinct ids by their hash (a sort of integers), checked exactly; rows of words sort far slower
    _, representative, inverse = np.unique(_hash_words(head_keys), return_index=True, return_inverse=True)
    distinct = head_keys[representative]
    if not (distinct[inverse] == head_keys).all():  # two ids with one hash: sort the rows themselves
        distinct, inverse = np.unique(head_keys, axis=0, return_inverse=True)
    names = decode_keys(distinct)
    order = np.argsort(names, kind="stable")
    rank = np.empty(len(order), dtype=np.int32)  # int32: fewer queries than 2**31; [M] below
    rank[order] = np.arange(len(order))
    index = np.repeat(rank[inverse.reshape(-1)], np.diff(np.append(heads, len(keys))))
    return names[order], distinct[order], index


def _read(path: str | os.PathLike, columns: tuple[str, ...], what: str, value: int, progress, repeats: str = "error",
          **options):
    table = read_columns(path, columns, what, keys=(0, 2), numbers=(value,), progress=progress, **options)
    numbers = table.numbers[value]
    bad = np.flatnonzero(~np.isfinite(numbers))
    if bad.size:
        raise ValueError(f"{table.path}:{int(table.line[bad[0]])}: the {columns[value]} must be a finite number, "
                         f"got {float(numbers[bad[0]])!r}")
    queries, query_keys, query_index = _code_queries(table.keys[0])
    common = {"path": table.path, "queries": queries, "query_index": query_index, "doc_key": table.keys[2],
              "lines": table.lines}
    query_hash = _hash_words(query_keys)
    common["pairs"] = _PairIndex(query_hash, query_index, table.keys[2])
    if repeats == "last":
        keep, numbers = _last_value_first_place(common, numbers)
        if keep is not None:
            common["lines"] = table.line[keep]
            for name in ("query_index", "doc_key"):
                common[name] = common[name][keep]
            numbers = numbers[keep]
            common["pairs"] = _PairIndex(query_hash, common["query_index"], common["doc_key"])
    else:
        _refuse_repeats(common, what)
    return table, common, numbers


def read_run(path: str | os.PathLike, progress: Callable[[int], None] | None = None, repeats: str = "error") -> Run:
    """Read a TREC run file ``qid Q0 docid rank score tag`` (whitespace separated), as trec_eval 10 does:
    blank lines and lines whose first non-blank character is ``#`` are skipped, columns after the tag
    are ignored.

    Args:
        path: the file.
        progress: called with the number of bytes of each chunk read (for a progress bar).
        repeats: a document listed twice for a query: ``"error"`` (trec_eval) or ``"last"``: the last
            line wins, as ranx's ``Run.from_file`` reads it.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line with fewer than 6 columns, a score that is not a finite
            number, or (``repeats="error"``) a document listed twice for a query.
    """
    table, common, score = _read(path, RUN_COLUMNS, "run", 4, progress, repeats, comment="leading",
                                 extra_columns=True, last=(5,))
    return Run(**common, score=score, tag=table.last[5])


def read_qrels(path: str | os.PathLike, progress: Callable[[int], None] | None = None, repeats: str = "error") -> Qrels:
    """Read a TREC qrels file ``qid iter docid rel`` (whitespace separated), as trec_eval 10 does: blank
    lines and lines with ``#`` in the first column are skipped (a document id may contain ``#``).

    Args:
        path: the file.
        progress: called with the number of bytes of each chunk read (for a progress bar).
        repeats: a document judged twice for a query: ``"error"`` (trec_eval) or ``"last"`` (ranx).

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line without 4 columns, a relevance that is not a finite
            number, or (``repeats="error"``) a document judged twice for a query.
    """
    _, common, rel = _read(path, QRELS_COLUMNS, "qrels", 3, progress, repeats, comment="column0")
    return Qrels(**common, rel=rel)


# ---------------------------------------------------------------------------------------------
# (query, document) pairs: a 64-bit hash of their bytes, sorted once, checked word by word
# ---------------------------------------------------------------------------------------------
LOOKUP_CHUNK = 1 << 14  # pairs hashed or looked up at once (their temporaries: about 1 MB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place: a bijection of uint64 that spreads every input bit."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _hash_words(keys: np.ndarray, seed: np.ndarray | None = None) -> np.ndarray:
    """[M] uint64 hash of each row of [M, k] keys (ignoring trailing zero words, so that the width of
    the key matrix does not matter), chained from ``seed`` (not modified)."""
    h = np.full(len(keys), 0x9E3779B97F4A7C15, dtype=np.uint64) if seed is None else seed ^ keys[:, 0]
    if seed is None:
        h ^= keys[:, 0]
    _mix(h)
    for w in range(1, keys.shape[1]):
        word = keys[:, w]
        h = np.where(word != 0, _mix(h ^ word), h)
    return h


def _pad_words(keys: np.ndarray, words: int) -> np.ndarray:
    return keys if keys.shape[1] == words else np.pad(keys, ((0, 0), (0, words - keys.shape[1])))


class _PairIndex:
    """The (query, document) pairs of a table, sorted by hash: the hash's high bits with the entry's
    index in the low bits, so that one ``np.sort`` (no argsort) groups equal pairs and finds entries."""

    def __init__(self, query_hash: np.ndarray, query_index: np.ndarray, doc_key: np.ndarray) -> None:
        self.shift = np.uint64(max(1, int(len(query_index)).bit_length()))
        self.sorted = np.empty(len(query_index), dtype=np.uint64)
        for start in range(0, len(query_index), LOOKUP_CHUNK):  # chunks: no table-long temporaries
            part = slice(start, start + LOOKUP_CHUNK)
            hashes = _hash_words(doc_key[part], query_hash[query_index[part]])
            hashes >>= self.shift
            hashes <<= self.shift
            hashes |= np.arange(start, start + len(hashes), dtype=np.uint64)
            self.sorted[part] = hashes
        self.sorted.sort()
        self.query_hash = query_hash

    def entry(self, positions: np.ndarray) -> np.ndarray:
        return (self.sorted[positions] & ((np.uint64(1) << self.shift) - np.uint64(1))).astype(np.int64)

    def prefix(self, positions: np.ndarray) -> np.ndarray:
        return self.sorted[positions] >> self.shift

    def same_prefix(self) -> np.ndarray:
        """Positions p whose entry's hash prefix equals that of the entry at p + 1."""
        prefix = self.sorted >> self.shift
        return np.flatnonzero(prefix[1:] == prefix[:-1])


def _str_keys(values: np.ndarray) -> np.ndarray:
    """[n, k] uint64 big-endian keys of strings (as :mod:`torchrec_eval.trec_parse` reads them)."""
    raw = np.char.encode(np.asarray(values, dtype=str), "utf-8") if len(values) else np.zeros(0, dtype="S8")
    width = 8 * max(1, (raw.dtype.itemsize + 7) // 8)
    return np.ascontiguousarray(raw.astype(f"S{width}")).view(">u8").reshape(len(raw), -1).astype(np.uint64)


def _pair_index(table: _Table) -> _PairIndex:
    """The table's pair index (built here for a table made by hand)."""
    if table.pairs is None:
        table.pairs = _PairIndex(_hash_words(_str_keys(table.queries)), table.query_index, table.doc_key)
    return table.pairs


def _same_entries(table: dict) -> tuple[np.ndarray, np.ndarray]:
    """(first, second): pairs of entries of one table with the same query and document."""
    pairs, query, keys = table["pairs"], table["query_index"], table["doc_key"]
    same = pairs.same_prefix()
    if same.size and np.any(same[1:] == same[:-1] + 1):  # three equal prefixes: sort exactly instead
        order = np.lexsort([keys[:, w] for w in range(keys.shape[1] - 1, -1, -1)] + [query])
        first, second = order[:-1], order[1:]
    else:
        first, second = pairs.entry(same), pairs.entry(same + 1)
    equal = (query[first] == query[second]) & (keys[first] == keys[second]).all(axis=1)
    return first[equal], second[equal]


def _last_value_first_place(table: dict, numbers: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """A (query, document) listed more than once, read as a Python dict reads it (ranx's ``from_file``):
    the value of its last line, at the place of its first. Returns the entries to keep (None: no
    repeat) and the values."""
    first, second = _same_entries(table)
    if not first.size:
        return None, numbers
    line = line_numbers(table["lines"], len(numbers))
    early = np.where(line[first] < line[second], first, second)
    late = np.where(line[first] < line[second], second, first)
    numbers = numbers.copy()
    while np.any(numbers[early] != numbers[late]):  # a chain a < b < c: one step down it per pass
        numbers[early] = numbers[late]
    keep = np.ones(len(line), dtype=bool)
    keep[late] = False
    return keep, numbers


def _refuse_repeats(table: dict, what: str) -> None:
    first, second = _same_entries(table)
    if first.size:
        line = line_numbers(table["lines"], len(table["query_index"]))
        i = int(np.argmin(np.maximum(line[first], line[second])))
        a, b = sorted((int(first[i]), int(second[i])), key=lambda e: line[e])
        raise ValueError(f"{table['path']}:{int(line[b])}: document {str(decode_keys(table['doc_key'][[a]])[0])!r} "
                         f"is listed twice for query {str(table['queries'][table['query_index'][a]])!r} in this {what} "
                         f"(first at line {int(line[a])})")


def _match(run: Run, qrels: Qrels) -> np.ndarray:
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
    has none: its hash looked up in the run's sorted pair hashes, each candidate checked exactly."""
    index = _pair_index(run)
    found = np.full(len(codes), -1, dtype=_index_dtype(len(run)))
    words = max(run.doc_key.shape[1], keys.shape[1])
    run_keys, keys = _pad_words(run.doc_key, words), _pad_words(keys, words)
    for start in range(0, len(codes), LOOKUP_CHUNK):  # chunks: the temporaries stay small
        wanted = start + np.flatnonzero(codes[start : start + LOOKUP_CHUNK] >= 0)
        prefix = _hash_words(keys[wanted], index.query_hash[codes[wanted]]) >> index.shift
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


# ---------------------------------------------------------------------------------------------
# ranking
# ---------------------------------------------------------------------------------------------
def _index_dtype(size: int) -> type:
    """The integer type of positions into ``size`` entries: int32 where it holds them."""
    return np.int32 if size < (1 << 31) else np.int64


def _grouped(query: np.ndarray, score: np.ndarray | None) -> np.ndarray:
    """A stable order grouping the entries by query (ascending), then score descending if given."""
    if len(query) > 1:
        change = query[1:] != query[:-1]
        heads = np.flatnonzero(np.concatenate([[True], change]))
        contiguous = np.bincount(query[heads]).max() == 1  # (not np.unique: it imports numpy.ma)
        ordered = score is None or not np.any((score[1:] > score[:-1]) & ~change)
        if contiguous and ordered:  # the usual file: move whole blocks, no sort
            lengths = np.diff(np.append(heads, len(query)))
            block = np.argsort(query[heads])
            starts = heads[block]
            offsets = np.cumsum(lengths[block]) - lengths[block]
            order = np.repeat((starts - offsets).astype(_index_dtype(len(query))), lengths[block])
            order += np.arange(len(query), dtype=order.dtype)  # int32 where it holds: half the memory
            return order
    if score is None:
        return np.argsort(query, kind="stable")
    return np.lexsort((-score, query))


def _docid_descending(order: np.ndarray, query: np.ndarray, score: np.ndarray, keys: np.ndarray,
                      descending: bool = True) -> np.ndarray:
    """Reorder each run of equal (query, score) entries of ``order`` by document id, descending (or
    ascending: trec_eval's prefs order)."""
    tied = _tied_neighbours(order, query, score)
    if not tied.any():
        return order
    member = np.zeros(len(order), dtype=bool)
    member[:-1] |= tied
    member[1:] |= tied
    slots = np.flatnonzero(member)
    group = np.cumsum(np.concatenate([[True], ~tied[slots[:-1]] | (slots[1:] != slots[:-1] + 1)]))
    members = order[slots]
    words = keys[members]
    if descending:
        words = ~words
    within = np.lexsort([words[:, w] for w in range(words.shape[1] - 1, -1, -1)] + [group])
    order = order.copy()
    order[slots] = members[within]
    return order


def _tied_neighbours(order: np.ndarray, query: np.ndarray, score: np.ndarray, chunk: int = 1 << 16) -> np.ndarray:
    """[M - 1] bool: entries ``order[i]`` and ``order[i + 1]`` have one query and one score; over
    chunks of ``order``, so that no run-long copy of the queries or scores is made."""
    tied = np.zeros(max(len(order) - 1, 0), dtype=bool)
    for start in range(0, len(tied), chunk):
        here = order[start : start + chunk + 1]
        q, s = query[here], score[here]
        tied[start : start + len(here) - 1] = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    return tied


def _segment_argsort():
    """numba's np.argsort (its quicksort, what ranx's ``Run`` sorts with) over each segment."""
    from torchrec_eval.trec_ranx import segment_argsort

    return segment_argsort()


def _ranx_order(query: np.ndarray, score: np.ndarray) -> np.ndarray:
    """ranx.Run's order: per query, numba's quicksort ``argsort`` of the negated scores, taken in the
    file's order. Without numba, the file's order among equal scores (the same for queries of at most
    15 documents, where numba's quicksort is an insertion sort)."""
    grouped = _grouped(query, None)
    negated = -score[grouped]
    bounds = np.flatnonzero(np.concatenate([[True], query[grouped][1:] != query[grouped][:-1], [True]]))
    try:
        within = _segment_argsort()(negated, bounds)
    except ImportError:
        lengths = np.diff(bounds)
        segment = np.repeat(np.arange(len(lengths)), lengths)
        within = np.lexsort((negated, segment))
        long_tied = np.any((lengths[segment][1:] > _RANX_INSERTION_SORT) & (segment[1:] == segment[:-1])
                           & (negated[within][1:] == negated[within][:-1]))
        if long_tied:
            print("torchrec-eval: ranx's order of tied scores in lists of more than 15 documents needs numba "
                  "(pip install numba); equal scores keep the file's order instead", file=sys.stderr)
    return grouped[within]


def ranking_order(run: Run, ties: str = "trec") -> np.ndarray:
    """[M] the run's entries grouped by query (in ``run.queries`` order), each query's by score descending.

    ``ties``: ``"trec"`` breaks equal scores by document id descending (byte order), trec_eval's order;
    ``"file"`` keeps the file's order; ``"ranx"`` reproduces ``ranx.Run`` (``Run.from_file``,
    ``Run(dict)``): it sorts each query's documents, in the file's order, with numba's
    ``np.argsort`` of the negated scores, a quicksort that is not stable, so that order is numba's
    (computed with numba itself when it is installed, as it is with ranx).
    """
    if ties not in TIES:
        raise ValueError(f"`ties` must be one of {TIES}, got {ties!r}")
    if ties == "ranx":
        return _ranx_order(run.query_index, run.score)
    order = _grouped(run.query_index, run.score)
    if ties == "trec":
        order = _docid_descending(order, run.query_index, run.score, run.doc_key)
    return order


def _evaluated(run: Run, qrels: Qrels, complete: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(evaluated query ids, row of each run entry, row of each qrels entry; -1: not evaluated)."""
    qids = qrels.queries if complete else np.intersect1d(run.queries, qrels.queries, assume_unique=True)

    def rows(vocabulary: np.ndarray, index: np.ndarray) -> np.ndarray:
        if not len(qids):
            return np.full(len(index), -1, dtype=np.int32)
        position = np.searchsorted(qids, vocabulary).clip(max=len(qids) - 1)
        # int32 (fewer queries than 2**31): the [M] result is as long as the table
        return np.where(qids[position] == vocabulary, position, -1).astype(np.int32)[index]

    return qids, rows(run.queries, run.query_index), rows(qrels.queries, qrels.query_index)


def _ranked_entries(run: Run, run_rows: np.ndarray, ties: str, max_docs: int | None):
    """(run entries of evaluated queries in ranked order, their query rows, their 1-based ranks)."""
    order = ranking_order(run, ties)
    order = order[run_rows[order] >= 0]
    rows = run_rows[order]
    starts = np.flatnonzero(np.concatenate([[True], rows[1:] != rows[:-1]])) if len(rows) else rows
    rank = np.arange(1, len(rows) + 1) - np.repeat(starts, np.diff(np.append(starts, len(rows))))
    if max_docs is not None:  # trec_eval -M: only the first max_docs of each query
        keep = rank <= max_docs
        order, rows, rank = order[keep], rows[keep], rank[keep]
    return order, rows, rank


# ---------------------------------------------------------------------------------------------
# the two ranked forms
# ---------------------------------------------------------------------------------------------
@dataclass
class TrecRanked:
    """A run and its qrels in the ranked input form, one row per evaluated query.

    Attributes:
        qids: the evaluated query ids, in string order (row ``i`` is ``qids[i]``).
        ranked_ids: [Q, L] long, each query's retrieved documents in ranked order, -1 padded.
        target_ids: [Q, T] long, each query's relevant documents, -1 padded (T >= 1).
        target_gains: [Q, T] float64, their relevance values (0 for padding).
        run_only: query ids of the run without judgements (not evaluated).
        qrels_only: judged query ids absent from the run (not evaluated unless ``complete``).
        docids: (property) item id ``j`` is the document ``docids[j]``: the run's entries, then the
            qrels' entries.
    """

    qids: list[str]
    ranked_ids: Tensor
    target_ids: Tensor
    target_gains: Tensor
    run_only: list[str] = field(default_factory=list)
    qrels_only: list[str] = field(default_factory=list)
    _doc_keys: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.qids)

    @property
    def depth(self) -> int:
        """Length of the longest ranked list."""
        return self.ranked_ids.shape[1]

    @cached_property
    def docids(self) -> np.ndarray:
        run_keys, qrels_keys = self._doc_keys
        words = max(run_keys.shape[1], qrels_keys.shape[1])
        return decode_keys(np.concatenate([_pad_words(run_keys, words), _pad_words(qrels_keys, words)]))


def _pad_rows(rows: np.ndarray, values: np.ndarray, num_rows: int, min_width: int = 0,
              fill: float = -1) -> np.ndarray:
    """Lay ``values`` out as a [num_rows, width] matrix, row ``rows[i]``, in the given order.

    ``rows`` must be sorted (stable groups); each row keeps the order of its values.
    """
    counts = np.bincount(rows, minlength=num_rows)
    width = max(int(counts.max()) if counts.size else 0, min_width)
    starts = np.cumsum(counts) - counts
    position = np.arange(len(rows)) - starts[rows]
    out = np.full((num_rows, width), fill, dtype=values.dtype)
    out[rows, position] = values
    return out


def _relevance(qrels: Qrels, integer: bool) -> np.ndarray:
    """The qrels' relevance values, as trec_eval reads them (``atol``: the integer part) if ``integer``."""
    return np.trunc(qrels.rel) if integer else qrels.rel


def to_ranked(run: Run, qrels: Qrels, *, complete: bool = False, relevance_level: float | None = None,
              max_docs: int | None = None, ties: str = "trec", integer_relevance: bool = False) -> TrecRanked:
    """Rank a run against its qrels into per-query id tensors (the ranked input form of the metrics).

    The evaluated queries are those of the run that have judgements (trec_eval's default); with
    ``complete=True`` every judged query is evaluated, those absent from the run with an empty list
    (trec_eval ``-c``). A judged query without a relevant document keeps its row (``R = 0``): the
    metric's ``empty_target_action`` decides what it scores.

    Args:
        run, qrels: from :func:`read_run` and :func:`read_qrels`.
        complete: also evaluate judged queries missing from the run.
        relevance_level: a judgement ``>=`` this is relevant (default: ``> 0``), as trec_eval ``-l``.
        max_docs: keep only the first ``max_docs`` documents of each ranking, as trec_eval ``-M``.
        ties: the order of equal scores (:func:`ranking_order`).
        integer_relevance: read relevance values as trec_eval does, as integers (``1.5`` is ``1``).
    """
    import torch

    qids, run_rows, qrels_rows = _evaluated(run, qrels, complete)
    order, rows, _ = _ranked_entries(run, run_rows, ties, max_docs)
    rel = _relevance(qrels, integer_relevance)
    relevant = (qrels_rows >= 0) & ((rel >= relevance_level) if relevance_level is not None else (rel > 0))
    entry_of_run = _match(run, qrels)
    retrieved_as = np.full(len(qrels), -1, dtype=np.int64)
    judged = entry_of_run >= 0
    retrieved_as[entry_of_run[judged]] = np.flatnonzero(judged)
    # a relevant document is the run entry that retrieved it, else an id of its own past the run's
    target = np.where(retrieved_as >= 0, retrieved_as, len(run) + np.arange(len(qrels)))[relevant]
    target_rows = qrels_rows[relevant]
    by_row = np.argsort(target_rows, kind="stable")
    ranked = _pad_rows(rows, order, len(qids), min_width=1)
    target_ids = _pad_rows(target_rows[by_row], target[by_row], len(qids), min_width=1)
    target_gains = _pad_rows(target_rows[by_row], rel[relevant][by_row], len(qids), min_width=1, fill=0.0)
    return TrecRanked(
        qids=qids.tolist(),
        ranked_ids=torch.from_numpy(ranked),
        target_ids=torch.from_numpy(target_ids),
        target_gains=torch.from_numpy(target_gains),
        run_only=np.setdiff1d(run.queries, qrels.queries).tolist(),
        qrels_only=np.setdiff1d(qrels.queries, run.queries).tolist(),
        _doc_keys=(run.doc_key, qrels.doc_key),
    )


def rank_judgements(run: Run, qrels: Qrels, *, complete: bool = False, max_docs: int | None = None,
                    ties: str = "trec", judged_only: bool = False) -> Judgements:
    """The run ranked against its qrels as trec_eval sees it (its ``RES_RELS``, for every query at once):
    the judged documents among each query's retrieved ones, with their ranks, and every judgement of
    the evaluated queries. Relevance values are read as trec_eval reads them, as integers.

    Args: as :func:`to_ranked`, and ``judged_only``: keep only the retrieved documents with a
        judgement ``>= 0``, ranked among themselves (trec_eval ``-J``, after ``-M``).
    """
    from torchrec_eval.trec_measures import Judgements

    qids, run_rows, qrels_rows = _evaluated(run, qrels, complete)
    order = ranking_order(run, ties)
    # only the judged documents are needed, with their ranks: found in the ranked order, ranked there
    entry = _match(run, qrels)[order]
    position = np.flatnonzero(entry >= 0)
    position = position[run_rows[order[position]] >= 0]
    per_query = np.bincount(run.query_index, minlength=len(run.queries))  # ``order`` groups them in turn
    code = run.query_index[order[position]]
    hit_query = run_rows[order[position]]
    hit_rank = position - (np.cumsum(per_query) - per_query)[code] + 1
    entry = entry[position]
    retrieved = np.bincount(run_rows[run_rows >= 0], minlength=len(qids))
    if max_docs is not None:  # trec_eval -M: only the first max_docs of each query
        kept = hit_rank <= max_docs
        hit_query, hit_rank, entry = hit_query[kept], hit_rank[kept], entry[kept]
        retrieved = np.minimum(retrieved, max_docs)
    rel = _relevance(qrels, integer=True).astype(np.int64)
    hit_rel = rel[entry]
    if judged_only:
        hit_query, hit_rank, hit_rel, retrieved = _judged_only(hit_query, hit_rel, len(qids))
    judged = np.flatnonzero(qrels_rows >= 0)
    judged = judged[np.argsort(qrels_rows[judged], kind="stable")]
    return Judgements(
        qids=qids,
        num_ret=retrieved,
        hit_query=hit_query,
        hit_rank=hit_rank,
        hit_rel=hit_rel,
        judged_query=qrels_rows[judged],
        judged_rel=rel[judged],
        all_relevant=int(np.count_nonzero(rel > 0)),
        runid=run.tag,
        complete=complete,
        # -J drops trec_eval's stand-in document (unjudged) of a query missing from the run: it is then
        # a query that retrieves nothing, like one whose documents are all unjudged
        missing=~np.isin(qids, run.queries) if complete and not judged_only else None,
    )


def _judged_only(query: np.ndarray, rel: np.ndarray, num: int):
    """trec_eval -J: the judged documents (relevance >= 0) only, ranked 1, 2, ... within each query."""
    keep = rel >= 0
    query, rel = query[keep], rel[keep]
    count = np.bincount(query, minlength=num)
    first = np.cumsum(count) - count
    return query, np.arange(1, len(query) + 1) - first[query], rel, count

