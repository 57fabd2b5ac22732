"""The three records the pipeline passes down: the caller's tensors, what the members need, how to rank.

:class:`Inputs` holds the tensors of one call exactly as given (one input form of
:mod:`torchrec_eval.pipeline.forms`); its field names are the input keywords, written here once.
:class:`Needs` is what the members of a metric need of the ranking of a batch (the deepest top-k any of
them reads, the ideal gains, ...), and :class:`Rules` how the batch is read (tie order, relevance
threshold, whether values are checked). All three are immutable: a form that regroups its inputs (the
flat form) makes a new record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, get_args

from torch import Tensor

__all__ = ["INPUT_KEYWORDS", "INPUT_NAMES", "TIES", "CandidateInputs", "FormInputs", "Inputs", "Needs", "RankedInputs",
           "Rules", "Ties"]

#: the order of equal scores (``ties=``), see :mod:`torchrec_eval.pipeline.prepare`
Ties = Literal["index", "reverse_index", "pessimistic", "optimistic", "average"]
TIES: tuple[Ties, ...] = get_args(Ties)


class CandidateInputs(TypedDict, total=False):
    """The keywords that remove candidates, in every input form (``**inputs: Unpack[...]`` of a class's ``update``
    and a function, which type checkers and editors read).

    Attributes:
        mask: [B, N] (or [M]) bool, False for an item that is not a candidate (as a score of ``-inf``).
        exclude_ids: [B, E] ids that are not candidates (the items seen in training; -1: padding).
    """

    mask: Tensor | None
    exclude_ids: Tensor | None


class RankedInputs(CandidateInputs, total=False):
    """:class:`CandidateInputs` and a ranking given as ids (the ranked form; the overlap of two rankings).

    Attributes:
        ranked_ids: [B, L] each query's items in rank order (-1: padding): the ranked form, no scores.
    """

    ranked_ids: Tensor | None


class FormInputs(RankedInputs, total=False):
    """The input keywords a function or an ``update`` takes in ``**inputs`` besides ``preds`` and ``target``: the
    other forms' tensors (:class:`RankedInputs` and the following).

    Attributes:
        indexes: [M] the query of each row of 1-D ``preds`` and ``target`` (the flat form).
        target_ids: [B, T] the relevant items of each query (-1: padding), with [B, N] ``preds`` (the ids
            form) or ``ranked_ids`` (the ranked form).
        target_gains: [B, T] the gain of each target id (default 1).
    """

    indexes: Tensor | None
    target_ids: Tensor | None
    target_gains: Tensor | None


@dataclass(frozen=True)
class Inputs:
    """The tensors of one call: ``preds`` [B, N] or [M] scores, ``target`` [B, N] or [M] relevance,
    ``indexes`` [M] query ids (flat form), ``target_ids`` / ``target_gains`` [B, T], ``ranked_ids`` [B, L],
    ``mask`` (candidates), ``exclude_ids`` [B, E], ``groups`` [B] (None: not given)."""

    preds: Tensor | None = None
    target: Tensor | None = None
    indexes: Tensor | None = None
    target_ids: Tensor | None = None
    target_gains: Tensor | None = None
    ranked_ids: Tensor | None = None
    mask: Tensor | None = None
    exclude_ids: Tensor | None = None
    groups: Tensor | None = None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> Inputs:
        """The record of keyword arguments named as its fields (a missing one is None).

        Raises:
            ValueError: on a name that is not an input keyword.
        """
        unknown = sorted(set(arguments) - set(INPUT_NAMES))
        if unknown:
            raise ValueError(f"unexpected input keyword {unknown[0]!r}; the input keywords are {list(INPUT_NAMES)}")
        return cls(**arguments)

    def given(self) -> dict[str, Tensor]:
        """The arguments that were given, by name."""
        # by name, not vars(self): torch 2.11's dynamo cannot trace vars() of a dataclass (compile_update)
        given = {name: getattr(self, name) for name in INPUT_NAMES}
        return {name: value for name, value in given.items() if value is not None}

    def replace(self, **changes: Tensor | None) -> Inputs:
        return dataclasses.replace(self, **changes)


#: every input keyword, in the order of ``update``'s signature
INPUT_NAMES = tuple(field.name for field in dataclasses.fields(Inputs))
#: the input keywords of the forms besides ``preds``, ``target`` and ``groups``
INPUT_KEYWORDS = tuple(name for name in INPUT_NAMES if name in FormInputs.__annotations__)


@dataclass(frozen=True)
class Needs:
    """What the members of a metric need of the ranking of a batch.

    Attributes:
        depth: the top-k view's depth (0: none); with ``to_num_relevant`` at least the batch's largest R.
        ideal: the ideal gains (NDCG).
        to_num_relevant: rank down to each query's R (R-Precision without a cut-off).
        candidates: every candidate's score and relevance (the pairwise family; not for the ranked form).
        average_view: the view averaged over tie orders (``RankedTargets.averaged``), for a metric with
            ``average_ties=True`` under another tie order.
        max_gain: the largest gain a metric takes (the top grade ``max_grade`` of ERR and SDCG), checked
            with the other values; None: no bound.
        non_relevant: each query's non-relevant candidates (FallOut): the candidates counted exactly, over
            the whole row (a scored form: the ranked form does not know them).
        relevant_items: which items are each query's relevant candidates, ranked or not (the ideal list of a
            family that weighs items: PSP, PSnDCG).
        judged: which ranked items are judged and each query's judged items (bpref, Judged@k): a target id is a
            judgment, of a non-relevant item where its gain is not relevant, an item outside the target ids is
            unjudged; the dense form judges every candidate (``RankedTargets.judged``, ``num_judged``). A target
            gain of -1 is then taken: a pooled item that is not judged (a qrels line of -1), of gain 0.
        pooled: which ranked items are pooled (infAP): found among the target ids, judged or not (a gain of -1:
            pooled, not judged); every listed candidate in the dense form (``RankedTargets.pooled``). Asked
            with ``judged``.
        listed_ids: the ids of the ranked items (``RankedTargets.item_ids``: the beyond-accuracy and overlap
            families); without it the ids form may rank its targets without a list (:mod:`counted_ranks`).
    """

    depth: int = 0
    ideal: bool = False
    to_num_relevant: bool = False
    candidates: bool = False
    average_view: bool = False
    max_gain: float | None = None
    non_relevant: bool = False
    relevant_items: bool = False
    judged: bool = False
    pooled: bool = False
    listed_ids: bool = False


@dataclass(frozen=True)
class Rules:
    """How a batch is read and ranked.

    Attributes:
        ties: the order of equal scores, one of :data:`TIES`.
        relevance_threshold: a gain >= this is relevant; None: gain > 0.
        validate_args: check values (each check that needs a host sync).
        duplicates: ``"error"`` for an id repeated in a row of the ranked form, or ``"count"``: ranx's
            arrays (a repeated ranked id is a hit at each rank, a repeated target counts in R).
        num_groups: the metric's number of groups: ``groups`` are then given, integers in [0, num_groups), checked
            with the other values; None: no ``groups``.
    """

    ties: str = "index"
    relevance_threshold: float | None = None
    validate_args: bool = True
    duplicates: str = "error"
    num_groups: int | None = None

    def averaging(self, needs: Needs) -> bool:
        """Whether the batch needs tie-group statistics (``ties="average"`` or an averaged view)."""
        return self.ties == "average" or needs.average_view
