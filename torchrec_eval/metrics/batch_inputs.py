"""From a caller's arguments to one validated, ranked batch of a
:class:`~torchrec_eval.metrics.base.RankingMetric`.

The checks of the arguments that belong to the metric rather than to an input form (``groups`` and
``num_groups``, ``sample_weight`` and ``weighted``, the flat form's extra rules), each raising a
``ValueError`` that names the argument and what it received; the ranking itself is
:func:`torchrec_eval.members.steps.prepare`'s, once for every member.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import prepare
from torchrec_eval.pipeline import Batch, check_flat
from torchrec_eval.pipeline.validation import describe_any

__all__ = ["BatchInputs", "check_weighted"]


def check_weighted(weighted: Any, members: Sequence[Member]) -> bool:
    """The constructor's ``weighted``, checked: a bool, True only if every member takes a query weight."""
    if not isinstance(weighted, bool):
        raise ValueError(f"`weighted` must be True or False, got {weighted!r}")
    unsupported = [key for member in members if not member.supports_weights for key in member.keys]
    if weighted and unsupported:
        raise ValueError(f"`weighted`: {unsupported} are catalogue metrics with no per-query weight")
    return weighted


class BatchInputs:
    """Mixin for a :class:`~torchrec_eval.metrics.base.RankingMetric`: ``batch``, and the checks of its
    inputs."""

    def batch(
        self,
        preds: Tensor | None = None,
        target: Tensor | None = None,
        *,
        groups: Tensor | None = None,
        **inputs: Tensor | None,
    ) -> Batch:
        """Validate and rank one batch once for every member, with this metric's settings and groups."""
        self._require_groups(groups)
        batch = prepare(
            self.members,
            preds,
            target,
            ties=self.ties,
            relevance_threshold=self._ranking_threshold(),
            validate_args=self.validate_args,
            groups=groups,
            duplicates=self.duplicates,
            **inputs,
        )
        if batch.groups is not None:
            batch.groups = self._check_groups(batch.groups)
        return batch

    def _inputs(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The caller's arguments as an input form of :mod:`torchrec_eval.pipeline.prepare` (a subclass may rewrite them)."""
        return inputs

    def _ranking_threshold(self) -> float | None:
        """The relevance threshold of the inputs after :meth:`_inputs` (a subclass that encodes them may
        change it)."""
        return self.relevance_threshold

    def _check_flat(self, inputs: dict[str, Any]) -> None:
        if inputs.get("sample_weight") is not None:
            raise ValueError("`sample_weight` weighs whole queries: pass it with the dense, ids or ranked form "
                             "(one row per query), not with the flat form (`indexes`); got `sample_weight` of "
                             f"{describe_any(inputs['sample_weight'])}")
        self._require_groups(inputs.get("groups"))
        check_flat(self._inputs(inputs), self.validate_args)

    def _require_groups(self, groups: Tensor | None) -> None:
        if (groups is None) != (self.num_groups is None):
            raise ValueError(
                "`groups` must be given exactly when the metric was built with `num_groups` "
                f"(num_groups={self.num_groups}, groups {'missing' if groups is None else 'given'})"
            )

    def _check_weight(self, weight: Any, batch: Batch) -> Tensor | None:
        """The [B] float64 query weights on this metric's device (None: unweighted)."""
        if weight is None:
            return None
        if not self.weighted:
            raise ValueError("`sample_weight` needs a metric built with `weighted=True`; got `sample_weight` of "
                             f"{describe_any(weight)} for an unweighted metric")
        rows = (batch.ranked.num_relevant if batch.ranked is not None else batch.candidates.scores).shape[0]
        if (not isinstance(weight, Tensor) or weight.shape != (rows,) or weight.dtype == torch.bool
                or weight.is_complex()):
            shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
            raise ValueError(f"`sample_weight` must be a number tensor of shape [B] ({rows},), one weight per "
                             f"query, got {shape}")
        weight = weight.to(device=self.device, dtype=torch.float64)
        if self.validate_args and weight.numel() and not bool((torch.isfinite(weight) & (weight >= 0)).all()):
            raise ValueError(f"`sample_weight` must be finite and >= 0, got values from {weight.min().item()} "
                             f"to {weight.max().item()}")
        return weight

    def _check_groups(self, groups: Tensor) -> Tensor:
        if groups.is_floating_point() or groups.dtype == torch.bool:
            raise ValueError(f"`groups` must be an integer tensor, got dtype {groups.dtype}")
        if self.validate_args:
            low, high = torch.aminmax(groups)
            if bool((low < 0) | (high >= self.num_groups)):
                raise ValueError(
                    f"`groups` must lie in [0, {self.num_groups}), got values from {low.item()} "
                    f"to {high.item()}"
                )
        return groups.to(self.device)
