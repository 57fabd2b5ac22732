"""Queries without a relevant item: ``empty_target_action`` skips them, scores them 0 or 1, or raises. (FallOut's
empty query is the one without a non-relevant candidate: its count takes R's place.)"""

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


def kept_queries(num_relevant: Tensor, action: str) -> Tensor:
    """float64 1 where a query counts, 0 where ``empty_target_action="skip"`` leaves it out (R = 0), of R's shape."""
    if action == "skip":  # R is a count: min(R, 1) is 1 where the query counts, 0 where it has no relevant item
        return num_relevant.clamp(max=1)
    return filled(tuple(num_relevant.shape), 1.0, num_relevant.device)


def counted_values(values: Tensor, num_relevant: Tensor, action: str, empty: str = "no relevant item",
                   zero_when_empty: bool = False) -> tuple[Tensor, Tensor]:
    """Resolve queries with no relevant item, given R as [B], as a column [B, 1] or per value [B, P] (``empty``
    names what a query lacks, in the error). Returns (values [B, P], counted: float64 1 or 0 per query, of R's
    shape). ``zero_when_empty``: every value of such a query is 0 already (a binary view's gains are 0 there, and
    so is every value built from them), which ``"skip"`` and ``"neg"`` then leave as it is."""
    counted = kept_queries(num_relevant, action)
    if zero_when_empty and action in ("skip", "neg"):
        return values, counted
    if action == "skip":
        return values * (counted if counted.ndim == 2 else counted.unsqueeze(1)), counted
    lacking = num_relevant == 0
    lacking = lacking if lacking.ndim == 2 else lacking.unsqueeze(1)
    if action == "error":
        if bool(lacking.any()):
            row = int(lacking.any(1).nonzero()[0])
            raise ValueError(f"Query {row} of the batch has {empty} and `empty_target_action` is 'error'")
        return values, counted
    return values.masked_fill(lacking, 1.0 if action == "pos" else 0.0), counted
