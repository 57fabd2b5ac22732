"""What trec_eval's measures compute, in a few lines each: ``torchrec-eval evaluate -h -m NAME``.

trec_eval's ``-h -m NAME`` prints its own documentation of the measures named; this module has ours,
written for this package, for every measure ``torchrec-eval evaluate`` computes (qrels, preference and
judgement-group measures), its nicknames and its default parameters.

Example:
    >>> from torchrec_eval.trec.help import describe
    >>> print(describe(["P.5,10"]).splitlines()[0])
    P
"""

from __future__ import annotations

from collections.abc import Sequence

from torchrec_eval.trec.spec import MEASURE_FAMILIES, NICKNAMES, ORDER

__all__ = ["DESCRIPTIONS", "describe", "nicknames"]

_PREFS = "Preferences (-R prefs or -R qrels_prefs): "
_JG = "Judgement groups (-R qrels_jg): "
DESCRIPTIONS: dict[str, str] = {
    "runid": "The run's tag (its sixth column).",
    "num_q": "Number of queries evaluated.",
    "num_ret": "Number of documents retrieved (after -M, and -J).",
    "num_rel": "Number of relevant documents (judgement >= -l).",
    "num_rel_ret": "Number of relevant documents retrieved.",
    "map": "Mean average precision: the precision at each relevant document retrieved, summed and divided by\n"
           "the number of relevant documents.",
    "gm_map": "Geometric mean of the queries' average precisions (each at least 0.00001); summary only.",
    "Rprec": "Precision after R documents, R the number of relevant documents.",
    "bpref": "Binary preference: how few judged non-relevant documents rank above each relevant one\n"
             "(among the first R judged non-relevant ones), averaged over the relevant documents.",
    "recip_rank": "Reciprocal rank of the first relevant document (0 if none is retrieved).",
    "iprec_at_recall": "Interpolated precision at recall levels: the highest precision at or after the\n"
                       "lround(level * R)-th relevant document.",
    "P": "Precision at cut-offs: relevant documents among the first k, divided by k (missing documents\n"
         "count as non-relevant).",
    "relstring": "The relevance of the first documents as a string (a digit per judged document, '-' not\n"
                 "judged, '.' a judgement below 0, '>' above 9); per query only.",
    "recall": "Recall at cut-offs: relevant documents among the first k, divided by R.",
    "infAP": "Inferred average precision: average precision estimated from a sampled pool (judgement -1:\n"
             "in the pool, not judged).",
    "gm_bpref": "Geometric mean of the queries' bpref (each at least 0.00001); summary only.",
    "Rprec_mult": "Precision after (multiple * R) documents.",
    "utility": "Linear utility a*rel_ret + b*nonrel_ret + c*rel_not_ret + d*nonrel_not_ret (coefficients\n"
               "a,b,c,d; d needs the collection size, -N).",
    "11pt_avg": "Mean interpolated precision over recall levels (eleven: 0.0, 0.1, ..., 1.0).",
    "binG": "Binary G: each relevant document retrieved counts 1 / log2(2 + the non-relevant documents\n"
            "retrieved above it); their sum divided by R.",
    "G": "Gain (undiscounted) of the documents retrieved, divided by the ideal ranking's, with a gain per\n"
         "judgement level (level=gain pairs; default: the level itself).",
    "dcg": "Discounted cumulative gain: gain / log2(rank + 1), summed (level=gain pairs).",
    "ideal_dcg": "dcg of the ideal ranking of the judged documents (level=gain pairs).",
    "ndcg": "Normalised dcg: dcg divided by the ideal ranking's, over the whole ranking (level=gain pairs;\n"
            "every judged grade is its gain, whatever -l).",
    "ndcg_rel": "ndcg averaged over the relevant documents' ranks (level=gain pairs).",
    "Rndcg": "ndcg over the first R documents (level=gain pairs).",
    "ndcg_cut": "ndcg at cut-offs: dcg of the first k documents over the ideal ranking's first k.",
    "map_cut": "Average precision at cut-offs: precision at each relevant document among the first k, summed\n"
               "and divided by R.",
    "relative_P": "Precision at cut-offs relative to the best possible: relevant among the first k, divided\n"
                  "by min(k, R).",
    "success": "Success at cut-offs: 1 if a relevant document is among the first k, else 0.",
    "set_P": "Precision of the whole retrieved set: rel_ret / num_ret.",
    "set_relative_P": "Precision of the set relative to the best possible: rel_ret / min(num_ret, R).",
    "set_recall": "Recall of the whole retrieved set: rel_ret / R.",
    "set_map": "set_P times set_recall.",
    "set_F": "F measure of the set: (1 + beta^2) P R / (beta^2 P + R) (parameter beta, default 1).",
    "num_nonrel_judged_ret": "Number of judged non-relevant documents retrieved.",
    "yaap": "Yet another average precision (Robertson, ECIR 2012): log((1 + S) / (1 + R - S)), S the sum over\n"
            "the relevant documents retrieved of the relevant ones above each divided by its rank.",
    "rbp": "Rank-biased precision: (1 - p) times the gains discounted by p^(rank - 1) (p=0.9 by default;\n"
           "level=gain pairs, gains scaled into [0, 1]).",
    "rbp_resid": "rbp's residual: how much rbp could still rise if the unjudged documents (and those after\n"
                 "the ranking) were relevant.",
    "unj": "Fraction of the first k documents that are not judged, at cut-offs.",
    "prefs_num_prefs_poss": _PREFS + "number of preferences the judgements imply.",
    "prefs_num_prefs_ful": _PREFS + "number of those preferences the ranking fulfils (unretrieved\n"
                                    "documents rank after retrieved ones).",
    "prefs_num_prefs_ful_ret": _PREFS + "number of preferences fulfilled among retrieved documents only.",
    "prefs_simp": _PREFS + "fraction of the possible preferences fulfilled.",
    "prefs_pair": _PREFS + "fraction of preferences fulfilled, averaged over the pairs of judgement levels.",
    "prefs_avgjg": _PREFS + "prefs_simp within each judgement group, averaged over the groups.",
    "prefs_avgjg_Rnonrel": _PREFS + "prefs_avgjg as if each group had as many non-relevant documents\n"
                                    "retrieved as relevant ones (akin to bpref).",
    "prefs_simp_ret": _PREFS + "prefs_simp over the retrieved documents only.",
    "prefs_pair_ret": _PREFS + "prefs_pair over the retrieved documents only.",
    "prefs_avgjg_ret": _PREFS + "prefs_avgjg over the retrieved documents only.",
    "prefs_avgjg_Rnonrel_ret": _PREFS + "prefs_avgjg_Rnonrel over the retrieved documents only.",
    "prefs_simp_imp": _PREFS + "prefs_simp with implied preferences (transitivity) counted.",
    "prefs_pair_imp": _PREFS + "prefs_pair with implied preferences counted.",
    "prefs_avgjg_imp": _PREFS + "prefs_avgjg with implied preferences counted.",
    "map_avgjg": _JG + "map within each judgement group, averaged over the groups.",
    "P_avgjg": _JG + "P at cut-offs within each judgement group, averaged over the groups.",
    "Rprec_mult_avgjg": _JG + "Rprec_mult within each judgement group, averaged over the groups.",
}


def nicknames() -> dict[str, tuple[str, ...]]:
    """Every nickname (``official``, ``all_trec``, ``set``, ``all_prefs``, ``prefs``, ``qrels_jg``) and its measures."""
    from torchrec_eval.trec import jg, prefs

    return {**NICKNAMES, **prefs.NICKNAMES, **jg.NICKNAMES}


def _defaults(family: str) -> str:
    from torchrec_eval.trec.jg import JG_FAMILIES

    values = MEASURE_FAMILIES[family].defaults if family in MEASURE_FAMILIES else (JG_FAMILIES.get(family, (None,))[0] or ())
    if not values:
        return ""
    text = ",".join(f"{v:g}" for v in values)
    return f"\n    Default: -m {family}.{text}"


def describe(names: Sequence[str]) -> str:
    """The descriptions of the measures ``names`` ask for (trec_eval's ``-m`` arguments: ``P.5,10``,
    ``P_10``, nicknames), each once, in trec_eval's order.

    Raises:
        ValueError: naming the first name that is no measure.
    """
    groups = nicknames()
    wanted: set[str] = set()
    for spec in names:
        base = spec.strip().partition(".")[0]
        family = base if base in DESCRIPTIONS else base.rsplit("_", 1)[0]
        if base in groups:
            wanted.update(groups[base])
        elif family in DESCRIPTIONS:
            wanted.add(family)
        else:
            raise ValueError(f"unknown measure {spec!r}: -h -m describes trec_eval's measures ({', '.join(ORDER)}; "
                             f"nicknames: {', '.join(groups)})")
    return "\n".join(f"{family}\n    " + DESCRIPTIONS[family].replace("\n", "\n    ") + _defaults(family)
                     for family in ORDER if family in wanted)
