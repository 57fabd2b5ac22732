"""trec_eval's measures, for every query at once, in numpy, and its output format.

trec_eval (``usnistgov/trec_eval``, version 10; pytrec_eval embeds version 9) evaluates one query at
a time: it ranks the retrieved documents (score descending, docid descending), gives each its judged
relevance (``-1`` when not judged, ``-2`` when judged ``< 0``) and loops over the ranks. Here the same
numbers come from the judged documents only (:class:`Judgements`: their query, rank and relevance)
with array operations over all queries, in the same floating-point order as trec_eval's loops (sums
in rank order, per-query values summed in query order), so the printed values are the same.

With ``R`` the query's relevant judged documents (``rel >= level``, ``-l``), ``N`` its judged
non-relevant ones (``0 <= rel < level``), ``r_i`` the rank of the i-th relevant retrieved document:

* ``P_k = |{i: r_i <= k}| / k``; ``recall_k = |{i: r_i <= k}| / R``; ``success_k = [r_1 <= k]``
* ``map = sum_i (i / r_i) / R``; ``map_cut_k`` keeps ``r_i <= k``; ``gm_map = exp(mean(log(max(AP, 1e-5))))``
* ``Rprec = |{i: r_i <= min(R, num_ret)}| / R``; ``recip_rank = 1 / r_1``; ``set_recall = num_rel_ret / R``
* ``bpref = sum_i (1 - min(n_i, R) / min(N, R)) / R``, ``n_i`` the judged non-relevant ranked above ``r_i``
* ``iprec_at_recall_p``: the highest precision at or after the ``c``-th relevant document,
  ``c = lround(p * R)`` (version 9: ``(long)(p * R + 0.9)``)
* ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret`` (sums over queries), ``runid`` (the run tag)

and the rest of ``all_trec``: the gain measures (``ndcg``, ``dcg``, ``G``, ``rbp``, ...) in
:mod:`torchrec_eval.trec.gains`, the others (``infAP``, ``Rprec_mult``, ``utility``, ``relstring``, ...)
in :mod:`torchrec_eval.trec.other_measures`. Measure names and parameters: :mod:`torchrec_eval.trec.spec`.

A query with ``R = 0`` scores 0 almost everywhere. Summary values are means over the evaluated queries
(sums for ``num_*``; the geometric mean for ``gm_map`` and ``gm_bpref``).

Example:
    >>> import numpy as np
    >>> from torchrec_eval.trec.measures import Judgements, evaluate_measures, parse_measures
    >>> judgements = Judgements(  # one query: relevant documents at ranks 1 and 3 of 4, R = 3
    ...     qids=np.array(["q1"]), num_ret=np.array([4]), hit_query=np.array([0, 0, 0]),
    ...     hit_rank=np.array([1, 2, 3]), hit_rel=np.array([1, 0, 2]), judged_query=np.array([0, 0, 0, 0]),
    ...     judged_rel=np.array([1, 0, 2, 1]), runid="bm25")
    >>> result = evaluate_measures(judgements, parse_measures("num_rel") + parse_measures("map") + parse_measures("P.2,4"))
    >>> print(result.format().replace("\\t", " | "))  # name padded to 22, tab, qid, tab, value
    num_rel                | all | 3
    map                    | all | 0.5556
    P_2                    | all | 0.5000
    P_4                    | all | 0.5000
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from torchrec_eval.trec import gains, other_measures
from torchrec_eval.trec.spec import MEASURE_FAMILIES, OFFICIAL, Measure, parse_measures, resolve
from torchrec_eval.trec.stats import Judgements, Queries, ratio

__all__ = ["MEASURE_FAMILIES", "OFFICIAL", "Evaluation", "Judgements", "Measure", "evaluate_measures", "format_line",
           "from_library", "parse_measures", "resolve"]

MIN_GEO_MEAN = 1e-5  # trec_eval's floor of a query's value in gm_map and gm_bpref
_PER_QUERY = ("long", "double", "string")  # kinds trec_eval prints for each query with -q

# the library's metric families, as trec_eval measures: (family with a cut-off, family without)
_LIBRARY = {"precision": ("P", None), "recall": ("recall", "set_recall"), "ndcg": ("ndcg_cut", "ndcg"),
            "map": ("map_cut", "map"), "hitrate": ("success", None), "mrr": (None, "recip_rank"),
            "rprecision": (None, "Rprec")}


def from_library(name: str, family: str, cutoff: str) -> Measure | None:
    """The trec_eval measure equal to the library's ``family@cutoff`` under ``convention="trec"``
    (printed as ``name``), or None when trec_eval has none (``mrr@10``, ``dcg@10``, ...)."""
    cut, bare = _LIBRARY.get(family, (None, None))
    if cutoff:
        return Measure(name, cut, float(cutoff)) if cut and cutoff.isdigit() and int(cutoff) > 0 else None
    return Measure(name, bare) if bare else None


def _basic() -> dict[str, Callable[[Queries, Measure], np.ndarray]]:
    """The per-query value of each basic family."""
    return {
        "num_ret": lambda s, m: s.j.num_ret.astype(np.int64),
        "num_rel": lambda s, m: s.num_rel,
        "num_rel_ret": lambda s, m: s.num_rel_ret,
        "num_nonrel_judged_ret": lambda s, m: np.bincount(
            s.j.hit_query[(s.j.hit_rel >= 0) & (s.j.hit_rel < s.level)], minlength=s.size),
        "map": lambda s, m: s.average_precision(),
        "gm_map": lambda s, m: s.average_precision(),
        "map_cut": lambda s, m: s.average_precision(m.param),
        "Rprec": lambda s, m: ratio(s.hits_within(np.minimum(s.num_rel, s.j.num_ret)), s.num_rel),
        "bpref": lambda s, m: s.bpref(),
        "gm_bpref": lambda s, m: s.bpref(),
        "recip_rank": lambda s, m: s.recip_rank(),
        "iprec_at_recall": lambda s, m: s.iprec_at_recall(m.param),
        "P": lambda s, m: s.hits_within(m.param) / m.param,
        "recall": lambda s, m: ratio(s.hits_within(m.param), s.num_rel),
        "success": lambda s, m: (s.hits_within(m.param) > 0).astype(np.float64),
        "set_P": lambda s, m: ratio(s.num_rel_ret, s.j.num_ret),
        "set_recall": lambda s, m: ratio(s.num_rel_ret, s.num_rel),
    }


PER_QUERY: dict[str, Callable[[Queries, Measure], np.ndarray]] = {**_basic(), **gains.MEASURES,
                                                                 **other_measures.MEASURES}


def _summary(measure: Measure, values: np.ndarray, stats: Queries) -> float | int | None:
    j, kind = stats.j, measure.kind
    if kind == "string":
        return None
    if kind == "long":
        if measure.family == "num_rel" and j.complete:
            return j.all_relevant  # trec_eval -c: every judgement > 0 of the qrels, whatever -l
        return int(values.sum())
    if kind == "geometric":
        logs = np.log(np.maximum(values, MIN_GEO_MEAN))
        return math.exp(np.cumsum(logs)[-1] / stats.size) if stats.size else 0.0
    return float(np.cumsum(values)[-1] / stats.size) if stats.size else 0.0  # in query order, as trec_eval


class OutputMeasure(Protocol):
    """What :class:`Evaluation` prints of a measure: a :class:`Measure` or a
    :class:`torchrec_eval.trec.prefs.PrefsMeasure`."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...


@dataclass
class Evaluation:
    """Per-query values (``per_query[name]`` [Q], for the measures trec_eval prints per query) and
    summary values (``summary[name]``; none for ``relstring``) of a list of measures."""

    qids: np.ndarray
    measures: list[OutputMeasure]
    per_query: dict[str, np.ndarray] = field(default_factory=dict)
    summary: dict[str, float | int | str] = field(default_factory=dict)
    debug: list[str] | None = None  # trec_eval -D: each query's printouts (torchrec_eval.trec.debug)

    def format(self, queries: bool = False, summary: bool = True) -> str:
        """trec_eval's output: with ``queries`` (``-q``) each query's lines first, then (unless
        ``summary`` is False, ``-n``) the ``all`` lines; one ``name\\tqid\\tvalue`` line per value."""
        lines = []
        if queries:
            shown = [(m.name, m.kind, self.per_query[m.name].tolist()) for m in self.measures
                     if m.name in self.per_query]
            for row, qid in enumerate(self.qids.tolist()):
                lines += [format_line(name, qid, values[row], kind) for name, kind, values in shown]
        if summary:
            lines += [format_line(m.name, "all", self.summary[m.name], m.kind) for m in self.measures
                      if m.name in self.summary]
        return "\n".join(lines)

    def output(self, queries: bool = False, summary: bool = True) -> str:
        """What trec_eval writes on stdout, newlines included: :meth:`format`'s lines with each query's
        ``debug`` printouts before its ``-q`` lines (all of them before the summary without ``-q``)."""
        if not self.debug:
            text = self.format(queries, summary)
            return text + "\n" if text else ""
        pieces = []
        each = Evaluation(self.qids, self.measures, self.per_query, self.summary)
        if queries:
            for row, block in enumerate(self.debug):
                pieces.append(block)
                pieces += [line + "\n" for line in each._query_lines(row)]
        else:
            pieces += self.debug
        if summary:
            text = each.format(queries=False, summary=True)
            pieces.append(text + "\n" if text else "")
        return "".join(pieces)

    def _query_lines(self, row: int) -> list[str]:
        qid = self.qids[row]
        return [format_line(m.name, str(qid), self.per_query[m.name][row].item() if hasattr(
            self.per_query[m.name][row], "item") else self.per_query[m.name][row], m.kind)
            for m in self.measures if m.name in self.per_query]


def _c_double(value: float) -> str:
    """printf's ``%6.4f``, NaN included (``-nan`` when its sign bit is set, as glibc prints it)."""
    if value != value:
        return f"{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    return f"{value:6.4f}"


def format_line(name: str, qid: str, value: float | int | str, kind: str = "double") -> str:
    """One trec_eval output line: ``%-22s\\t%s\\t%6.4f`` (``%ld`` for counts, ``%s`` for the runid,
    ``'%s'`` for ``relstring``)."""
    if kind == "runid":
        return f"{name:<22}\t{qid}\t{value}"
    if kind == "string":
        return f"{name:<22}\t{qid}\t'{value}'"
    if kind in ("long", "num_q"):
        return f"{name:<22}\t{qid}\t{int(value)}"
    return f"{name:<22}\t{qid}\t{_c_double(float(value))}"


def evaluate_measures(judgements: Judgements, measures: list[Measure], relevance_level: int = 1,
             version: int = 10, num_docs: int = 0) -> Evaluation:
    """trec_eval's values of ``measures`` on ``judgements``.

    Args:
        judgements: the ranked run (``torchrec_eval.trec.rank_judgements``).
        measures: from :func:`resolve` / :func:`parse_measures` / :func:`from_library`.
        relevance_level: a judgement ``>=`` this is relevant (trec_eval ``-l``, default 1; >= 0).
        version: 10 (trec_eval 10) or 9 (trec_eval 9 and pytrec_eval): they differ in
            ``iprec_at_recall``'s cut-offs only.
        num_docs: documents in the collection (trec_eval ``-N``; ``utility``'s fourth coefficient).

    Raises:
        ValueError: for a negative ``relevance_level`` or an unknown ``version``.
    """
    if relevance_level < 0:
        raise ValueError(f"`relevance_level` must be >= 0, got {relevance_level}")
    if version not in (9, 10):
        raise ValueError(f"`version` must be 9 or 10, got {version!r}")
    stats = Queries(judgements, relevance_level, version, num_docs)
    result = Evaluation(judgements.qids, list(measures))
    for measure in measures:
        if measure.kind in ("runid", "num_q"):  # summary values only: the run tag, the query count
            result.summary[measure.name] = judgements.runid if measure.kind == "runid" else stats.size
            continue
        values = PER_QUERY[measure.family](stats, measure)
        if measure.kind in _PER_QUERY:
            result.per_query[measure.name] = values
        summary = _summary(measure, values, stats)
        if summary is not None:
            result.summary[measure.name] = summary
    return result
