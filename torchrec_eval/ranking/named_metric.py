"""The shared body of the functional top-k metrics: :func:`compute_named_metric` checks the arguments,
ranks the batch once and reduces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from torchrec_eval.members.conventions import Convention, preset, resolve_common, resolve_options
from torchrec_eval.members.empty_targets import EmptyTargetAction
from torchrec_eval.members.steps import Reduction, check_common, prepare
from torchrec_eval.pipeline import INPUT_KEYWORDS, FormInputs, Inputs, Rules, Ties
from torchrec_eval.ranking.entries import make_entry
from torchrec_eval.ranking.member import TopKMember
from torchrec_eval.ranking.registry import EmptyListAction


class TopKCall(FormInputs, total=False):
    """The keywords every functional top-k metric takes in ``**arguments``, besides ``preds``, ``target``,
    ``k`` and its family's options: the common arguments (their defaults: ``reduction="mean"``,
    ``validate_args=True``, the others None) and the other input forms."""

    reduction: Reduction
    convention: Convention | None
    empty_target_action: EmptyTargetAction | None
    relevance_threshold: float | None
    ties: Ties | None
    validate_args: bool
    empty_list_action: EmptyListAction | None


def compute_named_metric(name: str, preds: Tensor | None, target: Tensor | None, k: int | Sequence[int | None] | None,
                         options: dict[str, Any], arguments: TopKCall) -> Tensor | dict[str, Tensor]:
    """The top-k metric ``name`` of one batch, the shared body of the functional metrics: ``options`` are the
    family's own, ``arguments`` the caller's common arguments and input forms."""
    reduction = arguments.get("reduction", "mean")
    convention, ties = arguments.get("convention"), arguments.get("ties")
    empty_target_action = arguments.get("empty_target_action")
    relevance_threshold = arguments.get("relevance_threshold")
    validate_args = arguments.get("validate_args", True)
    options = {**options, "empty_list_action": arguments.get("empty_list_action")}
    inputs = {key: value for key, value in arguments.items() if key in INPUT_KEYWORDS}
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    entry = make_entry(name, k, resolve_options(convention, name, options, ties))  # `ties` as passed
    action, order = resolve_common(convention, empty_target_action, ties)
    check_common(action, relevance_threshold)
    member = TopKMember([entry])
    rules = Rules(order, relevance_threshold, validate_args, preset(convention).duplicates)
    batch = prepare([member], Inputs.of({**inputs, "preds": preds, "target": target}), rules)
    member.check_ties(order)
    values, counts = member.counted(batch.top_k(), action)
    if reduction == "none":
        values = values.masked_fill(~(counts[:, list(member.count_columns)] > 0), float("nan"))
    else:  # 0/0 = NaN when nothing is counted (or 0.0 with empty_mean="zero")
        values = member.means(values.sum(0, keepdim=True), counts.sum(0, keepdim=True))
    results = {key: values[:, i] for i, key in enumerate(member.keys)}
    if isinstance(k, (list, tuple)):
        return {key: v if reduction == "none" else v.squeeze(0) for key, v in results.items()}
    only = results[member.keys[0]]
    return only if reduction == "none" else only.squeeze(0)
