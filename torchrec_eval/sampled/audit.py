r"""The exact audit of a sampled estimate: on the batches a user chooses, the held-out item's rank in the whole
catalogue, scored in chunks, so that the estimator's error on this model and data is measured.

For an audited query the metric keeps both sides of the comparison: its sampled rank (in the histogram
``audit_sampled_ranks`` [G, m + 1]) and the exact value of each metric at its true rank r among the n items
(the sums ``audit_exact`` [G, P]); each is a sum, exact across batches and processes. At ``compute`` the
estimator runs on the audited histogram alone, so ``estimate - exact`` is its error on those very queries.

The true rank is 1 + the items scored above the held-out one; ties follow the metric's ``ties`` over item
ids (``"index"``: a tied item of a lower id ranks above; ``"average"``: the mean of the metric over the
ranks the tie spans, from closed forms or a prefix sum).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.pipeline import Batch
from torchrec_eval.pipeline.batch import Candidates
from torchrec_eval.pipeline.validation import describe
from torchrec_eval.sampled.rank_metrics import rank_metric
from torchrec_eval.sampled.ranks import held_out_items, rank_histogram, spans

__all__ = ["AuditBatch", "audit_keys", "span_means"]


def span_means(family: str, k: int | None, first: Tensor, last: Tensor, num_items: int) -> Tensor:
    """[B] the mean of the metric over the integer ranks first..last (float64, 1 <= first <= last <= n) of
    each query: the metric of a held-out item tied with others under ``ties="average"``.

    Example:
        >>> import torch
        >>> first, last = torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([2.0, 2.0], dtype=torch.float64)
        >>> span_means("mrr", None, first, last, num_items=10)
        tensor([0.7500, 0.5000], dtype=torch.float64)
    """
    width = last - first + 1
    if family == "auc":  # linear in r: its value at the mean rank
        return rank_metric(family, (first + last) / 2, k, num_items)
    if k is None and family in ("mrr", "map"):  # harmonic numbers: H(last) - H(first - 1)
        return (torch.digamma(last + 1) - torch.digamma(first)) / width
    reach = num_items if k is None else min(k, num_items)
    ranks = torch.arange(1, reach + 1, dtype=torch.float64, device=first.device)
    prefix = torch.cat([ranks.new_zeros(1), rank_metric(family, ranks, k, num_items).cumsum(0)])
    def upto(rank: Tensor) -> Tensor:
        return prefix[rank.clamp(max=reach).long()]
    return (upto(last) - upto(first - 1)) / width


class AuditBatch:
    """The full-catalogue side of one audited query batch: ``add(scores, offset)`` for each chunk of items (any
    order and sizes, covering 0..n-1 once), then ``close()`` (or leave the ``with`` block) to add the batch's
    sampled ranks and exact values to the audit states. Nothing is written before ``close`` succeeds.

    The held-out item's score is read from the sampled ``preds`` (its entries in the chunks are skipped), so
    the two sides rank the same score.
    """

    def __init__(self, metric: Any, member: Any, batch: Batch, positive_ids: Tensor) -> None:
        candidates = batch.every_candidate()
        if not isinstance(candidates, Candidates):
            raise ValueError(f"`preds`: the audit takes the sampled scores [B, m + 1], got {type(candidates).__name__}")
        items = held_out_items(batch, member.num_negatives, metric.validate_args)  # checks the rows
        self.ids = _checked_ids(positive_ids, items.present, member.num_items, metric.validate_args)
        self.metric, self.member, self.batch, self.share = metric, member, batch, items.share
        self.spans = spans(items, metric.ties)
        self.score = candidates.scores.gather(1, items.columns).double()  # [B, P] each held-out item's score
        self.above = torch.zeros(self.ids.shape, dtype=torch.int64, device=self.ids.device)
        self.tied = torch.zeros_like(self.above)
        self.tied_before = torch.zeros_like(self.above)  # tied items of a lower id
        self.chunks: list[tuple[int, int]] = []
        self.closed = False

    def add(self, scores: Tensor, offset: int) -> None:
        """Count the items of one chunk: ``scores`` [B, C] of items offset..offset+C-1 for every query."""
        n, rows = self.member.num_items, self.ids.shape[0]
        if self.closed:
            raise ValueError("`add`: this audit batch is closed (its chunks, (offset, width): "
                             f"{sorted(self.chunks)}); open another with `metric.audit(...)`")
        if not isinstance(scores, Tensor) or scores.ndim != 2 or scores.shape[0] != rows \
                or not scores.is_floating_point():
            raise ValueError(f"`scores` must be a float tensor [B, C] with B = {rows}, got {describe(scores)}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0 or offset + scores.shape[1] > n:
            raise ValueError(f"`offset` must be an int with 0 <= offset and offset + C <= num_items = {n}, got "
                             f"{offset!r} for C = {scores.shape[1]}")
        if self.metric.validate_args and bool(scores.isnan().any()):
            raise ValueError(f"`scores` must not contain NaN, got {describe(scores)}")
        items = torch.arange(offset, offset + scores.shape[1], device=self.ids.device)
        # [B, 1, C]: every item but the row's held-out ones (each ranks among the others, K&R's instances)
        other = (items != self.ids.unsqueeze(2)).all(1, keepdim=True)
        values = scores.to(self.score.device).double().unsqueeze(1)
        score = self.score.unsqueeze(2)  # [B, P, 1]
        tied = (values == score) & other
        self.above += ((values > score) & other).sum(2)
        self.tied += tied.sum(2)
        self.tied_before += (tied & (items < self.ids.unsqueeze(2))).sum(2)
        self.chunks.append((offset, scores.shape[1]))

    def close(self) -> None:
        """Check that the chunks covered the catalogue once, then add the batch to the audit states."""
        if self.closed:
            return
        covered = 0
        for start, width in sorted(self.chunks):
            if start != covered:
                raise ValueError(f"`add`: the chunks must cover the items 0..{self.member.num_items - 1} once, got "
                                 f"(offset, width) = {sorted(self.chunks)}")
            covered = start + width
        if covered != self.member.num_items:
            raise ValueError(f"`add`: the chunks must cover the items 0..{self.member.num_items - 1} once, got "
                             f"(offset, width) = {sorted(self.chunks)}")
        exact = (self._exact_values() * self.share.unsqueeze(2)).sum(1)  # [B, K]: each query's mean over its items
        weight = self.batch.weights if self.batch.weights is not None else torch.ones_like(exact[:, 0])
        groups = self.batch.groups if self.batch.groups is not None else torch.zeros_like(self.above[:, 0])
        low, spread = self.spans
        histogram = rank_histogram(low, spread, self.share * weight.unsqueeze(1), groups,
                                   self.metric.audit_sampled_ranks.shape[0], self.member.num_negatives)
        sums = torch.zeros_like(self.metric.audit_exact).index_add_(0, groups, exact * weight.unsqueeze(1))
        self.metric.audit_sampled_ranks.add_(histogram)
        self.metric.audit_exact.add_(sums)
        self.closed = True

    def _exact_values(self) -> Tensor:
        """[B, P, K] each metric at each held-out item's true rank (averaged over a tie's ranks under
        ``"average"``)."""
        ties, n = self.metric.ties, self.member.num_items
        above = self.above.double()
        if ties == "average":
            first, last = above + 1, above + self.tied.double() + 1
            return torch.stack([span_means(family, k, first, last, n) for family, k in self.member.requests], -1)
        before = {"pessimistic": self.tied, "optimistic": torch.zeros_like(self.tied), "index": self.tied_before,
                  "reverse_index": self.tied - self.tied_before}[ties]
        rank = above + before.double() + 1
        return torch.stack([rank_metric(family, rank, k, n) for family, k in self.member.requests], -1)

    def __enter__(self) -> AuditBatch:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self.close()


def _checked_ids(positive_ids: Tensor, present: Tensor, num_items: int, validate_args: bool) -> Tensor:
    """[B, P] the catalogue ids of the held-out items (-1 in a row's unused slots), from [B] (one per row) or
    [B, P] (in the order of their columns)."""
    rows, slots = present.shape
    if not isinstance(positive_ids, Tensor) or positive_ids.is_floating_point() or positive_ids.dtype == torch.bool \
            or tuple(positive_ids.shape) not in ((rows, slots), (rows,) if slots == 1 else (rows, slots)):
        raise ValueError(f"`positive_ids` must be an integer tensor [B] ({rows},) (one held-out item per row) or "
                         f"[B, P] ({rows}, {slots}) (a row's held-out items in column order, -1 in its unused "
                         f"slots), the catalogue ids, got {describe(positive_ids)}")
    ids = positive_ids.to(present.device).long().reshape(rows, slots)
    if validate_args and bool(torch.where(present, (ids < 0) | (ids >= num_items), ids != -1).any()):
        raise ValueError(f"`positive_ids` must lie in [0, num_items = {num_items}) at each held-out item and be -1 "
                         f"in a row's unused slots, got {positive_ids.tolist()}")
    return torch.where(present, ids, -1)


def audit_keys(keys: Sequence[str]) -> list[str]:
    """The keys ``compute`` adds for an audited metric: per metric its exact value, the estimate and their
    difference on the audited queries, and the number of audited queries."""
    return [f"audit/{key}/{part}" for key in keys for part in ("exact", "estimate", "error")] + ["audit/queries"]
