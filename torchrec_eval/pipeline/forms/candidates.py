"""What every scored input form shares: the scores' checks, relevance from gains, the ranking depth, the candidate
count; and which items of a scored batch are candidates: ``mask``, ``-inf`` scores and ``exclude_ids`` combined.

A score of ``-inf`` marks an item that is not a candidate, exactly like ``mask`` False. Excluded ids stay ids
(:class:`~torchrec_eval.pipeline.exclusion.Exclusions`) unless a dense mask is built anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.tensor_cache import count_true, filled
from torchrec_eval.pipeline.validation import (
    Checks,
    check_groups_shape,
    check_id_range,
    check_scores,
    describe,
    require_float,
    require_ids,
    require_nonempty,
)

# What every scored input form shares: the scores' checks, relevance from gains, the ranking depth, the
# candidate count.

def check_preds(preds: Tensor, groups: Tensor | None, checks: Checks | None) -> None:
    """``preds``: [B, N] real scores (``-inf`` allowed: not a candidate), one group per row if grouped."""
    require_float("preds", preds)
    if preds.ndim != 2:
        raise ValueError(f"`preds` must have shape [B, N] (one row of item scores per query), got {describe(preds)}")
    require_nonempty("preds", preds)
    check_groups_shape(groups, preds.shape[0])
    if checks is not None:
        check_scores(checks, "preds", preds)


def is_relevant(values: Tensor, relevance_threshold: float | None) -> Tensor:
    """Relevance of gains: ``gain > 0``, or ``gain >= relevance_threshold`` when one is given."""
    if relevance_threshold is None:
        return values if values.dtype == torch.bool else values > 0
    return values.to(torch.float64 if values.dtype == torch.float64 else torch.float32) >= relevance_threshold


def ranking_depth(k: int, available: int, num_relevant: Tensor | None) -> int:
    """How deep to rank: ``min(k, available)``, or down to the batch's largest R for R-Precision without a
    cut-off (``num_relevant`` [B] given: R of each query)."""
    depth = min(k, available)
    if num_relevant is not None and available > depth:
        depth = min(available, max(depth, int(num_relevant.max())))  # host sync, R-Precision only
    return max(depth, 1)


def count_candidates(preds: Tensor, valid: Tensor | None, exclusions: Exclusions | None) -> Tensor:
    """[B] float64 number of candidates of each row."""
    if valid is not None:
        return count_true(valid, torch.float64)
    rows, num_items = preds.shape
    if exclusions is not None:
        return (num_items - exclusions.count).to(torch.float64)
    return filled((rows,), float(num_items), preds.device)


# Which items of a scored batch are candidates: ``mask``, ``-inf`` scores and ``exclude_ids`` combined.
#
# A score of ``-inf`` marks an item that is not a candidate, exactly like ``mask`` False. Excluded ids
# stay ids (:class:`~torchrec_eval.pipeline.exclusion.Exclusions`) unless a dense mask is built anyway.

@dataclass(frozen=True)
class CandidateItems:
    """Which items of a scored batch are candidates.

    Attributes:
        valid: [B, N] bool mask, or None (every item not excluded is one).
        exclusions: excluded ids kept as ids, or None (none, or folded into ``valid``).
        neg_inf: whether -inf scores must still be read off the ranked list (no mask says where).
    """

    valid: Tensor | None
    exclusions: Exclusions | None
    neg_inf: bool = False


def candidate_items(
    preds: Tensor,
    mask: Tensor | None,
    exclusions: Exclusions | None,
    checks: Checks | None,
    ids_top_k: bool,
    dense_mask: bool,
) -> CandidateItems:
    """Which items are candidates (see :class:`CandidateItems`). Runs the checks so far.

    The ids form's top-k view reads -inf scores off its ranked list and its targets (no pass over
    [B, N]); other views mask them. Excluded ids stay ids unless a dense mask is built anyway (or
    ``dense_mask``: the full candidate view and averaged ties need one): it then holds both.
    """
    if ids_top_k:
        if checks is not None:
            checks.run()
        return CandidateItems(None, exclusions, checks is None or checks.notes.get("-inf", False))
    valid = _without_neg_inf(preds, _checked_mask(mask, preds), checks)
    if exclusions is not None and (valid is not None or dense_mask):
        keep = exclusions.keep_mask(preds.shape[1])
        valid, exclusions = (keep if valid is None else valid & keep), None
    return CandidateItems(valid, exclusions)


def checked_exclusions(exclude_ids: Tensor, preds: Tensor, checks: Checks | None) -> Exclusions:
    """The excluded ids, range-checked (the check runs with the others, before any use as an index)."""
    require_ids("exclude_ids", exclude_ids, preds.shape[0])
    if checks is not None:
        check_id_range(checks, "exclude_ids", exclude_ids, preds.shape[1])
    return Exclusions.from_ids(exclude_ids)


def _without_neg_inf(preds: Tensor, valid: Tensor | None, checks: Checks | None) -> Tensor | None:
    """The candidate mask with items scored ``-inf`` left out: ``-inf`` means "not a candidate".

    With validation the check's host sync already tells whether any score is ``-inf``; without it a
    CPU looks (a cheap reduction, no device to wait for) and an accelerator always builds the mask.
    """
    if checks is not None:
        checks.run()
        present = checks.notes.get("-inf", False)
    elif host_reads_free(preds):
        present = preds.amin().item() == float("-inf")
    else:
        present = True
    if not present:
        return valid
    finite = preds > float("-inf")
    return finite if valid is None else valid & finite


def _checked_mask(mask: Tensor | None, preds: Tensor) -> Tensor | None:
    if mask is not None and (mask.dtype != torch.bool or mask.shape != preds.shape):
        raise ValueError(
            f"`mask` must be a bool tensor of the shape of `preds` {tuple(preds.shape)}, got {describe(mask)}"
        )
    return mask
