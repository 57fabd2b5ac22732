"""The best items of a catalogue from the best items of its chunks, in the documented tie order.

Every chunk contributes its own top ``D`` (the items of one chunk are ranked by
:func:`~torchrec_eval.pipeline.topk.top_indices`, exact at the cut-off); the running list and a chunk's list
are merged by sorting their ``2D`` entries by the full tie key. The order of the chunks does not
matter: the key (score descending, then the tie order's gain and item-id keys) is a total order.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.tie_order import required_gains, tie_keys


def chunk_order(ties: str) -> str:
    """The tie order among a chunk's non-target items (all of gain 0): item ids, ascending or descending."""
    return "reverse_index" if ties == "reverse_index" else "index"


def best(values: Tensor, ids: Tensor, depth: int, ties: str, gains: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The ``depth`` best entries of each row by score descending, then the tie order of ``ties``.

    Args:
        values: [B, M] scores (``-inf``: not a candidate; those come last, in no particular order).
        ids: [B, M] global item ids of the entries.
        depth: how many to keep (<= M).
        ties: ``"index"``, ``"reverse_index"``, ``"pessimistic"`` or ``"optimistic"``.
        gains: [B, M] gains, for the gain-aware orders.

    Returns:
        (values, ids), each [B, depth], in rank order.

    Example:
        >>> import torch
        >>> from torchrec_eval.catalogue.merge import best
        >>> values = torch.tensor([[0.5, 0.9, 0.5, 0.5]])
        >>> best(values, torch.tensor([[7, 3, 2, 9]]), 3, "index")[1]
        tensor([[3, 2, 7]])
        >>> best(values, torch.tensor([[7, 3, 2, 9]]), 3, "reverse_index")[1]
        tensor([[3, 9, 7]])
    """
    index_descending, gain_order = tie_keys(ties)
    perm = torch.sort(ids, dim=1, descending=index_descending, stable=True).indices
    if gain_order is not None:
        order = torch.sort(required_gains(gains).gather(1, perm), dim=1, descending=gain_order, stable=True).indices
        perm = perm.gather(1, order)
    perm = perm.gather(1, torch.sort(values.gather(1, perm), dim=1, descending=True, stable=True).indices)
    perm = perm[:, :depth]
    return values.gather(1, perm), ids.gather(1, perm)
