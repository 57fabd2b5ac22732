"""Sampled evaluation against the exact metric, on the demo's synthetic data and models (issue 35's study).

Run: ``python benchmarks/study_sampled.py`` (``--quick``: fewer users, fewer models). Models of several
qualities (random scores, popularity, the demo's BPR-MF after 1, 3 and 10 epochs) score every item for
every test interaction of the time split; each interaction is one evaluation instance (its test item the
one relevant item, every other item of the catalogue a candidate: n = the catalogue). The exact metric
reads its true rank; the sampled ones rank it against m negatives drawn uniformly with replacement
(:func:`torchrec_eval.sampled.sampler.sample_negatives`), the same draws for every estimator. The scores get
a tiny seeded noise so that no two items tie (popularity ties otherwise).

It prints, for m in (50, 100, 1000) and NDCG@10, Recall@10 and MRR: each model's exact value, the naive
sampled value and each estimate; then, per estimator, the share of (model, metric, m) cells where it is
closer to exact than naive, and the Kendall tau of its order of the models against the exact order.
"""

from __future__ import annotations

import argparse
import itertools

import torch

import torchrec_eval as tre
from torchrec_eval.demo import BPRMF, prepare_data, train_epoch
from torchrec_eval.sampled.rank_metrics import rank_metric
from torchrec_eval.sampled.sampler import sample_negatives

METRICS = [("ndcg", 10), ("recall", 10), ("mrr", None)]
ESTIMATORS = ("naive", "rank_estimate", "bias_variance", "constrained", "em")


def _models(num_users: int, num_items: int, quick: bool) -> dict[str, torch.Tensor]:
    """Model name -> [U, N] scores of every user for every item."""
    data = prepare_data(num_users, num_items, seed=0)
    gen = torch.Generator().manual_seed(0)
    scores = {"random": torch.rand(num_users, num_items, generator=gen),
              "popularity": data.popularity.expand(num_users, num_items).clone()}
    torch.manual_seed(0)  # the embeddings' initial values come from the global generator: the same every run
    model = BPRMF(num_users, num_items, 32)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    epochs = (1, 5) if quick else (1, 3, 10)
    for epoch in range(1, max(epochs) + 1):
        train_epoch(model, optimizer, data.train.user, data.train.item, num_items, 256, 1e-4, gen)
        if epoch in epochs:
            with torch.no_grad():
                scores[f"bprmf@{epoch}"] = model.score_all(torch.arange(num_users))
    noise = torch.rand(num_users, num_items, generator=gen) * 1e-6  # no ties, the same for every model
    return {name: value + noise * value.abs().max().clamp(min=1.0) for name, value in scores.items()} | {
        "test": torch.stack([data.test.user, data.test.item])}


def _kendall_tau(a: list[float], b: list[float]) -> float:
    pairs = list(itertools.combinations(range(len(a)), 2))
    agree = sum(1 if (a[i] - a[j]) * (b[i] - b[j]) > 0 else -1 for i, j in pairs)
    return agree / len(pairs)


def study(num_users: int, num_items: int, ms: tuple[int, ...], quick: bool) -> dict[tuple[str, str, int], dict[str, float]]:
    """(model, metric key, m) -> {"exact": value, estimator: value, ...}."""
    models = _models(num_users, num_items, quick)
    users, items = models.pop("test")
    keys = [family if k is None else f"{family}@{k}" for family, k in METRICS]
    out = {}
    for name, scores in models.items():
        instance_scores = scores[users]  # [I, N]
        positive = instance_scores.gather(1, items.unsqueeze(1))
        ranks = 1 + (instance_scores > positive).sum(1)  # true rank among the n = N items
        exact = {key: float(rank_metric(family, ranks.double(), k, num_items).mean())
                 for (family, k), key in zip(METRICS, keys, strict=True)}
        for m in ms:
            gen = torch.Generator().manual_seed(m)
            negatives = sample_negatives(items.unsqueeze(1), num_items, m, generator=gen)
            preds = torch.cat([positive, instance_scores.gather(1, negatives)], dim=1)
            target = torch.zeros_like(preds, dtype=torch.bool)
            target[:, 0] = True
            estimates = {}
            for estimator in ESTIMATORS:
                metric = tre.SampledMetrics(keys, num_items=num_items, num_negatives=m, estimator=estimator,
                                            validate_args=False)
                metric.update(preds, target)
                estimates[estimator] = {key: float(value) for key, value in metric.compute().items()}
            for key in keys:
                out[(name, key, m)] = {"exact": exact[key], **{e: estimates[e][key] for e in ESTIMATORS}}
    return out


def report(results: dict[tuple[str, str, int], dict[str, float]]) -> str:
    lines = ["model        m     metric      exact    " + "  ".join(f"{e:>13}" for e in ESTIMATORS)]
    for (name, key, m), row in results.items():
        lines.append(f"{name:<12} {m:<5} {key:<10} {row['exact']:8.4f}  "
                     + "  ".join(f"{row[e]:13.4f}" for e in ESTIMATORS))
    lines.append("")
    cells = list(results.values())
    for estimator in ESTIMATORS[1:]:
        closer = sum(abs(row[estimator] - row["exact"]) < abs(row["naive"] - row["exact"]) for row in cells)
        lines.append(f"{estimator:<14} closer to exact than naive in {closer}/{len(cells)} cells "
                     f"({100 * closer / len(cells):.0f}%)")
    lines.append("")
    models = sorted({name for name, _, _ in results})
    for key, m in sorted({(key, m) for _, key, m in results}):
        exact = [results[(name, key, m)]["exact"] for name in models]
        taus = {e: _kendall_tau(exact, [results[(name, key, m)][e] for name in models]) for e in ESTIMATORS}
        lines.append(f"Kendall tau vs exact, {key:<10} m={m:<5} " + "  ".join(f"{e} {t:+.2f}" for e, t in taus.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 users, 500 items, m in (50, 100)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.quick:
        results = study(200, 500, (50, 100), quick=True)
    else:
        results = study(1000, 2000, (50, 100, 1000), quick=False)
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
