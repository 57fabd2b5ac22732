"""Per-item values given beside a batch's scores or ranked list (a reward model's estimates, LensKit's weight field),
read at the ranks of its top-k view.

Beside ``preds`` [B, N] a value belongs to the item of its column; beside ``ranked_ids`` [B, L] to the item listed
in its slot. :func:`checked_item_values` checks the shape against whichever the batch gives, :func:`values_at_ranks`
reads them at the listed items of the view (``RankedTargets.listed_ids``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, overload

import torch
from torch import Tensor

from torchrec_eval.pipeline.validation import describe_any

__all__ = ["checked_item_values", "checked_like", "refuse_flat", "values_at_ranks"]


@overload
def checked_like(name: str, value: Tensor, shape: tuple[int, ...] | None, beside: str) -> Tensor: ...
@overload
def checked_like(name: str, value: Tensor | None, shape: tuple[int, ...] | None, beside: str) -> Tensor | None: ...
def checked_like(name: str, value: Tensor | None, shape: tuple[int, ...] | None, beside: str) -> Tensor | None:
    """``value`` if it is a real tensor of ``shape`` (that of the input ``beside``), None for None.

    Raises:
        ValueError: naming ``name`` and what it received, on another shape, a bool or complex tensor.
    """
    if value is None:
        return None
    if (not isinstance(value, Tensor) or value.is_complex() or value.dtype == torch.bool
            or shape is None or tuple(value.shape) != shape):
        raise ValueError(f"`{name}` must be a real tensor of the shape of `{beside}` {shape}, got {describe_any(value)}")
    return value


def checked_item_values(name: str, values: Tensor | None, preds: Tensor | None,
                        ranked_ids: Tensor | None) -> Tensor | None:
    """``values`` as float64 if they are a real tensor of the shape of ``ranked_ids`` (when given) or ``preds``.

    Raises:
        ValueError: naming ``name`` and what it received, on another shape, a bool or complex tensor.
    """
    if ranked_ids is not None:
        checked = checked_like(name, values, tuple(ranked_ids.shape), "ranked_ids")
    else:
        checked = checked_like(name, values, tuple(preds.shape) if isinstance(preds, Tensor) else None, "preds")
    return None if checked is None else checked.to(torch.float64)


def refuse_flat(inputs: Mapping[str, Any], what: str) -> None:
    """Per-item values are not taken with the flat form, whose entries of a query may span calls.

    Raises:
        ValueError: naming ``indexes`` and ``what`` (the inputs that would have to follow the flat entries).
    """
    if inputs.get("indexes") is not None:
        raise ValueError(f"`indexes`: the flat form is not taken with {what} (they would have to follow the flat "
                         f"entries); pass the dense, ids or ranked form, got `indexes` of {describe_any(inputs['indexes'])}")


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
