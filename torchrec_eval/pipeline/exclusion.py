"""Items removed from each query's candidates, kept as their ids: no [B, N] mask, no copy of the scores.

``exclude_ids`` [B, S] (seen items, -1 padding) usually holds a few dozen ids against N = 10^5..10^7
items. Masking them means a [B, N] bool mask, a masked copy of the scores and of the target (about
3.5x the scores' memory). Kept as sorted ids instead, every question a metric asks is O(B·(k + S)):
is a ranked item excluded (a binary search), how many candidates remain, how many relevant items
were excluded; and the top k of the remaining items is within the top k + S of all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class Exclusions:
    """Per row, the distinct excluded item ids, sorted ascending after the -1 padding.

    Attributes:
        ids: [B, S] int64; each row's distinct ids ascending, -1 (padding, repeats) first.
        count: [B] int64 number of distinct excluded items.

    Example:
        >>> import torch
        >>> from torchrec_eval.pipeline.exclusion import Exclusions
        >>> ex = Exclusions.from_ids(torch.tensor([[4, -1, 1, 4]]))
        >>> ex.ids, ex.count
        (tensor([[-1, -1,  1,  4]]), tensor([2]))
        >>> ex.contains(torch.tensor([[0, 1, 4, -1]]))
        tensor([[False,  True,  True, False]])
    """

    ids: Tensor
    count: Tensor

    @classmethod
    def from_ids(cls, exclude_ids: Tensor) -> Exclusions:
        ordered = exclude_ids.sort(dim=1).values
        repeated = torch.zeros_like(ordered, dtype=torch.bool)
        repeated[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
        ordered = ordered.masked_fill(repeated, -1).sort(dim=1).values
        return cls(ordered, (ordered >= 0).sum(1))

    @property
    def width(self) -> int:
        return self.ids.shape[1]

    def contains(self, items: Tensor) -> Tensor:
        """[B, K] bool: whether each item id (-1 = none) is excluded in its row."""
        if self.width == 0:
            return torch.zeros_like(items, dtype=torch.bool)
        position = torch.searchsorted(self.ids, items.contiguous()).clamp_(max=self.width - 1)
        return (self.ids.gather(1, position) == items) & (items >= 0)

    def count_flags(self, flags: Tensor) -> Tensor:
        """[B] int64: how many excluded items are True in ``flags`` [B, N] (e.g. relevant ones)."""
        present = self.ids >= 0
        return (flags.gather(1, self.ids.clamp(min=0)) & present).sum(1)

    def masked_rows(self, scores: Tensor, rows: Tensor) -> Tensor:
        """A copy of ``scores[rows]`` with the excluded items at -inf (for the few rows that need it)."""
        part = scores[rows]
        padded = torch.cat([part, part.new_full((part.shape[0], 1), float("-inf"))], dim=1)
        ids = self.ids[rows]
        padded.scatter_(1, torch.where(ids < 0, part.shape[1], ids), float("-inf"))
        return padded[:, : part.shape[1]]

    def keep_mask(self, num_items: int) -> Tensor:
        """[B, N] bool: True for the items that remain candidates."""
        keep = torch.ones(self.ids.shape[0], num_items + 1, dtype=torch.bool, device=self.ids.device)
        keep.scatter_(1, torch.where(self.ids < 0, num_items, self.ids), False)
        return keep[:, :num_items]

    def top_values(self, values: Tensor, depth: int) -> Tensor:
        """[B, depth] the largest ``values`` [B, N] (>= 0) of the remaining items, descending, 0-padded."""
        take = min(values.shape[1], depth + self.width)
        top, idx = torch.topk(values, take, dim=1)
        top = top.masked_fill(self.contains(idx), 0)
        return torch.sort(top, dim=1, descending=True).values[:, :depth]
