"""The ranked form: ``ranked_ids`` [B, L] item ids in rank order and ``target_ids`` [B, T]; no scores."""

from __future__ import annotations

from dataclasses import replace

import torch

from torchrec_eval.pipeline.batch import Batch, RankedTargets
from torchrec_eval.pipeline.forms.ids import check_target_ids, lookup, table_ranked, target_table
from torchrec_eval.pipeline.inputs import Inputs, Needs, Rules
from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.tensor_cache import filled
from torchrec_eval.pipeline.validation import (
    Checks,
    check_groups_shape,
    check_id_range,
    check_unique_ids,
    describe,
    describe_any,
    require_ids,
    require_nonempty,
    required,
)


def ranked_batch(inputs: Inputs, needs: Needs, rules: Rules, checks: Checks | None) -> Batch:
    """The ranked form's batch: no scores, so no candidate view."""
    ranked_ids = required("ranked_ids", inputs.ranked_ids, "ranked")
    if inputs.mask is not None:
        raise ValueError("`mask` needs scores over a candidate set; with `ranked_ids` use `exclude_ids`, got "
                         f"`mask` of {describe_any(inputs.mask)}")
    if needs.candidates:
        raise ValueError(
            "AUC, GAUC, MPR, FCP and CTR need a score for every candidate: pass `preds` "
            f"(dense, ids or flat form), not `ranked_ids` (got `ranked_ids` of {describe_any(ranked_ids)})"
        )
    if needs.non_relevant:
        raise ValueError(
            "FallOut divides by each query's non-relevant candidates, which a ranked list does not know: pass "
            f"`preds` (dense, ids or flat form), not `ranked_ids` (got `ranked_ids` of {describe_any(ranked_ids)})"
        )
    check_groups_shape(inputs.groups, ranked_ids.shape[0] if ranked_ids.ndim else 0)
    return Batch(ranked_form(inputs, needs, rules, checks), None, inputs.groups)


def ranked_form(inputs: Inputs, needs: Needs, rules: Rules, checks: Checks | None) -> RankedTargets:
    """The ranked form's top-k view: the lists as given (padding moved to the end, excluded ids
    dropped), read through the target table; with ``rules.duplicates="count"``, ranx's counting of
    repeated ids."""
    ranked_ids = required("ranked_ids", inputs.ranked_ids, "ranked")
    target_ids = required("target_ids", inputs.target_ids, "ranked")
    exclude_ids = inputs.exclude_ids
    repeats = rules.duplicates == "count"
    if ranked_ids.ndim != 2:
        raise ValueError(
            f"`ranked_ids` must have shape [B, L] (one ranked list per query), got {describe(ranked_ids)}"
        )
    require_nonempty("ranked_ids", ranked_ids)
    rows = ranked_ids.shape[0]
    require_ids("ranked_ids", ranked_ids, rows)
    if checks is not None:
        check_id_range(checks, "ranked_ids", ranked_ids, None)
        if not repeats:
            check_unique_ids(checks, "ranked_ids", ranked_ids)
    check_target_ids(target_ids, inputs.target_gains, (rows, None), checks, unique=not repeats, unjudged=needs.judged)
    table = target_table(target_ids, inputs.target_gains, None, rules.relevance_threshold, unjudged=needs.judged)
    if repeats:  # as ranx: a ranked item takes the gain of its first relevant row (-2: matches no id, not
        # even the list's padding -1, which a lookup finds at the targets' padding of gain 0); it is judged
        # where any row lists it
        table = replace(table, ids=target_ids.masked_fill(~table.relevant, -2),
                        judged_ids=target_ids if needs.judged else None, repeats=True)
    if exclude_ids is not None:
        require_ids("exclude_ids", exclude_ids, rows)
        if checks is not None:
            check_id_range(checks, "exclude_ids", exclude_ids, None)
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
    if checks is not None:
        checks.run()
    present = ranked_ids >= 0
    if host_reads_free(present) and bool(present.all()):  # no padding (the common case, free to ask on the CPU)
        num_candidates = filled((rows,), float(ranked_ids.shape[1]), ranked_ids.device)
    else:  # padding may sit anywhere in a row: move the real ids to the front, keeping their order
        order = torch.sort((~present).to(torch.uint8), dim=1, stable=True).indices
        ranked_ids = ranked_ids.gather(1, order)
        num_candidates = present.sum(1, dtype=torch.float64)
    depth = ranked_ids.shape[1] if needs.to_num_relevant else min(needs.depth, ranked_ids.shape[1])
    return table_ranked(ranked_ids[:, :depth], table, num_candidates, needs)
