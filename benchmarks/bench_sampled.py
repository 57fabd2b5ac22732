"""Sampled evaluation's cost: one ``SampledMetrics`` update (4 metrics) against a bare ``torch.sort`` of the
same [B, 1 + m] scores, and each estimator's fit (at construction for the linear ones, at ``compute`` for EM).

Run: ``python benchmarks/bench_sampled.py`` (``--quick`` for small sizes). Single-threaded CPU by default;
the update cases are measured in alternating rounds on the same data (median of ``--repeats``), so the
ratios are comparable on a busy machine. Goals (issue 35): update within 1.2x the sort; fit under 50 ms
for m = 1000.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

import torchrec_eval as tre

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, add_device_option, device_label, parse_args  # noqa: E402

KEYS = ["ndcg@10", "recall@10", "mrr", "auc"]


def bench_update(queries: int, m: int, repeats: int, device: torch.device) -> list[tuple[str, str, str]]:
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(queries, m + 1, generator=gen).to(device)
    target = torch.zeros(queries, m + 1, dtype=torch.bool, device=device)
    target[:, 0] = True
    checked = tre.SampledMetrics(KEYS, num_items=100 * m, num_negatives=m, estimator="naive").to(device)
    fast = tre.SampledMetrics(KEYS, num_items=100 * m, num_negatives=m, estimator="naive",
                              validate_args=False).to(device)
    cases = {
        "torch.sort(scores) (floor)": lambda: torch.sort(scores, dim=1),
        "update": lambda: checked.update(scores, target),
        "update, validate_args=False": lambda: fast.update(scores, target),
    }
    times = _interleaved(cases, repeats, device)
    floor = times["torch.sort(scores) (floor)"]
    return [(f"{queries} x {m + 1}", name, f"{ms:.3f} ms  {ms / floor:.2f}x") for name, ms in times.items()]


def bench_fit(num_items: int, m: int) -> list[tuple[str, str, str]]:
    rows = []
    histogram_scores = torch.randn(512, m + 1, generator=torch.Generator().manual_seed(1))
    target = torch.zeros(512, m + 1, dtype=torch.bool)
    target[:, 0] = True
    for estimator in ("rank_estimate", "bias_variance", "em"):
        start = time.perf_counter()
        metric = tre.SampledMetrics(KEYS, num_items=num_items, num_negatives=m, estimator=estimator)
        metric.update(histogram_scores, target)
        metric.compute()
        rows.append((f"n={num_items}, m={m}", f"fit: {estimator}", f"{1000 * (time.perf_counter() - start):.1f} ms"))
    return rows


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, as the tests do)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    add_device_option(parser)
    args, device = parse_args(parser, argv)
    torch.set_num_threads(args.threads)
    shapes = [(64, 100)] if args.quick else [(256, 100), (1024, 100), (1024, 1000)]
    rows = [row for queries, m in shapes for row in bench_update(queries, m, 2 if args.quick else args.repeats, device)]
    fits = [(2000, 100)] if args.quick else [(10_000, 100), (10_000, 1000)]
    rows += [row for n, m in fits for row in bench_fit(n, m)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"torch {torch.__version__}, {device_label(device, args.threads)}", ""]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    report = "\n".join(lines)
    print(report)
    return report


if __name__ == "__main__":
    main()
