"""Train a matrix-factorisation recommender in a plain PyTorch loop and evaluate it after every epoch.

The data is the synthetic implicit-feedback set of :mod:`torchrec_eval.data.interactions` (latent tastes plus a
long tail of item popularity), split per user by time: each user's latest 20% of interactions are the
test targets, and the items they saw in training are excluded from their ranking.

The model is BPR matrix factorisation (Rendle et al., 2009): a user and an item embedding plus an item
bias, trained so that a user's observed item scores above a uniformly sampled one. After each epoch all
users are scored against all items, ``scores = user_emb @ item_emb.T + item_bias``, in batches of
users, and one :class:`torchrec_eval.RankingMetrics` suite accumulates six metrics with one top-k per
batch. The first row of the table is the popularity baseline (rank items by training count).

The model, its training epoch and the evaluation loop live in :mod:`torchrec_eval.demo` (shared with
``torchrec-eval demo``); the evaluation is, in essence::

    suite = tre.RankingMetrics(["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@10"])
    for users in batches_of_user_ids:
        suite.update(model.score_all(users), target_ids=test_ids[users], exclude_ids=train_ids[users])
    results = suite.compute()  # {"ndcg@10": tensor(...), ...}

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

try:
    import torchrec_eval as tre
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torchrec_eval as tre

# the model, its training epoch and the evaluation loop are shared with `torchrec-eval demo`
from torchrec_eval.demo import BPRMF, METRICS, evaluate, format_header, format_row, prepare_data, train_epoch


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

    data = prepare_data(args.users, args.items, seed=args.seed)  # per-user time split of the synthetic data
    test_ids, train_ids = data.test_ids, data.train_ids  # [U, T] targets and [U, S] seen items, -1 padded
    print(f"data: {args.users} users, {args.items} items, "
          f"{len(data.train)} train / {len(data.test)} test interactions")

    suite = tre.RankingMetrics(METRICS)
    def popularity(users: torch.Tensor) -> torch.Tensor:  # the baseline: rank items by training count
        return data.popularity.expand(users.numel(), -1)

    baseline = evaluate(popularity, suite, test_ids, train_ids, args.eval_batch_size)

    model = BPRMF(args.users, args.items, args.dim)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    print(format_header(METRICS))
    print(format_row("pop", "-", "-", baseline))
    metrics = baseline
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        loss = train_epoch(model, optimizer, data.train.user, data.train.item, args.items, args.batch_size,
                           args.weight_decay, gen)
        model.eval()
        metrics = evaluate(model.score_all, suite, test_ids, train_ids, args.eval_batch_size)
        elapsed = time.perf_counter() - start
        print(format_row(str(epoch), f"{loss:.4f}", f"{elapsed:.2f}", metrics), flush=True)

    print("final: " + " ".join(f"{name}={value:.4f}" for name, value in metrics.items()))
    return metrics


if __name__ == "__main__":
    main()
