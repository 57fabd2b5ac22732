"""Sampled evaluation against the exact metric, on the demo's synthetic data or on MovieLens-100K, with the
demo's models (issues 35 and 54).

Run: ``python benchmarks/study_sampled.py`` (``--quick``: fewer users, fewer models; ``--movielens``: RecBole's
MovieLens-100K, ``recbole/dataset_example/ml-100k/ml-100k.inter``, which ``pip install --no-deps recbole``
brings without RecBole's dependencies, or ``--movielens PATH`` for another MovieLens or RecBole file: every
rating an interaction, each user's latest 20% the test interactions). Models of several
qualities (random scores, popularity, the demo's BPR-MF after 1, 3 and 10 epochs) score every item for
every test interaction of the time split; each interaction is one evaluation instance (its test item the
one relevant item, every other item of the catalogue a candidate: n = the catalogue). The exact metric
reads its true rank; the sampled ones rank it against m negatives drawn uniformly with replacement
(:func:`torchrec_eval.sampled.sampler.sample_negatives`), the same draws for every estimator. The scores get
a tiny seeded noise so that no two items tie (popularity ties otherwise).

It prints, for m in (50, 100, 1000) and NDCG@10, Recall@10 and MRR: each model's exact value, the naive
sampled value and each estimate; then, per estimator, the share of (model, metric, m) cells where it is
closer to exact than naive, and the Kendall tau of its order of the models against the exact order.

``--unseen``: each instance's candidates are the items its user did not interact with in training (the test item
among them), as most recommender evaluations rank: a catalogue size per instance, n_q = N - the user's training
items; the exact rank counts those candidates, the negatives are drawn among them, and the estimators take each
instance's size (``num_items=None``: the corrections of each size, the rank estimate; EM needs one catalogue);
m in (50, 100) only.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
from pathlib import Path

import torch

import torchrec_eval as tre
from torchrec_eval.data.movielens import load_movielens
from torchrec_eval.demo import BPRMF, DemoData, prepare_data, split_data, train_epoch
from torchrec_eval.sampled.rank_metrics import rank_metric
from torchrec_eval.sampled.sampler import sample_negatives

METRICS = [("ndcg", 10), ("recall", 10), ("mrr", None)]
ESTIMATORS = ("naive", "rank_estimate", "bias_variance", "constrained", "em")


def recbole_movielens() -> Path | None:
    """RecBole's MovieLens-100K file, or None where RecBole is not installed."""
    spec = importlib.util.find_spec("recbole")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "dataset_example" / "ml-100k" / "ml-100k.inter"
    return path if path.is_file() else None


def _models(data: DemoData, quick: bool) -> dict[str, torch.Tensor]:
    """Model name -> [U, N] scores of every user for every item."""
    num_users, num_items = data.num_users, data.num_items
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


def study(data: DemoData, ms: tuple[int, ...], quick: bool,
          unseen: bool = False) -> dict[tuple[str, str, int], dict[str, float]]:
    """(model, metric key, m) -> {"exact": value, estimator: value, ...}; with ``unseen``, each instance's
    candidates are its user's items not seen in training (see the module)."""
    num_items = data.num_items
    models = _models(data, quick)
    users, items = models.pop("test")
    keys = [family if k is None else f"{family}@{k}" for family, k in METRICS]
    seen = _seen(data) if unseen else torch.zeros(data.num_users, num_items, dtype=torch.bool)
    seen = seen[users] & (torch.arange(num_items) != items.unsqueeze(1))  # [I, N]: never the test item itself
    known = _padded_ids(seen)  # [I, K] (-1: padding)
    sizes = num_items - seen.sum(1)  # n_q: the instance's candidates, its test item included
    estimators = [e for e in ESTIMATORS if not (unseen and e == "em")]
    out = {}
    for name, scores in models.items():
        instance_scores = scores[users].masked_fill(seen, float("-inf"))  # [I, N]: seen items out
        positive = instance_scores.gather(1, items.unsqueeze(1))
        ranks = 1 + (instance_scores > positive).sum(1)  # true rank among the instance's candidates
        exact = {key: float(rank_metric(family, ranks.double(), k, sizes.double()).mean())
                 for (family, k), key in zip(METRICS, keys, strict=True)}
        for m in ms:
            gen = torch.Generator().manual_seed(m)
            negatives = sample_negatives(torch.cat([items.unsqueeze(1), known], 1), num_items, m, generator=gen)
            preds = torch.cat([positive, instance_scores.gather(1, negatives)], dim=1)
            target = torch.zeros_like(preds, dtype=torch.bool)
            target[:, 0] = True
            estimates = {}
            for estimator in estimators:
                metric = tre.SampledMetrics(keys, num_items=None if unseen else num_items, num_negatives=m,
                                            estimator=estimator, validate_args=False)
                metric.update(preds, target, **({"num_items": sizes} if unseen else {}))
                estimates[estimator] = {key: float(value) for key, value in metric.compute().items()}
            for key in keys:
                out[(name, key, m)] = {"exact": exact[key], **{e: estimates[e][key] for e in estimators}}
    return out


def _seen(data: DemoData) -> torch.Tensor:
    """[U, N] bool: the items each user interacted with in training."""
    seen = torch.zeros(data.num_users, data.num_items, dtype=torch.bool)
    seen[data.train.user, data.train.item] = True
    return seen


def _padded_ids(flags: torch.Tensor) -> torch.Tensor:
    """[R, K] the column ids of each row's True flags, -1 after them (K: the most of any row, at least 1)."""
    width = max(int(flags.sum(1).max()) if flags.numel() else 0, 1)
    order = torch.sort(flags.to(torch.int8), dim=1, descending=True, stable=True).indices[:, :width]
    return torch.where(flags.gather(1, order), order, -1)


def report(results: dict[tuple[str, str, int], dict[str, float]]) -> str:
    estimators = [e for e in ESTIMATORS if e in next(iter(results.values()))]
    lines = ["model        m     metric      exact    " + "  ".join(f"{e:>13}" for e in estimators)]
    for (name, key, m), row in results.items():
        lines.append(f"{name:<12} {m:<5} {key:<10} {row['exact']:8.4f}  "
                     + "  ".join(f"{row[e]:13.4f}" for e in estimators))
    lines.append("")
    cells = list(results.values())
    for estimator in estimators[1:]:
        closer = sum(abs(row[estimator] - row["exact"]) < abs(row["naive"] - row["exact"]) for row in cells)
        lines.append(f"{estimator:<14} closer to exact than naive in {closer}/{len(cells)} cells "
                     f"({100 * closer / len(cells):.0f}%)")
    lines.append("")
    models = sorted({name for name, _, _ in results})
    for key, m in sorted({(key, m) for _, key, m in results}):
        exact = [results[(name, key, m)]["exact"] for name in models]
        taus = {e: _kendall_tau(exact, [results[(name, key, m)][e] for name in models]) for e in estimators}
        lines.append(f"Kendall tau vs exact, {key:<10} m={m:<5} " + "  ".join(f"{e} {t:+.2f}" for e, t in taus.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 users, 500 items (synthetic), m in (50, 100)")
    parser.add_argument("--movielens", nargs="?", const="recbole", metavar="PATH",
                        help="MovieLens-100K from RecBole's wheel (no PATH), or a MovieLens or RecBole file")
    parser.add_argument("--unseen", action="store_true",
                        help="each instance's candidates: its user's items not seen in training (a size per query)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    # (with --unseen, m = 1000 would exceed the unseen items of the heaviest users: n_q must be at least m + 1)
    ms = (50, 100) if args.quick or args.unseen else (50, 100, 1000)
    if args.movielens is None:
        data = prepare_data(200, 500, seed=0) if args.quick else prepare_data(1000, 2000, seed=0)
        source = "synthetic (the demo's data)"
    else:
        path = recbole_movielens() if args.movielens == "recbole" else Path(args.movielens)
        if path is None:
            parser.error("--movielens: RecBole is not installed; `pip install --no-deps recbole` brings its "
                         "MovieLens-100K (or give a PATH)")
        data = split_data(load_movielens(path))
        source = f"{path.name}: {data.num_users} users, {data.num_items} items, {len(data.test)} test interactions"
    print(source + (", candidates: each user's unseen items" if args.unseen else ""))
    print(report(study(data, ms, quick=args.quick, unseen=args.unseen)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
