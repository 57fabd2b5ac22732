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

Here: the formats, reading and :func:`evaluate_prefs`; the documents grouped by docno in
``pref_docs`` (shared with ``jg``), the counting in ``prefs_counts`` (``prefs_classes``: equivalence-class
JGs, ``prefs_partial``: partial-order JGs), the measures' values in ``prefs_values``.

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

from torchrec_eval.trec.keys import code_queries
from torchrec_eval.trec.measures import Evaluation
from torchrec_eval.trec.parse import read_columns
from torchrec_eval.trec.prefs_counts import count_prefs
from torchrec_eval.trec.prefs_values import measure_values
from torchrec_eval.trec.tables import Prefs, Run

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

    @property
    def cut(self) -> float:
        """The ``param`` of a measure with cut-offs (``P_avgjg_10``: 10.0)."""
        if self.param is None:
            raise ValueError(f"measure {self.name!r} has no cut-off")
        return self.param


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


def read_prefs_columns(path: str | os.PathLike[str], columns: tuple[str, ...], progress: Callable[[int], None] | None,
                       jsg: int | None) -> Prefs:
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


def read_prefs(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None) -> Prefs:
    """Read a trec_eval prefs file (``-R prefs``): ``qid jg jsg docno rel_level`` per line, whitespace
    separated; blank lines and lines with ``#`` in the first column are skipped.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line without 5 columns or a rel_level that is not a number.
    """
    return read_prefs_columns(path, PREFS_COLUMNS, progress, jsg=2)


def read_qrels_prefs(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None) -> Prefs:
    """Read a qrels file as preferences (``-R qrels_prefs``): ``qid jg docno rel``, the second column
    naming the judgement group, each group one sub-group.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line without 4 columns or a rel that is not a number.
    """
    return read_prefs_columns(path, QRELS_PREFS_COLUMNS, progress, jsg=None)


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
    counts = count_prefs(run, prefs, complete, max_docs)
    size = len(counts.qids)
    result = Evaluation(counts.qids, list(measures))
    for measure in measures:
        if measure.kind == "runid":
            result.summary[measure.name] = run.tag
        elif measure.kind == "num_q":
            result.summary[measure.name] = size
        else:
            values = measure_values(counts, measure.name)
            result.per_query[measure.name] = values
            if measure.kind == "long":
                result.summary[measure.name] = int(values.sum())
            else:
                result.summary[measure.name] = float(np.cumsum(values)[-1] / size) if size else 0.0
    return result
