"""Negatives drawn as RecBole draws them (``uniNNN``, ``popNNN``), on the device, seeded.

For each query, m items that it does not know (not among ``known_ids``: the user's training, validation
and test items), uniformly (``uni``) or in proportion to ``weights`` (``pop``: interaction counts to the
power alpha), with replacement: a draw that hits a known item is drawn again, as RecBole's rejection
sampler does, so a negative may repeat within a row.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.validation import describe, require_ids
from torchrec_eval.sampled.transitions import check_sampling

__all__ = ["pooled_candidates", "sample_negatives"]

_MAX_ROUNDS = 1000  # rounds of redrawing the rejected draws (each round keeps most of what is left)


def sample_negatives(known_ids: Tensor, num_items: int, num_negatives: int, *, weights: Tensor | None = None,
                     generator: torch.Generator | None = None) -> Tensor:
    """[B, m] item ids, none of them in its row of ``known_ids`` [B, K] (-1: padding).

    Args:
        known_ids: the items each query must not draw (its positives and the items it has seen).
        num_items: the catalogue, ids 0..num_items-1.
        num_negatives: m, draws per query (with replacement).
        weights: [num_items] >= 0, the drawing weight of each item (``None``: uniform); RecBole's ``pop``
            mode is interaction counts to the power ``alpha``.
        generator: a ``torch.Generator`` on the device of ``known_ids``, for reproducible draws.

    Raises:
        ValueError: on ids out of range, bad weights, or a query that knows every item it could draw.

    Example:
        >>> import torch
        >>> from torchrec_eval.sampled.sampler import sample_negatives
        >>> known = torch.tensor([[0, 1, -1], [2, 3, 4]])
        >>> draws = sample_negatives(known, 6, 4, generator=torch.Generator().manual_seed(0))
        >>> draws.shape, bool(torch.isin(draws[0], known[0]).any()), bool(torch.isin(draws[1], known[1]).any())
        (torch.Size([2, 4]), False, False)
    """
    n, m = check_sampling(num_items, num_negatives)
    require_ids("known_ids", known_ids, known_ids.shape[0] if known_ids.ndim else 0)
    known = known_ids.long()
    if known.numel() and int(known.max()) >= n:
        raise ValueError(f"`known_ids` must lie in [0, {n}) or be -1, got {int(known.max())}")
    rows, device = known.shape[0], known.device
    if weights is not None:
        if weights.shape != (n,) or not bool(torch.isfinite(weights).all()) or bool((weights < 0).any()):
            raise ValueError(f"`weights` must be {n} finite weights >= 0, one per item, got {describe(weights)}")
        weights = weights.to(device, torch.float64)
    item_weights = torch.ones(n, dtype=torch.float64, device=device) if weights is None else weights
    # what each query could draw: the weight of the items it does not know (each known item once)
    excluded = Exclusions.from_ids(known)
    known_weight = torch.where(excluded.ids >= 0, item_weights[excluded.ids.clamp(min=0)], 0.0).sum(1)
    if bool((known_weight >= item_weights.sum() * (1 - 1e-12)).any()):
        raise ValueError("`known_ids`: a query knows every item it could draw (no negative left), got "
                         f"{describe(known_ids)} over {n} items")

    def draw(count: int) -> Tensor:
        if weights is None:
            return torch.randint(0, n, (count,), generator=generator, device=device)
        return torch.multinomial(item_weights, count, replacement=True, generator=generator)

    draws = draw(rows * m).view(rows, m)
    for _ in range(_MAX_ROUNDS):  # RecBole's rejection: a known item is drawn again
        rejected = excluded.contains(draws)
        if not bool(rejected.any()):
            return draws
        draws = draws.masked_scatter(rejected, draw(int(rejected.sum())))
    # the few rows still rejected know almost every item: draw them from the items they do not know
    rejected = excluded.contains(draws)
    stuck = rejected.any(1).nonzero().squeeze(1)
    free = item_weights.expand(stuck.numel(), n).clone()
    free.scatter_(1, known[stuck].clamp(min=0), torch.where(known[stuck] >= 0, 0.0, free.gather(1, known[stuck].clamp(min=0))))
    draws[stuck] = torch.where(rejected[stuck], torch.multinomial(free, m, replacement=True, generator=generator),
                               draws[stuck])
    return draws


def pooled_candidates(positives: Tensor, negatives: Tensor) -> tuple[Tensor, Tensor]:
    """RecBole's rows of sampled evaluation: each user's positives and the union of their negatives in one row.

    RecBole draws m negatives per positive (``uniNNN``: ``negatives`` [B, P * m], the j-th m of them for the
    j-th positive) and ranks every positive of a user against the user's other positives and all of the
    user's negatives, a negative drawn twice being one column. Score the returned ids (``-inf`` at the -1
    padding) and evaluate with ``convention="recbole"`` to get RecBole's numbers on the same draws.

    Args:
        positives: [B, P] the users' held-out items, -1 padding.
        negatives: [B, P * m] their draws (:func:`sample_negatives` with ``P * m`` draws); the draws of a
            padding positive are dropped.

    Returns:
        ``(candidate_ids, target)``: [B, C] item ids (-1 padding) and [B, C] bool, True at the positives.

    Example:
        >>> import torch
        >>> ids, target = pooled_candidates(torch.tensor([[4, 7], [5, -1]]), torch.tensor([[1, 2, 2, 3], [1, 1, 8, 9]]))
        >>> ids
        tensor([[ 4,  7,  1,  2,  3],
                [ 5, -1, -1, -1,  1]])
        >>> target
        tensor([[ True,  True, False, False, False],
                [ True, False, False, False, False]])
    """
    rows, slots = positives.shape
    if negatives.ndim != 2 or negatives.shape[0] != rows or (slots and negatives.shape[1] % slots):
        raise ValueError(f"`negatives` must be [B, P * m] for `positives` [B, P] = {tuple(positives.shape)}, got "
                         f"{describe(negatives)}")
    per_positive = negatives.shape[1] // max(slots, 1)
    owner_is_padding = (positives < 0).repeat_interleave(per_positive, dim=1)
    # each row's distinct negatives, ascending, padding (-1) first: a negative drawn twice is one column
    distinct = Exclusions.from_ids(negatives.masked_fill(owner_is_padding, -1))
    width = int(distinct.count.max()) if distinct.count.numel() else 0
    ids = torch.cat([positives, distinct.ids[:, distinct.width - width:]], dim=1)
    return ids, torch.cat([positives >= 0, torch.zeros(rows, width, dtype=torch.bool, device=ids.device)], dim=1)
