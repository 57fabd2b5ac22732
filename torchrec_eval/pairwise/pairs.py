"""FCP's pair counts per query: concordant and discordant pairs of candidates with different grades.

For each item: the items with a strictly lower score and a lower (concordant) or higher (discordant)
grade. The items of grade 0 are counted through ``torch.searchsorted`` in the sorted row, the graded
items among themselves by one cumulative count per grade level: O(N log N + W * grades) per query
(W = items of grade > 0, gathered in their own dtype: no float64 [B, N] copy of the gains). Finding
the grade levels costs one host sync per batch.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pairwise.compaction import compact
from torchrec_eval.pairwise.tie_groups import SortedCandidates, TieGroups
from torchrec_eval.pipeline import Candidates


def graded_pairs(values: Tensor, grades: Tensor, skipped: Tensor, levels: Tensor) -> tuple[Tensor, Tensor]:
    """Concordant and discordant pairs of each sorted row among items with different grades.

    ``values`` [B, W] ascending scores with ``skipped`` [B] non-items (grade <= every level) first;
    ``grades`` [B, W] float64 in sorted order; ``levels`` the distinct grades (ascending).
    """
    rows = TieGroups(values)
    below = rows.group_start  # items strictly below = the start of the own tie group
    concordant = torch.zeros(values.shape[0], dtype=torch.float64, device=values.device)
    discordant = torch.zeros_like(concordant)
    for level in range(levels.numel() - 1):
        at_most = (grades <= levels[level]).to(torch.float64)
        at_most_below = rows.at_group_start(at_most.cumsum(1) - at_most)
        # an item of this level: the items strictly below it with a higher grade are discordant pairs
        discordant += torch.where(grades == levels[level], below - at_most_below, 0.0).sum(1)
        # an item of the next level: the items strictly below it with a grade <= this level are concordant
        above_skipped = at_most_below - skipped.unsqueeze(1)
        concordant += torch.where(grades == levels[level + 1], above_skipped, 0.0).sum(1)
    return concordant, discordant


def _graded_items(candidates: Candidates, gains: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The items of gain != 0 of each row: their scores [B, W] (``-inf`` padding), float64 gains
    [B, W] (0 padding), the [B, W] mask of real entries and their number [B] (int64).

    Dense form: gathered to the front of each row (a host sync), without a [B, N] mask or float64
    copy of the gains; ids form: the target columns as they are."""
    if candidates.target_ids is not None:
        graded = gains != 0  # 0 for padding and non-candidates already
        scores = candidates.target_scores.masked_fill(~graded, float("-inf"))
        return scores, gains.to(torch.float64), graded, graded.sum(1)
    _, (scores, grades), keep = compact(gains, None, (candidates.scores, float("-inf")), (gains, 0))
    return scores, grades.to(torch.float64), keep, keep.sum(1)


def pair_counts(rows: SortedCandidates, gains: Tensor) -> tuple[Tensor, Tensor]:
    """FCP's concordant and discordant pair counts per query (float64 [B] each).

    A pair of candidates with different gains is concordant when the higher gain has the higher
    score, discordant when it has the lower score, and neither when the scores are equal. ``gains``
    [B, N], or [B, T] in the ids form.
    """
    queries, grades, keep, num_graded = _graded_items(rows.candidates, gains)
    zeros = torch.zeros(queries.shape[0], dtype=torch.float64, device=queries.device)
    if queries.shape[1] == 0:
        return zeros, zeros.clone()
    skipped, num_valid = rows.skipped.to(torch.float64), rows.num_valid.to(torch.float64)
    queries, order = torch.sort(queries, dim=1)
    grades = grades.gather(1, order)
    keep = keep.gather(1, order)
    padding = (queries.shape[1] - num_graded).to(torch.float64)
    # pairs of a graded item with the candidates of grade 0 (graded items have a grade > 0)
    def count(sorted_values: Tensor, side: str, offset: Tensor) -> Tensor:
        found = torch.searchsorted(sorted_values, queries, side=side)
        return found.to(torch.float64) - offset.unsqueeze(1)

    below_all, through_all = count(rows.values, "left", skipped), count(rows.values, "right", skipped)
    below_graded, through_graded = count(queries, "left", padding), count(queries, "right", padding)
    zero_below = below_all - below_graded
    graded_above = num_graded.to(torch.float64).unsqueeze(1) - through_graded
    zero_above = (num_valid.unsqueeze(1) - through_all) - graded_above
    concordant = torch.where(keep, zero_below, 0.0).sum(1)
    discordant = torch.where(keep, zero_above, 0.0).sum(1)
    # pairs among the graded items, one cumulative count per grade level
    levels = torch.unique(grades[keep])
    if levels.numel() > 1:
        more_c, more_d = graded_pairs(queries, grades, padding, levels)
        concordant, discordant = concordant + more_c, discordant + more_d
    return concordant, discordant
