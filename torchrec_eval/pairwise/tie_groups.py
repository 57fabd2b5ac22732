"""Groups of equal values along the rows of an ascending [B, N] tensor: ties of a sorted row of scores.

The first position of a group is the number of values strictly below it, which is what every rank and
pair count of :mod:`torchrec_eval.pairwise` needs for tied scores; its last position bounds what lies
strictly above it (partial AUC's non-relevant candidates above a relevant item).
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from torchrec_eval.pipeline import Candidates


class TieGroups:
    """Groups of equal values along each row of an ascending [B, N] tensor."""

    def __init__(self, values: Tensor) -> None:
        self.values = values
        self._starts: Tensor | None = None
        self._group_start: Tensor | None = None

    @property
    def starts(self) -> Tensor:
        """[B, N] bool: the position opens a new group of equal values."""
        if self._starts is None:
            starts = torch.ones(self.values.shape, dtype=torch.bool, device=self.values.device)
            if torch.compiler.is_compiling():  # compile refuses a strided `out=`
                starts[:, 1:] = self.values[:, 1:] != self.values[:, :-1]
            else:  # no temporary [B, N] mask
                torch.ne(self.values[:, 1:], self.values[:, :-1], out=starts[:, 1:])
            self._starts = starts
        return self._starts

    def at_group_start(self, running: Tensor, overwrite: bool = False) -> Tensor:
        """The value of a non-decreasing [B, N] tensor at the first position of each position's group
        (``overwrite``: ``running`` is scratch space, which saves a [B, N] temporary)."""
        if overwrite:
            return running.mul_(self.starts).cummax(1).values
        zero = torch.zeros((), dtype=running.dtype, device=running.device)
        return torch.where(self.starts, running, zero).cummax(1).values

    def at_group_end(self, running: Tensor, overwrite: bool = False) -> Tensor:
        """The value of a non-increasing, non-negative [B, N] tensor at the last position of each position's
        group (``overwrite``: ``running`` is scratch space): the running maximum of the group ends, from the right."""
        starts = self.starts
        ends = torch.ones_like(starts)
        ends[:, :-1] = starts[:, 1:]  # a position ends its group where the next one opens a new one
        if overwrite:
            running = running.mul_(ends)
        else:
            running = torch.where(ends, running, torch.zeros((), dtype=running.dtype, device=running.device))
        return running.flip(1).cummax(1).values.flip(1)

    @property
    def group_start(self) -> Tensor:
        """[B, N] float64: the first position of each position's group = the number of values below it."""
        if self._group_start is None:
            positions = torch.arange(self.values.shape[1], dtype=torch.float64, device=self.values.device)
            self._group_start = self.at_group_start(positions.expand_as(self.values))
        return self._group_start


class SortedCandidates(Protocol):
    """What the rank sums and pair counts read of a batch's sorted candidates
    (:class:`~torchrec_eval.pairwise.sorted_rows.SortedRows`): named here, below both, so that the
    kernels and the sort that calls them do not import each other."""

    values: Tensor
    candidates: Candidates
    num_valid: Tensor
    skipped: Tensor

    @property
    def group_start(self) -> Tensor: ...

    def at_group_start(self, running: Tensor, overwrite: bool = False) -> Tensor: ...

    def at_group_end(self, running: Tensor, overwrite: bool = False) -> Tensor: ...

    @property
    def order(self) -> Tensor: ...

    def take_order(self) -> Tensor: ...
