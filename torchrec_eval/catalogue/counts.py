"""How many catalogue items beat each target item: what AUC, GAUC, MPR and FCP need of a catalogue.

Over the whole catalogue these metrics depend only on, for each target item t of a query, the number
of candidates scored above it and the number scored equal to it (its mid-rank), and on the targets'
own scores and gains. Each chunk adds its counts: the target scores of a query sorted ascending form
a table of T + 1 buckets, every item of the chunk falls into one (a binary search), and per-bucket
counts give, by suffix sums, the items above and at-or-above each target. O(B·C·log T) per chunk,
O(B·T) memory, exact (integer counts).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchrec_eval.functional.pairwise import _graded_pairs


class TargetCounts:
    """Running counts, over the non-target candidates seen so far, of items beating each target.

    Args:
        scores: [B, T] target scores in the chunks' dtype.
        valid: [B, T] bool, targets that are candidates (padding and excluded targets are not).
    """

    def __init__(self, scores: Tensor, valid: Tensor) -> None:
        table = scores.masked_fill(~valid, float("inf"))  # never below an item: counts nothing
        self.sorted, self.order = torch.sort(table, dim=1)
        rows, width = scores.shape
        self.bins = width + 1
        self.base = (torch.arange(rows, device=scores.device) * self.bins).unsqueeze(1)
        # below[b, v]: items with exactly v targets strictly below them; through[b, v]: v targets <= them
        self.below = torch.zeros(rows * self.bins, dtype=torch.int64, device=scores.device)
        self.through = torch.zeros_like(self.below)

    def add(self, items: Tensor) -> None:
        """Count the items [B, C] of one chunk (``-inf``: not a candidate, counted nowhere)."""
        for side, histogram in (("left", self.below), ("right", self.through)):
            bucket = torch.searchsorted(self.sorted, items, side=side)
            histogram += torch.bincount((bucket + self.base).flatten(), minlength=histogram.numel())

    def histograms(self) -> Tensor:
        """[B, 2 (T + 1)] the two histograms, to be summed over item shards."""
        rows = self.base.shape[0]
        return torch.cat([self.below.view(rows, -1), self.through.view(rows, -1)], dim=1)

    def above_and_equal(self, histograms: Tensor) -> tuple[Tensor, Tensor]:
        """[B, T] float64 counts of items above and equal to each target, in the targets' order."""
        below, through = histograms.to(torch.float64).split(self.bins, dim=1)
        # items above sorted target j: those with more than j targets strictly below them
        above = below.flip(1).cumsum(1).flip(1)[:, 1:]
        at_or_above = through.flip(1).cumsum(1).flip(1)[:, 1:]
        unsort = torch.argsort(self.order, dim=1)
        return above.gather(1, unsort), (at_or_above - above).gather(1, unsort)


@dataclass
class TargetRanks:
    """The full-ranking view of a catalogue batch, from counts (stands in for ``Candidates``).

    Attributes:
        scores: [B, T] target scores (float64).
        valid: [B, T] bool, targets that are candidates.
        gains: [B, T] float64 target values (0 where not valid).
        relevant: [B, T] bool.
        above: [B, T] float64 non-target candidates scored above each target.
        equal: [B, T] float64 non-target candidates scored equal to each target.
        num_valid: [B] int64 candidates of each query (targets included).
    """

    scores: Tensor
    valid: Tensor
    gains: Tensor
    relevant: Tensor
    above: Tensor
    equal: Tensor
    num_valid: Tensor

    def _among_targets(self, flags: Tensor) -> tuple[Tensor, Tensor]:
        """For each target: the flagged valid targets above it, and at-or-above it (itself included)."""
        table = self.scores.masked_fill(~(self.valid & flags), float("-inf"))
        ordered = torch.sort(table, dim=1).values
        count = (self.valid & flags).sum(1, keepdim=True)
        padding = table.shape[1] - count
        below = torch.searchsorted(ordered, self.scores.contiguous(), side="left") - padding
        through = torch.searchsorted(ordered, self.scores.contiguous(), side="right") - padding
        return (count - through).to(torch.float64), (count - below).to(torch.float64)

    def _ranks(self) -> tuple[Tensor, Tensor]:
        """Candidates above each target and candidates equal to it (itself included), all items."""
        above, at_or_above = self._among_targets(torch.ones_like(self.valid))
        return self.above + above, self.equal + at_or_above - above

    def rank_sums(self) -> tuple[Tensor, Tensor]:
        """Per query: R and the sum of the ascending mid-ranks of the relevant items (as ``rank_sums``)."""
        above, equal = self._ranks()
        below = self.num_valid.unsqueeze(1).to(torch.float64) - above - equal
        mid_rank = below + (equal + 1) / 2
        relevant = self.relevant & self.valid
        return relevant.sum(1).to(torch.float64), torch.where(relevant, mid_rank, 0.0).sum(1)

    def pair_counts(self) -> tuple[Tensor, Tensor]:
        """FCP's concordant and discordant pairs per query (as ``pair_counts``)."""
        graded = self.valid & (self.gains != 0)
        above, equal = self._ranks()
        below = self.num_valid.unsqueeze(1).to(torch.float64) - above - equal
        graded_above, graded_at_or_above = self._among_targets(graded)
        num_graded = graded.sum(1, keepdim=True).to(torch.float64)
        graded_below = num_graded - graded_at_or_above
        # a graded item against the grade-0 candidates: those below it agree, those above disagree
        concordant = torch.where(graded, below - graded_below, 0.0).sum(1)
        discordant = torch.where(graded, above - graded_above, 0.0).sum(1)
        if bool(graded.any()):
            values = self.scores.masked_fill(~graded, float("-inf"))
            values, order = torch.sort(values, dim=1)
            grades = self.gains.masked_fill(~graded, 0.0).gather(1, order)
            levels = torch.unique(grades[graded.gather(1, order)])
            if levels.numel() > 1:
                more_c, more_d = _graded_pairs(values, grades, (~graded).sum(1).to(torch.float64), levels)
                concordant, discordant = concordant + more_c, discordant + more_d
        return concordant, discordant
