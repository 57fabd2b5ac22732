"""Pointwise metrics benchmark: update cost, memory and binned-AUC error, against the loss and torchmetrics.

Run: ``python benchmarks/bench_pointwise.py`` (``--quick`` for small sizes). One batch of B samples of a
2-task CTR model per update (probabilities from a Beta(1, 6) distribution, labels drawn from them,
random weights). Timing: median of ``--repeats`` interleaved rounds, single-threaded CPU by default;
the floor is the model's own weighted ``binary_cross_entropy`` over the batch. The accuracy table
compares the binned AUC with the exact one (``sklearn.metrics.roc_auc_score``) over U updates, with the
bound that ``BinnedAUC.error_bound()`` reports.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from sklearn.metrics import roc_auc_score
from torch.nn import functional
from torchmetrics.classification import BinaryAUROC

import torchrec_eval as tre

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, _table  # noqa: E402  (interleaved median timing, shared by the benchmarks)

TASKS = ["click", "buy"]
SUMS = ["ne", "log_loss", "calibration", "ctr"]


def _data(samples: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    probs = torch.distributions.Beta(1.0, 6.0).sample((samples, len(TASKS))).clamp(1e-6, 1 - 1e-6)
    labels = (torch.rand(samples, len(TASKS), generator=generator) < probs).float()
    return probs, labels, torch.rand(samples, generator=generator) + 0.5


def _state_bytes(metric: torch.nn.Module) -> int:
    states = metric.metric_state.values()
    return sum(t.numel() * t.element_size() for s in states for t in (s if isinstance(s, list) else [s]))


def bench_updates(samples: int, updates: int, repeats: int, bins: int) -> str:
    probs, labels, weights = _data(samples, 0)
    both = weights.unsqueeze(1).expand(-1, len(TASKS))
    metrics = {
        f"PointwiseMetrics({'+'.join(SUMS)})": tre.PointwiseMetrics(SUMS, tasks=TASKS),
        f"  + binned auc ({bins} bins)": tre.PointwiseMetrics([*SUMS, "auc"], tasks=TASKS,
                                                                options={"auc": {"bins": bins}}),
        "  the same, validate_args=False": tre.PointwiseMetrics([*SUMS, "auc"], tasks=TASKS, validate_args=False,
                                                                options={"auc": {"bins": bins}}),
        "  the same, Windowed(window=100)": tre.Windowed(
            tre.PointwiseMetrics([*SUMS, "auc"], tasks=TASKS, options={"auc": {"bins": bins}}), window=100),
        "BinaryAUC (exact, stores samples)": tre.BinaryAUC(tasks=TASKS),
    }
    uncached = {"compute_with_cache": False}  # every compute is measured, not torchmetrics' cached value
    peers = {f"torchmetrics BinaryAUROC(thresholds={bins}), per task":
             [BinaryAUROC(thresholds=bins, **uncached) for _ in TASKS],
             "torchmetrics BinaryAUROC(thresholds=None), per task": [BinaryAUROC(**uncached) for _ in TASKS]}
    cases = {"floor: weighted binary_cross_entropy": lambda: functional.binary_cross_entropy(probs, labels, both)}
    for name, metric in metrics.items():
        cases[name] = lambda metric=metric: metric.update(probs, labels, sample_weight=weights)
    for name, pair in peers.items():  # torchmetrics' AUROC takes no sample weights
        cases[name] = lambda pair=pair: [one.update(probs[:, i], labels[:, i].long()) for i, one in enumerate(pair)]
    times = _interleaved(cases, repeats)
    for metric in metrics.values():  # memory after `updates` updates
        metric.reset()
        for _ in range(updates):
            metric.update(probs, labels, sample_weight=weights)
    for pair in peers.values():
        for i, one in enumerate(pair):
            one.reset()
            for _ in range(updates):
                one.update(probs[:, i], labels[:, i].long())
    memory = {name: _state_bytes(metric) for name, metric in metrics.items()}
    memory |= {name: sum(_state_bytes(one) for one in pair) for name, pair in peers.items()}
    computes = {name: (lambda metric=metric: metric.compute()) for name, metric in metrics.items()}
    computes |= {name: (lambda pair=pair: [one.compute() for one in pair]) for name, pair in peers.items()}
    compute_times = _interleaved(computes, repeats)
    floor = times["floor: weighted binary_cross_entropy"]
    rows = [(name, f"{ms:.2f}", f"{ms / floor:.1f}x", _size(memory[name]) if name in memory else "-",
             f"{compute_times[name]:.2f}" if name in compute_times else "-") for name, ms in times.items()]
    title = (f"one update: {samples} samples x {len(TASKS)} tasks; memory and compute after {updates} updates "
             "(torchmetrics takes no weights)")
    return _table(title, rows, ("case", "update ms", "vs floor", "memory", "compute ms"))


def _size(count: int) -> str:
    return f"{count} B" if count < 1024 else f"{count / 1024:.0f} KiB" if count < 1024**2 else f"{count / 1024**2:.1f} MiB"


def bench_accuracy(samples: int, updates: int) -> str:
    probs, labels, weights = _data(samples * updates, 1)
    rows = []
    for bins in (100, 1000, 10_000):
        metric = tre.BinnedAUC(bins=bins, tasks=TASKS)
        for chunk in range(updates):
            part = slice(chunk * samples, (chunk + 1) * samples)
            metric.update(probs[part], labels[part], sample_weight=weights[part])
        values, bounds = metric.compute(), metric.error_bound()
        for i, task in enumerate(TASKS):
            exact = roc_auc_score(labels[:, i], probs[:, i], sample_weight=weights)
            error = abs(values[f"{task}/auc"].item() - exact)
            rows.append((str(bins), task, f"{exact:.6f}", f"{error:.2e}", f"{bounds[f'{task}/auc'].item():.2e}"))
    title = f"binned AUC vs exact (sklearn) over {samples * updates} weighted samples"
    return _table(title, rows, ("bins", "task", "exact AUC", "|binned - exact|", "error_bound()"))


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, as the tests do)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    samples, updates, repeats = (512, 4, 2) if args.quick else (4096, 20, args.repeats)
    setup = f"torch {torch.__version__}, {args.threads} thread(s), median of {repeats} interleaved rounds"
    report = "\n\n".join([setup, bench_updates(samples, updates, repeats, bins=10_000),
                          bench_accuracy(samples, updates)])
    print(report)
    return report


if __name__ == "__main__":
    main()
