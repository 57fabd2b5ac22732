"""The checks of the arguments a :class:`~torchrec_eval.metrics.base.MemberMetric` adds to the input forms:
their types, ``weighted``, what the flat form refuses, and an update's ``groups`` and ``sample_weight``.

Each raises a ``ValueError`` that names the argument and what it received; the input forms themselves are
checked by :mod:`torchrec_eval.pipeline`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.members.conventions import Convention
from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import EmptyTargetAction
from torchrec_eval.metrics.lifecycle import TorchmetricsArguments
from torchrec_eval.pipeline.inputs import Ties
from torchrec_eval.pipeline.validation import Checks, check_group_values, describe_any, require_groups
from torchrec_eval.ranking.registry import EmptyListAction, EmptyMean

__all__ = ["MetricArguments", "TopKArguments", "check_weighted", "checked_groups", "checked_weights", "refuse_flat_weights"]


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


def checked_groups(groups: Tensor | None, num_groups: int | None, device: torch.device,
                   validate_args: bool) -> Tensor | None:
    """``groups`` [B] given exactly when the metric has ``num_groups``, integers in [0, num_groups) (checked with
    ``validate_args``), on ``device`` (None without groups)."""
    require_groups(groups, num_groups)
    if groups is None or num_groups is None:
        return None
    checks = Checks() if validate_args else None
    check_group_values(checks, groups, num_groups)
    if checks is not None:
        checks.run()
    return groups.to(device)


def checked_weights(weight: Any, rows: int, weighted: bool, device: torch.device, validate_args: bool) -> Tensor | None:
    """The [B] float64 query weights on ``device`` (None: unweighted), for a batch of ``rows`` queries."""
    if weight is None:
        return None
    if not weighted:
        raise ValueError("`sample_weight` needs a metric built with `weighted=True`; got `sample_weight` of "
                         f"{describe_any(weight)} for an unweighted metric")
    if not isinstance(weight, Tensor) or weight.shape != (rows,) or weight.dtype == torch.bool or weight.is_complex():
        shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"`sample_weight` must be a number tensor of shape [B] ({rows},), one weight per "
                         f"query, got {shape}")
    weight = weight.to(device=device, dtype=torch.float64)
    if validate_args and weight.numel() and not bool((torch.isfinite(weight) & (weight >= 0)).all()):
        raise ValueError(f"`sample_weight` must be finite and >= 0, got values from {weight.min().item()} "
                         f"to {weight.max().item()}")
    return weight
