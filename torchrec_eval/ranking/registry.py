"""The registry of the top-k families: what :class:`~torchrec_eval.ranking.member.TopKMember` needs of each.

:data:`REGISTRY` maps a family name to a :class:`TopKFamily`: its per-query formula, its options with their
allowed values, its cut-off rule and which way is better. The top-k member, the suite and the classes read this
table. Each family enters itself with :func:`register`, in its own module of :mod:`torchrec_eval.ranking.families`
(beside its formula, class and function); this module names none of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from torch import Tensor

from torchrec_eval.pipeline.arguments import is_number
from torchrec_eval.ranking.rank_sums import Ratio

# Options of which queries a value counts, read by the top-k member (not by the formula): every family that
# reads a list takes ``empty_list_action`` -- "neg" (default): a query whose list is empty (no candidate: a ``ranked_ids``
# row of padding only) scores the family's value for it, 0, and counts; "skip": it is left out of the
# mean (Jurity's precision and MAP, MS Recommenders' precision, recall and MAP).
EmptyListAction = Literal["neg", "skip"]
NoHitAction = Literal["neg", "skip"]
# ``empty_mean``: the value of a mean over no query: "nan" (default) or "zero" where no query kept has a
# relevant item in its top k (MS Recommenders' 0.0 when its table of hits is empty)
EmptyMean = Literal["nan", "zero"]
EMPTY_LIST_ACTIONS, NO_HIT_ACTIONS, EMPTY_MEANS = get_args(EmptyListAction), get_args(NoHitAction), get_args(EmptyMean)
MEMBER_OPTIONS = ("empty_list_action", "no_hit_action", "empty_mean")
#: the options every family that reads a list takes
LIST_OPTIONS = {"empty_list_action": EMPTY_LIST_ACTIONS, "empty_mean": EMPTY_MEANS}


@dataclass(frozen=True)
class Interval:
    """The numbers an option takes: ``low < value < high``, ``<=`` at the low end where ``closed`` and at the high
    end where ``closed_high`` (a bool is not a number here)."""

    low: float
    high: float = math.inf
    closed: bool = False
    closed_high: bool = False

    def __contains__(self, value: object) -> bool:
        if not is_number(value):
            return False
        above = self.low <= value if self.closed else self.low < value
        return above and (value <= self.high if self.closed_high else value < self.high)

    def __str__(self) -> str:
        low = f"{'>=' if self.closed else '>'} {self.low:g}"
        high = f"{'<=' if self.closed_high else '<'} {self.high:g}"
        return f"a number {low}" if self.high == math.inf else f"a number {low} and {high}"


#: the top grade of the families that bound their gains (ERR, SDCG)
TOP_GRADE = {"max_grade": (Interval(1.0, closed=True),)}


@dataclass(frozen=True)
class TopKFamily:
    """One top-k family.

    Attributes:
        kernel: ``(ranked, ks, **options) -> [B, len(ks)]`` per-query values, or their
            :class:`~torchrec_eval.ranking.rank_sums.Ratio` (numerator, denominator), which the member divides.
        options: option name -> its allowed values (``(Interval(low, high),)``: a number in that interval).
        cutoff: ``"k"``: an int ``k`` is required; ``"k_or_r"``: ``k`` may be None, a cut at the query's
            number of relevant items R (the batch is then ranked down to its largest R); ``"none"``: it takes
            no cut-off (NumRel: a count of the query's relevant items, not of a ranking).
        needs_ideal: graded gains need each query's ideal list (NDCG).
        higher_is_better: for tools that read it.
        max_grade: the default of the family's ``max_grade`` option, the largest gain it takes (a larger
            gain is refused with the other checks of the values); None: unbounded unless the option is given.
        exact_under_average_ties: the formula read from the averaged view (``ties="average"``) is its
            expectation over tie orders: linear in each rank's relevance and gain, or reading the tie
            groups. False (ERR's product over ranks): ``ties="average"`` is refused.
        reads_non_relevant: the formula divides by the query's non-relevant candidates (FallOut): the batch
            counts its candidates exactly (a form with scores over them, not ``ranked_ids``), and the query
            that ``empty_target_action`` resolves is the one without a non-relevant candidate.
        averaged_by: (option, value): with that option value the formula reads the view averaged over tie
            orders, its tie groups (``average_ties=True``; MAP's ``tie_rank="group_max"``).
        reads_judged: the formula reads which ranked items are judged and the query's judged items (bpref,
            Judged@k, infAP): an item outside the target ids is unjudged (the dense form judges every candidate);
            a target gain of -1 is then taken, a pooled item that is not judged (gain 0 to every family).
        reads_pooled: the formula also reads which ranked items are pooled, judged or not (infAP: a target id
            of any gain, -1 too); with ``reads_judged``.
        empty_unjudged: the query that ``empty_target_action`` resolves is the one without a judged item, not the
            one without a relevant item: the formula does not read relevance (Judged@k, NumRet: trec_eval and
            ir-measures evaluate every query with a judgment at its value). Every other family is 0 on a query
            without a relevant item in a binary view (``tests/ranking/test_empty_targets.py`` holds each to it).
        upper_bound: the most its value can be (a plot's y axis reaches it); None: unbounded above (DCG, counts).
        aliases: other names a suite takes for it (``"hr"`` for HitRate, ``"ap"`` for MAP).
        reads_relevant_items: the formula reads every relevant candidate of each query and its gain, ranked or not
            (``Needs.relevant_items``: Compat's ideal list).
        total: its value is the sum of the per-query values over the queries counted, not their mean (NumQ:
            trec_eval and ir-measures sum ``num_q``); it has no confidence interval and no paired comparison.
    """

    kernel: Callable[..., Tensor | Ratio]
    options: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    cutoff: str = "k"
    needs_ideal: bool = False
    higher_is_better: bool = True
    max_grade: float | None = None
    exact_under_average_ties: bool = True
    reads_non_relevant: bool = False
    averaged_by: tuple[str, object] | None = None

    def reads_averaged(self, options: dict[str, Any]) -> bool:
        """Whether an entry with these options reads the view averaged over tie orders."""
        return self.averaged_by is not None and options.get(self.averaged_by[0]) == self.averaged_by[1]
    reads_judged: bool = False
    reads_pooled: bool = False
    empty_unjudged: bool = False
    upper_bound: float | None = 1.0
    aliases: tuple[str, ...] = ()
    reads_relevant_items: bool = False
    total: bool = False

    @property
    def optional_k(self) -> bool:
        """Whether ``k`` may be None (no cut-off but R)."""
        return self.cutoff in ("k_or_r", "none")

    @property
    def empty_basis(self) -> str:
        """The count whose 0 makes a query empty for ``empty_target_action``: ``"relevant"`` (R),
        ``"non_relevant"`` (its non-relevant candidates: FallOut) or ``"judged_items"`` (its judged items: Judged@k)."""
        if self.reads_non_relevant:
            return "non_relevant"
        return "judged_items" if self.empty_unjudged else "relevant"


#: every top-k family by name, filled by the modules of :mod:`torchrec_eval.ranking.families` (importing that
#: package registers them all)
REGISTRY: dict[str, TopKFamily] = {}


def register(name: str, family: TopKFamily) -> None:
    """Enter a top-k family under ``name``, its name in metric names (``"ndcg"`` in ``"ndcg@10"``); a name is
    entered once."""
    if name in REGISTRY:
        raise ValueError(f"the top-k family {name!r} is registered already")
    REGISTRY[name] = family


def check_option(family: str, name: str, value: object) -> None:
    """Raise a ValueError unless ``value`` is allowed for option ``name`` of ``family``."""
    allowed = REGISTRY[family].options[name]
    if isinstance(allowed[0], Interval):
        if value not in allowed[0]:
            raise ValueError(f"`{name}` of {family} must be {allowed[0]}, got {value!r}")
    elif value not in allowed:
        raise ValueError(f"`{name}` of {family} must be one of {allowed}, got {value!r}")
