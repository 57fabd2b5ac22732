"""How many catalogue items beat each target item: what AUC, GAUC, MPR, FCP and pAUC@k need of a catalogue.

Over the whole catalogue these metrics depend only on, for each target item t of a query, the number
of candidates scored above it and the number scored equal to it (its mid-rank), and on the targets'
own scores and gains. Each chunk adds its counts, exact integers. With a few targets per query, one
compare pass per target and side (``>`` and ``>=``), counted eight flags per machine word
(:func:`~torchrec_eval.pipeline.tensor_cache.count_true`); with many, one binary search per item into the
query's sorted target scores and per-bucket counts. O(B·T) memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from torchrec_eval.pairwise.compaction import compact
from torchrec_eval.pairwise.pairs import graded_pairs
from torchrec_eval.pairwise.pauc import expected_credit
from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.tensor_cache import count_true

_COMPARE_PASSES = 16  # up to this many targets per query, compare passes beat the binary search


class TargetCounts:
    """Running counts, over the non-target candidates seen so far, of items above and at-or-above each target.

    Args:
        scores: [B, T] target scores in the chunks' dtype.
        valid: [B, T] bool, targets that are candidates (padding and excluded targets are not).
    """

    def __init__(self, scores: Tensor, valid: Tensor) -> None:
        self.scores = scores.masked_fill(~valid, float("inf"))  # never below an item: counts nothing
        self.counts = torch.zeros(scores.shape[0], 2 * scores.shape[1], dtype=torch.int64, device=scores.device)

    def add(self, items: Tensor, removed: Tensor) -> None:
        """Count the items [B, C] of one chunk, less ``removed`` [B, S]: the scores of the chunk's targets
        and excluded items (-inf for padding). ``-inf`` items are not candidates and count nowhere."""
        self.counts += self._count(self._contenders(items)) - self._count(removed)

    def _contenders(self, items: Tensor) -> Tensor:
        """The items that can count: those at or above a query's lowest target score. For a trained
        model (targets near the top) they are a small share of the chunk: on the CPU, where the host
        read is free, they are gathered into a narrow [B, W] tensor (``-inf`` padding) first."""
        if not host_reads_free(items):
            return items
        contending = items >= self.scores.amin(1, keepdim=True)
        count = count_true(contending)
        if int(count.max()) * 4 > items.shape[1]:  # most of the chunk: compacting would not pay
            return items
        return compact(contending, count, (items, float("-inf")))[1][0]

    def _count(self, items: Tensor) -> Tensor:
        """[B, 2T]: items above each target, then items at or above it."""
        width = self.scores.shape[1]
        if width <= _COMPARE_PASSES or items.shape[1] <= width:
            columns = [count_true(torch.gt(items, self.scores[:, j : j + 1])) for j in range(width)]
            columns += [count_true(torch.ge(items, self.scores[:, j : j + 1])) for j in range(width)]
            return torch.stack(columns, dim=1) if columns else self.counts.new_zeros(items.shape[0], 0)
        ordered, order = torch.sort(self.scores, dim=1)
        base = (torch.arange(items.shape[0], device=items.device) * (width + 1)).unsqueeze(1)
        out = []
        for side in ("left", "right"):
            bucket = torch.searchsorted(ordered, items.contiguous(), side=side)  # targets below (or equal)
            histogram = torch.bincount((bucket + base).flatten(), minlength=base.numel() * (width + 1))
            # items above the j-th smallest target: those with more than j targets below them
            above = histogram.view(-1, width + 1).flip(1).cumsum(1).flip(1)[:, 1:]
            out.append(above.gather(1, torch.argsort(order, dim=1)))
        return torch.cat(out, dim=1)

    def above_and_equal(self, counts: Tensor) -> tuple[Tensor, Tensor]:
        """[B, T] float64 items above and equal to each target, from the (summed) ``counts``."""
        above, at_or_above = counts.to(torch.float64).chunk(2, dim=1)
        return above, at_or_above - above


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

    def strict_wins(self) -> Tensor:
        """The (relevant, non-relevant) pairs ordered strictly right, per query (as ``strict_wins``)."""
        relevant = self.relevant & self.valid
        above, equal = self._ranks()
        below = self.num_valid.unsqueeze(1).to(torch.float64) - above - equal
        _, relevant_at_or_above = self._among_targets(relevant)
        relevant_below = relevant.sum(1, keepdim=True).to(torch.float64) - relevant_at_or_above
        return torch.where(relevant, below - relevant_below, 0.0).sum(1)

    def partial_credits(self, ks: Sequence[int]) -> tuple[Tensor, Tensor]:
        """R and, per cut-off k, the relevant targets' partial-AUC credits summed per query (as
        ``partial_credits``): every non-target candidate is non-relevant."""
        relevant = self.relevant & self.valid
        negative_above, negative_at_or_above = self._among_targets(self.valid & ~self.relevant)
        above = self.above + negative_above
        tied = self.equal + negative_at_or_above - negative_above
        credits = [torch.where(relevant, expected_credit(above, tied, k), 0.0).sum(1) for k in ks]
        return relevant.sum(1).to(torch.float64), torch.stack(credits, dim=1)

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
                more_c, more_d = graded_pairs(values, grades, (~graded).sum(1).to(torch.float64), levels)
                concordant, discordant = concordant + more_c, discordant + more_d
        return concordant, discordant
