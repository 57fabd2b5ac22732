"""trec_eval's ``-Z ZSCORE_FILE``: each query's values as z-scores, ``(value - mean) / stddev``.

The file has one line per (query, measure): ``qid measure mean stddev`` (whitespace separated; the
measure as printed, ``P_10``, ``map``). Every per-query value of the evaluation is replaced, as
trec_eval 10 does (``convert_zscores.c``), by

* ``(value - mean) / stddev`` when the file has the query and the measure and ``stddev != 0``;
* ``0`` when ``stddev == 0`` and ``value == mean``;
* ``-1000000`` (trec_eval's ``MISSING_ZSCORE_VALUE``) otherwise: a query or measure the file lacks,
  or ``stddev == 0`` and another value.

The summaries are then taken over the z-scores as over the raw values (means; sums for counts;
the geometric mean, floored at 1e-5, for ``gm_map`` and ``gm_bpref``, whose per-query values are the
AP and bpref), and every numeric line is printed ``Z`` + name, the value as ``%6.4f``; ``runid``,
``num_q``'s count and string values are not converted.

Example:
    >>> import numpy as np
    >>> from torchrec_eval.trec.measures import Evaluation, Measure
    >>> from torchrec_eval.trec.zscore import ZScores, zscore_evaluation
    >>> raw = Evaluation(np.array(["q1", "q2"]), [Measure("map", "map")], per_query={"map": np.array([0.5, 0.2])},
    ...                  summary={"map": 0.35})
    >>> table = ZScores.from_rows([("q1", "map", 0.3, 0.1), ("q2", "map", 0.2, 0.0)])
    >>> print(zscore_evaluation(raw, table).format(queries=True).replace("\\t", " | "))
    Zmap                    | q1 | 2.0000
    Zmap                    | q2 | 0.0000
    Zmap                    | all | 1.0000
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from torchrec_eval.trec.measures import Evaluation, OutputMeasure, format_line
from torchrec_eval.trec.parse import decode_keys, read_columns

if TYPE_CHECKING:
    from torchrec_eval.trec.stats import Judgements

__all__ = ["MISSING_ZSCORE", "ZScores", "read_zscores", "zscore_evaluation", "zscore_trec"]

MISSING_ZSCORE = -1000000.0  # trec_eval's MISSING_ZSCORE_VALUE
MIN_GEO_MEAN = 1e-5
ZSCORE_COLUMNS = ("qid", "measure", "mean", "stddev")
GEOMETRIC_BASE = {"gm_map": "map", "gm_bpref": "bpref"}  # their per-query values are these measures'
_UNCONVERTED = ("runid", "num_q")


@dataclass
class ZScores:
    """The z-score table: ``qid``, ``measure`` (str arrays), ``mean``, ``stddev`` (float64), one row per line."""

    qid: np.ndarray
    measure: np.ndarray
    mean: np.ndarray
    stddev: np.ndarray

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[str, str, float, float]]) -> ZScores:
        """A table from ``(qid, measure, mean, stddev)`` tuples."""
        qid, measure, mean, stddev = zip(*rows, strict=True) if rows else ((), (), (), ())
        return cls(np.array(qid, dtype=str), np.array(measure, dtype=str), np.array(mean, dtype=np.float64),
                   np.array(stddev, dtype=np.float64))

    def convert(self, name: str, qids: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The z-scores of measure ``name``'s ``values`` [Q] for ``qids`` [Q]."""
        rows = np.flatnonzero(self.measure == name)
        out = np.full(len(qids), MISSING_ZSCORE)
        if not rows.size or not len(qids):
            return out
        order = rows[np.argsort(self.qid[rows], kind="stable")]
        position = np.searchsorted(self.qid[order], qids, side="right") - 1  # the last line of a repeated pair
        found = (position >= 0) & (self.qid[order[np.maximum(position, 0)]] == qids)
        row = order[np.maximum(position, 0)]
        mean, stddev = self.mean[row], self.stddev[row]
        values = np.asarray(values, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = (values - mean) / stddev
        converted = np.where(stddev != 0, scaled, np.where(values == mean, 0.0, MISSING_ZSCORE))
        return np.where(found, converted, out)


def read_zscores(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None) -> ZScores:
    """Read a z-score file (``-Z``): ``qid measure mean stddev`` per line.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` on a line without 4 columns or a mean / stddev that is not a number.
    """
    table = read_columns(path, ZSCORE_COLUMNS, "zscores", keys=(0, 1), numbers=(2, 3), comment="column0",
                         progress=progress)
    return ZScores(decode_keys(table.keys[0]), decode_keys(table.keys[1]), table.numbers[2], table.numbers[3])


class ZEvaluation(Evaluation):
    """An :class:`Evaluation` of z-scores: printed as trec_eval ``-Z`` prints them."""

    def format(self, queries: bool = False, summary: bool = True) -> str:
        lines = []
        if queries:
            shown = [m for m in self.measures if m.name in self.per_query]
            for row, qid in enumerate(self.qids.tolist()):
                lines += [_line(m, qid, self.per_query[m.name][row]) for m in shown]
        if summary:
            lines += [_line(m, "all", self.summary[m.name]) for m in self.measures if m.name in self.summary]
        return "\n".join(lines)


def _line(measure: OutputMeasure, qid: str, value: float | int | str) -> str:
    if measure.kind == "runid" or isinstance(value, str):  # printed as they are, without a Z
        return format_line(measure.name, qid, value, measure.kind if measure.kind == "string" else "runid")
    return "Z" + format_line(measure.name, qid, value, "double")


def zscore_evaluation(evaluation: Evaluation, zscores: ZScores,
                      values: dict[str, np.ndarray] | None = None) -> ZEvaluation:
    """The evaluation with every per-query value as a z-score and the summaries taken over them.

    Args:
        evaluation: per-query values and summaries (any trec_eval measures).
        zscores: from :func:`read_zscores`.
        values: per-query values of measures that are not printed per query (``gm_map``: the AP).
    """
    values = values or {}
    qids = evaluation.qids
    size = len(qids)
    out = ZEvaluation(qids, list(evaluation.measures))
    for measure in evaluation.measures:
        name, kind = measure.name, measure.kind
        raw = evaluation.per_query.get(name, values.get(name))
        numeric = raw is not None and np.asarray(raw).dtype.kind in "biuf"
        if kind in _UNCONVERTED or (raw is not None and not numeric):
            if raw is not None:
                out.per_query[name] = raw
            if name in evaluation.summary:  # relstring has no summary line
                out.summary[name] = evaluation.summary[name]
            continue
        z = zscores.convert(name, qids, raw if raw is not None else np.zeros(size))
        if name in evaluation.per_query:
            out.per_query[name] = z
        if kind == "long":
            out.summary[name] = float(np.cumsum(z)[-1]) if size else 0.0
        elif kind == "geometric":
            logs = np.log(np.maximum(z, MIN_GEO_MEAN))
            out.summary[name] = math.exp(np.cumsum(logs)[-1] / size) if size else 0.0
        else:
            out.summary[name] = float(np.cumsum(z)[-1] / size) if size else 0.0
    return out


def zscore_trec(judgements: Judgements, evaluation: Evaluation, zscores: ZScores, **options: int) -> ZEvaluation:
    """:func:`zscore_evaluation` of a qrels evaluation (:func:`torchrec_eval.trec.measures.evaluate_measures`), the
    geometric means' per-query values computed with ``options`` (``relevance_level``, ``version``)."""
    from torchrec_eval.trec.measures import MEASURE_FAMILIES, Measure, evaluate_measures

    bases = [Measure(m.name, GEOMETRIC_BASE[m.name]) for m in evaluation.measures
             if m.name in GEOMETRIC_BASE and m.name not in evaluation.per_query and GEOMETRIC_BASE[m.name] in MEASURE_FAMILIES]
    extra = evaluate_measures(judgements, bases, **options).per_query if bases else {}
    return zscore_evaluation(evaluation, zscores, extra)
