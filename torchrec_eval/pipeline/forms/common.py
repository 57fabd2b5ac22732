"""What every scored input form shares: the scores' checks, relevance from gains, the ranking depth, the
candidate count."""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.counting import count_true
from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.tensor_cache import filled
from torchrec_eval.pipeline.validation import (
    Checks,
    check_groups_shape,
    check_scores,
    describe,
    require_float,
    require_nonempty,
)


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
