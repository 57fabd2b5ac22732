"""The logged responses of an off-policy estimate, in each input form, read at the ranks of the new ranking.

:func:`logged_inputs` checks the responses, the propensities and the reward estimates against the form they
come in (shapes always; values with ``validate_args``, which reads them on the host) and returns a
:class:`LoggedInputs`, whose :meth:`~LoggedInputs.at_ranks` looks each ranked item up: by column in the dense form,
by id among the logged ``target_ids`` otherwise (a [B, K, T] comparison: T logged items a row).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.pipeline.item_values import checked_item_values, checked_like, refuse_flat, values_at_ranks
from torchrec_eval.pipeline.validation import describe_any

__all__ = ["LoggedInputs", "logged_inputs", "uniform_propensity"]


@dataclass(frozen=True)
class LoggedInputs:
    """One batch's logged responses, aligned with its form.

    Attributes:
        pipeline_target: the target the pipeline validates and ranks with (the dense form's logged flags), or
            None (the ids and ranked forms give ``target_ids``).
        logged: [B, N] bool, the dense form's logged items; None in the other forms (a logged item is a target id).
        reward: the logged reward of each item: [B, N] dense, [B, T] beside ``target_ids``.
        propensity: the logging propensity, of the reward's shape, or a 0-d uniform one.
        estimate: the reward model's estimate: [B, N] beside ``preds``, [B, L] beside ``ranked_ids``, or None (not
            read: 0).
        target_ids: [B, T] the logged items of the ids and ranked forms.
        ranked_ids: [B, L] the ranked form's list, where ``estimate`` follows it.
    """

    pipeline_target: Tensor | None
    logged: Tensor | None
    reward: Tensor
    propensity: Tensor
    estimate: Tensor | None
    target_ids: Tensor | None = None
    ranked_ids: Tensor | None = None

    def at_ranks(self, listed: Tensor) -> dict[str, Tensor]:
        """Each ranked item's logged flag, reward, propensity and estimate, [B, K] each (``listed``: the ranked
        items' ids or columns, -1 past the list)."""
        present = listed >= 0
        column = listed.clamp(min=0)
        if self.logged is not None:  # dense: the items are the columns
            logged = self.logged.gather(1, column) & present
            reward = self.reward.gather(1, column)
            propensity = self.propensity.expand_as(self.reward).gather(1, column)
        else:
            ids = self.target_ids if self.target_ids is not None else listed.new_full((listed.shape[0], 1), -1)
            matches = (listed.unsqueeze(2) == ids.unsqueeze(1)) & (ids >= 0).unsqueeze(1)
            logged = matches.any(2) & present
            slot = matches.to(torch.int32).argmax(2)
            reward = self.reward.gather(1, slot)
            propensity = self.propensity.expand_as(self.reward).gather(1, slot)
        return {"logged": logged, "reward": reward, "propensity": propensity,
                "estimate": self._estimate_at(listed)}

    def _estimate_at(self, listed: Tensor) -> Tensor:
        if self.estimate is None:
            return torch.zeros(listed.shape, dtype=torch.float64, device=listed.device)
        return values_at_ranks(self.estimate, listed, self.ranked_ids)


def uniform_propensity(items_logged: Tensor) -> Tensor:
    """Jurity's default: 1 / the number of distinct items logged in the batch, a 0-d float64 tensor."""
    return 1.0 / items_logged.to(torch.float64)


def _distinct_ids(ids: Tensor) -> Tensor:
    """The number of distinct ids >= 0 of a [B, T] tensor, as a 0-d tensor (sorted and compared: no host read)."""
    flat = ids.flatten().sort().values
    first = torch.ones_like(flat, dtype=torch.bool)
    first[1:] = flat[1:] != flat[:-1]
    return (first & (flat >= 0)).sum()


def _check_values(name: str, value: Tensor, where: Tensor, probability: bool) -> None:
    """With ``validate_args``: ``value`` finite where ``where`` (a propensity in (0, 1]); reads the host."""
    read = value.to(torch.float64)[where]
    bad = ~read.isfinite() if not probability else ~((read > 0) & (read <= 1))
    if bool(bad.any()):
        wanted = "a probability in (0, 1]" if probability else "finite"
        raise ValueError(f"`{name}` must be {wanted} where an item is logged, got {read[bad][:5].tolist()}")


def logged_inputs(preds: Tensor | None, target: Tensor | None, propensity: Tensor | None,
                  reward_estimate: Tensor | None, inputs: Mapping[str, Any], ignore_index: float | None,
                  validate_args: bool, needs_estimate: bool) -> LoggedInputs:
    """Check one batch's logged responses against its form and align them (see :class:`LoggedInputs`);
    ``needs_estimate``: the doubly robust estimate reads ``reward_estimate``.

    Raises:
        ValueError: naming the argument, on the flat form, a ranked list without ``reward_estimate`` for DR, a
            shape that does not follow the form, a propensity outside (0, 1] or a non-finite reward or estimate
            where an item is logged (with ``validate_args``).
    """
    refuse_flat(inputs, "an off-policy estimate's propensities")
    target_ids: Tensor | None = inputs.get("target_ids")
    ranked_ids: Tensor | None = inputs.get("ranked_ids")
    if needs_estimate and ranked_ids is not None and reward_estimate is None:
        raise ValueError("`reward_estimate`: the doubly robust estimate of a ranked list needs the reward model's "
                         "estimate of each listed item ([B, L] beside `ranked_ids`), which has no scores to default "
                         f"to; got reward_estimate={reward_estimate!r}")
    if target_ids is None:
        logged, reward, where, beside = _dense_log(preds, target, ignore_index)
        items_logged = logged.any(0).sum()
    else:
        logged, beside = None, "target_ids"
        reward, where = _ids_rewards(target_ids, inputs.get("target_gains")), target_ids >= 0
        items_logged = _distinct_ids(target_ids)
    given = checked_like("propensity", propensity, tuple(reward.shape), beside)
    estimate = checked_item_values("reward_estimate", reward_estimate, preds, ranked_ids)
    if estimate is None and ranked_ids is None:  # Jurity's default: the recommendation's own score
        estimate = preds
    if validate_args:
        _check_values(beside if beside != "target_ids" else "target_gains", reward, where, probability=False)
        if given is not None:
            _check_values("propensity", given, where, probability=True)
        if reward_estimate is not None:
            _check_values("reward_estimate", reward_estimate, torch.ones_like(reward_estimate, dtype=torch.bool),
                          probability=False)
    return LoggedInputs(pipeline_target=logged, logged=logged, reward=reward,
                        propensity=uniform_propensity(items_logged) if given is None else given.to(torch.float64),
                        estimate=None if estimate is None else estimate.to(torch.float64),
                        target_ids=target_ids, ranked_ids=ranked_ids)


def _dense_log(preds: Tensor | None, target: Tensor | None,
               ignore_index: float | None) -> tuple[Tensor, Tensor, Tensor, str]:
    """The dense form's logged items (``target != ignore_index``; every one without it), their rewards (0 where
    none is logged), where to check values, and the name the shapes follow."""
    if not isinstance(target, Tensor) or not isinstance(preds, Tensor) or tuple(target.shape) != tuple(preds.shape):
        raise ValueError(f"`target`: the rewards of the dense form, of the shape of `preds` "
                         f"{describe_any(preds)}, got {describe_any(target)}")
    logged = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    return logged, torch.where(logged, target.to(torch.float64), 0.0), logged, "target"


def _ids_rewards(target_ids: Tensor, target_gains: Tensor | None) -> Tensor:
    """The rewards of the logged ``target_ids``: ``target_gains``, or 1 for each (a click) without them."""
    if target_gains is None:
        return (target_ids >= 0).to(torch.float64)
    return checked_like("target_gains", target_gains, tuple(target_ids.shape), "target_ids").to(torch.float64)
