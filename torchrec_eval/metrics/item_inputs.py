"""A suite's per-item inputs beside the input forms: LensKit's list weights (``item_weights``, for
``"weighted_rbp@k"``) and the logging policy's propensities and a reward model's estimates (``propensity``,
``reward_estimate``, for ``"ips_ctr@k"``, ``"snips_ctr@k"`` and ``"dr_ctr@k"``), read at the ranks of the batch's one
top-k view into ``batch.extras``.

In a suite the target is the one relevance target of every family: the off-policy families read it as the logged
reward of every candidate (``mask`` False: an item without a logged response is not ranked, CTR@k's default), or
``target_gains`` as the rewards of the logged ``target_ids``. :class:`~torchrec_eval.OffPolicyCTR` alone keeps
Jurity's ranking of the unlogged items (``ignore_index``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torch import Tensor

from torchrec_eval.members.interface import Member
from torchrec_eval.pairwise.logged import logged_inputs
from torchrec_eval.pairwise.off_policy import OffPolicyMember
from torchrec_eval.pipeline import Batch
from torchrec_eval.pipeline.item_values import refuse_flat
from torchrec_eval.pipeline.validation import describe_any
from torchrec_eval.ranking.list_weights import ListWeightMember, checked_list_weights, listed_weights

__all__ = ["ITEM_INPUTS", "check_item_inputs", "item_extras", "reads_item_inputs"]

#: the per-item inputs of a suite, and the member that reads each
ITEM_INPUTS: dict[str, type] = {"item_weights": ListWeightMember, "propensity": OffPolicyMember,
                                "reward_estimate": OffPolicyMember}


def reads_item_inputs(members: Sequence[Member]) -> bool:
    """Whether a member reads a per-item input (a suite without one skips them)."""
    return any(isinstance(member, tuple(set(ITEM_INPUTS.values()))) for member in members)


def check_item_inputs(members: Sequence[Member], given: Mapping[str, Any], inputs: Mapping[str, Any]) -> None:
    """Refuse a per-item input that no member of the suite reads, and any with the flat form.

    Raises:
        ValueError: naming the input and what it received.
    """
    for name, value in given.items():
        if value is None:
            continue
        if not any(isinstance(member, ITEM_INPUTS[name]) for member in members):
            reader = "weighted_rbp@k" if name == "item_weights" else "ips_ctr@k, snips_ctr@k or dr_ctr@k"
            raise ValueError(f"`{name}` is read by {reader}, which this suite does not hold; got {describe_any(value)}")
        refuse_flat(inputs, f"`{name}`")


def item_extras(members: Sequence[Member], batch: Batch, preds: Tensor | None, target: Tensor | None,
                inputs: Mapping[str, Any], given: Mapping[str, Tensor | None],
                validate_args: bool) -> dict[str, Tensor] | None:
    """The per-rank values the suite's members read (None: no member reads any).

    Raises:
        ValueError: as :func:`~torchrec_eval.ranking.list_weights.checked_list_weights` and
            :func:`~torchrec_eval.pairwise.logged.logged_inputs` do.
    """
    extras: dict[str, Tensor] = {}
    if any(isinstance(member, ListWeightMember) for member in members):
        weights = checked_list_weights(given.get("item_weights"), preds, inputs, validate_args)
        extras["item_weights"] = listed_weights(batch.top_k(), weights, inputs.get("ranked_ids"))
    off_policy = [member for member in members if isinstance(member, OffPolicyMember)]
    if off_policy:
        log = logged_inputs(preds, target, given.get("propensity"), given.get("reward_estimate"), inputs, None,
                            validate_args, needs_estimate=any(member.needs_estimate for member in off_policy))
        extras.update(log.at_ranks(batch.top_k().listed_ids()))
    return extras or None
