"""The ranked form: ``ranked_ids`` [B, L] item ids in rank order and ``target_ids`` [B, T]; no scores."""

from __future__ import annotations

from dataclasses import replace
from typing import cast

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import Batch, RankedTargets
from torchrec_eval.pipeline.forms.ids import lookup, table_ranked, target_table
from torchrec_eval.pipeline.inputs import Inputs, Needs, Rules
from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.tensor_cache import filled
from torchrec_eval.pipeline.validation import Notes


def ranked_batch(inputs: Inputs, needs: Needs, rules: Rules, notes: Notes | None) -> Batch:
    """The ranked form's batch, checked (:func:`~torchrec_eval.pipeline.validation.checked_inputs`): no scores, so
    no candidate view."""
    return Batch(ranked_form(inputs, needs, rules), None, inputs.groups)


def ranked_form(inputs: Inputs, needs: Needs, rules: Rules) -> RankedTargets:
    """The ranked form's top-k view: the lists as given (padding moved to the end, excluded ids
    dropped), read through the target table; with ``rules.duplicates="count"``, ranx's counting of
    repeated ids."""
    ranked_ids, target_ids = cast(Tensor, inputs.ranked_ids), cast(Tensor, inputs.target_ids)  # checked: given
    exclude_ids = inputs.exclude_ids
    repeats = rules.duplicates == "count"
    rows = ranked_ids.shape[0]
    table = target_table(target_ids, inputs.target_gains, None, rules.relevance_threshold, unjudged=needs.judged)
    if repeats:  # as ranx: a ranked item takes the gain of its first relevant row (-2: matches no id, not
        # even the list's padding -1, which a lookup finds at the targets' padding of gain 0); it is judged
        # where any row lists it
        table = replace(table, ids=target_ids.masked_fill(~table.relevant, -2),
                        judged_ids=target_ids if needs.judged else None, repeats=True)
    if exclude_ids is not None:
        dropped, _, _ = lookup(ranked_ids, exclude_ids)
        ranked_ids = ranked_ids.masked_fill(dropped, -1)
        excluded_targets, _, _ = lookup(table.ids, exclude_ids)
        graded = None if table.graded_gains is None else table.graded_gains.masked_fill(excluded_targets, 0)
        table = replace(table, graded_gains=graded, relevant=table.relevant & ~excluded_targets)
        if needs.judged and table.judged is not None:  # an excluded target is no judgment of the list
            if table.judged_ids is not None:
                excluded_targets, _, _ = lookup(table.judged_ids, exclude_ids)
            table = replace(table, judged=table.judged & ~excluded_targets,
                            pooled=None if table.pooled is None else table.pooled & ~excluded_targets)
    present = ranked_ids >= 0
    if host_reads_free(present) and bool(present.all()):  # no padding (the common case, free to ask on the CPU)
        num_candidates = filled((rows,), float(ranked_ids.shape[1]), ranked_ids.device)
    else:  # padding may sit anywhere in a row: move the real ids to the front, keeping their order
        order = torch.sort((~present).to(torch.uint8), dim=1, stable=True).indices
        ranked_ids = ranked_ids.gather(1, order)
        num_candidates = present.sum(1, dtype=torch.float64)
    depth = ranked_ids.shape[1] if needs.to_num_relevant else min(needs.depth, ranked_ids.shape[1])
    return table_ranked(ranked_ids[:, :depth], table, num_candidates, needs)
