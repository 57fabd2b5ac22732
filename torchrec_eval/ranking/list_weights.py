r"""RBP with weights read from the list: LensKit's ``RBP(weight_field=...)``, each listed item's weight given beside
the scores (``item_weights``) instead of computed from its rank.

.. math:: \mathrm{RBP@}k_q = \frac{\sum_{i \le k} r_i\, w_i}{\sum_{i \le k} w_i}

over the query's top k (its first min(k, n) listed items), :math:`w_i` the weight of the item at rank i and
:math:`r_i` its relevance; LensKit divides by the weights of the list cut at k whatever its ``normalize``. A mean
over queries: the state ``list_weight_stats`` [G, 3 len(ks)] holds each cut-off's sum, sum of squares and count of
counted queries. A query without a relevant item follows ``empty_target_action`` (LensKit's users all have test
items); a list whose weights sum to 0 (an empty list) is not counted (LensKit's 0 / 0 is NaN).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack, overload

import torch
from torch import Tensor

from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import (
    Reduction,
    accumulate,
    check_common,
    counted_values,
    plain_requests,
    prepare,
)
from torchrec_eval.pipeline import (
    Batch,
    FormInputs,
    Inputs,
    RankedTargets,
    Rules,
    Ties,
    input_keywords_checked,
)
from torchrec_eval.pipeline.arguments import check_k
from torchrec_eval.pipeline.item_values import checked_item_values, refuse_flat, values_at_ranks
from torchrec_eval.pipeline.tensor_cache import constant

__all__ = ["ListWeightMember", "build_member", "checked_list_weights", "listed_weights", "weighted_rbp", "weighted_rbp_values"]


def weighted_rbp_values(ranked: RankedTargets, weights: Tensor, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)] each query's :math:`\\sum_{i \\le k} r_i w_i / \\sum_{i \\le k} w_i` (NaN where the weights of its
    top k sum to 0); ``weights`` [B, K] at the view's ranks, 0 past the list."""
    depth = weights.shape[1]
    columns = tuple(min(k, depth) - 1 for k in ks)
    device = weights.device
    index = constant(("list-weight-columns", columns, device), lambda: torch.tensor(columns, device=device))
    good = (ranked.hits * weights).cumsum(1).index_select(1, index)
    total = weights.cumsum(1).index_select(1, index)
    return good / total


def listed_weights(ranked: RankedTargets, item_weights: Tensor, ranked_ids: Tensor | None) -> Tensor:
    """[B, K] the weight of each ranked item (0 past the list), from ``item_weights`` beside the scores or beside
    ``ranked_ids``."""
    return values_at_ranks(item_weights, ranked.listed_ids(), ranked_ids)


class ListWeightMember(Member):
    """RBP@k with list weights at one or more cut-offs; its weights come in ``batch.extras["item_weights"]``, [B, K]
    at the ranks of the view (:meth:`~torchrec_eval.metrics.list_weights.WeightedRBP.batch`)."""

    needs_ideal = False
    to_num_relevant = False
    needs_candidates = False
    needs_listed_ids = True
    supports_weights = True  # a mean over queries

    def __init__(self, ks: Sequence[Any]) -> None:
        self.ks = [check_k(k) for k in ks]
        self.keys = [f"weighted_rbp@{k}" for k in self.ks]
        self.query_keys = list(self.keys)
        self.depth = max(self.ks)

    def configuration(self) -> dict[str, Any]:
        return {"kind": "list-weights", "ks": list(self.ks)}

    def check_ties(self, ties: str) -> None:
        if ties == "average":
            raise ValueError("`ties`: the weights belong to the listed items, and 'average' has no single list; use "
                             f"an order ('index', 'reverse_index', ...), got ties={ties!r}")

    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        return self.values(batch, metric.empty_target_action)

    def values(self, batch: Batch, empty_target_action: str) -> tuple[Tensor, Tensor]:
        """Per-query values [B, P] (0 where not counted) and whether each is counted [B, P] (bool)."""
        extras = batch.extras or {}
        if "item_weights" not in extras:
            raise ValueError(f"RBP with list weights reads each rank's weight: this batch holds none, got "
                             f"extras={sorted(extras)}")
        ranked = batch.top_k()
        raw = weighted_rbp_values(ranked, extras["item_weights"], self.ks)
        values, counted = counted_values(raw.nan_to_num(0.0), ranked.relevant_column, empty_target_action)
        counted = (counted > 0) & raw.isfinite()
        return values * counted, counted

    def add_states(self, metric: Any, num_groups: int) -> None:
        default = torch.zeros(num_groups, 3 * len(self.keys), dtype=torch.float64)
        metric.add_state("list_weight_stats", default=default, dist_reduce_fx="sum")

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        values, counted = self.per_query(metric, batch)
        rows = torch.cat([values, values * values, counted.to(torch.float64)], dim=1)
        return lambda: accumulate(metric.list_weight_stats, rows, batch.groups, batch.weights)

    def moments(self, metric: Any) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        q, stats = len(self.keys), metric.list_weight_stats
        return {key: (stats[:, i], stats[:, q + i], stats[:, 2 * q + i]) for i, key in enumerate(self.keys)}

    def compute(self, metric: Any) -> dict[str, Tensor]:
        return {key: total / count for key, (total, _, count) in self.moments(metric).items()}


def build_member(pairs: list[tuple[str, int | None]], options: dict[str, dict[str, Any]]) -> ListWeightMember:
    """A suite's ``weighted_rbp`` member at its cut-offs."""
    return ListWeightMember([k for _, k in plain_requests(pairs, options)])


@overload
def weighted_rbp(preds: Tensor | None = None, target: Tensor | None = None, *, item_weights: Tensor, k: int = 10,
                 reduction: Reduction = "mean", empty_target_action: str = "skip",
                 relevance_threshold: float | None = None, ties: Ties = "index", validate_args: bool = True,
                 **inputs: Unpack[FormInputs]) -> Tensor: ...
@overload
def weighted_rbp(preds: Tensor | None = None, target: Tensor | None = None, *, item_weights: Tensor,
                 k: Sequence[int], reduction: Reduction = "mean", empty_target_action: str = "skip",
                 relevance_threshold: float | None = None, ties: Ties = "index", validate_args: bool = True,
                 **inputs: Unpack[FormInputs]) -> dict[str, Tensor]: ...
@input_keywords_checked
def weighted_rbp(preds: Tensor | None = None, target: Tensor | None = None, *, item_weights: Tensor,
                 k: int | Sequence[int] = 10, reduction: Reduction = "mean", empty_target_action: str = "skip",
                 relevance_threshold: float | None = None, ties: Ties = "index", validate_args: bool = True,
                 **inputs: Unpack[FormInputs]) -> Tensor | dict[str, Tensor]:
    r"""RBP@k with list weights (LensKit's ``RBP(weight_field=...)``) of one batch:
    :math:`\sum_{i \le k} r_i w_i / \sum_{i \le k} w_i` per query, their mean.

    Shapes: ``item_weights`` of the shape of ``preds`` [B, N] (a weight per item), or of ``ranked_ids`` [B, L] (a
    weight per listed item); any input form but the flat one.

    Args:
        preds, target, inputs: one batch in the dense, ids or ranked form.
        item_weights: each item's weight (LensKit's weight field, e.g. a score or a rank weight of its own).
        k: cut-off, an int or a sequence of them (then a dict ``{"weighted_rbp@k": value}``).
        reduction: ``"mean"`` over counted queries, or ``"none"``: [B] per query (NaN: not counted).
        empty_target_action, relevance_threshold, ties, validate_args: as in the other top-k functions.

    Raises:
        ValueError: on a bad ``k``, ``reduction``, ``item_weights`` (shape; non-finite with ``validate_args``),
            ``ties="average"`` or the flat form, and on bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import weighted_rbp
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4]])
        >>> target = torch.tensor([[1, 0, 0, 1]])
        >>> weighted_rbp(preds, target, item_weights=torch.tensor([[0.5, 0.3, 0.1, 0.2]]), k=3)  # (0.5 + 0.2) / 1.0
        tensor(0.7000, dtype=torch.float64)
    """
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    check_common(empty_target_action, relevance_threshold)
    member = ListWeightMember(list(k) if isinstance(k, (list, tuple)) else [k])
    member.check_ties(ties)
    weights = checked_list_weights(item_weights, preds, inputs, validate_args)
    batch = prepare([member], Inputs.of({**inputs, "preds": preds, "target": target}),
                    Rules(ties, relevance_threshold, validate_args))
    batch.extras = {"item_weights": listed_weights(batch.top_k(), weights, inputs.get("ranked_ids"))}
    values, counted = member.values(batch, empty_target_action)
    if reduction == "none":
        out = values.masked_fill(~counted, float("nan"))
    else:
        out = values.sum(0) / counted.sum(0)
    results = {key: out[..., i] for i, key in enumerate(member.keys)}
    return results if isinstance(k, (list, tuple)) else results[member.keys[0]]


def checked_list_weights(item_weights: Tensor | None, preds: Tensor | None, inputs: Any,
                         validate_args: bool) -> Tensor:
    """``item_weights`` as float64, of the shape of ``ranked_ids`` or ``preds``, finite with ``validate_args``.

    Raises:
        ValueError: naming ``item_weights``: missing, another shape, not finite, or with the flat form.
    """
    refuse_flat(inputs, "list weights")
    weights = checked_item_values("item_weights", item_weights, preds, inputs.get("ranked_ids"))
    if weights is None:
        raise ValueError(f"`item_weights`: RBP with list weights needs each item's weight, got {item_weights!r}")
    if validate_args and not bool(weights.isfinite().all()):
        raise ValueError(f"`item_weights` must be finite, got {weights[~weights.isfinite()][:5].tolist()}")
    return weights
