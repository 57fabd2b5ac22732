"""Item-sharded catalogues: each rank of an item-parallel group scores a contiguous slice of the items.

Every rank holds the same query batch and streams its own slice; at ``close`` one ``all_gather`` of
O(B·(D + T)) float64 numbers per rank (its best D items, its candidate count, the target scores it
saw, its bucket counts) gives every rank the whole-catalogue view. Only the group's first rank adds
the batch to its metric, so the metric's usual query-parallel sync in ``compute`` counts it once.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from torchrec_eval.catalogue.merge import best, chunk_order


class ItemRanges:
    """The item ranges a stream has received: each item exactly once, every item by ``close``."""

    def __init__(self, num_items: int) -> None:
        self.num_items = num_items
        self.spans: list[tuple[int, int]] = []  # sorted, disjoint [start, stop)

    def check(self, offset: int, size: int) -> None:
        if offset < 0 or offset + size > self.num_items:
            raise ValueError(f"A chunk of {size} items at `offset` {offset} does not fit in the catalogue of "
                             f"{self.num_items} items (ids 0..{self.num_items - 1})")
        at = bisect.bisect_left(self.spans, (offset, offset + size))
        for start, stop in self.spans[max(at - 1, 0) : at + 1]:
            if start < offset + size and offset < stop:
                raise ValueError(f"The chunk of items {offset}..{offset + size - 1} overlaps the chunk of items "
                                 f"{start}..{stop - 1} added before: each item must be scored once")

    def claim(self, offset: int, size: int) -> None:
        bisect.insort(self.spans, (offset, offset + size))

    def summary(self) -> tuple[int, int, int]:
        """(first item, end, number of items) received: one contiguous range when the count is end - first."""
        if not self.spans:
            return 0, 0, 0
        return self.spans[0][0], self.spans[-1][1], sum(stop - start for start, stop in self.spans)

    def check_complete(self, spans: list[tuple[int, int, int]]) -> None:
        """``spans``: (first, end, count) of every rank; together they must tile the catalogue."""
        if len(spans) > 1:
            for rank, (first, end, count) in enumerate(spans):
                if count and count != end - first:
                    raise ValueError(f"Rank {rank} of the item group scored items {first}..{end - 1} with gaps: "
                                     "each rank must score one contiguous item range")
        ranges = sorted((first, end) for first, end, count in spans if count)
        position = 0
        for first, end in ranges:
            if first != position:
                what = "missing" if first > position else "scored twice"
                low, high = sorted((first, position))
                raise ValueError(f"Items {low}..{high - 1} of the catalogue of {self.num_items} are {what}: "
                                 "the chunks must cover every item exactly once before `close()`")
            position = end
        if position != self.num_items:
            raise ValueError(f"Items {position}..{self.num_items - 1} of the catalogue of {self.num_items} are "
                             "missing: the chunks must cover every item exactly once before `close()`")


@dataclass
class Shards:
    """The whole-catalogue view after the gather (equal to the local one without an item group)."""

    top_values: Tensor
    top_ids: Tensor
    num_valid: Tensor
    seen_scores: Tensor
    target_counts: Tensor | None
    spans: list[tuple[int, int, int]]
    owner: bool


def gather_shards(stream: Any, target_counts: Tensor | None) -> Shards:
    """Combine the streams of every rank of ``stream.process_group`` with one ``all_gather``."""
    local = Shards(stream.top_values, stream.top_ids, stream.num_valid, stream.seen_scores, target_counts,
                   [stream.coverage.summary()], True)
    group = stream.process_group
    if group is None:
        local.spans = [(start, stop, stop - start) for start, stop in stream.coverage.spans]
        return local
    parts = _parts(local)
    flat = torch.cat([part.reshape(-1).to(torch.float64) for part in parts])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size(group))]
    dist.all_gather(gathered, flat, group=group)
    ranks = [_unpack(one, parts) for one in gathered]
    values = torch.cat([rank[0] for rank in ranks], dim=1)
    ids = torch.cat([rank[1] for rank in ranks], dim=1).to(torch.int64)
    depth = local.top_values.shape[1]
    top_values, top_ids = best(values, ids, depth, chunk_order(stream.metric.ties))
    total = [torch.stack([rank[i] for rank in ranks]).sum(0) for i in range(2, len(parts) - 1)]
    return Shards(
        top_values,
        top_ids,
        total[0].to(torch.int64),
        total[1],
        None if target_counts is None else total[2].to(torch.int64),
        [_span(rank[-1]) for rank in ranks],
        dist.get_rank(group) == 0,
    )


def _parts(shards: Shards) -> list[Tensor]:
    parts = [shards.top_values, shards.top_ids, shards.num_valid, shards.seen_scores]
    if shards.target_counts is not None:
        parts.append(shards.target_counts)
    meta = torch.tensor(shards.spans[0], dtype=torch.float64, device=shards.top_values.device)
    return [*parts, meta]


def _unpack(flat: Tensor, like: list[Tensor]) -> list[Tensor]:
    out, start = [], 0
    for part in like:
        out.append(flat[start : start + part.numel()].view(part.shape))
        start += part.numel()
    return out


def _span(row: Tensor) -> tuple[int, int, int]:
    """A rank's (start, end, count) of the item range it scored, as ints."""
    start, end, count = (int(v) for v in row.tolist())
    return start, end, count
