"""Evaluate a recommender on several processes: a dataset sharded with DistributedSampler, one
RankingMetrics suite per process, one sync at the end, the metrics printed once on rank 0.

Each process scores its own share of the test users against all items and updates its own metric
state (a few float64 sums, no per-query storage). ``compute()`` is a collective: every rank calls it,
the states are summed across processes, and every rank gets the global value, the same number a
single process gets over all users (up to float64 rounding).

Run it on CPU (gloo)::

    torchrun --nproc_per_node 2 examples/ddp_eval.py
    python -m torch.distributed.run --nproc_per_node 2 --standalone examples/ddp_eval.py --users 2000
    python examples/ddp_eval.py            # one process, no torch.distributed: the same numbers

On GPUs nothing changes but the launch: the backend is NCCL when each local rank has a GPU of its own
(else gloo, on the CPU: two processes on a one-GPU machine), each process
uses ``cuda:LOCAL_RANK``, and the metric states live on that GPU::

    torchrun --nproc_per_node 8 examples/ddp_eval.py
    # two machines, 8 GPUs each: run on both, with node_rank 0 and 1
    torchrun --nnodes 2 --node_rank 0 --nproc_per_node 8 \\
        --rdzv_backend c10d --rdzv_endpoint host0:29500 examples/ddp_eval.py

The sampler matters for exact numbers: torch's ``DistributedSampler`` evens out the shards by
repeating samples (``drop_last=False``, those users would be counted twice) or by dropping them
(``drop_last=True``). ``torchrec_eval.data.sampler.UnpaddedDistributedSampler`` keeps every user exactly once; the
ranks then run different numbers of batches, which is fine because the metrics talk to each other
only in ``compute()``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset

try:
    import torchrec_eval as tre
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torchrec_eval as tre
from torchrec_eval.data import UnpaddedDistributedSampler

METRICS = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@10"]


class EvalUsers(Dataset):
    """The users to evaluate, with their test items (targets) and training items (excluded)."""

    def __init__(self, users: torch.Tensor, test_items: torch.Tensor, train_items: torch.Tensor) -> None:
        self.users, self.test_items, self.train_items = users, test_items, train_items

    def __len__(self) -> int:
        return len(self.users)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.users[i], self.test_items[i], self.train_items[i]


class TinyMF(nn.Module):
    """A stand-in for a trained model (load your checkpoint instead): ``<p_u, q_i> + b_i``."""

    def __init__(self, num_users: int, num_items: int, item_bias: torch.Tensor, dim: int = 16, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.user = nn.Parameter(0.3 * torch.randn(num_users, dim, generator=gen))
        self.item = nn.Parameter(0.3 * torch.randn(num_items, dim, generator=gen))
        self.bias = nn.Parameter(item_bias.float().clone())

    def forward(self, users: torch.Tensor) -> torch.Tensor:
        """Scores of every item for each user: [B, num_items]."""
        return self.user[users] @ self.item.T + self.bias


def make_data(num_users: int, num_items: int, seed: int) -> tuple[EvalUsers, torch.Tensor]:
    """Synthetic interactions split by time; returns the test users and the training popularity."""
    try:
        from torchrec_eval.data import (
            generate_interactions,
            item_popularity,
            padded_item_lists,
            temporal_split,
        )
    except ImportError:  # a version without the datasets module: random lists will do
        gen = torch.Generator().manual_seed(seed)
        order = torch.argsort(torch.rand(num_users, num_items, generator=gen), dim=1)
        train, test = order[:, :16], order[:, 16:20]
        popularity = torch.bincount(train.flatten(), minlength=num_items)
        return EvalUsers(torch.arange(num_users), test, train), popularity
    data = generate_interactions(num_users, num_items, interactions_per_user=(5, 40), seed=seed)
    train, test = temporal_split(data, 0.2)
    test_lists = padded_item_lists(test, num_users)
    train_lists = padded_item_lists(train, num_users)
    users = torch.nonzero((test_lists >= 0).any(1)).flatten()  # users with at least one test item
    dataset = EvalUsers(users, test_lists[users], train_lists[users])
    return dataset, item_popularity(train)


def evaluate(args: argparse.Namespace) -> dict[str, float]:
    """Run the evaluation on this process (all of it when torch.distributed is not initialised)."""
    distributed = dist.is_available() and dist.is_initialized()
    rank = dist.get_rank() if distributed else 0
    world_size = dist.get_world_size() if distributed else 1
    use_cuda = distributed and dist.get_backend() == "nccl"
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if use_cuda else torch.device("cpu")

    # Every rank builds the same data and model (in practice: read from shared storage / a checkpoint).
    dataset, popularity = make_data(args.users, args.items, args.seed)
    model = TinyMF(args.users, args.items, torch.log1p(popularity.double()), seed=args.seed)
    model = model.to(device).eval()
    metrics = tre.RankingMetrics(METRICS).to(device)  # the state is float64 on `device`

    sampler = UnpaddedDistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    with torch.no_grad():
        for users, test_items, train_items in loader:
            scores = model(users.to(device))
            metrics.update(scores, target_ids=test_items.to(device), exclude_ids=train_items.to(device))

    results = metrics.compute()  # collective: all ranks call it, all get the global values
    if rank == 0:
        shards = [len(range(r, len(dataset), world_size)) for r in range(world_size)]
        batches = [math.ceil(n / args.batch_size) for n in shards]
        print(
            f"world_size={world_size} backend={dist.get_backend() if distributed else 'none'} "
            f"users={len(dataset)} items={args.items} users_per_rank={shards} batches_per_rank={batches}"
        )
        width = max(map(len, results))
        for key, value in results.items():
            print(f"{key:<{width}}  {value.item():.6f}")
        if args.json:
            print("json: " + json.dumps({key: value.item() for key, value in results.items()}))
    return {key: value.item() for key, value in results.items()}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--backend",
        choices=["auto", "gloo", "nccl"],
        default="auto",
        help="auto: nccl when every local rank has a GPU of its own, else gloo",
    )
    parser.add_argument("--json", action="store_true", help="also print the values as one JSON line")
    return parser.parse_args(argv)


def _backend(asked: str, local_ranks: int) -> str:
    """NCCL needs one GPU per process: ``auto`` takes it when this node has a GPU for each local rank
    (two processes on a one-GPU machine run on gloo, on the CPU); an explicit ``nccl`` without them is
    refused with the counts."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if asked == "auto":
        return "nccl" if gpus >= local_ranks else "gloo"
    if asked == "nccl" and gpus < local_ranks:
        raise SystemExit(f"--backend nccl needs a GPU per process: {local_ranks} local ranks, {gpus} GPU(s); "
                         "use --backend gloo (or auto)")
    return asked


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parse_args(argv)
    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1  # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR, ...
    if launched:
        backend = _backend(args.backend, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group(backend)
    results = evaluate(args)  # an error leaves the group to the launcher: a rank that fails never waits below
    if launched:
        # every rank is past its last collective before any tears its connections down: gloo aborts a rank
        # whose peer closes while it still reads (seen once, under load, as SIGABRT after correct results)
        dist.barrier()
        dist.destroy_process_group()
    return results


if __name__ == "__main__":
    main()
