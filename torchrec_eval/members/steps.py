"""Steps every member of a :class:`~torchrec_eval.metrics.base.MemberMetric` shares (the top-k member, the
pairwise and beyond-accuracy members): check the common arguments, rank a batch once for all of them, add
per-query rows into a state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

import torch
from torch import Tensor

from torchrec_eval.pipeline import Batch, Inputs, Needs, Rules, prepare_batch
from torchrec_eval.pipeline.tensor_cache import filled

if TYPE_CHECKING:
    from torchrec_eval.members.interface import Member


#: a functional metric's output: the mean over counted queries, or the value of each query
Reduction = Literal["mean", "none"]


def check_common(empty_target_action: str, relevance_threshold: float | None) -> None:
    if empty_target_action not in EMPTY_TARGET_ACTIONS:
        raise ValueError(
            f"`empty_target_action` must be one of {EMPTY_TARGET_ACTIONS}, got {empty_target_action!r}"
        )
    if relevance_threshold is not None and (
        isinstance(relevance_threshold, bool) or not isinstance(relevance_threshold, (int, float))
    ):
        raise ValueError(f"`relevance_threshold` must be a number or None, got {relevance_threshold!r}")


def needs_of(members: Sequence[Member]) -> Needs:
    """What the members together need of the ranking of a batch: the deepest top-k any of them reads, ..."""
    return Needs(
        depth=max([0, *(member.depth for member in members)]),  # (no `default=`: torch.compile traces this)
        ideal=any(member.needs_ideal for member in members),
        to_num_relevant=any(member.to_num_relevant for member in members),
        candidates=any(member.needs_candidates for member in members),
        average_view=any(member.needs_average for member in members),
        max_gain=min([member.max_gain for member in members if member.max_gain is not None], default=None),
        non_relevant=any(member.needs_non_relevant for member in members),
        relevant_items=any(member.needs_relevant_items for member in members),
        judged=any(member.needs_judged for member in members),
        pooled=any(member.needs_pooled for member in members),
        listed_ids=any(member.needs_listed_ids for member in members),
    )


def prepare(members: Sequence[Member], inputs: Inputs, rules: Rules) -> Batch:
    """Validate and rank a batch once for every member (the deepest top-k any of them needs)."""
    return prepare_batch(inputs, needs_of(members), rules)


def accumulate(state: Tensor, rows: Tensor | Sequence[Tensor], groups: Tensor | None,
               weights: Tensor | None = None) -> None:
    """Add per-query rows [B, C] into a [G, C] state, by group (G = 1 without groups); with ``weights``
    [B], each row times its query's weight (a weighted sum, numerators and denominators alike).

    ``rows`` may come as parts [B, C_1], [B, C_2], ... whose columns lie side by side in the state: a compiled
    update without groups or weights then sums each part on its own (inductor makes a concatenation a
    [B, C] buffer of its own; the sums of the parts are a few numbers)."""
    if not isinstance(rows, Tensor):
        if groups is None and weights is None and torch.compiler.is_compiling():
            state += torch.cat([part.sum(0) for part in rows]).unsqueeze(0)
            return
        rows = torch.cat(list(rows), dim=1)
    if weights is not None:
        rows = rows * weights.unsqueeze(1)
    if groups is None:
        state += rows.sum(0, keepdim=True)
    else:
        state.index_add_(0, groups, rows)


# Queries without a relevant item: ``empty_target_action`` skips them, scores them 0 or 1, or raises. (FallOut's
# empty query is the one without a non-relevant candidate: its count takes R's place.)

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


def plain_requests(pairs: list[tuple[str, int | None]], options: dict[str, dict[str, Any]]) -> list[tuple[str, int]]:
    """A suite's (family, cut-off) pairs of families that need a cut-off and take no option, checked.

    Raises:
        ValueError: naming the family, on a missing cut-off or an option.
    """
    for family, k in pairs:
        if k is None:
            raise ValueError(f"Metric {family!r} needs a cut-off: write '{family}@10' or pass `k`")
        if options.get(family):
            raise ValueError(f"{family} takes no option, got {options[family]!r}")
    return [(family, k) for family, k in pairs if k is not None]
