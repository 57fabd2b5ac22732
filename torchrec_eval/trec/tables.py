"""TREC run and qrels files read into tables: query codes, document keys and each entry's value.

A run's entries are ``qid Q0 docid rank score tag`` lines, a qrels' ``qid iter docid rel`` lines (see
:mod:`torchrec_eval.trec`); the columns come from :mod:`torchrec_eval.trec.parse`, the query codes and the
(query, document) pair index from :mod:`torchrec_eval.trec.keys`, repeated documents are handled by
:mod:`torchrec_eval.trec.repeats`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torchrec_eval.trec.keys import PairIndex, code_queries
from torchrec_eval.trec.parse import Columns, decode_keys, line_numbers, read_columns
from torchrec_eval.trec.repeats import TableFields, last_value_first_place, refuse_repeats

RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")
QRELS_COLUMNS = ("qid", "iter", "docid", "rel")


@dataclass
class Table:
    """The entries of a TREC file: query codes into the sorted ``queries`` and document keys."""

    path: str
    queries: np.ndarray  # the distinct query ids, sorted (numpy str array)
    query_index: np.ndarray  # [M] int32: entry -> position in ``queries``
    doc_key: np.ndarray  # [M, k] uint64: the document id's bytes as big-endian words (parse.LongKeys: k <= 8)
    lines: np.ndarray | None  # [M] int32 (int64 past 2**31 lines): 1-based line of each entry; None: i + 1
    pairs: PairIndex | None = field(default=None, repr=False)  # (query, document) look-up

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
class Run(Table):
    """A TREC run: query codes into the sorted ``queries``, document keys, ``score`` [M] float64, the
    1-based ``line`` of each entry and ``tag``, the run tag of the last line (trec_eval's runid)."""

    score: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tag: str = ""


@dataclass
class Qrels(Table):
    """TREC relevance judgements: query codes and document keys as in :class:`Run`, ``rel`` [M]
    float64 and the 1-based ``line`` of each entry."""

    rel: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _read(path: str | os.PathLike[str], columns: tuple[str, ...], what: str, value: int,
          progress: Callable[[int], None] | None, repeats: str = "error",
          **options: Any) -> tuple[Columns, TableFields, np.ndarray]:
    table = read_columns(path, columns, what, keys=(0, 2), numbers=(value,), progress=progress, **options)
    numbers = table.finite(value, columns[value])
    queries, query_keys, query_index = code_queries(table.keys[0])
    pairs = PairIndex.of(query_keys, query_index, table.keys[2])
    common: TableFields = {"path": table.path, "queries": queries, "query_index": query_index,
                           "doc_key": table.keys[2], "lines": table.lines, "pairs": pairs}
    if repeats == "last":
        keep, numbers = last_value_first_place(common, numbers)
        if keep is not None:
            common["lines"] = table.line[keep]
            common["query_index"] = common["query_index"][keep]
            common["doc_key"] = common["doc_key"][keep]
            numbers = numbers[keep]
            common["pairs"] = pairs.reindexed(common["query_index"], common["doc_key"])
    else:
        refuse_repeats(common, what)
    return table, common, numbers


def read_run(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None,
             repeats: str = "error") -> Run:
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


def read_qrels(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None,
               repeats: str = "error") -> Qrels:
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
