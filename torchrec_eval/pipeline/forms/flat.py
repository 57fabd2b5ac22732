"""The flat form: 1-D ``preds``, ``target`` and ``indexes`` (torchmetrics.retrieval style), grouped into rows.

Grouping needs a host sync: the number of queries is data dependent.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import Batch
from torchrec_eval.pipeline.forms import FORMS
from torchrec_eval.pipeline.forms.scored import scored_batch
from torchrec_eval.pipeline.inputs import Inputs, Needs, Rules
from torchrec_eval.pipeline.validation import (
    Checks,
    check_flat_shapes,
    check_scores,
    check_target_values,
    describe,
    describe_any,
    require_tensor,
    required,
)


def flat_to_dense(
    preds: Tensor, target: Tensor, indexes: Tensor, mask: Tensor | None, groups: Tensor | None
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """Group 1-D inputs by query id into padded [Q, L] tensors plus a candidate mask (host sync)."""
    _, query, counts = torch.unique(indexes, return_inverse=True, return_counts=True)
    num_queries, width = counts.numel(), int(counts.max())
    order = torch.argsort(query, stable=True)
    starts = counts.cumsum(0) - counts
    column = torch.arange(query.numel(), device=query.device) - starts[query[order]]
    row = query[order]
    dense_preds = preds.new_zeros(num_queries, width)
    dense_preds[row, column] = preds[order]
    dense_target = target.new_zeros(num_queries, width)
    dense_target[row, column] = target[order]
    valid = None
    if mask is not None or bool((counts != width).any()):
        valid = torch.zeros(num_queries, width, dtype=torch.bool, device=preds.device)
        valid[row, column] = True if mask is None else mask[order]
    query_groups = None
    if groups is not None:
        query_groups = groups.new_zeros(num_queries)
        query_groups[row] = groups[order]
    return dense_preds, dense_target, valid, query_groups


def check_flat(inputs: dict[str, Tensor | None], validate_args: bool) -> None:
    """Validate a whole flat-form call (forms, shapes, dtypes and, with ``validate_args``, values).

    A metric holds the last query of a call back until the next one; this check makes a bad row fail
    in the call that brings it, not in a later one.
    """
    preds, target, indexes = inputs.get("preds"), inputs.get("target"), inputs.get("indexes")
    for name, value in inputs.items():
        if value is not None:
            require_tensor(name, value)
    others = [name for name in ("target_ids", "target_gains", "ranked_ids", "exclude_ids") if inputs.get(name) is not None]
    if preds is None or target is None or others:
        raise ValueError(
            f"The flat form takes `preds`, `target` and `indexes` (and `mask`, `groups`), got also {others}"
            f"{'' if target is not None else ' and no `target`'}; expected one of: {FORMS}"
        )
    check_flat_shapes(preds, target, required("indexes", indexes, "flat"), inputs.get("mask"), inputs.get("groups"), None)
    if target.is_complex():
        raise ValueError(f"`target` must be bool, integer or float relevance, got {describe(target)}")
    if validate_args:
        checks = Checks()
        check_scores(checks, "preds", preds)
        check_target_values(checks, "target", target)
        checks.run()


def flat_batch(inputs: Inputs, needs: Needs, rules: Rules, checks: Checks | None) -> Batch:
    """The flat form's checks, its rows grouped by query into [Q, L] (preds, target, mask, groups), and the
    batch of those rows as a dense form."""
    target, target_ids, target_gains = inputs.target, inputs.target_ids, inputs.target_gains
    if target is None or target_ids is not None or target_gains is not None:
        raise ValueError(
            f"The flat form takes `preds`, `target` and `indexes` (graded relevance goes in `target`, "
            f"not `target_gains`); expected one of: {FORMS}. Got `target` {describe_any(target)}, `target_ids` "
            f"{describe_any(target_ids)}, `target_gains` {describe_any(target_gains)}"
        )
    if inputs.exclude_ids is not None:
        raise ValueError("`exclude_ids` is not supported with the flat form; use a boolean `mask` [M], got "
                         f"`exclude_ids` of {describe_any(inputs.exclude_ids)}")
    preds, indexes = required("preds", inputs.preds, "flat"), required("indexes", inputs.indexes, "flat")
    check_flat_shapes(preds, target, indexes, inputs.mask, inputs.groups, checks)
    preds, target, mask, groups = flat_to_dense(preds, target, indexes, inputs.mask, inputs.groups)
    return scored_batch(Inputs(preds=preds, target=target, mask=mask, groups=groups), needs, rules, checks)
