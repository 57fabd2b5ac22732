"""trec_eval's judgement-group qrels (``-R qrels_jg``) and measures (``-m qrels_jg``).

A **qrels_jg** file is a qrels file whose second column names a judgement group (JG): one set of
relevance judgements of a query, say one user's: ``qid jg docno rel``. Each measure is computed per
JG as its qrels counterpart is on that JG's judgements, summed over the query's JGs in their (string)
order and divided by their number when there are several:

* ``map_avgjg``: average precision, ``sum_i (i / r_i) / R`` over the relevant retrieved documents
* ``P_avgjg_k``: precision at ``k`` (cut-offs 5 ... 1000; ``-m P_avgjg.5,10``)
* ``Rprec_mult_avgjg_m``: precision at ``(long)(m * R + 0.9)`` documents (``m`` 0.2 ... 2.0;
  ``-m Rprec_mult_avgjg.0.5,1``), 0 when that is 0

Documents are ranked as for qrels (score descending, docno descending), relevance is ``rel >= -l``
(judgements read as integers, as trec_eval's ``atol``), and summaries are means over queries. With
``judged_only`` (trec_eval ``-J``) each JG ranks only the retrieved documents it judges (``rel >= 0``),
in their order, so that a document's rank is 1 + the judged documents above it.

Example:
    >>> import os, tempfile
    >>> from torchrec_eval.trec import read_run
    >>> from torchrec_eval.trec.jg import evaluate_jg, jg_measures, read_qrels_jg
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "qrels"), "w") as f:
    ...     _ = f.write("q1 alice d1 1\\nq1 bob d2 1\\n")
    >>> with open(os.path.join(folder, "run"), "w") as f:
    ...     _ = f.write("q1 Q0 d1 1 0.9 sys\\nq1 Q0 d2 2 0.5 sys\\n")
    >>> result = evaluate_jg(read_run(os.path.join(folder, "run")), read_qrels_jg(os.path.join(folder, "qrels")),
    ...                      jg_measures(["map_avgjg", "P_avgjg.1,2"]))
    >>> print(result.format().replace("\\t", " | "))  # alice: AP 1, P@1 1; bob: AP 0.5, P@1 0
    map_avgjg              | all | 0.7500
    P_avgjg_1              | all | 0.5000
    P_avgjg_2              | all | 0.5000
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from torchrec_eval.trec.measures import Evaluation
from torchrec_eval.trec.parse import decode_keys
from torchrec_eval.trec.pref_docs import (
    group_starts,
    judged_docs,
    position_in_group,
    ranked_run,
    word_columns,
)
from torchrec_eval.trec.prefs import PrefsMeasure, read_prefs_columns
from torchrec_eval.trec.ranked import evaluated_rows
from torchrec_eval.trec.tables import Prefs, Run

__all__ = ["JG_FAMILIES", "evaluate_jg", "jg_measures", "read_qrels_jg"]

QRELS_JG_COLUMNS = ("qid", "jg", "docno", "rel")
_LONG_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
# trec_eval's judgement-group measures, in its order: (default parameters or None, integer parameters)
JG_FAMILIES = {"map_avgjg": (None, False), "P_avgjg": (_LONG_CUTOFFS, True),
               "Rprec_mult_avgjg": (_MULTIPLES, False)}
NICKNAMES = {"qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg")}


def _name(family: str, param: float) -> str:
    return f"{family}_{int(param)}" if JG_FAMILIES[family][1] else f"{family}_{param:3.2f}"


def _params(family: str, text: str, spec: str) -> list[float]:
    """trec_eval's ``family.p1,p2``: sorted; integer cut-offs > 0; no value twice."""
    integer = JG_FAMILIES[family][1]
    try:
        values = sorted((int if integer else float)(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"measure {spec!r}: the parameters after '.' must be {'integers' if integer else 'numbers'} "
                         f"separated by ',', got {text!r}") from None
    if integer and values[0] <= 0:
        raise ValueError(f"measure {spec!r}: cut-offs must be positive, got {text!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"measure {spec!r}: a parameter is given twice in {text!r}")
    return values


def jg_measures(names: Sequence[str]) -> list[PrefsMeasure] | None:
    """The measures ``names`` ask for (``qrels_jg``, ``runid``, ``num_q``, ``map_avgjg``, ``P_avgjg``,
    ``P_avgjg.5,10``, ``Rprec_mult_avgjg.0.5``), in trec_eval's order; None if a name is not one.

    Raises:
        ValueError: for malformed parameters (``P_avgjg.0``, ``P_avgjg.5,5``).
    """
    params: dict[str, list[float] | None] = {}
    for spec in names:
        for name in NICKNAMES.get(spec, (spec,)):
            family, dot, text = name.partition(".")
            if family in ("runid", "num_q") and not dot:
                params[family] = None
            elif family in JG_FAMILIES:
                default = JG_FAMILIES[family][0]
                if dot and default is None:
                    raise ValueError(f"measure {spec!r}: {family} takes no parameters")
                params[family] = _params(family, text, spec) if dot else (list(default) if default else None)
            else:
                return None
    out = []
    for family in NICKNAMES["qrels_jg"]:
        if family not in params:
            continue
        values = params[family]
        if values is None:
            out.append(PrefsMeasure(family, family if family in ("runid", "num_q") else "double", family))
        else:
            out += [PrefsMeasure(_name(family, p), "double", family, p) for p in values]
    return out


def read_qrels_jg(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None) -> Prefs:
    """Read a qrels_jg file (``-R qrels_jg``): ``qid jg docno rel`` per line; ``rel`` read as an integer
    (its integer part, as trec_eval's ``atol``); lines with ``#`` in the first column are skipped.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a malformed line or a document judged twice in one JG.
    """
    table = read_prefs_columns(path, QRELS_JG_COLUMNS, progress, jsg=None)
    table.rel = np.trunc(table.rel)
    order = np.lexsort(word_columns(table.doc_key) + word_columns(table.jg_key) + [table.query_index])
    keys = np.column_stack([table.query_index.astype(np.uint64), table.jg_key, table.doc_key])[order]
    twice = np.flatnonzero(~group_starts(keys))
    if twice.size:
        first, second = sorted((int(order[twice[0] - 1]), int(order[twice[0]])), key=lambda e: table.line[e])
        raise ValueError(f"{table.path}:{int(table.line[second])}: document "
                         f"{str(decode_keys(table.doc_key[[second]])[0])!r} is judged twice in judgement group "
                         f"{str(decode_keys(table.jg_key[[second]])[0])!r} of query "
                         f"{str(table.queries[table.query_index[second]])!r} (first at line {int(table.line[first])})")
    return table


class _JudgedHits(NamedTuple):
    """The relevant retrieved documents of every judgement group (JG), in (JG, rank) order."""

    qids: np.ndarray  # [Q] the evaluated queries
    jg_row: np.ndarray  # [J] each JG's query row; JGs in (query, jg string) order
    num_rel: np.ndarray  # [J] relevant documents judged by each JG
    hit_jg: np.ndarray  # [H] each hit's JG
    hit_rank: np.ndarray  # [H] its rank (1-based)
    seen: np.ndarray  # [H] the relevant documents of its JG at or above it


def _judgement_groups(row_of: np.ndarray, jg_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each judged entry's JG (numbered in (query row, jg string) order) and each JG's query row."""
    order = np.lexsort(word_columns(jg_key) + [row_of])
    head = group_starts(np.column_stack([row_of[order].astype(np.uint64), jg_key[order]]))
    jg = np.empty(len(order), dtype=np.int64)
    jg[order] = np.cumsum(head) - 1
    return jg, row_of[order][head]


def _rank_among_judged(jg: np.ndarray, rel: np.ndarray, hit_rank: np.ndarray) -> np.ndarray:
    """trec_eval ``-J``: each retrieved document's rank among its JG's judged retrieved documents
    (``rel >= 0``), -1 for the others."""
    ranked = np.flatnonzero((rel >= 0) & (hit_rank > 0))
    ranked = ranked[np.lexsort((hit_rank[ranked], jg[ranked]))]
    judged_rank = np.full(len(rel), -1, dtype=np.int64)
    judged_rank[ranked] = position_in_group(jg[ranked]) + 1
    return judged_rank


def _judged_hits(run: Run, qrels: Prefs, relevance_level: int, complete: bool, max_docs: int | None,
                 judged_only: bool) -> _JudgedHits:
    """Ranks the run (score descending, docno descending; ``-M``, ``-J``) and finds, per JG, its
    relevant documents and the ranks of the retrieved ones (see :func:`evaluate_jg`)."""
    qids, run_rows, judged_rows = evaluated_rows(run, qrels, complete)
    entries, rank = ranked_run(run, run_rows, max_docs, docno_ascending=False)
    judged = np.flatnonzero(judged_rows >= 0)
    row_of = judged_rows[judged]
    judged_group, _, position = judged_docs(run, qids, entries, row_of, qrels.doc_key[judged])
    hit_rank = np.where(position >= 0, rank[position] + 1, -1)[judged_group]
    jg, jg_row = _judgement_groups(row_of, qrels.jg_key[judged])
    num_jgs = len(jg_row)
    rel = qrels.rel[judged]
    if judged_only:
        hit_rank = _rank_among_judged(jg, rel, hit_rank)
    relevant = (rel >= 0) & (rel >= relevance_level)
    num_rel = np.bincount(jg[relevant], minlength=num_jgs)
    hits = np.flatnonzero(relevant & (hit_rank > 0))
    hits = hits[np.lexsort((hit_rank[hits], jg[hits]))]
    hit_jg, hit_rank = jg[hits], hit_rank[hits]
    seen = np.arange(1, len(hits) + 1) - (np.cumsum(np.bincount(hit_jg, minlength=num_jgs)) -
                                          np.bincount(hit_jg, minlength=num_jgs))[hit_jg]
    return _JudgedHits(qids, jg_row, num_rel, hit_jg, hit_rank, seen)


def _hits_within(hits: _JudgedHits, cut: np.ndarray | float) -> np.ndarray:
    """[J] the relevant documents of each JG at ranks ``<= cut`` (one cut-off, or one per JG)."""
    limit = cut[hits.hit_jg] if isinstance(cut, np.ndarray) else cut
    return np.bincount(hits.hit_jg[hits.hit_rank <= limit], minlength=len(hits.jg_row))


def _per_jg(measure: PrefsMeasure, hits: _JudgedHits) -> np.ndarray:
    """[J] the value of a ``map_avgjg``, ``P_avgjg`` or ``Rprec_mult_avgjg`` measure in each JG."""
    num_jgs = len(hits.jg_row)
    if measure.family == "map_avgjg":
        total = np.bincount(hits.hit_jg, weights=hits.seen / hits.hit_rank, minlength=num_jgs)
        per_jg = np.zeros(num_jgs)
        np.divide(total, hits.num_rel, out=per_jg, where=np.bincount(hits.hit_jg, minlength=num_jgs) > 0)
        return per_jg
    if measure.family == "P_avgjg":
        return _hits_within(hits, measure.cut) / measure.cut
    cut = np.trunc(measure.cut * hits.num_rel + 0.9)  # Rprec_mult_avgjg
    per_jg = np.zeros(num_jgs)
    np.divide(_hits_within(hits, cut), cut, out=per_jg, where=cut > 0)
    return per_jg


def _over_jgs(per_jg: np.ndarray, jg_row: np.ndarray, size: int) -> np.ndarray:
    """[Q] each query's value: the sum over its JGs, divided by their number when there are several."""
    jgs_per_query = np.bincount(jg_row, minlength=size)
    total = np.bincount(jg_row, weights=per_jg, minlength=size)
    return np.where(jgs_per_query > 1, total / np.maximum(jgs_per_query, 1), total)


def evaluate_jg(run: Run, qrels: Prefs, measures: Sequence[PrefsMeasure], *, relevance_level: int = 1,
                complete: bool = False, max_docs: int | None = None, judged_only: bool = False) -> Evaluation:
    """trec_eval's values of the judgement-group ``measures`` (:func:`jg_measures`).

    Args:
        run: from :func:`torchrec_eval.trec.read_run`.
        qrels: from :func:`read_qrels_jg`.
        measures: what to compute, in output order.
        relevance_level: a judgement ``>=`` this is relevant (trec_eval ``-l``).
        complete: evaluate every judged query, those missing from the run as empty (``-c``).
        max_docs: keep the first ``max_docs`` documents of each ranking (``-M``).
        judged_only: rank, in each JG, only the retrieved documents it judges (``-J``), after ``-M``.
    """
    hits = _judged_hits(run, qrels, relevance_level, complete, max_docs, judged_only)
    size = len(hits.qids)
    result = Evaluation(hits.qids, list(measures))
    for measure in measures:
        if measure.kind == "runid":
            result.summary[measure.name] = run.tag
        elif measure.kind == "num_q":
            result.summary[measure.name] = size
        else:
            values = _over_jgs(_per_jg(measure, hits), hits.jg_row, size)
            result.per_query[measure.name] = values
            result.summary[measure.name] = float(np.cumsum(values)[-1] / size) if size else 0.0
    return result
