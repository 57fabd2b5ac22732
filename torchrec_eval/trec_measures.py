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
* ``ndcg_cut_k = DCG_k / IDCG_k`` with gain = the judged relevance value (whatever ``-l``), discount
  ``log2(rank + 1)``, the ideal from all the query's judgements; ``ndcg`` without a cut-off
* ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret`` (sums over queries), ``runid`` (the run tag)

A query with ``R = 0`` scores 0 everywhere. Summary values are means over the evaluated queries
(sums for ``num_*``; the geometric mean for ``gm_map``).

Example:
    >>> import numpy as np
    >>> from torchrec_eval.trec_measures import Judgements, evaluate, parse_measures
    >>> judgements = Judgements(  # one query: relevant documents at ranks 1 and 3 of 4, R = 3
    ...     qids=np.array(["q1"]), num_ret=np.array([4]), hit_query=np.array([0, 0, 0]),
    ...     hit_rank=np.array([1, 2, 3]), hit_rel=np.array([1, 0, 2]), judged_query=np.array([0, 0, 0, 0]),
    ...     judged_rel=np.array([1, 0, 2, 1]), runid="bm25")
    >>> result = evaluate(judgements, parse_measures("num_rel") + parse_measures("map") + parse_measures("P.2,4"))
    >>> print(result.format().replace("\\t", " | "))  # name padded to 22, tab, qid, tab, value
    num_rel                | all | 3
    map                    | all | 0.5556
    P_2                    | all | 0.5000
    P_4                    | all | 0.5000
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

__all__ = ["FAMILIES", "OFFICIAL", "Evaluation", "Judgements", "Measure", "evaluate", "parse_measures",
           "from_library"]

MIN_GEO_MEAN = 1e-5  # trec_eval's floor of a query's AP in gm_map
_LONG_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_POINTS = tuple(i / 10 for i in range(11))
# every family, in trec_eval's order (measures.c): the order of its output lines
FAMILIES: dict[str, tuple] = {  # name -> (kind, default cut-offs or None)
    "runid": ("runid", None),
    "num_q": ("num_q", None),
    "num_ret": ("long", None),
    "num_rel": ("long", None),
    "num_rel_ret": ("long", None),
    "map": ("double", None),
    "gm_map": ("geometric", None),
    "Rprec": ("double", None),
    "bpref": ("double", None),
    "recip_rank": ("double", None),
    "iprec_at_recall": ("double", _RECALL_POINTS),
    "P": ("double", _LONG_CUTOFFS),
    "recall": ("double", _LONG_CUTOFFS),
    "ndcg": ("double", None),
    "ndcg_cut": ("double", _LONG_CUTOFFS),
    "map_cut": ("double", _LONG_CUTOFFS),
    "success": ("double", (1, 5, 10)),
    "set_P": ("double", None),
    "set_recall": ("double", None),
    "set_F": ("double", None),
    "num_nonrel_judged_ret": ("long", None),
}
OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
            "iprec_at_recall", "P")  # trec_eval's default set ("official")
_NICKNAMES = {"official": OFFICIAL}
_OUTPUT_NAME = re.compile(r"^(P|recall|ndcg_cut|map_cut|success)_(\d+)$|^(iprec_at_recall)_(\d*\.?\d+)$")
_PER_QUERY = ("long", "double")  # kinds trec_eval prints for each query with -q


@dataclass(frozen=True)
class Measure:
    """One output value: ``name`` as printed, its trec_eval ``family`` and cut-off ``param``."""

    name: str
    family: str
    param: float | None = None

    @property
    def kind(self) -> str:
        return FAMILIES[self.family][0]

    @property
    def order(self) -> tuple[int, float]:
        """Position in trec_eval's output: its family's, then the cut-off."""
        return list(FAMILIES).index(self.family), -1.0 if self.param is None else float(self.param)


def _cut_name(family: str, param: float) -> str:
    return f"{family}_{param:3.2f}" if family == "iprec_at_recall" else f"{family}_{int(param)}"


def _parse_params(family: str, text: str, spec: str) -> list[float]:
    """trec_eval's ``family.p1,p2``: integer cut-offs > 0 (recall points: numbers), sorted, distinct."""
    integer = family != "iprec_at_recall"
    try:
        values = sorted((int if integer else float)(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"measure {spec!r}: the cut-offs after '.' must be {'integers' if integer else 'numbers'} "
                         f"separated by ',', got {text!r}") from None
    if integer and values[0] <= 0:
        raise ValueError(f"measure {spec!r}: cut-offs must be positive, got {text!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"measure {spec!r}: a cut-off is given twice in {text!r}")
    return values


def parse_measures(spec: str) -> list[Measure] | None:
    """The measures a trec_eval name stands for, or None if ``spec`` is not one.

    Accepts trec_eval's ``-m`` forms (``P``: its default cut-offs, ``P.5,10``, ``official``) and its
    output names (``P_10``, ``ndcg_cut_10``, ``iprec_at_recall_0.10``, ``map``, ``bpref``, ...).

    Raises:
        ValueError: for malformed cut-offs of a known family (``P.0``, ``P.5,5``, ``P.x``).
    """
    spec = spec.strip()
    if spec in _NICKNAMES:
        return [measure for name in _NICKNAMES[spec] for measure in parse_measures(name)]
    output = _OUTPUT_NAME.match(spec)
    if output:
        family, param = (output.group(1), output.group(2)) if output.group(1) else (output.group(3), output.group(4))
        return [Measure(spec, family, float(param))]
    family, dot, text = spec.partition(".")
    if family not in FAMILIES:
        return None
    defaults = FAMILIES[family][1]
    if not dot:
        return [Measure(_cut_name(family, p), family, p) for p in defaults] if defaults else [Measure(family, family)]
    if defaults is None:
        raise ValueError(f"measure {spec!r}: {family} takes no parameters")
    return [Measure(_cut_name(family, p), family, p) for p in _parse_params(family, text, spec)]


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


@dataclass
class Judgements:
    """A ranked run against its qrels, trec_eval's ``RES_RELS`` for Q queries at once.

    Attributes:
        qids: [Q] the evaluated query ids, in trec_eval's order (sorted).
        num_ret: [Q] documents retrieved (after ``-M``).
        hit_query, hit_rank, hit_rel: [J] the retrieved documents that have a judgement, in query
            then rank order: their query row, 1-based rank and judged relevance (< 0: unjudged).
        judged_query, judged_rel: [T] every judgement of the evaluated queries, by query row.
        all_relevant: judgements ``> 0`` in the whole qrels (trec_eval's ``num_rel`` summary with -c).
        runid: the run's tag.
        complete: trec_eval ``-c`` (judged queries missing from the run are evaluated, empty).
    """

    qids: np.ndarray
    num_ret: np.ndarray
    hit_query: np.ndarray
    hit_rank: np.ndarray
    hit_rel: np.ndarray
    judged_query: np.ndarray
    judged_rel: np.ndarray
    all_relevant: int = 0
    runid: str = ""
    complete: bool = False


def _first_of_groups(groups: np.ndarray, num: int) -> tuple[np.ndarray, np.ndarray]:
    """(count [num], index of the first element [num]) of each group of a sorted group array."""
    count = np.bincount(groups, minlength=num)
    return count, np.cumsum(count) - count


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (trec_eval leaves those values at 0)."""
    out = np.zeros(len(denominator))
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _suffix_max(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Within each run of equal ``groups``, the maximum of ``values`` from each position to the end
    (pointer doubling: exact, log2 of the longest run passes)."""
    out = values.copy()
    step = 1
    while step < len(out):
        same = groups[step:] == groups[:-step]
        if not same.any():
            break
        np.maximum(out[:-step], np.where(same, out[step:], -np.inf), out=out[:-step])
        step *= 2
    return out


class _Queries:
    """Per-query statistics of :class:`Judgements` at one relevance level, shared by the measures."""

    def __init__(self, j: Judgements, level: int) -> None:
        self.j, self.level, self.size = j, level, len(j.qids)
        rel = j.judged_rel
        self.num_rel = np.bincount(j.judged_query[(rel >= 0) & (rel >= level)], minlength=self.size)
        self.num_nonrel = np.bincount(j.judged_query[(rel >= 0) & (rel < level)], minlength=self.size)
        relevant = j.hit_rel >= level  # unjudged (< 0) documents are never relevant, as level >= 0
        self.query, self.rank = j.hit_query[relevant], j.hit_rank[relevant]
        self.num_rel_ret, first = _first_of_groups(self.query, self.size)
        self.seen = np.arange(1, len(self.query) + 1) - first[self.query]  # relevant so far, this one included
        self.precision = self.seen / self.rank  # at each relevant document
        self.first = first

    def hits_within(self, k: np.ndarray | float) -> np.ndarray:
        """[Q] relevant documents at ranks <= k (k per query or one number)."""
        within = self.rank <= (k[self.query] if isinstance(k, np.ndarray) else k)
        return np.bincount(self.query[within], minlength=self.size)

    def average_precision(self, k: float = math.inf) -> np.ndarray:
        total = np.bincount(self.query, weights=self.precision * (self.rank <= k), minlength=self.size)
        return _ratio(total, self.num_rel)

    def dcg(self, k: float) -> np.ndarray:
        j = self.j
        gained = j.hit_rel > 0
        rank = j.hit_rank[gained]
        terms = j.hit_rel[gained] / np.log2(rank + 1.0)
        return np.bincount(j.hit_query[gained], weights=terms * (rank <= k), minlength=self.size)

    def ideal_dcg(self, k: float) -> np.ndarray:
        j = self.j
        positive = np.flatnonzero(j.judged_rel > 0)
        order = positive[np.lexsort((-j.judged_rel[positive], j.judged_query[positive]))]
        query, gain = j.judged_query[order], j.judged_rel[order]
        _, first = _first_of_groups(query, self.size)
        rank = np.arange(1, len(query) + 1) - first[query]
        return np.bincount(query, weights=gain / np.log2(rank + 1.0) * (rank <= k), minlength=self.size)

    def ndcg(self, k: float = math.inf) -> np.ndarray:
        return _ratio(self.dcg(k), self.ideal_dcg(k))

    def bpref(self) -> np.ndarray:
        j = self.j
        judged = j.hit_rel >= 0
        query, rel = j.hit_query[judged], j.hit_rel[judged]
        nonrel = rel < self.level
        before = np.cumsum(nonrel) - nonrel  # judged non-relevant ranked above, over all queries
        _, first = _first_of_groups(query, self.size)
        before = before - before[first[query]] if len(query) else before
        r, n = self.num_rel[query], self.num_nonrel[query]
        term = np.ones(len(query))
        some = (before > 0) & ~nonrel
        term[some] = 1.0 - np.minimum(before[some], r[some]) / np.minimum(n[some], r[some])
        return _ratio(np.bincount(query[~nonrel], weights=term[~nonrel], minlength=self.size), self.num_rel)

    def iprec_at_recall(self, point: float, version: int) -> np.ndarray:
        exact = point * self.num_rel
        if version >= 10:  # lround: halves away from zero
            cut = np.floor(exact) + (exact - np.floor(exact) >= 0.5)
        else:
            cut = np.trunc(exact + 0.9)
        cut = cut.astype(np.int64)
        best = _suffix_max(self.precision, self.query)
        out = np.zeros(self.size)
        found = (cut <= self.num_rel_ret) & (self.num_rel_ret > 0)
        position = self.first + np.maximum(cut, 1) - 1  # the cut-th relevant document (the first for 0)
        out[found] = best[position[found]]
        return out

    def recip_rank(self) -> np.ndarray:
        out = np.zeros(self.size)
        some = self.num_rel_ret > 0
        out[some] = 1.0 / self.rank[self.first[some]]
        return out


def _per_query(stats: _Queries, measure: Measure, version: int) -> np.ndarray:
    j, family, k = stats.j, measure.family, measure.param
    if family == "num_ret":
        return j.num_ret.astype(np.int64)
    if family == "num_rel":
        return stats.num_rel
    if family == "num_rel_ret":
        return stats.num_rel_ret
    if family == "num_nonrel_judged_ret":
        return np.bincount(j.hit_query[(j.hit_rel >= 0) & (j.hit_rel < stats.level)], minlength=stats.size)
    if family in ("map", "gm_map"):
        return stats.average_precision()
    if family == "map_cut":
        return stats.average_precision(k)
    if family == "Rprec":
        return _ratio(stats.hits_within(np.minimum(stats.num_rel, j.num_ret)), stats.num_rel)
    if family == "bpref":
        return stats.bpref()
    if family == "recip_rank":
        return stats.recip_rank()
    if family == "iprec_at_recall":
        return stats.iprec_at_recall(k, version)
    if family == "P":
        return stats.hits_within(k) / k
    if family == "recall":
        return _ratio(stats.hits_within(k), stats.num_rel)
    if family == "success":
        return (stats.hits_within(k) > 0).astype(np.float64)
    if family == "ndcg":
        return stats.ndcg()
    if family == "ndcg_cut":
        return stats.ndcg(k)
    if family == "set_P":
        return _ratio(stats.num_rel_ret, j.num_ret)
    if family == "set_recall":
        return _ratio(stats.num_rel_ret, stats.num_rel)
    if family == "set_F":  # F1: 2PR / (P + R), when something relevant is retrieved
        p, r = _ratio(stats.num_rel_ret, j.num_ret), _ratio(stats.num_rel_ret, stats.num_rel)
        return _ratio(2.0 * p * r, (p + r) * (stats.num_rel_ret > 0))
    raise ValueError(f"no per-query value for {measure.name!r}")  # pragma: no cover - FAMILIES lists them


def _summary(measure: Measure, values: np.ndarray | None, stats: _Queries) -> float | int | str:
    j, kind = stats.j, measure.kind
    if kind == "runid":
        return j.runid
    if kind == "num_q":
        return stats.size
    if kind == "long":
        if measure.family == "num_rel" and j.complete:
            return j.all_relevant  # trec_eval -c: every judgement > 0 of the qrels, whatever -l
        return int(values.sum())
    if kind == "geometric":
        logs = np.log(np.maximum(values, MIN_GEO_MEAN))
        return math.exp(np.cumsum(logs)[-1] / stats.size) if stats.size else 0.0
    return float(np.cumsum(values)[-1] / stats.size) if stats.size else 0.0  # in query order, as trec_eval


@dataclass
class Evaluation:
    """Per-query values (``per_query[name]`` [Q], for the measures trec_eval prints per query) and
    summary values (``summary[name]``) of a list of measures."""

    qids: np.ndarray
    measures: list[Measure]
    per_query: dict[str, np.ndarray] = field(default_factory=dict)
    summary: dict[str, float | int | str] = field(default_factory=dict)

    def format(self, queries: bool = False, summary: bool = True) -> str:
        """trec_eval's output: with ``queries`` (``-q``) each query's lines first, then (unless
        ``summary`` is False, ``-n``) the ``all`` lines; one ``name\\tqid\\tvalue`` line per value."""
        lines = []
        if queries:
            shown = [m for m in self.measures if m.name in self.per_query]
            for row, qid in enumerate(self.qids.tolist()):
                lines += [format_line(m.name, qid, self.per_query[m.name][row], m.kind) for m in shown]
        if summary:
            lines += [format_line(m.name, "all", self.summary[m.name], m.kind) for m in self.measures]
        return "\n".join(lines)


def format_line(name: str, qid: str, value: float | int | str, kind: str = "double") -> str:
    """One trec_eval output line: ``%-22s\\t%s\\t%6.4f`` (``%ld`` for counts, ``%s`` for the runid)."""
    if kind in ("runid",):
        return f"{name:<22}\t{qid}\t{value}"
    if kind in ("long", "num_q"):
        return f"{name:<22}\t{qid}\t{int(value)}"
    return f"{name:<22}\t{qid}\t{float(value):6.4f}"


def evaluate(judgements: Judgements, measures: list[Measure], relevance_level: int = 1,
             version: int = 10) -> Evaluation:
    """trec_eval's values of ``measures`` on ``judgements``.

    Args:
        judgements: the ranked run (``torchrec_eval.trec.rank_judgements``).
        measures: from :func:`parse_measures` / :func:`from_library`.
        relevance_level: a judgement ``>=`` this is relevant (trec_eval ``-l``, default 1; >= 0).
        version: 10 (trec_eval 10) or 9 (trec_eval 9 and pytrec_eval): they differ in
            ``iprec_at_recall``'s cut-offs only.

    Raises:
        ValueError: for a negative ``relevance_level`` or an unknown ``version``.
    """
    if relevance_level < 0:
        raise ValueError(f"`relevance_level` must be >= 0, got {relevance_level}")
    if version not in (9, 10):
        raise ValueError(f"`version` must be 9 or 10, got {version!r}")
    stats = _Queries(judgements, relevance_level)
    result = Evaluation(judgements.qids, list(measures))
    for measure in measures:
        values = None if measure.kind in ("runid", "num_q") else _per_query(stats, measure, version)
        if measure.kind in _PER_QUERY:
            result.per_query[measure.name] = values
        result.summary[measure.name] = _summary(measure, values, stats)
    return result
