"""The sampled ranks of a batch: where each query's held-out items are, and the span of sampled ranks each
can take against its row's m negatives.

A row of ``preds`` [B, m + 1] holds one held-out (relevant) item and m sampled negatives; a wider row
[B, R + m] holds up to R held-out items (``mask`` or ``-inf`` for the slots a row does not use), each ranked
against the m negatives alone and weighing 1 / R of its query. The sampled rank is 1 + the negatives above
the item; a tie follows ``ties``: ``"pessimistic"`` counts a tied negative above, ``"optimistic"`` below,
``"index"``/``"reverse_index"`` by column, and ``"average"`` spreads the item over the ranks it can take.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from torchrec_eval.pipeline import Batch
from torchrec_eval.pipeline.batch import Candidates
from torchrec_eval.pipeline.validation import describe

__all__ = ["HeldOut", "held_out_items", "rank_histogram", "rank_mass", "spans"]


@dataclass
class HeldOut:
    """The held-out items of a batch of sampled rows.

    Attributes:
        scores: [B, W] every candidate's score.
        columns: [B, P] the column of each held-out item (P = 1 for rows of m + 1, else W - m).
        present: [B, P] bool, False for the slots of a row with fewer held-out items.
        negative: [B, W] bool, the m sampled negatives of each row.
        share: [B, P] float64, each held-out item's weight in its query (1 / R; 0 where absent).
    """

    scores: Tensor
    columns: Tensor
    present: Tensor
    negative: Tensor
    share: Tensor


def held_out_items(batch: Batch, num_negatives: int, validate_args: bool) -> HeldOut:
    """Find each row's held-out items; with ``validate_args``, check that every row has one (rows of m + 1)
    or at least one (wider rows) and exactly m negatives.

    Raises:
        ValueError: on a catalogue stream, rows narrower than m + 1, or (``validate_args``) rows without
            their held-out items or m negatives.
    """
    candidates = batch.every_candidate()
    if not isinstance(candidates, Candidates):
        raise ValueError("sampled evaluation takes the scores of the m + 1 candidates (dense, ids or flat "
                         f"form), not a catalogue stream; got {type(candidates).__name__}")
    scores, m = candidates.scores, num_negatives
    if scores.ndim != 2 or scores.shape[1] < m + 1:
        raise ValueError(f"`preds` must score each query's held-out item(s) and its m = {m} sampled negatives: "
                         f"shape [B, {m + 1}] (or wider for several held-out items), got {describe(scores)}")
    relevant = _relevant_columns(candidates)
    valid = candidates.valid if candidates.valid is not None else torch.ones_like(relevant)
    relevant = relevant & valid
    negative = valid & ~relevant
    one = scores.shape[1] == m + 1
    if validate_args:
        _check_rows(relevant, negative, one, m)
    if one:  # one held-out item per row: its column
        columns = relevant.to(torch.uint8).argmax(1, keepdim=True)
    else:  # the held-out items' columns first, in column order
        columns = torch.argsort((~relevant).to(torch.uint8), dim=1, stable=True)[:, : scores.shape[1] - m]
    present = relevant.gather(1, columns)
    count = present.sum(1, keepdim=True).clamp(min=1).to(torch.float64)
    return HeldOut(scores, columns, present, negative, torch.where(present, 1.0 / count, 0.0))


def _relevant_columns(candidates: Candidates) -> Tensor:
    """[B, W] bool, whether each column of the row is a held-out item. The ids form keeps its relevance per
    target id ([B, T], one column per id; False for padding and non-candidates): it is spread onto the row's
    columns, where reading it as the row itself took the ids for the candidates."""
    if candidates.target_ids is None:
        return candidates.relevant
    flags = torch.zeros(candidates.scores.shape, dtype=torch.int32, device=candidates.scores.device)
    # an add, not a scatter of flags: padding (-1) reads column 0 with False, which must not overwrite a True
    return flags.scatter_add_(1, candidates.target_ids.clamp(min=0), candidates.relevant.to(torch.int32)) > 0


def _check_rows(relevant: Tensor, negative: Tensor, one: bool, num_negatives: int) -> None:
    counts, negatives = relevant.sum(1), negative.sum(1)
    if one and bool((counts != 1).any()) or not one and bool((counts < 1).any()):
        raise ValueError(f"`target` must mark {'exactly one relevant item' if one else 'at least one relevant item'}"
                         f" per row, got rows with {sorted(set(counts.tolist()))} relevant items")
    if bool((negatives != num_negatives).any()):
        raise ValueError(f"`preds` must hold m = {num_negatives} sampled negatives in every row (no mask, "
                         f"no -inf among them), got rows with {sorted(set(negatives.tolist()))}")


def spans(items: HeldOut, ties: str, weights: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """[B, P] the negatives above each held-out item and [B, P] its spread: the first 0-based sampled rank
    and how many more it can take (tied negatives under ``"average"``, else 0); 0 where absent. With
    ``weights`` [B, W] each negative counts its weight instead of 1 (float64 sums)."""
    row = items.scores.unsqueeze(1)  # [B, 1, W]
    held_out = items.scores.gather(1, items.columns).unsqueeze(2)  # [B, P, 1]
    others = items.negative.unsqueeze(1)

    def count(flags: Tensor) -> Tensor:
        return flags.sum(2) if weights is None else torch.where(flags, weights.unsqueeze(1), 0.0).sum(2)

    above = count((row > held_out) & others)
    tied = (row == held_out) & others  # [B, P, W]
    if ties == "average":
        low, spread = above, count(tied)
    elif ties == "pessimistic":
        low, spread = above + count(tied), torch.zeros_like(above)
    elif ties == "optimistic":
        low, spread = above, torch.zeros_like(above)
    else:  # "index": the tied negatives of earlier columns rank above; "reverse_index": those of later ones
        positions = torch.arange(items.scores.shape[1], device=items.scores.device)
        columns = items.columns.unsqueeze(2)
        low, spread = above + count(tied & (positions < columns if ties == "index" else positions > columns)), \
            torch.zeros_like(above)
    return torch.where(items.present, low, 0), torch.where(items.present, spread, 0)


def rank_mass(low: Tensor, spread: Tensor, share: Tensor, num_negatives: int) -> Tensor:
    """[B, m + 1] each query's sampled ranks as a distribution (a 1, a tie's spread, or its held-out items'
    shares)."""
    columns = torch.arange(num_negatives + 1, device=low.device)
    inside = (columns >= low.unsqueeze(2)) & (columns <= (low + spread).unsqueeze(2))  # [B, P, m + 1]
    return (inside.to(torch.float64) * (share / (spread + 1).to(torch.float64)).unsqueeze(2)).sum(1)


def rank_histogram(low: Tensor, spread: Tensor, weight: Tensor, groups: Tensor, num_groups: int,
                   num_negatives: int) -> Tensor:
    """[G, m + 1] the weighted sampled ranks of a batch's held-out items (``low``, ``spread``, ``weight``
    [B, P] each, ``groups`` [B]), without a [B, m + 1] row: an item of one rank adds its weight w at that rank
    (a plain sum); a tie's span of ranks adds +w / (spread + 1) at its first rank and the opposite past its last
    in a [G, m + 2] buffer of edges, then one cumulative sum, kept only where a span covers the rank. (The
    sum's round-off, -5.6e-17 after +1/3 - 1/3, or w1 + (w2 - w1) - w2 with weights, left ranks no query
    reached below 0, which EM refused.)

    Example:
        >>> import torch
        >>> low, spread = torch.tensor([[0], [1]]), torch.tensor([[0], [2]])  # rank 1, and a tie over ranks 2-4
        >>> rank_histogram(low, spread, torch.ones(2, 1, dtype=torch.float64), torch.zeros(2, dtype=torch.long), 1, 4)
        tensor([[1.0000, 0.3333, 0.3333, 0.3333, 0.0000]], dtype=torch.float64)
    """
    share = weight / (spread + 1).to(torch.float64)
    rows, first = groups.unsqueeze(1).expand_as(low).flatten(), low.flatten()
    single = (spread == 0).flatten()
    size = (num_groups, num_negatives + 2)
    out = torch.zeros(size, dtype=torch.float64, device=low.device)
    out.index_put_((rows, first), torch.where(single, share.flatten(), 0.0), accumulate=True)
    spans = torch.where(single, 0.0, share.flatten())
    past = (low + spread + 1).flatten()
    edges = torch.zeros_like(out).index_put_((rows, first), spans, accumulate=True)
    edges.index_put_((rows, past), -spans, accumulate=True)
    reached = (~single & (spans != 0)).to(torch.int64)  # the spans that cover ranks, counted exactly
    covers = torch.zeros(size, dtype=torch.int64, device=low.device).index_put_((rows, first), reached,
                                                                               accumulate=True)
    covers.index_put_((rows, past), -reached, accumulate=True)
    return (out + torch.where(covers.cumsum(1) > 0, edges.cumsum(1), 0.0))[:, :-1]
