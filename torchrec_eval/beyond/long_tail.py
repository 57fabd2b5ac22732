r"""The long tail of a popularity table, and the share and count of long-tail items in each list (APLT, ACLT,
RecBole's TailPercentage).

.. math::
    \mathrm{LongTailShare} = \frac{|L_u \cap T|}{|L_u|}, \qquad \mathrm{LongTailCount} = |L_u \cap T|

``T`` by the short head (Abdollahpouri et al. 2017, Elliot): the most popular items, in order, until they
hold ``head_share`` of all interactions; the others (cold items too) are the tail. Or by RecBole's
``tail_ratio``: a number above 1 is a count, the items seen at most that often; a share in (0, 1] takes
that share of the items, least popular first (ties: lower id first), at least one. RecBole's counts hold
only items seen in training: a popularity-0 item is not in its tail.
"""

from __future__ import annotations

import torch
from torch import Tensor


def long_tail(popularity: Tensor, head_share: float | None = None, tail_ratio: float | None = None) -> Tensor:
    """[num_items] float64 1.0 for a long-tail item, 0.0 otherwise (see the module; ``head_share`` 0.8
    when neither is given).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.long_tail import long_tail
        >>> popularity = torch.tensor([50.0, 30.0, 10.0, 6.0, 4.0, 0.0])
        >>> long_tail(popularity)  # the head: 50 + 30 = 80 of 100 interactions
        tensor([0., 0., 1., 1., 1., 1.], dtype=torch.float64)
        >>> long_tail(popularity, tail_ratio=0.4)  # the 2 least popular of the 5 seen items
        tensor([0., 0., 0., 1., 1., 0.], dtype=torch.float64)
    """
    popularity = popularity.to(torch.float64)
    if tail_ratio is None:
        order = torch.sort(-popularity, stable=True).indices
        before = popularity[order].cumsum(0) - popularity[order]  # interactions of the items more popular
        head = torch.zeros_like(popularity, dtype=torch.bool)
        head[order] = before < popularity.sum() * (0.8 if head_share is None else head_share)
        return (~head).to(torch.float64)
    seen = popularity > 0
    if tail_ratio > 1:
        return (seen & (popularity <= tail_ratio)).to(torch.float64)
    order = torch.sort(torch.where(seen, popularity, torch.inf), stable=True).indices
    cut = max(int(int(seen.sum()) * tail_ratio), 1)
    tail = torch.zeros_like(popularity)
    tail[order[:cut]] = 1.0
    return tail * seen


def tail_items_in_list(table: Tensor, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per list of ``ids`` [B, k] (-1 past a short list): its long-tail items (float64 [B]), its length
    (float64 [B]) and whether it is non-empty [B]."""
    present = ids >= 0
    length = present.sum(1).to(torch.float64)
    return (table[ids.clamp(min=0)] * present).sum(1), length, length > 0
