"""The stateful base of every top-k metric: a few float64 sufficient statistics per group."""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor
from torchmetrics import Metric

from torchrec_eval.functional._plan import Entry, Plan, check_common
from torchrec_eval.inputs import TIES


class RankingMetric(Metric):
    """Accumulates per-query values of one or more top-k metrics in a single float64 state tensor.

    State ``stats`` [G, 2P + 1] (G groups, P metric/cut-off pairs): the sum of each value, the sum
    of its square (for confidence intervals), and the number of counted queries. It does not grow
    with the number of queries, and the torchmetrics sync reduces it with one collective.
    Subclasses only choose the metric entries; see :class:`torchrec_eval.RankingMetrics` for a suite.

    Args:
        entries: the metric families and cut-offs to evaluate from one ranking per batch.
        empty_target_action: queries with no relevant item are ``"skip"``-ped (default), score
            ``"neg"`` (0) or ``"pos"`` (1), or raise (``"error"``).
        relevance_threshold: a target >= this is relevant for binary metrics; default: target > 0.
        ties: ``"index"`` (equal scores: lower item index first) or ``"pessimistic"``.
        validate_args: check input values; ``False`` skips every check that needs a host sync.
        num_groups: if set, ``update`` takes ``groups`` [B] in [0, num_groups) and ``compute``
            returns a [num_groups] tensor per value (NaN for a group with no counted query).
        single_key: return a tensor rather than a one-entry dict from ``compute``.
        kwargs: torchmetrics ``Metric`` arguments (``sync_on_compute``, ``dist_sync_fn``, ...).
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    stats: Tensor

    def __init__(
        self,
        entries: Sequence[Entry],
        *,
        empty_target_action: str = "skip",
        relevance_threshold: float | None = None,
        ties: str = "index",
        validate_args: bool = True,
        num_groups: int | None = None,
        single_key: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_common(empty_target_action, relevance_threshold)
        if ties not in TIES:
            raise ValueError(f"`ties` must be one of {TIES}, got {ties!r}")
        if num_groups is not None and (isinstance(num_groups, bool) or not isinstance(num_groups, int)
                                       or num_groups < 1):
            raise ValueError(f"`num_groups` must be an int >= 1 or None, got {num_groups!r}")
        self.plan = Plan(entries)
        self.empty_target_action = empty_target_action
        self.relevance_threshold = relevance_threshold
        self.ties = ties
        self.validate_args = validate_args
        self.num_groups = num_groups
        self.single_key = single_key
        num_values = len(self.plan.keys)
        default = torch.zeros(num_groups or 1, 2 * num_values + 1, dtype=torch.float64)
        self.add_state("stats", default=default, dist_reduce_fx="sum")

    def update(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
               **inputs: Tensor | None) -> None:
        """Rank one batch (any input form of :mod:`torchrec_eval.inputs`) and add its queries to the state."""
        if (groups is None) != (self.num_groups is None):
            raise ValueError(
                "`groups` must be given exactly when the metric was built with `num_groups` "
                f"(num_groups={self.num_groups}, groups {'missing' if groups is None else 'given'})"
            )
        ranked, groups = self.plan.rank(preds, target, ties=self.ties, relevance_threshold=self.relevance_threshold,
                                        validate_args=self.validate_args, groups=groups, **inputs)
        values, counted = self.plan.per_query(ranked, self.empty_target_action)
        rows = torch.cat([values, values * values, counted.to(torch.float64).unsqueeze(1)], dim=1)
        if groups is None:
            self.stats += rows.sum(0, keepdim=True)
            return
        if groups.is_floating_point() or groups.dtype == torch.bool:
            raise ValueError(f"`groups` must be an integer tensor, got dtype {groups.dtype}")
        if self.validate_args:
            low, high = torch.aminmax(groups)
            if bool((low < 0) | (high >= self.num_groups)):
                raise ValueError(f"`groups` must lie in [0, {self.num_groups}), got values from {low.item()} "
                                 f"to {high.item()}")
        self.stats.index_add_(0, groups.to(self.stats.device), rows)

    def compute(self) -> Tensor | dict[str, Tensor]:
        """Mean over counted queries of each value (per group with ``num_groups``)."""
        num_values = len(self.plan.keys)
        means = self.stats[:, :num_values] / self.stats[:, 2 * num_values : 2 * num_values + 1]
        if self.num_groups is None:
            means = means[0]
        results = {key: means[..., i] for i, key in enumerate(self.plan.keys)}
        return results[self.plan.keys[0]] if self.single_key else results
