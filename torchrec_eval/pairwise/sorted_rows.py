"""One ascending sort of each row of candidate scores, shared by AUC, GAUC, MPR, FCP and pAUC@k.

Non-candidates (``mask`` False, ``exclude_ids``) hold ``-inf`` and sort first; the counts of
:mod:`~torchrec_eval.pairwise.ranks`, :mod:`~torchrec_eval.pairwise.pairs` and
:mod:`~torchrec_eval.pairwise.negatives_above` skip them. The sort's permutation (twice
the scores' bytes) is kept only where the cumulative-sum paths of the rank sums and partial credits read it.
Besides the sort's values (and that permutation) an update holds only [B, W] tensors of the relevant or
graded items.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pairwise.negatives_above import partial_credits
from torchrec_eval.pairwise.pairs import pair_counts
from torchrec_eval.pairwise.ranks import rank_sums, strict_wins
from torchrec_eval.pairwise.tie_groups import TieGroups
from torchrec_eval.pipeline import Candidates, count_true
from torchrec_eval.pipeline.syncs import host_reads_free


class SortedRows(TieGroups):
    """One ascending sort of each row of candidate scores, shared by AUC, GAUC, MPR, FCP and pAUC@k.

    Attributes:
        values: [B, N] sorted scores (non-candidates, ``-inf``, first).
        num_valid: [B] int64 number of candidates of each row.
        skipped: [B] int64 number of non-candidates (they fill the first ``skipped`` positions).
    """

    def __init__(self, candidates: Candidates) -> None:
        scores = candidates.scores
        values, order = torch.sort(scores, dim=1)
        super().__init__(values)
        self.candidates = candidates
        # only the cumulative-sum path of `rank_sums` reads the permutation: elsewhere its [B, N] int64
        # (twice the scores' bytes) is freed at once, before any other temporary
        dense_path = candidates.target_ids is None and not host_reads_free(values)
        self._order = order if dense_path else None
        del order
        rows, num_items = scores.shape
        if candidates.valid is None:
            self.num_valid = torch.full((rows,), num_items, dtype=torch.int64, device=scores.device)
        else:
            self.num_valid = count_true(candidates.valid)
        self.skipped = num_items - self.num_valid

    @property
    def order(self) -> Tensor:
        """[B, N] the sort permutation (sorted again if it was not kept)."""
        if self._order is None:
            self._order = torch.sort(self.candidates.scores, dim=1).indices
        return self._order

    def take_order(self) -> Tensor:
        """The sort permutation, no longer held here: its reader frees it as soon as it is done."""
        order, self._order = self.order, None
        return order

    def rank_sums(self) -> tuple[Tensor, Tensor]:
        """R and the sum of the ascending mid-ranks of the relevant items, per query (see :mod:`.ranks`)."""
        return rank_sums(self, self.candidates.relevant)

    def strict_wins(self) -> Tensor:
        """The (relevant, non-relevant) pairs ordered strictly right, per query (see :mod:`.ranks`); before
        :meth:`rank_sums`, which frees the permutation."""
        return strict_wins(self, self.candidates.relevant)

    def partial_credits(self, ks: Sequence[int]) -> tuple[Tensor, Tensor]:
        """R and, per cut-off k, the relevant items' partial-AUC credits summed per query (see
        :mod:`.negatives_above`); before :meth:`rank_sums`, which frees the permutation."""
        return partial_credits(self, self.candidates.relevant, ks)

    def pair_counts(self) -> tuple[Tensor, Tensor]:
        """FCP's concordant and discordant pairs per query (see :mod:`.pairs`)."""
        return pair_counts(self, self.candidates.gains)
