"""The metric names of ``-m``: the library's (``ndcg@10``) and trec_eval's (``P_10``, ``P.5,10``, ``official``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from torchrec_eval.cli.errors import CliError

if TYPE_CHECKING:
    from torchrec_eval.trec.measures import Measure

DEFAULT_METRICS = ["ndcg@10", "map@100", "recall@100", "precision@10", "mrr"]

# trec_eval's measure names, for its users: "P_10" is precision@10, "set_recall" recall of the whole list
_TREC_CUT = re.compile(r"^(P|recall|ndcg_cut|map_cut|success)_(\d+)$")
_TREC_FAMILY = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map", "success": "hitrate"}
_TREC_BARE = {"Rprec": "rprecision", "recip_rank": "mrr", "set_recall": "recall", "map": "map", "ndcg": "ndcg"}
_CANONICAL = ("precision", "recall", "ndcg", "map", "mrr", "hitrate", "rprecision")  # need no alias table


def metric_family(name: str) -> tuple[str, str]:
    """(metric family, cut-off or "") of a name: ours (``ndcg@10``) or trec_eval's (``ndcg_cut_10``)."""
    name = name.strip()
    trec = _TREC_CUT.match(name)
    if trec:
        return _TREC_FAMILY[trec.group(1)], _checked_cutoff(name, trec.group(2))
    if name in _TREC_BARE:
        return _TREC_BARE[name], ""
    family, at, cutoff = name.lower().partition("@")
    if at:
        _checked_cutoff(name, cutoff)
    if family in _CANONICAL:
        return family, cutoff
    from torchrec_eval.metrics.families import canonical  # imports torch: only for the other names
    from torchrec_eval.ranking import families as _  # noqa: F401  (registers every top-k family)

    return canonical(family), cutoff


def _checked_cutoff(name: str, cutoff: str) -> str:
    """The cut-off of ``name``; a bad one is the user's problem to hear about, not an "unknown metric"."""
    if not (cutoff.isascii() and cutoff.isdigit() and int(cutoff) > 0):
        raise CliError(f"metric {name!r}: the cut-off must be a positive integer (as in ndcg@10 or P_10), "
                       f"got {cutoff!r}")
    return cutoff


def split_metric_names(values: Sequence[str] | None, default: Sequence[str] = DEFAULT_METRICS) -> list[str]:
    """``["ndcg@10,map@100", "mrr"]`` -> ``["ndcg@10", "map@100", "mrr"]``; ``default`` if empty.

    trec_eval's ``P.5,10`` keeps its comma (the cut-offs of one measure), as does any ``NAME.PARAMS`` of a
    trec_eval family (``utility.2,-1,0,0``, ``rbp.1=2,p=0.8``)."""
    from torchrec_eval.trec.spec import MEASURE_FAMILIES, NICKNAMES

    names = []
    for value in values or []:
        family, dot, _ = value.strip().partition(".")
        if dot and (family in MEASURE_FAMILIES or family in NICKNAMES):
            names.append(value.strip())
            continue
        for part in re.split(r",(?![\d.])", value):  # a comma before a digit or '.' separates cut-offs
            if part.strip():
                names.append(part.strip())
    return names or list(default)


def reads_judgments(names: Sequence[str]) -> bool:
    """Whether a metric of ``names`` reads which documents are judged (bpref, Judged@k, infAP): the TREC files'
    judged non-relevant documents (and the pooled but unjudged ones) are then targets too."""
    from torchrec_eval.ranking import families as _  # noqa: F401  (registers every top-k family)
    from torchrec_eval.ranking.registry import REGISTRY

    families = (metric_family(name)[0] for name in names)
    return any(family in REGISTRY and REGISTRY[family].reads_judged for family in families)


def trec_measures(names: Sequence[str]) -> list[Measure] | None:
    """The trec_eval measures ``names`` ask for (trec_eval's names, or ours that equal one of its measures
    under ``--convention trec``), or None if one of them is not a trec_eval measure.

    trec_eval's ``-m`` rules hold (``torchrec_eval.trec.spec.resolve``): a measure asked for twice is
    evaluated once, the first parameters given to a family win. A trec_eval name means trec_eval's
    measure: ``recall`` is its ``recall_5`` ... ``recall_1000`` (the library's whole-list ``recall`` is
    ``set_recall`` there)."""
    from torchrec_eval.trec.measures import from_library, resolve
    from torchrec_eval.trec.spec import UnknownMeasure

    def library(name: str) -> Measure | None:
        family, cutoff = metric_family(name)
        return from_library(name, family, cutoff)

    try:
        return resolve(names, library)
    except UnknownMeasure:
        return None
    except ValueError as error:
        raise CliError(str(error)) from None


def trec_only(name: str) -> bool:
    """A trec_eval measure that the library has no metric for (bpref, num_q, P.5,10, official, ...)."""
    from torchrec_eval.trec.measures import parse_measures

    if _TREC_CUT.match(name) or name in _TREC_BARE or name == "recall":
        return False
    try:
        return parse_measures(name) is not None
    except ValueError:
        return True
