"""Is the trained model really better? The demo's models compared with significance tests, in one pass.

Trains the demo's BPR matrix factorisation on its synthetic data (two checkpoints: after 1 epoch and after
``--epochs``), then scores every user once per model and feeds all four models (the two checkpoints, the
popularity baseline, random scores) to one ``ModelComparison``: each model's NDCG@10, Recall@20 and MRR@10,
and for every pair the difference, its effect size and the Holm-adjusted p-value of Fisher's randomization
test; printed as ranx's comparison table.

Run: ``python examples/compare_models.py`` (``--users``, ``--items``, ``--epochs``, ``--test``, ``--format``).
"""

from __future__ import annotations

import argparse
import copy

import torch

from torchrec_eval import ModelComparison
from torchrec_eval.demo import BPRMF, prepare_data, train_epoch

METRICS = ["ndcg@10", "recall@20", "mrr@10"]


def trained_checkpoints(data, epochs: int, seed: int) -> dict[str, BPRMF]:
    """The demo's model after its first epoch and after ``epochs``."""
    torch.manual_seed(seed)
    model = BPRMF(data.num_users, data.num_items, dim=32)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(seed)
    checkpoints = {}
    for epoch in range(1, epochs + 1):
        train_epoch(model, optimizer, data.train.user, data.train.item, data.num_items, batch_size=1024,
                    weight_decay=1e-3, generator=generator)
        if epoch in (1, epochs):
            checkpoints[f"bpr_{epoch}_epoch{'s' if epoch > 1 else ''}"] = copy.deepcopy(model).eval()
    return checkpoints


def compare(users: int = 600, items: int = 800, epochs: int = 15, test: str = "fisher", seed: int = 0,
            batch_size: int = 200) -> ModelComparison:
    data = prepare_data(users, items, seed=seed)
    checkpoints = trained_checkpoints(data, epochs, seed)
    random = torch.Generator().manual_seed(seed + 1)
    scorers = {**{name: model.score_all for name, model in checkpoints.items()},
               "popularity": lambda u: data.popularity.expand(len(u), -1),
               "random": lambda u: torch.rand(len(u), data.num_items, generator=random)}
    comparison = ModelComparison(METRICS, models=list(scorers), test=test, replicates=5_000, correction="holm")
    with torch.no_grad():
        for start in range(0, data.num_users, batch_size):
            rows = torch.arange(start, min(start + batch_size, data.num_users))
            comparison.update([score(rows) for score in scorers.values()], target_ids=data.test_ids[rows],
                              exclude_ids=data.train_ids[rows], query_ids=rows)
    return comparison


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=600)
    parser.add_argument("--items", type=int, default=800)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--test", choices=("student", "fisher", "bootstrap", "tukey"), default="fisher")
    parser.add_argument("--format", choices=("text", "markdown", "latex"), default="text")
    args = parser.parse_args()
    torch.set_num_threads(1)
    report = compare(args.users, args.items, args.epochs, args.test).report()
    print({"text": str(report), "markdown": report.to_markdown(), "latex": report.to_latex()}[args.format])


if __name__ == "__main__":
    main()
