"""The flat form: 1-D ``preds``, ``target`` and ``indexes`` (torchmetrics.retrieval style), grouped into rows.

Grouping needs a host sync: the number of queries is data dependent.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import Batch
from torchrec_eval.pipeline.forms.scored import scored_batch
from torchrec_eval.pipeline.inputs import Inputs, Needs, Rules
from torchrec_eval.pipeline.validation import Notes


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


def flat_batch(inputs: Inputs, needs: Needs, rules: Rules, notes: Notes | None) -> Batch:
    """The flat form's rows, checked (:func:`~torchrec_eval.pipeline.validation.checked_inputs`), grouped by query
    into [Q, L] (preds, target, mask, groups), and the batch of those rows as a dense form."""
    preds, target, indexes = (cast(Tensor, value) for value in (inputs.preds, inputs.target, inputs.indexes))
    preds, target, mask, groups = flat_to_dense(preds, target, indexes, inputs.mask, inputs.groups)
    return scored_batch(Inputs(preds=preds, target=target, mask=mask, groups=groups), needs, rules, notes)
