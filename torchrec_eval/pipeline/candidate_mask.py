"""Which items of a scored batch are candidates: ``mask``, ``-inf`` scores and ``exclude_ids`` combined.

A score of ``-inf`` marks an item that is not a candidate, exactly like ``mask`` False. Excluded ids
stay ids (:class:`~torchrec_eval.pipeline.exclusion.Exclusions`) unless a dense mask is built anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.validation import Checks, check_id_range, describe, require_ids


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
