"""Per-item values given beside a batch's scores or ranked list (a reward model's estimates, LensKit's weight field),
read at the ranks of its top-k view.

Beside ``preds`` [B, N] a value belongs to the item of its column; beside ``ranked_ids`` [B, L] to the item listed
in its slot. :func:`checked_item_values` checks the shape against whichever the batch gives, :func:`values_at_ranks`
reads them at the listed items of the view (``RankedTargets.listed_ids``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.validation import describe_any

__all__ = ["checked_item_values", "values_at_ranks"]


def checked_item_values(name: str, values: Tensor | None, preds: Tensor | None,
                        ranked_ids: Tensor | None) -> Tensor | None:
    """``values`` as float64 if they are a real tensor of the shape of ``ranked_ids`` (when given) or ``preds``.

    Raises:
        ValueError: naming ``name`` and what it received, on another shape, a bool or complex tensor.
    """
    if values is None:
        return None
    beside, shape = ("ranked_ids", ranked_ids.shape) if ranked_ids is not None else (
        "preds", preds.shape if isinstance(preds, Tensor) else None)
    if (not isinstance(values, Tensor) or values.is_complex() or values.dtype == torch.bool
            or shape is None or values.shape != shape):
        raise ValueError(f"`{name}` must be a real tensor of the shape of `{beside}` "
                         f"{None if shape is None else tuple(shape)}, got {describe_any(values)}")
    return values.to(torch.float64)


def values_at_ranks(values: Tensor, listed: Tensor, ranked_ids: Tensor | None = None) -> Tensor:
    """[B, K] each listed item's value (``listed``: the view's ids, -1 past the list, where the value is 0): by
    column of ``values`` [B, N], or, with ``ranked_ids`` [B, L], by the slot of the item in that list."""
    present = listed >= 0
    if ranked_ids is None:
        found = values.gather(1, listed.clamp(min=0))
    else:
        slot = (listed.unsqueeze(2) == ranked_ids.unsqueeze(1)).to(torch.int32).argmax(2)
        found = values.gather(1, slot)
    return torch.where(present, found, torch.zeros((), dtype=found.dtype, device=found.device))
