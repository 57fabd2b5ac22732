"""One query batch evaluated against a catalogue that arrives in chunks of scores.

A recommender with N = 10^7 items cannot hold a [B, N] score matrix; it scores the catalogue in
item chunks, or each rank of an item-parallel group scores its slice. :class:`CatalogueBatch` takes
the batch's targets and exclusions once, then any number of ``add(scores, offset)`` calls in any
order; ``close()`` adds to the metric exactly what ``update`` on the whole [B, N] matrix would have
added. It keeps O(B·(D + T)) numbers whatever N: the best D items so far (D = the deepest cut-off;
:mod:`~torchrec_eval.catalogue.merge`) and, for AUC, GAUC, MPR and FCP, how many items beat each of
the T targets (:mod:`~torchrec_eval.catalogue.counts`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchrec_eval.catalogue.counts import TargetCounts, TargetRanks
from torchrec_eval.catalogue.merge import best, chunk_order
from torchrec_eval.catalogue.sharded import ItemRanges, gather_shards
from torchrec_eval.members.ownership import own_tensors
from torchrec_eval.members.steps import needs_of
from torchrec_eval.pipeline.arguments import check_int
from torchrec_eval.pipeline.batch import Batch
from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.forms.candidates import ranking_depth
from torchrec_eval.pipeline.forms.ids import table_ranked, target_table
from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.topk import top_indices
from torchrec_eval.pipeline.validation import (
    Checks,
    as_long,
    check_id_range,
    check_scores,
    check_target_ids,
    describe,
    one_column_at_least,
    require_float,
    require_ids,
    require_tensor,
    required,
)


class CatalogueBatch:
    """One query batch evaluated against a catalogue of ``num_items`` items scored in chunks (``metric.catalogue``).

    Give the batch's targets and exclusions once, then ``add(scores, offset)`` for each chunk of items, in any
    order and of any sizes; ``close()`` (or leaving the ``with`` block) adds to the metric exactly what
    ``update(preds=<all N scores>, target_ids=..., ...)`` would have. Memory is O(B·(k + T)) whatever
    ``num_items``. With ``process_group`` (an item-parallel group whose ranks hold the same queries and score one
    contiguous item range each), ``close`` combines the ranks with one ``all_gather`` and the group's first rank
    adds the batch.

    Args:
        metric: the :class:`~torchrec_eval.metrics.base.MemberMetric` the batch adds to (not ``weighted``).
        num_items: N, the size of the catalogue (item ids 0..N-1).
        target_ids, target_gains, exclude_ids, groups: as in ``update`` (ids form).
        target_scores: [B, T] the scores of the target items, needed by AUC, GAUC, MPR and FCP (which count the
            items above each target in every chunk); they stand for the chunks' entries at the targets, which are
            then not read.
        process_group: the item-parallel group, or None (one process scores the whole catalogue).

    Raises:
        ValueError: on a ``weighted`` metric or ``ties="average"``, on bad targets, exclusions or target scores
            (at construction), on a chunk of the wrong shape or dtype, outside the catalogue or overlapping an
            earlier chunk, with NaN/+inf scores (``add``), and when the chunks do not cover the catalogue exactly
            once (``close``). The metric is left unchanged by every error.

    Example:
        >>> import torch
        >>> from torchrec_eval import NDCG
        >>> metric = NDCG(k=2)
        >>> scores = torch.tensor([[0.1, 0.9, 0.3, 0.8, 0.2]])
        >>> with metric.catalogue(5, target_ids=torch.tensor([[3, 4]])) as batch:
        ...     batch.add(scores[:, :2], offset=0)
        ...     batch.add(scores[:, 2:], offset=2)
        >>> metric.compute(), NDCG(k=2)(scores, target_ids=torch.tensor([[3, 4]]))
        (tensor(0.3869, dtype=torch.float64), tensor(0.3869, dtype=torch.float64))
    """

    def __init__(
        self,
        metric: Any,
        num_items: int,
        *,
        target_ids: Tensor,
        target_gains: Tensor | None = None,
        target_scores: Tensor | None = None,
        exclude_ids: Tensor | None = None,
        groups: Tensor | None = None,
        process_group: Any = None,
    ) -> None:
        if metric.weighted:
            raise ValueError("`catalogue` takes no `sample_weight`: a metric built with `weighted=True` would count "
                             f"every query with weight 1; use `update(..., sample_weight=w)`; got {metric!r}")
        self.metric = metric
        self.num_items = check_int("num_items", num_items, 1)
        if metric.ties == "average" or any(m.needs_average for m in metric.members):
            raise ValueError(
                "A chunked catalogue is evaluated for ties 'index', 'reverse_index', 'pessimistic' and "
                "'optimistic'; averaging over tie orders (ties='average' or average_ties=True) needs every "
                f"tie group whole and is not supported here (metric ties={metric.ties!r})"
            )
        self.checks = Checks() if metric.validate_args else None
        self.needs = needs_of(metric.members)
        self.target_ids, self.target_gains = self._targets(target_ids, target_gains)
        self.exclusions = None if exclude_ids is None else self._exclusions(exclude_ids)
        self.groups = self._groups(groups)
        self.full_ranking = any(member.needs_candidates for member in metric.members)
        self.target_scores = self._target_scores(target_scores)
        if self.checks is not None:
            self.checks.run()
        self.coverage = ItemRanges(self.num_items)  # the chunks received so far
        self.process_group = process_group
        rows, width = self.target_ids.shape
        device = self.target_ids.device
        present = self.target_ids >= 0
        self.valid_target = present if self.exclusions is None else present & ~self.exclusions.contains(self.target_ids)
        relevant = target_table(self.target_ids, target_gains, self.valid_target, metric.relevance_threshold,
                                unjudged=self.needs.judged).relevant
        k = self.needs.depth
        self.depth = ranking_depth(k, self.num_items, relevant.sum(1) if self.needs.to_num_relevant else None) if k else 0
        self.top_values = torch.full((rows, self.depth), float("-inf"), dtype=torch.float64, device=device)
        self.top_ids = torch.full((rows, self.depth), -1, dtype=torch.int64, device=device)
        self.num_valid = torch.zeros(rows, dtype=torch.int64, device=device)  # non-target candidates
        self.seen_scores = torch.zeros(rows, width, dtype=torch.float64, device=device)  # targets, from the chunks
        self.counts: TargetCounts | None = None
        self.dtype: torch.dtype | None = None
        self.closed = False

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        own_tensors(self)  # its running top lists and counts, and its metric, private to this process

    # ----------------------------------------------------------------------------------- set-up
    def _targets(self, target_ids: Tensor, target_gains: Tensor | None) -> tuple[Tensor, Tensor | None]:
        require_tensor("target_ids", target_ids)
        if target_ids.ndim != 2 or target_ids.shape[0] == 0:
            raise ValueError(f"`target_ids` must have shape [B, T] (-1 padding) with B >= 1 queries, got "
                             f"{describe(target_ids)}")
        if target_gains is not None:
            require_tensor("target_gains", target_gains)
        ids, target_gains = one_column_at_least(as_long(target_ids), target_gains)
        target_ids = required("target_ids", ids, "catalogue")
        # the ids form's checks (ids in range, no repeat, gains >= 0 or -1 where a metric reads the judgments),
        # run with the others
        check_target_ids(target_ids, target_gains, (target_ids.shape[0], self.num_items), self.checks,
                         unjudged=self.needs.judged)
        return target_ids, target_gains

    def _exclusions(self, exclude_ids: Tensor) -> Exclusions:
        require_tensor("exclude_ids", exclude_ids)
        exclude_ids = as_long(exclude_ids)
        require_ids("exclude_ids", exclude_ids, self.target_ids.shape[0])
        if self.checks is not None:
            check_id_range(self.checks, "exclude_ids", exclude_ids, self.num_items)
        return Exclusions.from_ids(exclude_ids)

    def _groups(self, groups: Tensor | None) -> Tensor | None:
        if groups is not None:
            require_tensor("groups", groups)
            if groups.shape != (self.target_ids.shape[0],):
                raise ValueError(f"`groups` must have shape [{self.target_ids.shape[0]}], got {describe(groups)}")
        return self.metric._checked_groups(groups)

    def _given_target_scores(self) -> Tensor:
        """The targets' scores, which the full-ranking families need (the constructor required them)."""
        return required("target_scores", self.target_scores, "catalogue")

    def _target_scores(self, target_scores: Tensor | None) -> Tensor | None:
        if target_scores is None:
            if self.full_ranking:
                raise ValueError(
                    "AUC, GAUC, MPR and FCP over a chunked catalogue count, in every chunk, the items scored "
                    f"above each target: pass `target_scores` {list(self.target_ids.shape)}, the scores of the "
                    "target items (the chunks' values at the targets are then not read); got `target_scores` None"
                )
            return None
        require_tensor("target_scores", target_scores)
        require_float("target_scores", target_scores)
        if target_scores.shape != self.target_ids.shape:
            raise ValueError(f"`target_scores` must have the shape of `target_ids` {tuple(self.target_ids.shape)}, "
                             f"got {describe(target_scores)}")
        if self.checks is not None:
            check_scores(self.checks, "target_scores", target_scores)
        return target_scores

    # ----------------------------------------------------------------------------------- chunks
    def add(self, scores: Tensor, offset: int) -> None:
        """Add the scores [B, C] of items ``offset .. offset + C - 1`` (``-inf``: not a candidate)."""
        if self.closed:
            raise ValueError("This catalogue batch is closed; open a new one with `metric.catalogue(...)`")
        offset = self._check_chunk(scores, offset)
        rows, size = scores.shape
        self.coverage.claim(offset, size)  # the last check: from here on nothing raises
        self.dtype = scores.dtype
        local = self._local(self.target_ids, offset, size)
        if self.target_scores is None:
            seen = scores.gather(1, local.clamp(min=0)).to(torch.float64)
            self.seen_scores = torch.where(local >= 0, seen, self.seen_scores)
        if self.exclusions is not None:
            local = torch.cat([local, self._local(self.exclusions.ids, offset, size)], dim=1)
        # targets (ranked at close, with their gains) and excluded items leave the chunk by id: no copy
        removed = Exclusions.from_ids(local)
        removed_scores = scores.gather(1, removed.ids.clamp(min=0)).masked_fill(removed.ids < 0, float("-inf"))
        self.num_valid += size - _count_neg_inf(scores) - (removed_scores > float("-inf")).sum(1)
        if self.full_ranking:
            if self.counts is None:
                self.counts = TargetCounts(self._given_target_scores().to(scores.dtype), self.valid_target)
            self.counts.add(scores, removed_scores)
        if self.depth:
            self._merge(scores, removed, offset)

    def _check_chunk(self, scores: Tensor, offset: Any) -> int:
        """The chunk's ``offset`` as an int, once ``scores`` and ``offset`` are checked."""
        require_tensor("scores", scores)
        require_float("scores", scores)
        rows = self.target_ids.shape[0]
        if scores.ndim != 2 or scores.shape[0] != rows or scores.shape[1] == 0:
            raise ValueError(f"`scores` must have shape [{rows}, C] (the batch's {rows} queries, C >= 1 items), "
                             f"got {describe(scores)}")
        if scores.device != self.target_ids.device:
            raise ValueError(f"`scores` must be on the device of `target_ids` ({self.target_ids.device}), "
                             f"got {scores.device}")
        if self.dtype is not None and scores.dtype != self.dtype:
            raise ValueError(f"Every chunk must have the dtype of the first ({self.dtype}), got {scores.dtype}")
        offset = check_int("offset", offset, reason="the id of the chunk's first item")
        self.coverage.check(offset, scores.shape[1])
        if self.checks is not None:
            check_scores(self.checks, "scores", scores)
            self.checks.run()
        return offset

    @staticmethod
    def _local(ids: Tensor, offset: int, size: int) -> Tensor:
        """The ids as columns of a chunk; -1 outside it."""
        local = ids - offset
        return torch.where((local >= 0) & (local < size), local, -1)

    def _merge(self, scores: Tensor, removed: Exclusions, offset: int) -> None:
        ties = chunk_order(self.metric.ties)
        idx = top_indices(scores, min(self.depth, scores.shape[1]), ties, exclusions=removed).indices
        values = scores.gather(1, idx).to(torch.float64).masked_fill(removed.contains(idx), float("-inf"))
        values = torch.cat([self.top_values, values], dim=1)
        ids = torch.cat([self.top_ids, idx + offset], dim=1)
        self.top_values, self.top_ids = best(values, ids, self.depth, ties)

    # ----------------------------------------------------------------------------------- close
    def close(self) -> None:
        """Evaluate the batch over the whole catalogue and add it to the metric (all or nothing)."""
        if self.closed:
            raise ValueError("This catalogue batch is already closed")
        if self.full_ranking and self.counts is None:  # no chunk on this rank
            self.counts = TargetCounts(self._given_target_scores().to(self.dtype or torch.float64), self.valid_target)
        shards = gather_shards(self, None if self.counts is None else self.counts.counts)
        self.coverage.check_complete(shards.spans)
        batch = self._batch(shards)
        self.closed = True
        metric = self.metric
        metric._apply_staged(metric._stage_batch(batch) if shards.owner else (lambda: None))
        metric._update_count += 1
        metric._computed = None

    def _batch(self, shards: Any) -> Batch:
        metric = self.metric
        scores = (self.target_scores.to(self.dtype or torch.float64).to(torch.float64)
                  if self.target_scores is not None else shards.seen_scores)
        valid = self.valid_target & (scores > float("-inf"))
        table = target_table(self.target_ids, self.target_gains, valid, metric.relevance_threshold,
                             unjudged=self.needs.judged)
        gains, relevant = table.gains, table.relevant
        num_valid = shards.num_valid + valid.sum(1)
        ranked = None
        if self.depth:
            values = torch.cat([shards.top_values, scores.masked_fill(~valid, float("-inf"))], dim=1)
            ids = torch.cat([shards.top_ids, self.target_ids], dim=1)
            all_gains = torch.cat([torch.zeros_like(shards.top_values), gains], dim=1)
            values, ids = best(values, ids, self.depth, metric.ties, all_gains)
            ids = ids.masked_fill(values == float("-inf"), -1)
            ranked = table_ranked(ids, table, num_valid.to(torch.float64), self.needs)
        candidates = None
        if self.full_ranking:
            above, equal = required_counts(self.counts).above_and_equal(shards.target_counts)
            candidates = TargetRanks(scores, valid, gains, relevant, above, equal, num_valid)
        return Batch(ranked, candidates, self.groups)

    def __enter__(self) -> CatalogueBatch:
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if kind is None:
            self.close()
        else:
            self.closed = True  # an error while scoring: the batch is dropped, the metric untouched


def _count_neg_inf(scores: Tensor) -> Tensor:
    """[B] items scored -inf in each row. On the CPU a row minimum first (a host check is free there)."""
    if not host_reads_free(scores):
        return torch.isneginf(scores).sum(1)
    rows = (scores.amin(1) == float("-inf")).nonzero().squeeze(1)
    count = torch.zeros(scores.shape[0], dtype=torch.int64)
    if rows.numel():
        count[rows] = torch.isneginf(scores[rows]).sum(1)
    return count


def required_counts(counts: TargetCounts | None) -> TargetCounts:
    """The targets' running counts, which every full-ranking batch holds once closed."""
    if counts is None:
        raise ValueError(f"a full-ranking catalogue batch closes with its targets' counts, got counts={counts}")
    return counts
