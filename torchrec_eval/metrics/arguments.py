"""The checks of the arguments a :class:`~torchrec_eval.metrics.base.MemberMetric` adds to the input forms:
their types, ``weighted`` and what the flat form refuses (the checks of ``groups`` and ``sample_weight`` in an
update are :mod:`torchrec_eval.pipeline.validation`'s, with the input forms').

Each raises a ``ValueError`` that names the argument and what it received; the input forms themselves are
checked by :mod:`torchrec_eval.pipeline`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchrec_eval.members.conventions import Convention
from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import EmptyTargetAction
from torchrec_eval.metrics.lifecycle import TorchmetricsArguments
from torchrec_eval.pipeline.inputs import Ties
from torchrec_eval.pipeline.validation import describe_any
from torchrec_eval.ranking.registry import EmptyListAction, EmptyMean

__all__ = ["MetricArguments", "TopKArguments", "check_weighted", "refuse_flat_weights"]


class MetricArguments(TorchmetricsArguments, total=False):
    """The keyword arguments every metric class takes (``**kwargs: Unpack[MetricArguments]``): the common
    arguments of :class:`~torchrec_eval.metrics.base.MemberMetric` and torchmetrics' ``Metric`` arguments."""

    convention: Convention | None
    empty_target_action: EmptyTargetAction | None
    relevance_threshold: float | None
    ties: Ties | None
    validate_args: bool
    num_groups: int | None
    weighted: bool


class TopKArguments(MetricArguments, total=False):
    """A top-k class's keyword arguments: the common ones and which queries its mean counts."""

    empty_list_action: EmptyListAction | None
    empty_mean: EmptyMean | None


def check_weighted(weighted: Any, members: Sequence[Member]) -> bool:
    """The constructor's ``weighted``, checked: a bool, True only if every member takes a query weight."""
    if not isinstance(weighted, bool):
        raise ValueError(f"`weighted` must be True or False, got {weighted!r}")
    unsupported = [key for member in members if not member.supports_weights for key in member.keys]
    if weighted and unsupported:
        raise ValueError(f"`weighted`: {unsupported} are catalogue metrics with no per-query weight")
    return weighted


def refuse_flat_weights(sample_weight: Any) -> None:
    """The flat form takes no ``sample_weight``: it weighs whole queries, and a flat row is an item."""
    if sample_weight is not None:
        raise ValueError("`sample_weight` weighs whole queries: pass it with the dense, ids or ranked form "
                         "(one row per query), not with the flat form (`indexes`); got `sample_weight` of "
                         f"{describe_any(sample_weight)}")
