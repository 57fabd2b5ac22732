"""The ranking orders of a run: its entries grouped by query, each query's by score descending, with
equal scores in trec_eval's order (document id descending), the file's order or ranx's."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from torchrec_eval.trec.parse import index_dtype

if TYPE_CHECKING:
    from torchrec_eval.trec.ranx_tie_order import SegmentArgsort
    from torchrec_eval.trec.tables import Run

TIES = ("trec", "file", "ranx")
_RANX_INSERTION_SORT = 15  # numba's quicksort sorts lists this short by insertion: stably


def grouped_order(query: np.ndarray, score: np.ndarray | None) -> np.ndarray:
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
            order = np.repeat((starts - offsets).astype(index_dtype(len(query))), lengths[block])
            order += np.arange(len(query), dtype=order.dtype)  # int32 where it holds: half the memory
            return order
    if score is None:
        return np.argsort(query, kind="stable")
    return np.lexsort((-score, query))


def docid_descending(order: np.ndarray, query: np.ndarray, score: np.ndarray, keys: np.ndarray,
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


def _segment_argsort() -> SegmentArgsort:
    """numba's np.argsort (its quicksort, what ranx's ``Run`` sorts with) over each segment."""
    from torchrec_eval.trec.ranx_tie_order import segment_argsort

    return segment_argsort()


def _ranx_order(query: np.ndarray, score: np.ndarray) -> np.ndarray:
    """ranx.Run's order: per query, numba's quicksort ``argsort`` of the negated scores, taken in the
    file's order. Without numba, the file's order among equal scores (the same for queries of at most
    15 documents, where numba's quicksort is an insertion sort)."""
    grouped = grouped_order(query, None)
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
    order = grouped_order(run.query_index, run.score)
    if ties == "trec":
        order = docid_descending(order, run.query_index, run.score, run.doc_key)
    return order
