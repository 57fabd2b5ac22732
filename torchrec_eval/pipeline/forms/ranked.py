"""The ranked form: ``ranked_ids`` [B, L] item ids in rank order and ``target_ids`` [B, T]; no scores."""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import Batch, RankedTargets
from torchrec_eval.pipeline.forms.ids import check_target_ids, lookup, table_ranked
from torchrec_eval.pipeline.validation import (
    Checks,
    check_groups_shape,
    check_id_range,
    check_unique_ids,
    describe,
    describe_any,
    require_ids,
    require_nonempty,
)


def ranked_batch(
    ranked_ids: Tensor,
    target_ids: Tensor,
    target_gains: Tensor | None,
    mask: Tensor | None,
    exclude_ids: Tensor | None,
    groups: Tensor | None,
    k: int,
    relevance_threshold: float | None,
    need_ideal: bool,
    to_num_relevant: bool,
    need_candidates: bool,
    checks: Checks | None,
    duplicates: str,
) -> Batch:
    """The ranked form's batch: no scores, so no candidate view."""
    if mask is not None:
        raise ValueError("`mask` needs scores over a candidate set; with `ranked_ids` use `exclude_ids`, got "
                         f"`mask` of {describe_any(mask)}")
    if need_candidates:
        raise ValueError(
            "AUC, GAUC, MPR, FCP and CTR need a score for every candidate: pass `preds` "
            f"(dense, ids or flat form), not `ranked_ids` (got `ranked_ids` of {describe_any(ranked_ids)})"
        )
    check_groups_shape(groups, ranked_ids.shape[0] if ranked_ids.ndim else 0)
    ranked = ranked_form(
        ranked_ids, target_ids, target_gains, exclude_ids, k, relevance_threshold, need_ideal, to_num_relevant,
        checks, duplicates == "count",
    )
    return Batch(ranked, None, groups)


def ranked_form(
    ranked_ids: Tensor,
    target_ids: Tensor,
    target_gains: Tensor | None,
    exclude_ids: Tensor | None,
    k: int,
    relevance_threshold: float | None,
    need_ideal: bool,
    to_num_relevant: bool,
    checks: Checks | None,
    repeats: bool = False,
) -> RankedTargets:
    """The ranked form's top-k view: the lists as given (padding moved to the end, excluded ids
    dropped), read through the target table; with ``repeats``, ranx's counting of repeated ids."""
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
    gains_t, relevant_t = check_target_ids(
        target_ids, target_gains, rows, None, None, relevance_threshold, checks, unique=not repeats
    )
    if repeats:  # as ranx: a ranked item takes the gain of its first relevant row
        target_ids = target_ids.masked_fill(~relevant_t, -1)
    if exclude_ids is not None:
        require_ids("exclude_ids", exclude_ids, rows)
        if checks is not None:
            check_id_range(checks, "exclude_ids", exclude_ids, None)
        dropped, _, _ = lookup(ranked_ids, exclude_ids)
        ranked_ids = ranked_ids.masked_fill(dropped, -1)
        excluded_targets, _, _ = lookup(target_ids, exclude_ids)
        gains_t = gains_t.masked_fill(excluded_targets, 0)
        relevant_t = relevant_t & ~excluded_targets
    if checks is not None:
        checks.run()
    present = ranked_ids >= 0
    # padding may sit anywhere in a row: move the real ids to the front, keeping their order
    order = torch.sort((~present).to(torch.uint8), dim=1, stable=True).indices
    ranked_ids = ranked_ids.gather(1, order)
    num_candidates = present.sum(1).to(torch.float64)
    depth = ranked_ids.shape[1] if to_num_relevant else min(k, ranked_ids.shape[1])
    return table_ranked(
        ranked_ids[:, :depth], target_ids, gains_t, relevant_t, num_candidates, need_ideal, k
    )
