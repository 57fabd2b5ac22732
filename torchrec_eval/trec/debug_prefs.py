"""trec_eval's ``-D LEVEL`` printouts of the preference formats (``-R prefs``, ``-R qrels_prefs``).

trec_eval prints them from ``form_prefs_counts``, which every ``prefs_*`` measure calls once per query
(in its measure table's order, before that query's ``-q`` lines). Each call prints, at level 3 and above,
``Debug: Form_prefs starting query 'Q'``; the first call of a query then builds the query's judgement
groups (JGs), every later call answers from its cache (``Returned Cached Form_prefs``). The first call
prints

* at level 5: the ``Docno_results`` dumps (the ranking by score, docno; after ``-M``, by docno; after
  the unjudged documents are marked ``-1``, by that rank; after the judged retrieved documents get their
  docid ranks, by docno) and the ``Prefs_and_ranks`` dump of the judgements by docno;
* at level 4: ``Form_prefs: num_judged N, num_judged_ret R`` and the ``Final prefs`` dump (by jg, jsg,
  rel_level descending, docid rank);
* at level 3: the ``Results_prefs`` dump: each JG (``EC``: one sub-group, its equivalence classes with
  their docid ranks, 10 a line; ``Prefs_array``: several sub-groups, its transitive preference array,
  20 a line, and its rel_level array, -1.00 for documents it does not judge) with its counters, then
  the counts array of all JGs.

The dumps are of trec_eval's own work arrays, which it keeps from query to query: some columns show
what a previous query left there, and this replays those arrays query by query to print the same. Two
columns are printed before trec_eval writes them: the rank of the first ``Docno_results`` dump and of
the ``Input, before ranks`` dump. Where the previous query left a value in that slot it is that value;
where trec_eval's array was just allocated (the first query, or a query larger than any before) the C
value is indeterminate (what ``malloc`` returns: often 0, sometimes a pointer's bits or what a freed
array left at that address) and this prints 0.

Sorting follows glibc's ``qsort`` (a merge sort: stable), strings compare as ``strcmp`` (bytes), and
the numbers are C's ``%4.2f``, ``%3ld``, ``%2hhd`` and ``%2hd`` (an unsigned short printed signed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from torchrec_eval.trec.parse import decode_keys

if TYPE_CHECKING:
    from torchrec_eval.trec.measures import Evaluation
    from torchrec_eval.trec.tables import Prefs, Run

__all__ = ["PrefsDebug", "debug_evaluation", "prefs_debug_blocks"]

MISSING_DOCNO = b"ceci_nest_pas_un_docno"  # trec_eval -c: the ranking of a query without one
UNKNOWN = None  # a slot of a freshly allocated C array (printed 0)
# the C structs of trec_eval's work arrays, as mutable lists of mixed types
_Result = list[Any]  # [docno, sim, rank]
_Pref = list[Any]  # [jg, jsg, rel_level, docno, rank]


def _bytes(values: np.ndarray) -> list[bytes]:
    return [value.encode("utf-8", "surrogateescape") for value in values.tolist()]


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def _rank(value: int | None) -> str:
    return f"{0 if value is UNKNOWN else value:3d}"


class PrefsDebug:
    """trec_eval's work arrays (``docno_results``, ``prefs_and_ranks``) replayed query after query."""

    def __init__(self, level: int, max_docs: int | None):
        self.level = level
        self.max_docs = max_docs
        self.results: list[_Result] = []  # [docno, sim, rank] slots
        self.prefs: list[_Pref] = []  # [jg, jsg, rel_level, docno, rank] slots
        self.results_bound = 0
        self.prefs_bound = 0

    # trec_eval's te_chk_and_malloc: a new array (its contents unknown) when the bound is passed
    def _reserve_results(self, needed: int) -> None:
        if needed > self.results_bound:
            self.results_bound += needed
            self.results = [[b"", 0.0, UNKNOWN] for _ in range(self.results_bound)]

    def _reserve_prefs(self, needed: int) -> None:
        if needed > self.prefs_bound:
            self.prefs_bound += needed
            self.prefs = [[b"", b"", 0.0, b"", UNKNOWN] for _ in range(self.prefs_bound)]

    def _dump_results(self, out: list[str], count: int, where: str) -> None:
        out.append(f"Docno_results Dump.  num_results {count}, {where}\n")
        out += [f"  {_text(d)}\t{s:4.2f}\t{_rank(r)}\n" for d, s, r in self.results[:count]]

    def _dump_prefs(self, out: list[str], count: int, where: str) -> None:
        out.append(f"Prefs_and_ranks Dump.  num_pref_lines {count},  {where}\n")
        out += [f"  {_text(g)}\t{_text(s)}\t{rel:4.2f}\t{_text(d)}\t{_rank(r)}\n"
                for g, s, rel, d, r in self.prefs[:count]]

    def query(self, qid: str, calls: int, docnos: list[bytes], scores: list[float],
              prefs: list[tuple[bytes, bytes, float, bytes]]) -> str:
        """The printouts of one query's ``calls`` calls of form_prefs_counts: its run (``docnos``,
        ``scores``) and its judgements ``prefs`` (jg, jsg, rel_level, docno) in (docno, file line) order."""
        if calls == 0 or self.level < 3:
            return ""
        out = [f"Debug: Form_prefs starting query '{qid}'\n"]
        self._reserve_prefs(len(prefs))
        nj, njr = self._form_ranks(out, docnos, scores, prefs)
        out.append(_groups_dump(self.prefs[:len(prefs)], nj, njr))
        out += [f"Debug: Form_prefs starting query '{qid}'\n", "Returned Cached Form_prefs\n"] * (calls - 1)
        return "".join(out)

    def _form_ranks(self, out: list[str], docnos: list[bytes], scores: list[float],
                    prefs: list[tuple[bytes, bytes, float, bytes]]) -> tuple[int, int]:
        """form_prefs_counts' ranking steps on the work arrays, with their dumps; returns (nj, njr)."""
        m = self._rank_results(out, docnos, scores)
        self._load_prefs(out, prefs)
        marked = _mark_unjudged(self.results, self.prefs, m, len(prefs))
        if self.level >= 5:
            self._dump_results(out, marked, "After marking not judged")
        njr = _docid_rank_results(self.results, marked)
        if self.level >= 5:
            self._dump_results(out, njr, "After assigning docid_ranks")
        nj = _docid_rank_prefs(self.results, self.prefs, len(prefs), njr)
        if self.level >= 4:
            out.append(f"Form_prefs: num_judged {nj}, num_judged_ret {njr}\n")
            self._dump_prefs(out, len(prefs), "Final prefs")
        return nj, njr

    def _rank_results(self, out: list[str], docnos: list[bytes], scores: list[float]) -> int:
        """The run into ``results``: sorted by score, ranked, cut at ``-M``, sorted by docno; returns
        the number kept."""
        n = len(docnos)
        self._reserve_results(n)
        res = self.results
        for i in range(n):
            res[i][0], res[i][1] = docnos[i], scores[i]
        res[:n] = sorted(res[:n], key=lambda e: (-e[1], e[0]))
        if self.level >= 5:
            self._dump_results(out, n, "After input, before ranks")
        m = n if self.max_docs is None else min(n, self.max_docs)
        for i in range(m):
            res[i][2] = i + 1
        res[:m] = sorted(res[:m], key=lambda e: e[0])
        if self.level >= 5:
            self._dump_results(out, m, "After -M, ranks")
        return m

    def _load_prefs(self, out: list[str], prefs: list[tuple[bytes, bytes, float, bytes]]) -> None:
        """The judgements into ``prefs`` (their rank slots left as they were), sorted by docno."""
        num_prefs = len(prefs)
        par = self.prefs
        for i, (jg, jsg, rel, docno) in enumerate(prefs):
            par[i][:4] = [jg, jsg, rel, docno]
        par[:num_prefs] = sorted(par[:num_prefs], key=lambda e: e[3])
        if self.level >= 5:
            self._dump_prefs(out, num_prefs, "Input, before ranks")

def _mark_unjudged(res: list[_Result], par: list[_Pref], m: int, num_prefs: int) -> int:
    """Ranks -1 for the first ``m`` results ``res`` without judgements (``res`` and the judgements ``par``
    in docno order), stopping after the last judged docno; sorts the results walked by rank and returns
    their number."""
    ptr, i = 0, 0
    while i < m and ptr < num_prefs:
        docno = res[i][0]
        while ptr < num_prefs and par[ptr][3] < docno:
            ptr += 1
        if ptr < num_prefs and par[ptr][3] == docno:
            while ptr < num_prefs and par[ptr][3] == docno:
                ptr += 1
        else:
            res[i][2] = -1
        i += 1
    res[:i] = sorted(res[:i], key=lambda e: e[2])
    return i


def _docid_rank_results(res: list[_Result], count: int) -> int:
    """The judged ones of the first ``count`` results ``res`` moved down with their docid ranks
    0 .. njr - 1 (a score stays where it was), then sorted by docno; returns njr."""
    njr = 0
    for k in range(count):
        if res[k][2] > -1:
            res[njr][0], res[njr][2] = res[k][0], njr
            njr += 1
    res[:njr] = sorted(res[:njr], key=lambda e: e[0])
    return njr


def _docid_rank_prefs(res: list[_Result], par: list[_Pref], num_prefs: int, njr: int) -> int:
    """The docid ranks of the judgements ``par``: a retrieved document's from ``res``, the others njr..
    in docno order; then sorted by (jg, jsg, rel_level descending, docid rank). Returns nj."""
    rank_of = {res[k][0]: res[k][2] for k in range(njr)}
    nj = njr
    previous = None
    for entry in par[:num_prefs]:
        docno = entry[3]
        if docno != previous:
            previous = docno
            if docno in rank_of:
                current = rank_of[docno]
            else:
                current, nj = nj, nj + 1
        entry[4] = current
    par[:num_prefs] = sorted(par[:num_prefs], key=lambda e: (e[0], e[1], -e[2], e[4]))
    return nj


def _groups_dump(entries: list[_Pref], nj: int, njr: int) -> str:
    """The ``Results_prefs`` dump of a query's judgements ``entries`` (in their final order): each JG,
    then the counts array of all of them."""
    num_prefs = len(entries)
    heads = [i for i in range(num_prefs) if i == 0 or entries[i][0] != entries[i - 1][0]]
    counts = np.zeros((nj, nj), dtype=np.int64)
    groups = []
    for start, end in zip(heads, heads[1:] + [num_prefs], strict=True):
        jg = entries[start:end]
        if len({e[1] for e in jg}) > 1:
            groups.append(_array_group(jg, nj, njr, counts))
        else:
            groups.append(_class_group(jg, njr, counts))
    out = [f"Results_prefs Dump.  {len(groups)} Judgment Groups\n", f"  num_judged_ret {njr},  num_judged {nj}\n"]
    out += groups
    out.append(f"  Counts_Array Dump. Num_judged {nj}")
    signed = ((counts + 32768) % 65536 - 32768).tolist()  # unsigned short, printed with %hd
    for i, row in enumerate(signed):
        out.append(f"\n    Row {i:3d}\n    ")
        out.append(_row(row, "%2d ", "    (%d)\n   "))
    out.append("\n")
    return "".join(out)


def _row(values: list[int], each: str, every20: str) -> str:
    parts = []
    for j, value in enumerate(values):
        if j and j % 20 == 0:
            parts.append(every20 % j)
        parts.append(each % value)
    return "".join(parts)


def _counters(ful_ret: int, poss_ret: int, ful_imp: int, poss_imp: int, notoccur: int, nonrel: int, nonrel_ret: int,
              rel: int, rel_ret: int) -> str:
    names = ("num_prefs_fulfilled_ret", "num_prefs_possible_ret", "num_prefs_fulfilled_imp",
             "num_prefs_possible_imp", "num_prefs_possible_notoccur", "num_nonrel", "num_nonrel_ret", "num_rel",
             "num_rel_ret")
    values = (ful_ret, poss_ret, ful_imp, poss_imp, notoccur, nonrel, nonrel_ret, rel, rel_ret)
    return "".join(f"    {name} {int(value)}\n" for name, value in zip(names, values, strict=True))


def _areas(a: np.ndarray, njr: int) -> tuple[int, int, int, int, int]:
    """(fulfilled retrieved, possible retrieved, fulfilled implied, possible implied, neither retrieved)
    of the preferences ``a`` [nj, nj] (row preferred to column)."""
    ret = np.arange(a.shape[0]) < njr
    upper = np.triu(np.ones(a.shape, dtype=bool), 1)
    both = ret[:, None] & ret[None, :]
    ful_ret = int((a & both & upper).sum())
    poss_ret = int((a & both).sum())
    ful_imp = int((a & ret[:, None] & ~ret[None, :]).sum())
    poss_imp = ful_imp + int((a & ~ret[:, None] & ret[None, :]).sum())
    notoccur = int((a & ~ret[:, None] & ~ret[None, :]).sum())
    return ful_ret, poss_ret, ful_imp, poss_imp, notoccur


def _class_group(jg: list[_Pref], njr: int, counts: np.ndarray) -> str:
    """An EC JG (one sub-group): its classes by rel_level, descending; docid ranks ascending."""
    classes: list[tuple[float, list[int]]] = []
    for _, _, rel, _, rank in jg:
        if not classes or classes[-1][0] != rel:
            classes.append((rel, []))
        classes[-1][1].append(rank)
    ful_ret = poss_ret = ful_imp = poss_imp = notoccur = 0
    nonrel = nonrel_ret = rel_n = rel_ret = 0
    for index, (rel, ranks) in enumerate(classes):
        retrieved = 0
        while retrieved < len(ranks) and ranks[retrieved] < njr:
            retrieved += 1
        if rel > 0.0:
            rel_ret, rel_n = rel_ret + retrieved, rel_n + len(ranks)
        else:
            nonrel_ret, nonrel = nonrel_ret + retrieved, nonrel + len(ranks)
        lower = np.array([r for _, rs in classes[index + 1:] for r in rs], dtype=np.int64)
        upper = np.array(ranks, dtype=np.int64)
        if not len(lower):
            continue
        a, b = np.repeat(upper, len(lower)), np.tile(lower, len(upper))
        np.add.at(counts, (a, b), 1)
        a_ret, b_ret = a < njr, b < njr
        ful = a < b
        ful_ret += int((ful & b_ret).sum())
        ful_imp += int((ful & ~b_ret & a_ret).sum())
        notoccur += int((~a_ret & ~b_ret).sum())
        poss_ret += int((~ful & a_ret).sum())
        poss_imp += int((~ful & ~a_ret & b_ret).sum())
    text = ["  JG Dump.  Type EC\n",
            _counters(ful_ret, poss_ret + ful_ret, ful_imp, poss_imp + ful_imp, notoccur, nonrel, nonrel_ret, rel_n,
                      rel_ret),
            f"    Dump of {len(classes)} ECs within JG\n"]
    for rel, ranks in classes:
        text.append(f"    EC Dump. Rel_level {rel:4.2f}. Num_docid_ranks {len(ranks)}")
        for i, rank in enumerate(ranks):
            if i % 10 == 0:
                text.append("\n      ")
            text.append(f"{rank:3d} ")
        text.append("\n")
    return "".join(text)


def _array_group(jg: list[_Pref], nj: int, njr: int, counts: np.ndarray) -> str:
    """A JG of several sub-groups: the preference array (row preferred to column), transitively closed."""
    levels = np.full(nj, -1.0)
    a = np.zeros((nj, nj), dtype=bool)
    start = 0
    for end in range(1, len(jg) + 1):
        if end < len(jg) and jg[end][1] == jg[start][1]:
            continue
        sub = jg[start:end]  # one sub-group, rel_level descending
        rel = np.array([e[2] for e in sub])
        rank = np.array([e[4] for e in sub], dtype=np.int64)
        for _, _, level, _, r in sub:
            levels[r] = level  # entries in (jsg, rel desc, rank) order: the last written stays
        above, below = np.nonzero(rel[:, None] > rel[None, :])
        a[rank[above], rank[below]] = True
        start = end
    for k in range(nj):  # Warshall: the transitive preferences (trec_eval multiplies until no change)
        a |= a[:, k:k + 1] & a[k:k + 1, :]
    np.fill_diagonal(a, False)
    counts += a
    ret = np.arange(nj) < njr
    positive, zero = levels > 0.0, levels == 0.0
    text = ["  JG Dump.  Type Prefs_array\n",
            _counters(*_areas(a, njr), int(zero.sum()), int((zero & ret).sum()), int(positive.sum()),
                      int((positive & ret).sum())),
            f"    Prefs_Array Dump. Num_judged {nj}"]
    for i, row in enumerate(a.astype(np.int64).tolist()):
        text.append(f"\n      Row {i:3d}\n      ")
        text.append(_row(row, "%2d", "    (%d)\n     "))
    text.append("\n")
    text.append(f"    Rel_array Dump. {nj} values")
    for i, level in enumerate(levels.tolist()):
        if i % 10 == 0:
            text.append("\n      ")
        text.append(f"{level:4.2f} ")
    text.append("\n")
    return "".join(text)


def prefs_debug_blocks(run: Run, prefs: Prefs, rel_format: str, qids: Sequence[str], calls: int, level: int,
                       max_docs: int | None) -> list[str]:
    """trec_eval's ``-D level`` printouts of each evaluated query ``qids`` (in order), ``calls`` the number
    of ``prefs_*`` measures asked (each calls form_prefs_counts): one str per query, for
    :meth:`torchrec_eval.trec.measures.Evaluation.output`. ``run`` a :class:`torchrec_eval.trec.Run`,
    ``prefs`` a :class:`torchrec_eval.trec.tables.Prefs` read as ``rel_format``."""
    if level < 3 or calls == 0:
        return [""] * len(qids)
    state = PrefsDebug(level, max_docs)
    run_q = {q: i for i, q in enumerate(run.queries.tolist())}
    prefs_q = {q: i for i, q in enumerate(prefs.queries.tolist())}
    run_order = np.argsort(run.query_index, kind="stable")
    run_bounds = np.searchsorted(run.query_index[run_order], np.arange(len(run.queries) + 1))
    prefs_order = np.lexsort((prefs.line, prefs.query_index))
    prefs_bounds = np.searchsorted(prefs.query_index[prefs_order], np.arange(len(prefs.queries) + 1))
    blocks = []
    for qid in qids:
        if qid in run_q:
            rows = run_order[run_bounds[run_q[qid]]:run_bounds[run_q[qid] + 1]]
            ranking = sorted(zip(_bytes(decode_keys(run.doc_key[rows])), run.score[rows].tolist(), strict=True),
                             key=lambda e: e[0])  # trec_eval reads a run in (qid, docno) order
            docnos, scores = [e[0] for e in ranking], [e[1] for e in ranking]
        else:  # -c: trec_eval's stand-in ranking of one document
            docnos, scores = [MISSING_DOCNO], [1.0]
        rows = prefs_order[prefs_bounds[prefs_q[qid]]:prefs_bounds[prefs_q[qid] + 1]]
        jgs = _bytes(decode_keys(prefs.jg_key[rows]))
        jsgs = [b"0"] * len(rows) if rel_format == "qrels_prefs" else _bytes(decode_keys(prefs.jsg_key[rows]))
        docs = _bytes(decode_keys(prefs.doc_key[rows]))
        entries = sorted(zip(jgs, jsgs, prefs.rel[rows].tolist(), docs, strict=True), key=lambda e: e[3])
        blocks.append(state.query(qid, calls, docnos, scores, entries))
    return blocks


def debug_evaluation(rel_format: str, run: Run, judgements_path: str, result: Evaluation, debug: tuple[int, str | None],
                     max_docs: int | None) -> list[str] | None:
    """The printouts of ``trec_eval -R rel_format -D LEVEL[.QID]`` for the queries of ``result`` (an
    :class:`torchrec_eval.trec.measures.Evaluation`); None below level 3. Reads the judgements again."""
    from torchrec_eval.trec.formats import only_query
    from torchrec_eval.trec.prefs import read_prefs, read_qrels_prefs

    level, qid = debug
    calls = sum(measure.kind in ("long", "double") for measure in result.measures)
    if level < 3 or calls == 0:
        return None
    prefs = (read_prefs if rel_format == "prefs" else read_qrels_prefs)(judgements_path)
    if qid is not None:
        run, prefs = only_query(run, qid), only_query(prefs, qid)
    return prefs_debug_blocks(run, prefs, rel_format, result.qids.tolist(), calls, level, max_docs)
