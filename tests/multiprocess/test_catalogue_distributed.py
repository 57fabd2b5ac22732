"""Item-sharded catalogues on real processes (gloo): uneven item ranges, equal to one process's dense update.

Each rank of an item-parallel group holds the same queries and scores one contiguous, uneven slice of
the items; ``close`` gathers the ranks once. Combined with query parallelism (item groups smaller than
the world), ``compute`` keeps its usual sync over the world.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torchrec_eval as tre
from tests.catalogue.cases import FULL, TOPK, N, beyond_options, catalogue_batch, target_scores_of
from tests.processes import START_METHOD, free_port

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

SHARDS = {2: [0, 14, N], 3: [0, 5, 17, N]}  # uneven item ranges per rank
METRICS = [*TOPK, *FULL, "coverage@5", "novelty@5", "intra_list_diversity@3"]


def _suite() -> tre.RankingMetrics:
    options = {family: option for family, option in beyond_options(N).items()
               if family in ("coverage", "novelty", "intra_list_diversity")}
    return tre.RankingMetrics(METRICS, options=options, ties="pessimistic", num_groups=3)


def _stream(metric, seed: int, start: int, stop: int, group: Any) -> None:
    scores, target_ids, gains, exclude, groups = catalogue_batch(seed)
    with metric.catalogue(N, target_ids=target_ids, target_gains=gains, exclude_ids=exclude, groups=groups,
                          target_scores=target_scores_of(scores, target_ids), process_group=group) as batch:
        middle = (start + stop) // 2
        for low, high in ((middle, stop), (start, middle)):  # chunks of the shard, last first
            if high > low:
                batch.add(scores[:, low:high], offset=low)


def _worker(rank: int, world_size: int, port: int, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    bounds = SHARDS[world_size]
    gathers = []
    original = dist.all_gather

    def counted(*args, **kwargs):
        gathers.append(args[1].numel())
        return original(*args, **kwargs)

    dist.all_gather = counted
    try:
        # every rank of the world is one item group: batches 0 and 1 are sharded over all ranks
        sharded = _suite()
        for seed in (0, 1):
            _stream(sharded, seed, bounds[rank], bounds[rank + 1], dist.group.WORLD)
        gathers_per_batch = len(gathers) / 2
        # item groups smaller than the world: ranks 0 and 1 shard batch 2 between them, the others
        # (query parallelism) score batch 3 + rank alone
        pair = dist.new_group([0, 1])
        singles = {r: dist.new_group([r]) for r in range(2, world_size)}
        mixed = _suite()
        if rank < 2:
            _stream(mixed, 2, [0, 9, N][rank], [0, 9, N][rank + 1], pair)
        else:
            _stream(mixed, 3 + rank, 0, N, singles[rank])
        results = {"sharded": sharded.compute(), "mixed": mixed.compute(), "gathers_per_batch": gathers_per_batch,
                   "gathered_numbers": max(gathers),
                   "states": {name: value.clone() for name, value in sharded.metric_state.items()}}
    finally:
        dist.all_gather = original
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()




def _dense(seeds: list[int], states: bool = False) -> dict:
    metric = _suite()
    for seed in seeds:
        scores, target_ids, gains, exclude, groups = catalogue_batch(seed)
        metric.update(scores, target_ids=target_ids, target_gains=gains, exclude_ids=exclude, groups=groups)
    return metric.metric_state if states else metric.compute()


@pytest.mark.parametrize("world_size", [2, 3])
def test_item_sharded_equals_one_dense_process(world_size, tmp_path):
    mp.start_processes(_worker, args=(world_size, free_port(), str(tmp_path)), nprocs=world_size, join=True,
                       start_method=START_METHOD)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world_size)]
    sharded, mixed = _dense([0, 1]), _dense([2, *(3 + r for r in range(2, world_size))])
    # each batch is counted once over the world (by the item group's first rank), not once per shard
    for name, want in _dense([0, 1], states=True).items():
        torch.testing.assert_close(sum(result["states"][name] for result in ranks), want, rtol=0, atol=1e-12)
    for result in ranks:
        for name, want in (("sharded", sharded), ("mixed", mixed)):
            assert list(result[name]) == list(want)
            for key in want:
                torch.testing.assert_close(result[name][key], want[key], rtol=0, atol=1e-12, equal_nan=True,
                                           msg=f"{name} {key}")
        assert result["gathers_per_batch"] == 1  # one collective per batch
        rows, depth, targets = 7, 7, 6  # O(B (k + T)): never O(B N)
        assert result["gathered_numbers"] <= rows * (2 * depth + 1 + targets + 2 * (targets + 1)) + 3
