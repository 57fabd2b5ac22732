"""Gather the flagged entries of each row to the front of a narrow [B, W] tensor (W = the most per row).

The relevant items of a query (rank sums) and its graded items (pair counts) are few beside its
candidates: working on them compacted costs [B, W] instead of [B, N], for one host sync (W).
"""

from __future__ import annotations

import torch
from torch import Tensor


def compact(flags: Tensor, counts: Tensor | None,
            *sources: tuple[Tensor, float]) -> tuple[int, list[Tensor], Tensor]:
    """Gather the flagged entries of each row to the front of a [B, W] tensor (W = max count; host sync).

    ``flags`` [B, N]: the nonzero entries are flagged (bool or any dtype: no [B, N] comparison needed);
    ``counts`` [B] their number per row (None: counted here). ``sources`` are (tensor [B, N], padding
    value) pairs, compacted in their own dtype. Returns W, the compacted tensors and the [B, W] bool
    mask of real (non-padding) entries.
    """
    rows, cols = flags.nonzero(as_tuple=True)
    if counts is None:
        counts = torch.bincount(rows, minlength=flags.shape[0])
    width = int(counts.max()) if rows.numel() else 0
    starts = counts.cumsum(0) - counts
    column = torch.arange(rows.numel(), device=flags.device) - starts[rows]
    out = []
    for source, pad in sources:
        compact = torch.full((flags.shape[0], width), pad, dtype=source.dtype, device=flags.device)
        compact[rows, column] = source[rows, cols]
        out.append(compact)
    keep = torch.arange(width, device=flags.device) < counts.unsqueeze(1)
    return width, out, keep
