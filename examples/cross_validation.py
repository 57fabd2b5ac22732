"""Compare two recommenders by 5-fold cross-validation by user: popularity vs BPR matrix factorisation.

The data is the synthetic implicit-feedback set of :mod:`torchrec_eval.data.interactions`. The users are dealt
into 5 folds (:func:`torchrec_eval.data.splits.user_kfold`); in each fold the held-out users' latest 20% of
interactions are the test targets, and everything else (the other users, and the held-out users'
earlier history) is the training set. :func:`torchrec_eval.data.splits.cross_validate` calls each model's
``fit_and_score`` once per fold, ranks all items for the held-out users with their training items
excluded, and evaluates one :class:`torchrec_eval.RankingMetrics` suite.

The two models see the same folds (same seed), so besides each model's mean, standard deviation and
95% Student-t interval over folds, the script reports the paired difference (MF - popularity) per
metric with its own interval, which is the fair way to compare them.

Run it (about a minute on a laptop CPU at the defaults)::

    python examples/cross_validation.py
    python examples/cross_validation.py --folds 10 --epochs 15 --users 2000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

try:
    import torchrec_eval  # noqa: F401
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# the BPR-MF model and its epoch loop are the demo's (examples/train_loop.py uses them too)
from torchrec_eval.data import (  # noqa: E402
    CrossValidationResult,
    Interactions,
    cross_validate,
    generate_interactions,
    item_popularity,
)
from torchrec_eval.data.splits import mean_confidence_interval  # noqa: E402
from torchrec_eval.demo import BPRMF, train_epoch  # noqa: E402

METRICS = ["ndcg@10", "recall@20", "map@10", "mrr@10", "hitrate@10"]


def popularity(train: Interactions, users: torch.Tensor) -> torch.Tensor:
    """The baseline: every user gets the items ranked by their training count."""
    return item_popularity(train).float().expand(users.numel(), -1)


def make_mf(args: argparse.Namespace):
    """A ``fit_and_score`` that trains BPR-MF on the fold's training part and returns its scorer."""
    fold = {"index": 0}

    def fit_and_score(train: Interactions, users: torch.Tensor):
        seed = args.seed * 1000 + fold["index"]  # a distinct, reproducible seed per fold
        fold["index"] += 1
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        model = BPRMF(train.num_users, train.num_items, args.dim)
        optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
        for _ in range(args.epochs):
            train_epoch(model, optimizer, train.user, train.item, train.num_items, args.batch_size,
                        args.weight_decay, gen)
        model.eval()

        @torch.no_grad()
        def score(batch_users: torch.Tensor) -> torch.Tensor:
            return model.score_all(batch_users)

        return score

    return fit_and_score


def print_folds(label: str, result: CrossValidationResult) -> None:
    print(f"\n{label}: per-fold values ({result.n_folds} folds, users per fold {result.num_users.tolist()})")
    for name, values in result.values.items():
        print(f"  {name:<12} " + " ".join(f"{v:.4f}" for v in values.tolist()))
    print("\n".join("  " + line for line in result.summary().splitlines()))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5, help="number of user folds (default 5)")
    parser.add_argument("--users", type=int, default=500, help="number of users (default 500)")
    parser.add_argument("--items", type=int, default=1000, help="number of items (default 1000)")
    parser.add_argument("--epochs", type=int, default=10, help="BPR-MF training epochs per fold (default 10)")
    parser.add_argument("--dim", type=int, default=32, help="embedding dimension (default 32)")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    parser.add_argument("--weight-decay", type=float, default=1e-3, help="L2 on the batch's embeddings")
    parser.add_argument("--batch-size", type=int, default=512, help="training batch size (default 512)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the folds and the models")
    args = parser.parse_args(argv)
    if args.folds < 2 or args.users < args.folds or args.items < 2 or args.epochs < 1:
        parser.error("need --folds >= 2, --users >= --folds, --items >= 2 and --epochs >= 1")
    return args


def main(argv=None) -> dict[str, CrossValidationResult]:
    """Run the comparison; returns ``{"pop": result, "mf": result}``."""
    args = parse_args(argv)
    per_user = (min(10, args.items), min(40, args.items))
    data = generate_interactions(args.users, args.items, per_user, seed=args.seed)
    print(f"data: {args.users} users, {args.items} items, {len(data)} interactions; "
          f"{args.folds}-fold cross-validation by user, latest 20% of a held-out user's items tested")

    begin = time.perf_counter()
    results = {}
    for label, fit_and_score in (("pop", popularity), ("mf", make_mf(args))):
        start = time.perf_counter()
        results[label] = cross_validate(args.folds, fit_and_score, data, METRICS, seed=args.seed)
        print_folds(f"{label} ({time.perf_counter() - start:.1f} s)", results[label])

    print("\npaired difference mf - pop over the same folds:")
    print(f"  {'metric':<12} {'mean':>8}  95% CI              folds where mf wins")
    for name in METRICS:
        diff = results["mf"].values[name] - results["pop"].values[name]
        mean, _, low, high = mean_confidence_interval(diff, 0.95)
        wins = int((diff > 0).sum())
        print(f"  {name:<12} {float(mean):>+8.4f}  [{float(low):+.4f}, {float(high):+.4f}]  "
              f"{wins}/{diff.numel()}")
    print(f"\ntotal time: {time.perf_counter() - begin:.1f} s")
    return results


if __name__ == "__main__":
    main()
