"""Train a matrix-factorisation recommender in a plain PyTorch loop and evaluate it after every epoch.

The data is the synthetic implicit-feedback set of :mod:`torchrec_eval.datasets` (latent tastes plus a
long tail of item popularity), split per user by time: each user's latest 20% of interactions are the
test targets, and the items they saw in training are excluded from their ranking.

The model is BPR matrix factorisation (Rendle et al., 2009): a user and an item embedding plus an item
bias, trained so that a user's observed item scores above a uniformly sampled one. After each epoch all
users are scored against all items, ``scores = user_emb @ item_emb.T + item_bias``, in batches of
users, and one :class:`torchrec_eval.RankingMetrics` suite accumulates six metrics with one top-k per
batch. The first row of the table is the popularity baseline (rank items by training count).

Run it::

    python examples/train_loop.py                      # 500 users, 1000 items, 10 epochs, a few seconds
    python examples/train_loop.py --epochs 20 --users 2000 --items 5000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch import nn

try:
    import torchrec_eval as tre
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torchrec_eval as tre

from torchrec_eval.datasets import (
    generate_interactions,
    item_popularity,
    padded_item_lists,
    train_test_split_by_time,
)

METRICS = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@10"]


class BPRMF(nn.Module):
    """Matrix factorisation with an item bias: ``score(u, i) = <p_u, q_i> + b_i``."""

    def __init__(self, num_users: int, num_items: int, dim: int) -> None:
        super().__init__()
        self.user = nn.Embedding(num_users, dim)
        self.item = nn.Embedding(num_items, dim)
        self.item_bias = nn.Embedding(num_items, 1)
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        return (self.user(users) * self.item(items)).sum(-1) + self.item_bias(items).squeeze(-1)

    def score_all(self, users: torch.Tensor) -> torch.Tensor:
        """``[B, num_items]`` scores of the given users against every item."""
        return self.user(users) @ self.item.weight.T + self.item_bias.weight.T


def train_epoch(
    model: BPRMF,
    optimizer: torch.optim.Optimizer,
    users: torch.Tensor,
    items: torch.Tensor,
    num_items: int,
    batch_size: int,
    weight_decay: float,
    generator: torch.Generator,
) -> float:
    """One pass over the training interactions with one uniform negative per positive; mean BPR loss."""
    model.train()
    order = torch.randperm(users.numel(), generator=generator)
    total, seen = 0.0, 0
    for start in range(0, order.numel(), batch_size):
        idx = order[start : start + batch_size]
        u, pos = users[idx], items[idx]
        neg = torch.randint(0, num_items, pos.shape, generator=generator)
        diff = model(u, pos) - model(u, neg)
        loss = -nn.functional.logsigmoid(diff).mean()
        squares = model.user(u).pow(2) + model.item(pos).pow(2) + model.item(neg).pow(2)
        reg = weight_decay * squares.sum(-1).mean()
        optimizer.zero_grad()
        (loss + reg).backward()
        optimizer.step()
        total += loss.item() * idx.numel()
        seen += idx.numel()
    return total / max(seen, 1)


@torch.no_grad()
def evaluate(score_fn, suite, test_ids: torch.Tensor, train_ids: torch.Tensor, batch_size: int) -> dict:
    """Score every user against every item, in batches of users, and compute the suite."""
    suite.reset()
    num_users = test_ids.shape[0]
    for start in range(0, num_users, batch_size):
        users = torch.arange(start, min(start + batch_size, num_users))
        scores = score_fn(users)  # [B, num_items]
        suite.update(scores, target_ids=test_ids[users], exclude_ids=train_ids[users])
    return {name: float(value) for name, value in suite.compute().items()}


def format_row(label: str, loss: str, seconds: str, values: dict) -> str:
    return f"{label:>6} {loss:>8} {seconds:>6} " + " ".join(f"{values[m]:>12.4f}" for m in METRICS)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default 10)")
    parser.add_argument("--users", type=int, default=500, help="number of users (default 500)")
    parser.add_argument("--items", type=int, default=1000, help="number of items (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the model and the sampling")
    parser.add_argument("--dim", type=int, default=32, help="embedding dimension (default 32)")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    parser.add_argument("--weight-decay", type=float, default=1e-3, help="L2 on the batch's embeddings")
    parser.add_argument("--batch-size", type=int, default=512, help="training batch size (default 512)")
    parser.add_argument("--eval-batch-size", type=int, default=256, help="users per evaluation batch")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.users < 1 or args.items < 2:
        parser.error("--epochs and --users must be >= 1 and --items >= 2")
    return args


def main(argv=None) -> dict:
    """Run the example; returns the final metrics as ``{"ndcg@10": float, ...}``."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)  # negatives and shuffling

    per_user = (min(10, args.items), min(40, args.items))
    data = generate_interactions(args.users, args.items, per_user, seed=args.seed)
    train, test = train_test_split_by_time(data, test_fraction=0.2)
    test_ids = padded_item_lists(test)  # [U, T] targets, -1 padded
    train_ids = padded_item_lists(train)  # [U, S] items to exclude from the ranking, -1 padded
    print(f"data: {args.users} users, {args.items} items, {len(train)} train / {len(test)} test interactions")

    suite = tre.RankingMetrics(METRICS)
    popularity = item_popularity(train).float()
    baseline = evaluate(
        lambda users: popularity.expand(users.numel(), -1), suite, test_ids, train_ids, args.eval_batch_size
    )

    model = BPRMF(args.users, args.items, args.dim)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    print(f"{'epoch':>6} {'loss':>8} {'sec':>6} " + " ".join(f"{m:>12}" for m in METRICS))
    print(format_row("pop", "-", "-", baseline))
    metrics = baseline
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        loss = train_epoch(
            model, optimizer, train.user, train.item, args.items, args.batch_size, args.weight_decay, gen
        )
        model.eval()
        metrics = evaluate(model.score_all, suite, test_ids, train_ids, args.eval_batch_size)
        elapsed = time.perf_counter() - start
        print(format_row(str(epoch), f"{loss:.4f}", f"{elapsed:.2f}", metrics), flush=True)

    print("final: " + " ".join(f"{name}={value:.4f}" for name, value in metrics.items()))
    return metrics


if __name__ == "__main__":
    main()
