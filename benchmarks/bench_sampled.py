"""Sampled evaluation's cost: one ``SampledMetrics`` update (4 metrics) against a bare ``torch.sort`` of the
same [B, 1 + m] scores, and each estimator's fit (at construction for the linear ones, at ``compute`` for EM).

Run: ``python benchmarks/bench_sampled.py`` (``--quick`` for small sizes). Single-threaded CPU by default;
the update cases are measured in alternating rounds on the same data (median of ``--repeats``), so the
ratios are comparable on a busy machine; ``peak mem`` is each case's peak memory growth as a multiple of
the scores' bytes (the sort's own values and indices included), and a fit's ``peak`` its peak memory growth
(``bench_peers.peak_memory``, the least of three runs for the update cases). A full run measures every
time first, then fixes glibc's mmap threshold at 128 KiB for the memory runs: big tensors are then mapped
and unmapped, so the resident set tracks them (with the adaptive threshold a freed 16 MB block stays in
the heap and the next run's peak reads low).
Goals (issue 35): update within 1.2x the sort; fit under 50 ms for m = 1000.
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

import torchrec_eval as tre
from torchrec_eval.sampled import estimators, rank_axis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, add_device_option, device_label, parse_args  # noqa: E402
from bench_peers import least_peak, peak_memory  # noqa: E402

KEYS = ["ndcg@10", "recall@10", "mrr", "auc"]


Cases = dict[str, Callable[[], object]]


def update_cases(queries: int, m: int, device: torch.device) -> tuple[Cases, int]:
    """The floor and the two updates on the same [queries, m + 1] scores, and the scores' bytes."""
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(queries, m + 1, generator=gen).to(device)
    target = torch.zeros(queries, m + 1, dtype=torch.bool, device=device)
    target[:, 0] = True
    checked = tre.SampledMetrics(KEYS, num_items=100 * m, num_negatives=m, estimator="naive").to(device)
    fast = tre.SampledMetrics(
        KEYS, num_items=100 * m, num_negatives=m, estimator="naive", validate_args=False
    ).to(device)
    cases: Cases = {
        "torch.sort(scores) (floor)": lambda: torch.sort(scores, dim=1),
        "update": lambda: checked.update(scores, target),
        "update, validate_args=False": lambda: fast.update(scores, target),
    }
    return cases, scores.numel() * scores.element_size()


def fit_cases(num_items: int, m: int) -> Cases:
    """Each estimator's whole life on one histogram: construction, one update, compute."""
    histogram_scores = torch.randn(512, m + 1, generator=torch.Generator().manual_seed(1))
    target = torch.zeros(512, m + 1, dtype=torch.bool)
    target[:, 0] = True

    def fit(estimator: str) -> None:
        estimators._gram.cache_clear()  # a first fit in the process: nothing cached for this n and m
        rank_axis.rank_axis.cache_clear()
        metric = tre.SampledMetrics(KEYS, num_items=num_items, num_negatives=m, estimator=estimator)
        metric.update(histogram_scores, target)
        metric.compute()

    return {f"fit: {name}": partial(fit, name) for name in ("rank_estimate", "bias_variance", "em")}


def fix_mmap_threshold() -> None:
    """glibc's M_MMAP_THRESHOLD fixed at 128 KiB for the rest of the process (see the module's docstring)."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 17)  # -3: M_MMAP_THRESHOLD
    except OSError as error:
        print(f"note: mmap threshold not fixed ({error}); CPU peaks of big cases may read low", file=sys.stderr)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, as the tests do)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    add_device_option(parser)
    args, device = parse_args(parser, argv)
    torch.set_num_threads(args.threads)
    shapes = [(64, 100)] if args.quick else [(256, 100), (1024, 100), (4096, 1000)]
    updates = {f"{queries} x {m + 1}": update_cases(queries, m, device) for queries, m in shapes}
    fits = {
        f"n={n}, m={m}": fit_cases(n, m)
        for n, m in ([(2000, 100)] if args.quick else [(10_000, 100), (10_000, 1000)])
    }
    # Times first, with the allocator users have.
    times = {
        shape: _interleaved(cases, 2 if args.quick else args.repeats, device)
        for shape, (cases, _) in updates.items()
    }
    fit_ms = {}
    for shape, cases in fits.items():
        for name, fit in cases.items():
            start = time.perf_counter()
            fit()
            fit_ms[shape, name] = 1000 * (time.perf_counter() - start)
    if not args.quick and device.type == "cpu":  # a smoke run leaves the test process's allocator alone
        fix_mmap_threshold()
    rows = []
    for shape, (cases, scores_bytes) in updates.items():
        floor = times[shape]["torch.sort(scores) (floor)"]
        for name, ms in times[shape].items():
            peak = least_peak(cases[name], device)
            memory = "n/a" if peak is None else f"{peak / scores_bytes:.2f}x the scores"
            rows.append((shape, name, f"{ms:.3f} ms  {ms / floor:.2f}x  peak mem {memory}"))
    for shape, cases in fits.items():
        for name, fit in cases.items():
            peak = peak_memory(fit)
            memory = "n/a" if peak is None else f"peak {peak / 2**20:.0f} MiB"
            rows.append((shape, name, f"{fit_ms[shape, name]:.1f} ms  {memory}"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"torch {torch.__version__}, {device_label(device, args.threads)}", ""]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    report = "\n".join(lines)
    print(report)
    return report


if __name__ == "__main__":
    main()
