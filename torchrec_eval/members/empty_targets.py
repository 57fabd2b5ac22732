"""Queries without a relevant item: ``empty_target_action`` skips them, scores them 0 or 1, or raises."""

from __future__ import annotations

from typing import Literal, get_args

from torch import Tensor

from torchrec_eval.pipeline.tensor_cache import filled

#: what a query without a relevant item does (``empty_target_action=``)
EmptyTargetAction = Literal["skip", "neg", "pos", "error"]
EMPTY_TARGET_ACTIONS: tuple[EmptyTargetAction, ...] = get_args(EmptyTargetAction)


def apply_empty_target_action(values: Tensor, num_relevant: Tensor, action: str) -> tuple[Tensor, Tensor]:
    """Resolve queries with no relevant item. Returns (values [B, P], counted [B] bool)."""
    values, counted = counted_values(values, num_relevant, action)
    return values, counted > 0


def counted_values(values: Tensor, num_relevant: Tensor, action: str) -> tuple[Tensor, Tensor]:
    """Resolve queries with no relevant item, given R as [B] or as a column [B, 1]. Returns (values
    [B, P], counted: float64 1 or 0 per query, of R's shape)."""
    if action == "skip":  # R is a count: min(R, 1) is 1 where the query counts, 0 where it has no relevant item
        counted = num_relevant.clamp(max=1)
        return values * (counted if counted.ndim == 2 else counted.unsqueeze(1)), counted
    ones = filled(tuple(num_relevant.shape), 1.0, num_relevant.device)
    empty = num_relevant == 0
    empty = empty if empty.ndim == 2 else empty.unsqueeze(1)
    if action == "error":
        if bool(empty.any()):
            row = int(empty.squeeze(1).nonzero()[0])
            raise ValueError(
                f"Query {row} of the batch has no relevant item and `empty_target_action` is 'error'"
            )
        return values, ones
    return values.masked_fill(empty, 1.0 if action == "pos" else 0.0), ones
