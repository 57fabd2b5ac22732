"""The shared body of the functional top-k metrics: :func:`compute_named_metric` checks the arguments,
ranks the batch once and reduces."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from torchrec_eval.members.conventions import preset, resolve_common, resolve_options
from torchrec_eval.members.steps import check_common, prepare
from torchrec_eval.pipeline import Inputs, Rules
from torchrec_eval.ranking.entries import make_entry
from torchrec_eval.ranking.member import TopKMember

_COMMON = (
    "preds",
    "target",
    "k",
    "reduction",
    "convention",
    "empty_target_action",
    "relevance_threshold",
    "ties",
    "validate_args",
    "inputs",
)


def compute_named_metric(name: str, arguments: dict[str, Any]) -> Tensor | dict[str, Tensor]:
    """The top-k metric ``name`` of one batch, the shared body of the functional metrics: ``arguments``
    are the caller's parameters (its ``locals()``); those that are not common arguments are the metric's
    own options."""
    args = dict(arguments)
    inputs = args.pop("inputs")
    options = {key: args.pop(key) for key in list(args) if key not in _COMMON}
    preds, target, k, reduction = args["preds"], args["target"], args["k"], args["reduction"]
    convention, empty_target_action, ties = args["convention"], args["empty_target_action"], args["ties"]
    relevance_threshold, validate_args = args["relevance_threshold"], args["validate_args"]
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    entry = make_entry(name, k, resolve_options(convention, name, options, ties))  # `ties` as passed
    empty_target_action, ties = resolve_common(convention, empty_target_action, ties)
    check_common(empty_target_action, relevance_threshold)
    member = TopKMember([entry])
    rules = Rules(ties, relevance_threshold, validate_args, preset(convention).duplicates)
    batch = prepare([member], Inputs.of({**inputs, "preds": preds, "target": target}), rules)
    member.check_ties(ties)
    values, counts = member.counted(batch.top_k(), empty_target_action)
    if reduction == "none":
        values = values.masked_fill(~(counts[:, list(member.count_columns)] > 0), float("nan"))
    else:  # 0/0 = NaN when nothing is counted (or 0.0 with empty_mean="zero")
        values = member.means(values.sum(0, keepdim=True), counts.sum(0, keepdim=True))
    results = {key: values[:, i] for i, key in enumerate(member.keys)}
    if isinstance(k, (list, tuple)):
        return {key: v if reduction == "none" else v.squeeze(0) for key, v in results.items()}
    only = results[member.keys[0]]
    return only if reduction == "none" else only.squeeze(0)
