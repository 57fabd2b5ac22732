r"""RBP@k with weights read from the list (:class:`WeightedRBP`): LensKit's ``RBP(weight_field=...)``, a thin
:class:`~torchrec_eval.metrics.base.MemberMetric` over one :class:`~torchrec_eval.ranking.list_weights.ListWeightMember`
(the formula there), whose ``update`` takes each item's weight beside the scores or the ranked list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from torch import Tensor

from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.lifecycle import keywords_checked
from torchrec_eval.metrics.per_query import per_query
from torchrec_eval.pairwise.ctr import ctr_cutoffs
from torchrec_eval.pipeline import Batch, FormInputs
from torchrec_eval.pipeline.item_values import refuse_flat
from torchrec_eval.ranking.list_weights import ListWeightMember, checked_list_weights, listed_weights

__all__ = ["WeightedRBP"]


class WeightedRBP(MemberMetric):
    r"""RBP@k with list weights: each listed item's weight read from ``item_weights`` instead of computed from its
    rank (LensKit's ``RBP(weight_field=...)``), the mean over queries of

    .. math:: \mathrm{RBP@}k_q = \frac{\sum_{i \le k} r_i\, w_i}{\sum_{i \le k} w_i}

    :math:`w_i` the weight of the item at rank i, :math:`r_i` its relevance. As LensKit's ``measure_list`` with a
    weight field, the denominator is the weights of the list cut at k (its ``normalize`` does not apply there). A
    query without a relevant item follows ``empty_target_action``; one whose listed weights sum to 0 (an empty list)
    is not counted. For rank weights (geometric, log) see :class:`~torchrec_eval.RBP`.

    Args:
        k: cut-off(s): an int, or a sequence of ints for a dict ``{"weighted_rbp@5": ..., ...}``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update`` (``item_weights`` of another
            shape, or not finite with ``validate_args``; the flat form).

    Example:
        >>> import torch
        >>> from torchrec_eval import WeightedRBP
        >>> metric = WeightedRBP(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]),
        ...               item_weights=torch.tensor([[0.5, 0.3, 0.1, 0.2]]))
        >>> metric.compute()  # (0.5 + 0.2) / (0.5 + 0.3 + 0.2)
        tensor(0.7000, dtype=torch.float64)
    """

    def __init__(self, k: int | Sequence[int] = 10, **kwargs: Unpack[MetricArguments]) -> None:
        member = ListWeightMember(ctr_cutoffs(k))
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self.member = member

    def update(  # the items' weights beside MemberMetric's inputs
        self, preds: Tensor | None = None, target: Tensor | None = None, *, item_weights: Tensor | None = None,
        groups: Tensor | None = None, sample_weight: Tensor | None = None, **inputs: Unpack[FormInputs],
    ) -> None:
        """Rank one batch and add its queries to the state; on any error the state is left unchanged.

        Args:
            preds, target, groups, sample_weight, inputs: as in
                :meth:`~torchrec_eval.metrics.base.MemberMetric.update` (not the flat form).
            item_weights: each item's weight: [B, N] beside ``preds``, or [B, L] beside ``ranked_ids``.
        """
        refuse_flat(inputs, "list weights")  # the flat form never reaches batch(), where the weights are read
        self._update_from({"preds": preds, "target": target, "item_weights": item_weights, "groups": groups,
                           "sample_weight": sample_weight, **inputs})

    @keywords_checked
    def per_query(  # update's inputs, see there
        self, preds: Tensor | None = None, target: Tensor | None = None, *, item_weights: Tensor | None = None,
        groups: Tensor | None = None, query_ids: Any = None, as_frame: bool = False, **inputs: Unpack[FormInputs],
    ) -> Any:
        """Each query's value for one batch (NaN: not counted), without touching the state; ``update``'s
        arguments, see :meth:`~torchrec_eval.metrics.base.MemberMetric.per_query`."""
        refuse_flat(inputs, "list weights")
        return per_query(self, {"preds": preds, "target": target, "item_weights": item_weights, "groups": groups,
                                **inputs}, query_ids, as_frame)

    def batch(  # update's inputs, see there
        self, preds: Tensor | None = None, target: Tensor | None = None, *, item_weights: Tensor | None = None,
        groups: Tensor | None = None, **inputs: Tensor | None,
    ) -> Batch:
        """The validated, ranked batch, with each rank's weight in ``extras["item_weights"]``."""
        weights = checked_list_weights(item_weights, preds, inputs, self.validate_args)
        batch = super().batch(preds, target, groups=groups, **inputs)
        batch.extras = {"item_weights": listed_weights(batch.top_k(), weights, inputs.get("ranked_ids"))}
        return batch
