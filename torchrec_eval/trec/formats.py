"""trec_eval's ``-R`` (relevance format), ``-T`` (results format), ``-D`` (debug level) and ``-Z`` options.

* ``-R qrels`` (default): :mod:`torchrec_eval.trec.measures`; ``-R prefs`` / ``-R qrels_prefs``:
  :mod:`torchrec_eval.trec.prefs` (``-m all_prefs``, ``-m prefs``, ``prefs_*``); ``-R qrels_jg``:
  :mod:`torchrec_eval.trec.jg` (``-m qrels_jg``, ``map_avgjg``, ``P_avgjg``, ``Rprec_mult_avgjg``).
  ``runid`` and ``num_q`` go with every format; any other measure needs its own format, as in
  trec_eval (which stops with "Can't calculate measure").
* ``-T trec_results`` is trec_eval 10's only results format.
* ``-D LEVEL[.QID]``: with ``.QID`` only that query is evaluated, as in trec_eval; with ``-R prefs`` and
  ``-R qrels_prefs``, ``LEVEL`` 3-5 prints trec_eval's form_prefs_counts printouts
  (:mod:`torchrec_eval.trec.debug_prefs`); ``-R qrels_jg`` has none.
* ``-Z FILE``: :mod:`torchrec_eval.trec.zscore`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    from torchrec_eval.trec.measures import Evaluation
    from torchrec_eval.trec.prefs import PrefsMeasure
    from torchrec_eval.trec.tables import Prefs, Run, Table

_TableT = TypeVar("_TableT", bound="Table | Prefs")
_Parse = Callable[[Sequence[str]], "list[PrefsMeasure] | None"]  # jg_measures or prefs_measures

__all__ = ["REL_FORMATS", "RESULTS_FORMATS", "check_formats", "evaluate_format", "only_query", "parse_debug"]

REL_FORMATS = ("qrels", "prefs", "qrels_prefs", "qrels_jg")
RESULTS_FORMATS = ("trec_results",)
_ANY_FORMAT = ("runid", "num_q")


def check_formats(rel_format: str, results_format: str) -> None:
    """trec_eval's format names (``-R``, ``-T``), else a ``ValueError`` naming the choices."""
    if rel_format not in REL_FORMATS:
        raise ValueError(f"-R {rel_format!r}: not a relevance format; trec_eval's are {', '.join(REL_FORMATS)}")
    if results_format not in RESULTS_FORMATS:
        raise ValueError(f"-T {results_format!r}: not a results format; trec_eval's is {RESULTS_FORMATS[0]}")


def parse_debug(text: str) -> tuple[int, str | None]:
    """``-D LEVEL[.QID]`` -> (level, qid or None); LEVEL read as trec_eval's ``atol`` reads it."""
    level, dot, qid = text.partition(".")
    digits = level.strip()
    sign = digits[:1] if digits[:1] in "+-" else ""
    body = digits[len(sign):]
    count = len(body) - len(body.lstrip("0123456789"))
    number = int(sign + body[:count]) if count else 0
    return number, (qid if dot else None)


def only_query(table: _TableT, qid: str) -> _TableT:
    """The entries of one query of a run or judgement table (:class:`torchrec_eval.trec.Run`, ``Qrels``,
    :class:`torchrec_eval.trec.tables.Prefs`): the same table type, with that query alone (none if absent)."""
    code = np.flatnonzero(table.queries == qid)
    keep = table.query_index == code[0] if code.size else np.zeros(len(table.query_index), dtype=bool)
    changes: dict[str, Any] = {}  # new values of some of the table's fields
    for field in dataclasses.fields(table):
        value = getattr(table, field.name)
        if field.name == "queries":
            changes[field.name] = table.queries[code]
        elif field.name == "pairs":
            changes[field.name] = None  # rebuilt on demand for the remaining entries
        elif field.name == "lines":
            changes[field.name] = table.line[keep]  # kept as numbers: no longer 1, 2, ...
        elif isinstance(value, np.ndarray) and len(value) == len(keep):
            changes[field.name] = value[keep]
    changes["query_index"] = np.zeros(int(keep.sum()), dtype=np.int64)
    return dataclasses.replace(table, **changes)


def _measures(rel_format: str, names: Sequence[str]) -> list[PrefsMeasure]:
    """The measures ``names`` ask for under ``rel_format`` (not qrels), or a ``ValueError`` naming
    those that need another format."""
    from torchrec_eval.trec.jg import jg_measures
    from torchrec_eval.trec.prefs import prefs_measures

    parse: _Parse = jg_measures if rel_format == "qrels_jg" else prefs_measures
    if not names:
        raise ValueError(f"-R {rel_format}: trec_eval's default measures need -R qrels; ask for "
                         f"{'-m qrels_jg' if rel_format == 'qrels_jg' else '-m all_prefs or -m prefs'}")
    measures = parse(names)
    if measures is None:
        bad = [name for name in names if parse([name]) is None]
        own = "qrels_jg, map_avgjg, P_avgjg, Rprec_mult_avgjg" if rel_format == "qrels_jg" else \
            "all_prefs, prefs, prefs_simp, prefs_pair, prefs_avgjg, ... (prefs_*)"
        raise ValueError(f"-R {rel_format} evaluates {own}, runid and num_q; {bad} "
                         f"{'needs' if len(bad) == 1 else 'need'} another -R format (trec_eval cannot "
                         f"calculate them from {rel_format} judgements)")
    return measures


def misplaced_measures(names: Sequence[str]) -> list[str]:
    """The names among ``names`` that are measures of the prefs or qrels_jg formats (not of qrels)."""
    from torchrec_eval.trec.jg import jg_measures
    from torchrec_eval.trec.prefs import prefs_measures

    return [name for name in names if name not in _ANY_FORMAT
            and (prefs_measures([name]) is not None or _jg_name(name, jg_measures))]


def _jg_name(name: str, parse: _Parse) -> bool:
    try:
        return parse([name]) is not None
    except ValueError:
        return True


def evaluate_format(rel_format: str, run: Run, judgements_path: str, names: Sequence[str], *, complete: bool = False,
                    max_docs: int | None = None, relevance_level: int = 1, debug_query: str | None = None,
                    judged_only: bool = False, progress: Callable[[int], None] | None = None) -> Evaluation:
    """Read ``judgements_path`` in ``rel_format`` (prefs, qrels_prefs or qrels_jg) and evaluate ``run``
    on the measures ``names``; returns a :class:`torchrec_eval.trec.measures.Evaluation`. ``judged_only``
    (``-J``) applies to qrels_jg; trec_eval ignores it for preferences, and so does this.

    Raises:
        ValueError: a measure of another format, a malformed file, or a ``debug_query`` without judgements.
    """
    from torchrec_eval.trec.jg import evaluate_jg, read_qrels_jg
    from torchrec_eval.trec.prefs import evaluate_prefs, read_prefs, read_qrels_prefs

    measures = _measures(rel_format, names)
    reader = {"prefs": read_prefs, "qrels_prefs": read_qrels_prefs, "qrels_jg": read_qrels_jg}[rel_format]
    judgements = reader(judgements_path, progress=progress)
    if debug_query is not None:
        if debug_query not in judgements.queries:
            raise ValueError(f"-D: query {debug_query!r} has no judgements in {judgements_path}")
        run, judgements = only_query(run, debug_query), only_query(judgements, debug_query)
    if rel_format == "qrels_jg":
        return evaluate_jg(run, judgements, measures, relevance_level=relevance_level, complete=complete,
                           max_docs=max_docs, judged_only=judged_only)
    return evaluate_prefs(run, judgements, measures, complete=complete, max_docs=max_docs)
