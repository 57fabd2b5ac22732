"""Sampled evaluation at the catalogue sizes of real recommenders: each estimator's whole life (construction,
one update of 256 queries, ``compute()``) and its ``bootstrap_interval`` (200 replicates), from n = 10^3 to
10^10 items, with its peak memory growth.

Run: ``python benchmarks/bench_sampled_scale.py`` (``--quick`` for a smoke run; ``--sizes``, ``--negatives``
and ``--estimators`` to choose). Each case is the first fit of its (n, m) in the process (the rank axis's and
the Gram matrix's caches cleared), after one warm-up fit that takes the one-time imports. ``peak`` is the
peak memory growth of the same case run again (``bench_peers.peak_memory``), beyond the 256 x (m + 1)
scores. The ratio column is the case's time over the n = 10^3 case of the same estimator and m: a cost
that does not grow with n reads about 1x down each column.
Goals (issue 54): at most 50 ms and 50 MB for m = 1000 at any n, EM included, on a 2-core VM.

The second table is K&R's corrections with a catalogue size per query (``num_items=None``): 256
queries whose sizes are all different, log-uniform in [n / 10, n]; the first update builds the interpolation
panels of those sizes (:mod:`torchrec_eval.sampled.size_corrections`), a second batch of other sizes in the same
range reuses them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

import torchrec_eval as tre
from torchrec_eval.sampled import estimators, rank_axis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _table  # noqa: E402
from bench_peers import peak_memory  # noqa: E402

KEYS = ["ndcg@10", "recall@10", "mrr", "auc"]
ESTIMATORS = ["naive", "rank_estimate", "bias_variance", "constrained", "em"]


def _clear_caches() -> None:
    estimators._gram.cache_clear()
    rank_axis.rank_axis.cache_clear()


def _data(m: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(256, m + 1, generator=gen)
    scores[:, 0] += 2.0  # a model that ranks its held-out items well
    target = torch.zeros(256, m + 1, dtype=torch.bool)
    target[:, 0] = True
    return scores, target


def life(n: int, m: int, estimator: str, scores: torch.Tensor, target: torch.Tensor) -> tre.SampledMetrics:
    """Construction, one update and ``compute()``: what a validation epoch costs beyond the model."""
    metric = tre.SampledMetrics(KEYS, num_items=n, num_negatives=m, estimator=estimator)
    metric.update(scores, target)
    metric.compute()
    return metric


def sizes_per_query(n: int, m: int, seed: int) -> torch.Tensor:
    """256 catalogue sizes, log-uniform in [max(n / 10, m + 1), n]: every query its own."""
    gen = torch.Generator().manual_seed(seed)
    low = max(n / 10, m + 1)
    return torch.exp(torch.empty(256, dtype=torch.float64).uniform_(float(torch.tensor(low).log()),
                                                                    float(torch.tensor(float(n)).log()),
                                                                    generator=gen)).long()


def size_per_query_rows(sizes: list[int], m: int, estimator: str, scores: torch.Tensor,
                        target: torch.Tensor) -> list[tuple[str, ...]]:
    """(range, m, estimator, first update + compute, a second batch of other sizes, peak) of the correction of
    each query's own size."""
    rows = []
    for n in sizes:
        if n < 10 * (m + 1):
            continue
        metric = tre.SampledMetrics(KEYS, num_items=None, num_negatives=m, estimator=estimator)

        def first() -> None:
            metric.update(scores, target, num_items=sizes_per_query(n, m, 0))  # noqa: B023
            metric.compute()  # noqa: B023

        fit = timed(first)
        again = timed(lambda: (metric.update(scores, target, num_items=sizes_per_query(n, m, 1)),  # noqa: B023
                               metric.compute()))  # noqa: B023
        peak = peak_memory(lambda: tre.SampledMetrics(  # noqa: B023
            KEYS, num_items=None, num_negatives=m, estimator=estimator).update(  # noqa: B023
            scores, target, num_items=sizes_per_query(n, m, 0)))  # noqa: B023
        memory = "n/a" if peak is None else f"{peak / 2**20:.1f} MiB"
        rows.append((f"{max(n // 10, m + 1):.0e}..{n:.0e}", str(m), estimator, f"{fit:.1f} ms", f"{again:.1f} ms",
                     memory))
    return rows


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and 20 bootstrap replicates (a smoke run, as the tests do)")
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e3, 1e4, 1e5, 1e6, 1e9, 1e10])
    parser.add_argument("--negatives", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--estimators", nargs="+", default=ESTIMATORS, choices=ESTIMATORS)
    parser.add_argument("--tables", choices=["both", "fixed", "per-query"], default="both",
                        help="one catalogue size for every query, a size per query, or both")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in ([1e3, 1e6] if args.quick else args.sizes)]
    negatives = [20] if args.quick else args.negatives
    replicates = 20 if args.quick else 200
    scores, target = _data(negatives[0])
    life(10 * negatives[0], negatives[0], "em", scores, target)  # the one-time imports and kernels
    rows: list[tuple[str, ...]] = []
    for m in negatives if args.tables != "per-query" else []:
        scores, target = _data(m)
        for estimator in args.estimators:
            first = None
            for n in sizes:
                if m > n - 1:
                    continue
                _clear_caches()
                fit = timed(lambda: life(n, m, estimator, scores, target))  # noqa: B023
                metric = life(n, m, estimator, scores, target)
                _clear_caches()
                boot = timed(lambda: metric.bootstrap_interval(replicates=replicates))  # noqa: B023
                _clear_caches()
                peak = peak_memory(lambda: life(n, m, estimator, scores, target))  # noqa: B023
                first = first or fit
                memory = "n/a" if peak is None else f"{peak / 2**20:.1f} MiB"
                rows.append((f"{n:.0e}", str(m), estimator, f"{fit:.1f} ms", f"{fit / first:.2f}x",
                             f"{boot:.1f} ms", memory))
    report = f"torch {torch.__version__}, CPU, {torch.get_num_threads()} threads"
    if rows:
        report = _table(report, rows, ("n", "m", "estimator", "fit", "vs smallest n", "bootstrap", "peak"))
    corrections = [name for name in ("bias_variance", "constrained") if name in args.estimators
                   and args.tables != "fixed"]
    ranges = sizes[-1:] if args.quick else sizes  # (a smoke run: the largest range)
    per_query = [row for m in negatives for name in corrections for row in size_per_query_rows(ranges, m, name, *_data(m))]
    if per_query:
        report += "\n\n" + _table("a catalogue size per query (256 different sizes a batch)", per_query,
                                   ("sizes", "m", "estimator", "first batch", "second batch", "peak"))
    print(report)
    return report


if __name__ == "__main__":
    main()
