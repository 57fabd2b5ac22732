"""The two ranked forms of a run and its qrels: the library's input tensors (:func:`to_ranked`) and
trec_eval's sparse judgements of the ranking (:func:`rank_judgements`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from torchrec_eval.trec.matching import judging_entries
from torchrec_eval.trec.order import ranking_order
from torchrec_eval.trec.parse import decode_keys
from torchrec_eval.trec.tables import Prefs, Qrels, Run

if TYPE_CHECKING:
    from torch import Tensor

    from torchrec_eval.trec.measures import Judgements


def evaluated_rows(run: Run, qrels: Qrels | Prefs, complete: bool,
                   queries: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(evaluated query ids, row of each run entry, row of each qrels (or prefs) entry; -1: not evaluated).

    The evaluated queries are ``queries`` where given (sorted, unique), else the judged ones of the run, or
    with ``complete`` every judged one."""
    qids = queries if queries is not None else \
        qrels.queries if complete else np.intersect1d(run.queries, qrels.queries, assume_unique=True)

    def rows(vocabulary: np.ndarray, index: np.ndarray) -> np.ndarray:
        if not len(qids):
            return np.full(len(index), -1, dtype=np.int32)
        position = np.searchsorted(qids, vocabulary).clip(max=len(qids) - 1)
        # int32 (fewer queries than 2**31): the [M] result is as long as the table
        return np.where(qids[position] == vocabulary, position, -1).astype(np.int32)[index]

    return qids, rows(run.queries, run.query_index), rows(qrels.queries, qrels.query_index)


def _ranked_entries(run: Run, run_rows: NDArray[np.int32], ties: str,
                    max_docs: int | None) -> tuple[np.ndarray, NDArray[np.int32], NDArray[np.intp]]:
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


@dataclass
class TrecRanked:
    """A run and its qrels in the ranked input form, one row per evaluated query.

    Attributes:
        qids: the evaluated query ids, in string order (row ``i`` is ``qids[i]``).
        ranked_ids: [Q, L] long, each query's retrieved documents in ranked order, -1 padded.
        target_ids: [Q, T] long, each query's relevant documents (and, ranked with ``judged=True``, its judged
            non-relevant and its pooled but unjudged ones), -1 padded (T >= 1).
        target_gains: [Q, T] float64, their relevance values (0 for padding and for a judged non-relevant
            document, -1 for a pooled but unjudged one).
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
        if self._doc_keys is None:  # made by hand, not by to_ranked
            raise TypeError("TrecRanked.docids: no document keys (to_ranked gives them)")
        run_keys, qrels_keys = self._doc_keys  # decoded apart: long ids are numbered per file
        return np.concatenate([decode_keys(run_keys), decode_keys(qrels_keys)])


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
    """The qrels' relevance values, as trec_eval reads them (``atol``: the integer part) if ``integer``.

    Raises:
        ValueError: naming the file and line of an integer relevance that no 64-bit integer holds
            (casting it would give an arbitrary level).
    """
    if not integer:
        return qrels.rel
    rel = np.trunc(qrels.rel)
    outside = np.flatnonzero(np.abs(rel) >= 2.0**63)  # finite: the reader refuses NaN and inf
    if outside.size:
        first = outside[0]
        line = first + 1 if qrels.lines is None else int(qrels.lines[first])
        raise ValueError(f"{qrels.path}:{line}: relevance {float(qrels.rel[first])!r} does not fit in a 64-bit "
                         "integer (trec_eval reads relevance levels as integers)")
    return rel


def to_ranked(run: Run, qrels: Qrels, *, complete: bool = False, relevance_level: float | None = None,
              max_docs: int | None = None, ties: str = "trec", integer_relevance: bool = False,
              queries: np.ndarray | None = None, shared_ids: bool = False, judged: bool = False) -> TrecRanked:
    """Rank a run against its qrels into per-query id tensors (the ranked input form of the metrics).

    The evaluated queries are those of the run that have judgements (trec_eval's default); with
    ``complete=True`` every judged query is evaluated, those absent from the run with an empty list
    (trec_eval ``-c``). A judged query without a relevant document keeps its row (``R = 0``): the
    metric's ``empty_target_action`` decides what it scores.

    Args:
        run, qrels: from :func:`torchrec_eval.trec.read_run` and :func:`torchrec_eval.trec.read_qrels`.
        complete: also evaluate judged queries missing from the run.
        relevance_level: a judgement ``>=`` this is relevant (default: ``> 0``), as trec_eval ``-l``.
        max_docs: keep only the first ``max_docs`` documents of each ranking, as trec_eval ``-M``.
        ties: the order of equal scores (:func:`torchrec_eval.trec.ranking_order`).
        integer_relevance: read relevance values as trec_eval does, as integers (``1.5`` is ``1``).
        queries: the evaluated query ids, sorted (every run compared on the same queries); a query the run
            does not retrieve for is an empty list.
        shared_ids: a judged document's id is its qrels entry (an unjudged one's is past them), so that
            every run ranked against these qrels has the same ``target_ids``; by default the run entry
            that retrieved it. ``docids`` then does not apply.
        judged: also list each query's judged non-relevant documents (a judgement >= 0 that is not relevant) as
            targets of gain 0, and its pooled but unjudged ones (a negative judgement, as trec_eval reads it) as
            targets of gain -1, for the families that read the judgments (bpref, Judged@k, infAP): infAP's pool,
            no judgment to bpref and Judged (as in trec_eval's bpref); the others read a target of gain 0 or -1
            as they read a document without a target.
    """
    import torch

    qids, run_rows, qrels_rows = evaluated_rows(run, qrels, complete, queries)
    order, rows, _ = _ranked_entries(run, run_rows, ties, max_docs)
    rel = _relevance(qrels, integer_relevance)
    relevant = (qrels_rows >= 0) & ((rel >= relevance_level) if relevance_level is not None else (rel > 0))
    if judged:  # every qrels line: a negative one is pooled, not judged (never relevant, as in trec_eval)
        unjudged = rel < 0
        relevant &= ~unjudged
        listed_targets = qrels_rows >= 0
        gains = np.where(relevant, rel, np.where(unjudged, -1.0, 0.0))[listed_targets]
    else:
        listed_targets = relevant
        gains = np.where(relevant, rel, 0.0)[listed_targets]
    entry_of_run = judging_entries(run, qrels)
    if shared_ids:  # a judged document is its qrels entry; an unjudged one an id of its own past them
        listed = np.where(entry_of_run >= 0, entry_of_run, len(qrels) + np.arange(len(run)))[order]
        target = np.arange(len(qrels))[listed_targets]
    else:  # a relevant document is the run entry that retrieved it, else an id of its own past the run's
        retrieved_as = np.full(len(qrels), -1, dtype=np.int64)
        found = entry_of_run >= 0
        retrieved_as[entry_of_run[found]] = np.flatnonzero(found)
        listed = order
        target = np.where(retrieved_as >= 0, retrieved_as, len(run) + np.arange(len(qrels)))[listed_targets]
    target_rows = qrels_rows[listed_targets]
    by_row = np.argsort(target_rows, kind="stable")
    ranked = _pad_rows(rows, listed, len(qids), min_width=1)
    target_ids = _pad_rows(target_rows[by_row], target[by_row], len(qids), min_width=1)
    target_gains = _pad_rows(target_rows[by_row], gains[by_row], len(qids), min_width=1, fill=0.0)
    return TrecRanked(
        qids=qids.tolist(),
        ranked_ids=torch.from_numpy(ranked),
        target_ids=torch.from_numpy(target_ids),
        target_gains=torch.from_numpy(target_gains),
        run_only=np.setdiff1d(run.queries, qrels.queries).tolist(),
        qrels_only=np.setdiff1d(qrels.queries, run.queries).tolist(),
        _doc_keys=None if shared_ids else (run.doc_key, qrels.doc_key),
    )


def rank_judgements(run: Run, qrels: Qrels, *, complete: bool = False, max_docs: int | None = None,
                    ties: str = "trec", judged_only: bool = False) -> Judgements:
    """The run ranked against its qrels as trec_eval sees it (its ``RES_RELS``, for every query at once):
    the judged documents among each query's retrieved ones, with their ranks, and every judgement of
    the evaluated queries. Relevance values are read as trec_eval reads them, as integers.

    Args: as :func:`torchrec_eval.trec.to_ranked`, and ``judged_only``: keep only the retrieved documents with a
        judgement ``>= 0``, ranked among themselves (trec_eval ``-J``, after ``-M``).
    """
    from torchrec_eval.trec.measures import Judgements

    qids, run_rows, qrels_rows = evaluated_rows(run, qrels, complete)
    order = ranking_order(run, ties)
    # only the judged documents are needed, with their ranks: found in the ranked order, ranked there
    entry = judging_entries(run, qrels)[order]
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


def _judged_only(query: NDArray[np.int32], rel: NDArray[np.int64],
                 num: int) -> tuple[NDArray[np.int32], NDArray[np.intp], NDArray[np.int64], NDArray[np.intp]]:
    """trec_eval -J: the judged documents (relevance >= 0) only, ranked 1, 2, ... within each query."""
    keep = rel >= 0
    query, rel = query[keep], rel[keep]
    count = np.bincount(query, minlength=num)
    first = np.cumsum(count) - count
    return query, np.arange(1, len(query) + 1) - first[query], rel, count
