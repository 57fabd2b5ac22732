r"""Off-policy CTR@k (:class:`OffPolicyCTR`): Jurity's ``CTR(estimation="ips" | "dr")`` and self-normalised IPS,
a thin :class:`~torchrec_eval.metrics.base.MemberMetric` over one
:class:`~torchrec_eval.pairwise.off_policy.OffPolicyMember` (formulas and when each is unbiased there).

Its ``update`` takes the new ranking's scores and the logged responses in the dense form (``target`` [B, N], the
unlogged items marked by ``ignore_index``), the ids form (``target_ids`` [B, T] the logged items, ``target_gains``
their rewards) or the ranked form (``ranked_ids``), with the logging policy's ``propensity`` of each logged item and,
for the doubly robust estimate, a reward model's ``reward_estimate`` of each item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from torch import Tensor

from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.lifecycle import keywords_checked
from torchrec_eval.metrics.per_query import per_query
from torchrec_eval.pairwise.ctr import check_ignore_index, ctr_cutoffs
from torchrec_eval.pairwise.logged import logged_inputs
from torchrec_eval.pairwise.off_policy import Estimator, OffPolicyMember
from torchrec_eval.pipeline import Batch, FormInputs
from torchrec_eval.pipeline.item_values import refuse_flat

__all__ = ["OffPolicyCTR"]

IntOrSeq = int | Sequence[int]


class OffPolicyCTR(MemberMetric):
    r"""Off-policy CTR@k: the click-through rate of the top k of a new ranking, estimated from responses logged under
    another policy by inverse propensity scoring (``"ips"``), self-normalised IPS (``"snips"``) or the doubly robust
    estimator (``"dr"``), pooled over the recommended (query, item) pairs as Jurity's ``CTR(estimation=...)``:

    .. math::

        \mathrm{IPS} = \frac{1}{n} \sum \frac{I_a r_a}{p_a}, \quad
        \mathrm{SNIPS} = \frac{\sum I_a r_a / p_a}{\sum I_a / p_a}, \quad
        \mathrm{DR} = \frac{1}{n} \sum \Big(\hat r_a + \frac{I_a (r_a - \hat r_a)}{p_a}\Big)

    over the n items of the top k of every query, :math:`I_a` = 1 when item a has a logged response r (reward,
    e.g. a click) shown with probability :math:`p_a` by the logging policy, :math:`\hat r_a` a reward model's
    estimate. IPS is unbiased when the propensities are the logging policy's and positive wherever the ranking
    recommends; DR when the propensities *or* the reward model are right; SNIPS is consistent, with less variance
    (see :mod:`torchrec_eval.pairwise.off_policy`). Every item is a candidate, logged or not (Jurity ranks every
    recommended item, then matches the log); ``mask`` False or ``exclude_ids`` remove items from the ranking.

    Defaults as Jurity's: without ``propensity``, a uniform logging policy over the items logged in the batch
    (p = 1 / their number: it depends on the batch, so pass the propensities where they are known); without
    ``reward_estimate``, the ranking's own score (Jurity reads the recommendation's score column).

    Args:
        k: cut-off(s): an int, or a sequence of ints for a dict ``{"ips_ctr@5": ..., "ips_ctr@10": ...}``.
        estimator: ``"ips"`` (default), ``"snips"`` or ``"dr"``; the keys are ``"<estimator>_ctr@k"``.
        ignore_index: in the dense form, the ``target`` value of an item without a logged response (e.g. -1);
            None: every candidate is logged.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric` (``empty_target_action``
            and ``relevance_threshold`` do not apply: a reward is a number, not a relevance).

    Raises:
        ValueError: on a bad ``k``, ``estimator`` or ``ignore_index``, ``ties="average"``, and on bad input in
            ``update`` (a propensity outside (0, 1] where an item is logged, with ``validate_args``).

    Example:
        >>> import torch
        >>> from torchrec_eval import OffPolicyCTR
        >>> scores = torch.tensor([[0.8, 0.1, 0.3], [0.2, 0.7, 0.1]])
        >>> clicks = torch.tensor([[0.0, -1, -1], [-1, 1.0, 0.0]])  # -1: no logged response
        >>> propensity = torch.tensor([[0.1, 1.0, 1.0], [1.0, 0.6, 0.2]])
        >>> metric = OffPolicyCTR(k=1, estimator="ips", ignore_index=-1)
        >>> metric.update(scores, clicks, propensity=propensity)
        >>> metric.compute()  # (0 / 0.1 + 1 / 0.6) / 2
        tensor(0.8333, dtype=torch.float64)
    """

    higher_is_better = True

    def __init__(self, k: IntOrSeq = 10, *, estimator: Estimator = "ips", ignore_index: float | None = None,
                 **kwargs: Unpack[MetricArguments]) -> None:
        for name in ("empty_target_action", "relevance_threshold"):
            if kwargs.get(name) is not None:
                raise ValueError(f"`{name}` is about relevance, and {type(self).__name__} reads rewards: leave it "
                                 f"out, got {name}={kwargs.get(name)!r}")
        check_ignore_index(ignore_index)
        member = OffPolicyMember([(estimator, one) for one in ctr_cutoffs(k)])
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self.member = member
        self.ignore_index = ignore_index
        self._show(estimator=estimator, ignore_index=ignore_index)

    def update(  # the logging policy's inputs beside MemberMetric's
        self, preds: Tensor | None = None, target: Tensor | None = None, *, propensity: Tensor | None = None,
        reward_estimate: Tensor | None = None, groups: Tensor | None = None, sample_weight: Tensor | None = None,
        **inputs: Unpack[FormInputs],
    ) -> None:
        """Rank one batch and add its recommended pairs to the state; on any error the state is left unchanged.

        Args:
            preds, target, inputs: the new ranking and the logged responses: dense (``preds`` [B, N], ``target``
                [B, N] the rewards, ``ignore_index`` where none is logged), ids (``preds`` [B, N], ``target_ids``
                [B, T] the logged items, -1 padding, ``target_gains`` [B, T] their rewards, default 1) or ranked
                (``ranked_ids`` [B, L] with ``target_ids``); ``mask`` and ``exclude_ids`` as in
                :meth:`~torchrec_eval.metrics.base.MemberMetric.update`. The flat form is not taken.
            propensity: the logging policy's probability of each logged item: [B, N] in the dense form, [B, T]
                beside ``target_ids`` otherwise; read where an item is logged. Default: 1 / the number of items
                logged in the batch (Jurity's).
            reward_estimate: the reward model's estimate of each item, for ``"dr"``: [B, N] beside ``preds``, or
                [B, L] beside ``ranked_ids``. Default: ``preds`` (required with ``ranked_ids``).
            groups, sample_weight: as in :meth:`~torchrec_eval.metrics.base.MemberMetric.update`.
        """
        refuse_flat(inputs, "an off-policy estimate's propensities")
        self._update_from({"preds": preds, "target": target, "propensity": propensity,
                           "reward_estimate": reward_estimate, "groups": groups, "sample_weight": sample_weight,
                           **inputs})

    @keywords_checked
    def per_query(  # update's inputs, see there
        self, preds: Tensor | None = None, target: Tensor | None = None, *, propensity: Tensor | None = None,
        reward_estimate: Tensor | None = None, groups: Tensor | None = None, query_ids: Any = None,
        as_frame: bool = False, **inputs: Unpack[FormInputs],
    ) -> Any:
        """Each query's own estimate for one batch (NaN: no recommended pair), without touching the state;
        ``update``'s arguments, see :meth:`~torchrec_eval.metrics.base.MemberMetric.per_query`."""
        refuse_flat(inputs, "an off-policy estimate's propensities")
        return per_query(self, {"preds": preds, "target": target, "propensity": propensity,
                                "reward_estimate": reward_estimate, "groups": groups, **inputs}, query_ids, as_frame)

    def batch(  # update's inputs, see there
        self, preds: Tensor | None = None, target: Tensor | None = None, *, propensity: Tensor | None = None,
        reward_estimate: Tensor | None = None, groups: Tensor | None = None, **inputs: Tensor | None,
    ) -> Batch:
        """The validated, ranked batch, with each rank's logged flag, reward, propensity and reward estimate in
        ``extras`` (:meth:`~torchrec_eval.pairwise.logged.LoggedInputs.at_ranks`)."""
        log = logged_inputs(preds, target, propensity, reward_estimate, inputs, self.ignore_index, self.validate_args,
                            needs_estimate=self.member.needs_estimate)
        ranking = {name: value for name, value in inputs.items() if name != "target_gains"}  # rewards, read above
        batch = super().batch(preds, log.pipeline_target, groups=groups, **ranking)
        batch.extras = log.at_ranks(batch.top_k().listed_ids())
        return batch

