"""The documented tie order among equal scores: by item index (ascending or descending), or by gain
first for the gain-aware orders (``"pessimistic"``: lowest gain first, ``"optimistic"``: highest).

Every order is a chain of stable sorts over the tie keys, so it is the same on every device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchrec_eval.pipeline.exclusion import Exclusions


@dataclass(frozen=True)
class TieRule:
    """How the equal scores of a row are ordered: the tie order, the gains that the gain-aware orders read
    ([B, N]; None for the others) and the ids that are not candidates (None: none)."""

    ties: str
    gains: Tensor | None = None
    exclusions: Exclusions | None = None


def tie_keys(ties: str) -> tuple[bool, bool | None]:
    """(index descending?, gain order among equal scores: None, True = descending, False = ascending)."""
    gain_order = {"pessimistic": False, "optimistic": True}.get(ties)
    return ties == "reverse_index", gain_order


def gains_of(tie_gains: Tensor | None, rows: Tensor | None, idx: Tensor) -> Tensor | None:
    """The gains [b, m] of the items ``idx`` of ``rows`` (all rows if None), without copying rows."""
    if tie_gains is None:
        return None
    if rows is None:
        return tie_gains.gather(1, idx.clamp(min=0))
    return tie_gains[rows.unsqueeze(1), idx.clamp(min=0)]


def order_ties(values: Tensor, idx: Tensor, ties: str, gains: Tensor | None) -> Tensor:
    """Reorder a top-k list so that equal scores follow the documented tie order (``gains``: of ``idx``)."""
    index_descending, gain_order = tie_keys(ties)
    perm = torch.sort(idx, dim=1, descending=index_descending).indices
    idx, values = idx.gather(1, perm), values.gather(1, perm)
    if gain_order is not None:
        perm = torch.sort(required_gains(gains).gather(1, perm), dim=1, descending=gain_order, stable=True).indices
        idx, values = idx.gather(1, perm), values.gather(1, perm)
    perm = torch.sort(values, dim=1, descending=True, stable=True).indices
    return idx.gather(1, perm)


def exact_top(scores: Tensor, k: int, ties: str, tie_gains: Tensor | None) -> Tensor:
    """Top-k indices of each row by score descending, then the tie keys, with stable sorts."""
    index_descending, gain_order = tie_keys(ties)
    order = torch.arange(scores.shape[1], device=scores.device)
    if index_descending:
        order = order.flip(0)
    order = order.expand_as(scores)
    if gain_order is not None:
        order = order.gather(
            1, torch.sort(required_gains(tie_gains).gather(1, order), dim=1, descending=gain_order, stable=True).indices
        )
    perm = torch.sort(scores.gather(1, order), dim=1, descending=True, stable=True).indices[:, :k]
    return order.gather(1, perm)


def required_gains(gains: Tensor | None) -> Tensor:
    """The gains that a gain-aware tie order reads."""
    if gains is None:
        raise ValueError(f"the tie orders 'pessimistic' and 'optimistic' order equal scores by gain, got gains={gains}")
    return gains
