"""Exact metrics for a recommender whose catalogue is too large for one score matrix.

1,000,000 item embeddings (d = 32) on the CPU; 256 users whose held-out items are to be found. The
[256, 1,000,000] score matrix would take 1 GB, the catalogue is scored in chunks of 65,536 items
instead, and every chunk goes straight into ``suite.catalogue(...)``: NDCG, recall, MRR, AUC, MPR and
coverage come out exactly as if the whole matrix had been passed to ``update``.

    python examples/large_catalogue.py                     # one process, item chunks
    torchrun --nproc_per_node 2 examples/large_catalogue.py  # item-sharded: each rank scores a slice

Under torchrun each rank holds the same users and an uneven contiguous slice of the item embeddings
(a model-parallel item tower); ``process_group`` makes ``close()`` combine the slices with one
``all_gather`` per batch. ``--check`` also runs the dense ``update`` on the whole matrix (small
catalogues only) and asserts that the two agree to 1e-12.
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import torch.distributed as dist

import torchrec_eval as tre

METRICS = ["ndcg@10", "recall@50", "mrr@10", "hitrate@10", "auc", "mpr", "coverage@10"]


def make_model(num_users: int, num_items: int, dim: int, seed: int) -> tuple[torch.Tensor, ...]:
    """User and item embeddings with planted taste (users prefer items near a cluster), targets, seen items."""
    gen = torch.Generator().manual_seed(seed)
    clusters = torch.randn(16, dim, generator=gen)
    item_cluster = torch.randint(0, 16, (num_items,), generator=gen)
    items = clusters[item_cluster] + 2.0 * torch.randn(num_items, dim, generator=gen)
    user_cluster = torch.randint(0, 16, (num_users,), generator=gen)
    users = clusters[user_cluster] + 0.5 * torch.randn(num_users, dim, generator=gen)
    # held-out items: 5 per user, from the user's cluster (what the model should rank high)
    pool = torch.argsort(item_cluster)
    starts = torch.searchsorted(item_cluster[pool], user_cluster)
    sizes = torch.bincount(item_cluster, minlength=16)[user_cluster]
    picks = starts.unsqueeze(1) + (torch.rand(num_users, 15, generator=gen) * sizes.unsqueeze(1)).long()
    chosen = pool[picks]
    target_ids, seen = chosen[:, :5], chosen[:, 5:]  # 10 items seen in training, excluded from ranking
    target_ids = torch.where(torch.isin(target_ids, seen), -1, target_ids)  # (rare) clashes: padding
    return users, items, target_ids, seen


def evaluate(users, local_items, target_emb, target_ids, seen, num_items: int, chunk: int,
             item_range: tuple[int, int], group) -> dict[str, float]:
    """Stream this process's item range, in chunks, into the suite; return the (synced) values."""
    suite = tre.RankingMetrics(METRICS, options={"coverage": {"num_items": num_items}})
    # AUC and MPR count, in every chunk, the items above each target, so they need the targets' scores
    # first (in a sharded model the target embeddings come from the sharded table's lookup)
    target_scores = (users.unsqueeze(1) * target_emb).sum(-1)
    start, stop = item_range
    with suite.catalogue(num_items, target_ids=target_ids, exclude_ids=seen, target_scores=target_scores,
                         process_group=group) as batch:
        for low in range(start, stop, chunk):
            high = min(low + chunk, stop)
            batch.add(users @ local_items[low - start : high - start].T, offset=low)
    return {key: float(value) for key, value in suite.compute().items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=256)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=65_536)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="also the dense update; assert equality")
    parser.add_argument("--json", action="store_true", help="print the values as one JSON line")
    args = parser.parse_args()
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    users, items, target_ids, seen = make_model(args.users, args.items, args.dim, args.seed)
    target_emb = items[target_ids.clamp(min=0)]
    # uneven contiguous slices: rank r owns items [bounds[r], bounds[r + 1]) (e.g. a sharded item table)
    weights = torch.arange(1, world + 1, dtype=torch.float64)
    bounds = [0, *(int(args.items * float(w)) for w in weights.cumsum(0)[:-1] / weights.sum()), args.items]
    item_range = (bounds[rank], bounds[rank + 1])
    local_items = items[item_range[0] : item_range[1]]  # all this rank would hold in a sharded model
    values = evaluate(users, local_items, target_emb, target_ids, seen, args.items, args.chunk, item_range,
                      dist.group.WORLD if distributed else None)
    if args.check:
        dense = tre.RankingMetrics(METRICS, options={"coverage": {"num_items": args.items}})
        scores = users @ items.T
        rows = torch.arange(args.users).unsqueeze(1).expand_as(target_ids)
        present = target_ids >= 0
        scores[rows[present], target_ids[present]] = (users.unsqueeze(1) * target_emb).sum(-1)[present]
        dense.update(scores, target_ids=target_ids, exclude_ids=seen)
        for key, value in dense.compute().items():
            assert abs(float(value) - values[key]) <= 1e-12, (key, float(value), values[key])
    if rank == 0:
        print(f"world_size={world} items={args.items:,} users={args.users} chunks of {args.chunk:,}"
              f"{' (dense check passed)' if args.check else ''}")
        print("  ".join(f"{key}={value:.4f}" for key, value in values.items()))
        if args.json:
            print("json: " + json.dumps(values))
    if distributed:
        dist.barrier()  # every rank past its last collective before any closes its connections (gloo aborts)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
