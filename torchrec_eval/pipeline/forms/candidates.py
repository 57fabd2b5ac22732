"""What every scored input form shares: relevance from gains, the ranking depth, the candidate count; and which
items of a scored batch are candidates: ``mask``, ``-inf`` scores and ``exclude_ids`` combined.

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
from torchrec_eval.pipeline.validation import Notes

# What every scored input form shares: relevance from gains, the ranking depth, the candidate count.


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
    notes: Notes | None,
    ids_top_k: bool,
    dense_mask: bool,
) -> CandidateItems:
    """Which items are candidates (see :class:`CandidateItems`), with the ``notes`` of the checks (None: none ran).

    The ids form's top-k view reads -inf scores off its ranked list and its targets (no pass over
    [B, N]); other views mask them. Excluded ids stay ids unless a dense mask is built anyway (or
    ``dense_mask``: the full candidate view and averaged ties need one): it then holds both.
    """
    if ids_top_k:
        return CandidateItems(None, exclusions, notes is None or notes.get("-inf", False))
    valid = _without_neg_inf(preds, mask, notes)
    if exclusions is not None and (valid is not None or dense_mask):
        keep = exclusions.keep_mask(preds.shape[1])
        valid, exclusions = (keep if valid is None else valid & keep), None
    return CandidateItems(valid, exclusions)


def _without_neg_inf(preds: Tensor, valid: Tensor | None, notes: Notes | None) -> Tensor | None:
    """The candidate mask with items scored ``-inf`` left out: ``-inf`` means "not a candidate".

    With validation the checks' host sync already told whether any score is ``-inf`` (``notes``); without it a
    CPU looks (a cheap reduction, no device to wait for) and an accelerator always builds the mask.
    """
    if notes is not None:
        present = notes.get("-inf", False)
    elif host_reads_free(preds):
        present = preds.amin().item() == float("-inf")
    else:
        present = True
    if not present:
        return valid
    finite = preds > float("-inf")
    return finite if valid is None else valid & finite
