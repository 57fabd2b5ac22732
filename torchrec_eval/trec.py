"""Read TREC run and qrels files into the ranked input form of the metrics.

* A **run** file has one line per retrieved document: ``qid Q0 docid rank score tag``. The rank
  column is ignored, as trec_eval ignores it: documents are ranked by ``score`` descending, and equal
  scores by ``docid`` descending (string comparison), which is trec_eval's order.
* A **qrels** file has one line per judged document: ``qid iter docid rel``. The ``iter`` column is
  ignored; ``rel > 0`` is relevant and is the document's gain; ``rel <= 0`` is judged non-relevant.

Ids are strings (``"q7"``, ``"clueweb09-en0000-00-00000"``): :func:`to_ranked` maps the document
ids of both files to one integer vocabulary and returns, for each evaluated query, ``ranked_ids``
[Q, L] and ``target_ids`` / ``target_gains`` [Q, T], ``-1`` padded: what
``RankingMetrics.update(ranked_ids=..., target_ids=..., target_gains=...)`` takes. The grouping,
sorting and padding are vectorised (numpy sorts, no Python loop over queries or documents).

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
    >>> data.target_ids.tolist(), data.target_gains.tolist()
    ([[0]], [[2.0]])
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

__all__ = ["Qrels", "Run", "TrecRanked", "read_qrels", "read_run", "to_ranked"]

RUN_COLUMNS = ("qid", "Q0", "docid", "rank", "score", "tag")
QRELS_COLUMNS = ("qid", "iter", "docid", "rel")
_CHUNK_BYTES = 1 << 22


@dataclass
class _Table:
    path: str
    queries: np.ndarray  # the distinct query ids, sorted (numpy str array)
    query_index: np.ndarray  # [M] int64: entry -> position in ``queries``
    docs: np.ndarray  # the distinct document ids, sorted
    doc_index: np.ndarray  # [M] int64: entry -> position in ``docs``
    line: np.ndarray  # [M] int64: 1-based line of the entry in ``path``

    def __len__(self) -> int:
        return len(self.line)

    @property
    def qid(self) -> np.ndarray:
        """[M] query id of each entry."""
        return self.queries[self.query_index]

    @property
    def docid(self) -> np.ndarray:
        """[M] document id of each entry."""
        return self.docs[self.doc_index]


@dataclass
class Run(_Table):
    """A TREC run: query and document ids as integer codes into sorted vocabularies (``queries``,
    ``docs``), ``score`` [M] float64 and the 1-based ``line`` of each entry (for error messages)."""

    score: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class Qrels(_Table):
    """TREC relevance judgements: query and document codes as in :class:`Run`, ``rel`` [M] float64
    and the 1-based ``line`` of each entry."""

    rel: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass
class TrecRanked:
    """A run and its qrels in the ranked input form, one row per evaluated query.

    Attributes:
        qids: the evaluated query ids, in string order (row ``i`` is ``qids[i]``).
        docids: the document vocabulary: item id ``j`` is the document ``docids[j]`` (the run's
            documents in string order, then documents that are only judged).
        ranked_ids: [Q, L] long, each query's retrieved documents in trec_eval's order, -1 padded.
        target_ids: [Q, T] long, each query's relevant documents (rel > 0), -1 padded (T >= 1).
        target_gains: [Q, T] float64, their relevance values (0 for padding).
        run_only: query ids of the run without judgements (not evaluated).
        qrels_only: judged query ids absent from the run (not evaluated unless ``complete``).
    """

    qids: list[str]
    docids: np.ndarray
    ranked_ids: Tensor
    target_ids: Tensor
    target_gains: Tensor
    run_only: list[str] = field(default_factory=list)
    qrels_only: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.qids)

    @property
    def depth(self) -> int:
        """Length of the longest ranked list."""
        return self.ranked_ids.shape[1]


def _iter_lines(path: str, progress: Callable[[int], None] | None):
    """Yield (first line number, list of lines) chunks of a text file, reporting bytes read."""
    number = 1
    with open(path, "rb") as handle:
        while True:
            chunk = handle.readlines(_CHUNK_BYTES)
            if not chunk:
                return
            if progress is not None:
                progress(sum(len(line) for line in chunk))
            try:
                lines = [line.decode("utf-8") for line in chunk]
            except UnicodeDecodeError:
                for offset, line in enumerate(chunk):
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as error:
                        where = f"{path}:{number + offset}"
                        raise ValueError(f"{where}: not valid UTF-8 text ({error.reason})") from None
                raise
            yield number, lines
            number += len(chunk)


def _read_columns(path: str | os.PathLike, columns: tuple[str, ...], what: str,
                  progress: Callable[[int], None] | None, *, comment: str,
                  extra_columns: bool = False) -> tuple[str, list[list[str]], np.ndarray]:
    """Split a whitespace-separated file into string columns, skipping blank and comment lines.

    ``comment="leading"``: a line whose first non-blank character is ``#`` is a comment (trec_eval's
    run files); ``"column0"``: only a ``#`` in the first column (qrels: document ids may hold ``#``).
    With ``extra_columns`` the columns after the last one are ignored (trec_eval 10 reads run lines so).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such {what} file")
    width = len(columns)
    cells: list[list[str]] = [[] for _ in columns]
    numbers: list[np.ndarray] = []
    for first, lines in _iter_lines(path, progress):
        if any("#" in line for line in lines):  # comments are rare: look line by line only then
            starts = (line.lstrip() if comment == "leading" else line for line in lines)
            lines = ["" if line.startswith("#") else original for line, original in zip(starts, lines, strict=True)]
        # one C-level split per chunk; per-line token counts only to find blank and malformed lines
        counts = np.fromiter(map(len, map(str.split, lines)), dtype=np.int64, count=len(lines))
        bad = np.flatnonzero(((counts < width) if extra_columns else (counts != width)) & (counts > 0))
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"{path}:{first + i}: a {what} line has {width} columns ({' '.join(columns)}"
                f"{', then anything' if extra_columns else ''}), got {int(counts[i])}: {lines[i].rstrip()!r}"
            )
        if extra_columns and bool((counts > width).any()):
            tokens = [token for line in lines for token in line.split()[:width]]
        else:
            tokens = "".join(lines).split()
        for c, column in enumerate(cells):
            column.extend(tokens[c::width])
        numbers.append(first + np.flatnonzero(counts))
    line = np.concatenate(numbers) if numbers else np.zeros(0, dtype=np.int64)
    return path, cells, line


def _to_float(path: str, values: list[str], line: np.ndarray, name: str, columns: tuple[str, ...],
              finite: bool) -> np.ndarray:
    try:
        out = np.array(values, dtype=np.float64) if values else np.zeros(0)
    except ValueError:
        out = None
    if out is not None and (not finite or bool(np.isfinite(out).all())):
        return out
    for i, value in enumerate(values):
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{path}:{int(line[i])}: the {name} column ({columns.index(name) + 1} of "
                             f"{' '.join(columns)}) must be a number, got {value!r}") from None
        if finite and not math.isfinite(number):
            raise ValueError(f"{path}:{int(line[i])}: the {name} must be a finite number, got {value!r}")
    raise AssertionError("unreachable")  # pragma: no cover


def _factorize(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values as a numpy str array, [M] int64 index of each value among them)."""
    distinct = dict.fromkeys(values)
    if len(distinct) * 4 <= len(values):  # few distinct values (query ids): hash them
        vocabulary = sorted(distinct)
        lookup = {value: i for i, value in enumerate(vocabulary)}
        index = np.fromiter(map(lookup.__getitem__, values), dtype=np.int64, count=len(values))
        return np.array(vocabulary, dtype=str), index
    vocabulary, index = np.unique(np.array(values, dtype=str), return_inverse=True)
    return vocabulary, index.astype(np.int64).reshape(-1)


def _encode(path: str, what: str, cells: list[list[str]], line: np.ndarray) -> dict:
    """Sorted vocabularies and integer codes of the qid and docid columns; refuse a repeated pair."""
    queries, query_index = _factorize(cells[0])
    docs, doc_index = _factorize(cells[2])
    if len(line) > 1:
        key = query_index * len(docs) + doc_index
        order = np.argsort(key, kind="stable")
        repeated = np.flatnonzero(key[order][1:] == key[order][:-1])
        if repeated.size:
            first, second = int(line[order[repeated[0]]]), int(line[order[repeated[0] + 1]])
            entry = order[repeated[0]]
            raise ValueError(f"{path}:{second}: document {docs[doc_index[entry]]!r} is listed twice for "
                             f"query {queries[query_index[entry]]!r} in this {what} (first at line {first})")
    return {"path": path, "queries": queries, "query_index": query_index, "docs": docs,
            "doc_index": doc_index, "line": line}


def read_run(path: str | os.PathLike, progress: Callable[[int], None] | None = None) -> Run:
    """Read a TREC run file ``qid Q0 docid rank score tag`` (whitespace separated), as trec_eval 10 does:
    blank lines and lines whose first non-blank character is ``#`` are skipped, columns after the tag
    are ignored.

    Args:
        path: the file.
        progress: called with the number of bytes of each chunk read (for a progress bar).

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line with fewer than 6 columns, a score that is not a finite
            number, or a document listed twice for a query.
    """
    path, cells, line = _read_columns(path, RUN_COLUMNS, "run", progress, comment="leading", extra_columns=True)
    score = _to_float(path, cells[4], line, "score", RUN_COLUMNS, finite=True)
    return Run(**_encode(path, "run", cells, line), score=score)


def read_qrels(path: str | os.PathLike, progress: Callable[[int], None] | None = None) -> Qrels:
    """Read a TREC qrels file ``qid iter docid rel`` (whitespace separated), as trec_eval 10 does: blank
    lines and lines with ``#`` in the first column are skipped (a document id may contain ``#``).

    Args:
        path: the file.
        progress: called with the number of bytes of each chunk read (for a progress bar).

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line without 4 columns, a relevance that is not a finite
            number, or a document judged twice for a query.
    """
    path, cells, line = _read_columns(path, QRELS_COLUMNS, "qrels", progress, comment="column0")
    rel = _to_float(path, cells[3], line, "rel", QRELS_COLUMNS, finite=True)
    return Qrels(**_encode(path, "qrels", cells, line), rel=rel)


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


def _positions(vocabulary: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of each of the sorted, distinct ``values`` in the sorted ``vocabulary``, -1 where absent."""
    if not len(vocabulary):
        return np.full(len(values), -1, dtype=np.int64)
    index = np.searchsorted(vocabulary, values).clip(max=len(vocabulary) - 1)
    return np.where(vocabulary[index] == values, index, -1).astype(np.int64)


def to_ranked(run: Run, qrels: Qrels, *, complete: bool = False) -> TrecRanked:
    """Rank a run against its qrels, trec_eval's way, into per-query id tensors.

    The evaluated queries are those of the run that have judgements (trec_eval's default); with
    ``complete=True`` every judged query is evaluated, those absent from the run with an empty list
    (trec_eval ``-c``). A judged query without a relevant document keeps its row (``R = 0``): the
    metric's ``empty_target_action`` decides what it scores.

    Within a query, documents are ordered by score descending, then docid descending (string order,
    trec_eval's tie break); the rank column of the run is ignored.
    """
    run_queries, judged_queries = run.queries, qrels.queries
    qids = judged_queries if complete else np.intersect1d(run_queries, judged_queries)
    run_only = np.setdiff1d(run_queries, judged_queries)
    qrels_only = np.setdiff1d(judged_queries, run_queries)

    # rows of the evaluated queries (-1: not evaluated), from the small sorted vocabularies
    run_rows = _positions(qids, run_queries)[run.query_index]
    qrels_rows = _positions(qids, judged_queries)[qrels.query_index]
    in_run = run_rows >= 0
    relevant = (qrels_rows >= 0) & (qrels.rel > 0)
    # one document vocabulary: the run's (sorted, so codes follow string order), then judged-only docs
    judged_code = _positions(run.docs, qrels.docs)
    absent = np.flatnonzero(judged_code < 0)
    judged_code[absent] = len(run.docs) + np.arange(len(absent))
    docids = np.concatenate([run.docs, qrels.docs[absent]])
    run_doc = run.doc_index[in_run]
    qrels_doc = judged_code[qrels.doc_index[relevant]]
    run_q, qrels_q = run_rows[in_run], qrels_rows[relevant]

    # query ascending, score descending, docid descending (the codes follow string order)
    order = np.lexsort((-run_doc, -run.score[in_run], run_q))
    ranked = _pad_rows(run_q[order], run_doc[order], len(qids), min_width=1)
    order = np.argsort(qrels_q, kind="stable")
    target_ids = _pad_rows(qrels_q[order], qrels_doc[order], len(qids), min_width=1)
    target_gains = _pad_rows(qrels_q[order], qrels.rel[relevant][order], len(qids), min_width=1, fill=0.0)
    return TrecRanked(
        qids=qids.tolist(),
        docids=docids,
        ranked_ids=torch.from_numpy(ranked),
        target_ids=torch.from_numpy(target_ids),
        target_gains=torch.from_numpy(target_gains),
        run_only=run_only.tolist(),
        qrels_only=qrels_only.tolist(),
    )
