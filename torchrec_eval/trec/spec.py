"""trec_eval's measure names, parameters and nicknames: what its ``-m`` arguments ask for.

trec_eval (version 10, ``measures.c``) knows a list of measure *families* in a fixed order, the order
of its output lines. ``-m NAME`` marks a family (or every family of a nickname: ``official``,
``all_trec``, ``set``); ``-m NAME.PARAMS`` also gives the family its parameters, and the first
``-m`` that gives a family parameters wins. Marking a family twice is harmless. The parameters are
read as trec_eval reads them (``atol`` / ``atof``: ``23.4`` as an integer cut-off is 23):

* integer cut-offs (``P.5,7,3``; ``recall``, ``ndcg_cut``, ``map_cut``, ``success``, ``relative_P``,
  ``unj``): sorted, each ``> 0`` and distinct; one output ``P_3``, ``P_5``, ... per cut-off;
* number cut-offs (``iprec_at_recall..10,.20``, ``Rprec_mult.0.2,1.0``): sorted and distinct, printed
  ``%3.2f`` (``iprec_at_recall_0.10``);
* numbers (``utility.2,-1,0,0`` coefficients, ``11pt_avg..25,.5`` recall points, ``set_F.0.5`` beta,
  ``relstring.20`` length): one output named ``utility_2,-1,0,0`` (the text as given);
* ``level=gain`` pairs (``ndcg.1=3,2=9,4=4.5``; ``dcg``, ``ideal_dcg``, ``ndcg_rel``, ``Rndcg``, ``G``,
  ``rbp`` and ``rbp_resid``, which also read ``p=0.8``): one output ``ndcg_1=3,2=9,4=4.5``.

A family that takes no parameters ignores them (``map.5`` is ``map``), as trec_eval does. Output names
(``P_10``, ``ndcg_cut_20``, ``iprec_at_recall_0.10``, ``Rprec_mult_0.20``) are accepted too, each one
measure.

Example:
    >>> from torchrec_eval.trec.spec import resolve
    >>> [m.name for m in resolve(["P.5,7,3", "ndcg.1=3,2=9", "P.10", "map.1"])]
    ['P_3', 'P_5', 'P_7', 'ndcg_1=3,2=9', 'map']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MEASURE_FAMILIES", "NICKNAMES", "OFFICIAL", "ORDER", "Family", "Measure", "UnknownMeasure", "parse_measures",
           "resolve"]

_LONG_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


class UnknownMeasure(ValueError):
    """A ``-m`` argument that names no trec_eval measure."""


@dataclass(frozen=True)
class Family:
    """A trec_eval measure family: ``kind`` of value (``double``, ``long``, ``geometric``: printed for
    the summary only, ``string``: for each query only, ``runid``, ``num_q``), ``params``: how its
    parameters read (None, ``long_cuts``, ``double_cuts``, ``numbers``, ``pairs``), and its defaults."""

    kind: str
    params: str | None = None
    defaults: tuple[float, ...] = ()


# trec_eval's measures, in its order (measures.c), which is the order of its output lines; the
# preference and judgement-group measures (-R prefs, -R qrels_jg) are handled elsewhere
ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
         "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
         "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success",
         "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret",
         "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
         "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
         "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp", "map_avgjg", "P_avgjg",
         "Rprec_mult_avgjg", "yaap", "rbp", "rbp_resid", "unj")
_PAIRS = Family("double", "pairs")
MEASURE_FAMILIES: dict[str, Family] = {
    "runid": Family("runid"), "num_q": Family("num_q"), "num_ret": Family("long"), "num_rel": Family("long"),
    "num_rel_ret": Family("long"), "map": Family("double"), "gm_map": Family("geometric"),
    "Rprec": Family("double"), "bpref": Family("double"), "recip_rank": Family("double"),
    "iprec_at_recall": Family("double", "double_cuts", tuple(i / 10 for i in range(11))),
    "P": Family("double", "long_cuts", _LONG_CUTOFFS), "relstring": Family("string", "numbers", (10.0,)),
    "recall": Family("double", "long_cuts", _LONG_CUTOFFS), "infAP": Family("double"),
    "gm_bpref": Family("geometric"), "Rprec_mult": Family("double", "double_cuts", tuple(i / 5 for i in range(1, 11))),
    "utility": Family("double", "numbers", (1.0, -1.0, 0.0, 0.0)),
    "11pt_avg": Family("double", "numbers", tuple(i / 10 for i in range(11))), "binG": Family("double"),
    "G": _PAIRS, "dcg": _PAIRS, "ideal_dcg": _PAIRS, "ndcg": _PAIRS, "ndcg_rel": _PAIRS, "Rndcg": _PAIRS,
    "ndcg_cut": Family("double", "long_cuts", _LONG_CUTOFFS), "map_cut": Family("double", "long_cuts", _LONG_CUTOFFS),
    "relative_P": Family("double", "long_cuts", _LONG_CUTOFFS), "success": Family("double", "long_cuts", (1, 5, 10)),
    "set_P": Family("double"), "set_relative_P": Family("double"), "set_recall": Family("double"),
    "set_map": Family("double"), "set_F": Family("double", "numbers", (1.0,)),
    "num_nonrel_judged_ret": Family("long"), "yaap": Family("double"), "rbp": _PAIRS, "rbp_resid": _PAIRS,
    "unj": Family("double", "long_cuts", (5, 10, 20)),
}
OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
            "iprec_at_recall", "P")  # trec_eval's default set
NICKNAMES = {
    "official": OFFICIAL,
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP",
                 "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
}
_OUTPUT_NAME = re.compile(r"^(P|recall|ndcg_cut|map_cut|success|relative_P|unj)_(\d+)$"
                          r"|^(iprec_at_recall|Rprec_mult)_(\d*\.?\d+)$")
_ATOL = re.compile(r"\s*([+-]?\d+)")
_ATOF = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


@dataclass(frozen=True)
class Measure:
    """One output of trec_eval: ``name`` as printed, its ``family``, its cut-off ``param`` (cut-off
    families) and ``args``: the family's numbers or ``(level, gain)`` pairs (parameter families)."""

    name: str
    family: str
    param: float | None = None
    args: tuple[Any, ...] = ()  # numbers or (level, gain) pairs, by family

    @property
    def kind(self) -> str:
        return MEASURE_FAMILIES[self.family].kind

    @property
    def cut(self) -> float:
        """The cut-off ``param`` of a cut-off family's measure (``P_10``: 10.0)."""
        if self.param is None:
            raise ValueError(f"measure {self.name!r} has no cut-off")
        return self.param

    @property
    def order(self) -> tuple[int, float]:
        """Position in trec_eval's output: its family's, then the cut-off."""
        return ORDER.index(self.family), -1.0 if self.param is None else float(self.param)


def atol(text: str) -> int:
    """C's ``atol``: the integer at the start of ``text`` (after blanks), 0 if none."""
    match = _ATOL.match(text)
    return int(match.group(1)) if match else 0


def atof(text: str) -> float:
    """C's ``atof`` on decimal numbers: the number at the start of ``text``, 0.0 if none."""
    match = _ATOF.match(text)
    return float(match.group(1)) if match else 0.0


def _cutoffs(family: str, text: str, integer: bool) -> list[float]:
    values = sorted(atol(part) if integer else atof(part) for part in text.split(","))
    if integer and values[0] <= 0:
        raise ValueError(f"measure '{family}.{text}': cut-offs must be positive integers (read as trec_eval "
                         f"does, '23.4' is 23), got {text!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"measure '{family}.{text}': a cut-off is given twice in {text!r}")
    return values


def _pairs(family: str, text: str) -> tuple[tuple[str, float], ...]:
    parts = [part.split("=") for part in text.split(",")]
    if any(len(part) != 2 or not part[0] for part in parts):
        raise ValueError(f"measure '{family}.{text}': parameters must be 'level=gain' pairs separated by ',' "
                         f"(as in ndcg.1=3,2=9), got {text!r}")
    return tuple((name, atof(value)) for name, value in parts)


def family_measures(family: str, text: str | None = None) -> list[Measure]:
    """The outputs of a marked ``family``, with its parameters ``text`` (None: its defaults)."""
    spec = MEASURE_FAMILIES[family]
    if spec.params in ("long_cuts", "double_cuts"):
        integer = spec.params == "long_cuts"
        cuts = spec.defaults if text is None else _cutoffs(family, text, integer)
        return [Measure(f"{family}_{int(c)}" if integer else f"{family}_{c:3.2f}", family, float(c)) for c in cuts]
    if spec.params is None or text is None:
        return [Measure(family, family, None, spec.defaults)]
    args = _pairs(family, text) if spec.params == "pairs" else tuple(atof(part) for part in text.split(","))
    if family == "utility" and len(args) != 4:
        raise ValueError(f"measure 'utility.{text}': utility takes 4 coefficients (retrieved relevant, "
                         f"retrieved non-relevant, missed relevant, missed non-relevant), got {len(args)}")
    return [Measure(f"{family}_{text}", family, None, args)]


def _output_measure(spec: str) -> Measure | None:
    output = _OUTPUT_NAME.match(spec)
    if not output:
        return None
    family, param = (output.group(1), output.group(2)) if output.group(1) else (output.group(3), output.group(4))
    return Measure(spec, family, float(param))


def resolve(specs: Sequence[str], other: Callable[[str], Measure | None] | None = None) -> list[Measure]:
    """The measures of trec_eval's ``-m`` arguments ``specs``, with its rules: a family is marked once,
    its parameters come from the first ``-m`` that gives some (see the module's docstring). Output
    names (``P_10``) are single measures; ``other(spec)`` may name measures of its own.

    Raises:
        UnknownMeasure: naming the argument, for a measure trec_eval does not know (and ``other`` neither).
        ValueError: naming the argument, for empty or malformed parameters.
    """
    slots: dict[str, Measure | None] = {}  # in the order asked: a family (None) or a single measure
    params: dict[str, str] = {}
    for spec in (s.strip() for s in specs):
        single = _output_measure(spec)
        name, dot, text = spec.partition(".")
        if single is None and (name in MEASURE_FAMILIES or name in NICKNAMES):
            if dot and not text:
                raise ValueError(f"measure {spec!r}: nothing after the '.' (trec_eval: NAME.PARAMS, as in P.5,10)")
            if dot:
                params.setdefault(name, text)
            slots.update((family, None) for family in NICKNAMES.get(name, (name,)) if family not in slots)
            continue
        single = single or (other(spec) if other else None)
        if single is None:
            raise UnknownMeasure(f"unknown measure {spec!r}: trec_eval's measures are {', '.join(ORDER[:36])}, "
                                 f"yaap, rbp, rbp_resid, unj and the nicknames {', '.join(NICKNAMES)}")
        slots[f" {single.name}"] = single
    measures = [m for key, single in slots.items()
                for m in ([single] if single else family_measures(key, params.get(key)))]
    return list({m.name: m for m in measures}.values())


def parse_measures(spec: str) -> list[Measure] | None:
    """The measures one trec_eval name stands for (``P``: its default cut-offs, ``P.5,10``, ``official``,
    ``P_10``), or None if ``spec`` is not one.

    Raises:
        ValueError: for malformed parameters of a known family (``P.0``, ``P.5,5``, ``ndcg.1``).
    """
    name = spec.strip().partition(".")[0]
    if _output_measure(spec.strip()) is None and name not in MEASURE_FAMILIES and name not in NICKNAMES:
        return None
    return resolve([spec])
