"""Scaling: time and memory as the number of queries and the catalogue grow, ours vs the peers, and a plot.

Run: ``python benchmarks/bench_scaling.py`` (``--quick`` for small sizes, seconds; ``--plot PATH`` for the
PNG, default ``benchmarks/scaling.png``). Single-threaded CPU by default; at every point all rows are
measured in this one run on the same data, interleaved, median of ``--repeats`` rounds.

* Queries x {1, 10, 100} (default 100, 1,000 and 10,000 queries of 1,000 candidates, in batches of
  100): the 6-metric suite @10 end to end (update of every batch + compute).
* Catalogue x {1, 10, 100} (default 200 queries of 1,000, 10,000 and 100,000 candidates, batches of 100).

Rows: a bare ``torch.topk(scores, 10)`` of every batch (the floor), torchrec_eval ``RankingMetrics``,
torchmetrics.retrieval (flat form with ``indexes``) and torcheval's ``retrieval_precision`` (precision@10
only; the caller keeps the per-query values). ranx is left out here: its input is a Python dict per
(query, item), whose conversion dominates and grows with both axes (see bench_peers.py for its cost at
one size). Columns as in bench_peers.py: time, ratio to the floor, peak memory during the run (resident
set growth, CPU; CUDA allocator peak on a GPU), state bytes after the last update.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _table  # noqa: E402
from bench_peers import (  # noqa: E402
    SUITE,
    Case,
    _mb,
    _means,
    flat_update,
    floor_case,
    list_case,
    machine,
    make_data,
    measure,
    metric_case,
    torchmetrics_suite,
    tre,
)

OURS, PEER = "torchrec_eval RankingMetrics", "torchmetrics.retrieval"


def point_cases(queries: int, items: int, batch: int, device: torch.device, skip: set[str]) -> list[Case]:
    scores, target = make_data(queries, items, 0.02, device, seed=queries + items)
    chunks = list(zip(scores.split(batch), target.split(batch), strict=True))
    cases = [
        floor_case(chunks, 10, "torch.topk (floor)"),
        metric_case(
            OURS, "6", tre.RankingMetrics(SUITE), chunks, lambda metric, start, b: metric.update(b[0], b[1])
        ),
        metric_case(PEER, "6", torchmetrics_suite(SUITE), chunks, flat_update),
    ]
    if "torcheval" not in skip:
        from torcheval.metrics.functional import retrieval_precision

        cases.append(
            list_case(
                "torcheval retrieval_precision",
                "1",
                chunks,
                lambda b: {
                    "precision@10": retrieval_precision(b[0], b[1].float(), k=10, num_tasks=len(b[0]))
                },
                _means,
            )
        )
    return cases


def sweep(
    axis: str, points: list[tuple[int, int]], batch: int, repeats: int, device: torch.device, skip: set[str]
) -> tuple[str, list[dict[str, Any]]]:
    """Measure every (queries, items) point; returns the table and the flat records (one per row)."""
    records = []
    for queries, items in points:
        for result in measure(point_cases(queries, items, batch, device, skip), repeats, device):
            records.append({**result, "queries": queries, "items": items})
    key = "queries" if axis == "queries" else "items"
    base = {(r["case"]): r["ms"] for r in records if r[key] == records[0][key]}
    rows = [
        (
            f"{r['queries']:,}",
            f"{r['items']:,}",
            r["case"],
            f"{r['ms']:.1f}",
            f"{r['ratio']:.2f}x",
            f"{r['ms'] / base[r['case']]:.1f}x",
            _mb(r["peak"]),
            "-" if r["state"] is None else f"{r['state']:,}",
        )
        for r in records
    ]
    header = ("queries", "items", "case", "ms", "vs floor", f"vs first {key}", "peak mem", "state bytes")
    title = (
        f"Scaling with the number of {'queries' if axis == 'queries' else 'candidates (catalogue)'}: "
        f"6 metrics @10, batches of {batch}, update + compute"
    )
    return _table(title, rows, header), records


def plot(path: Path, by_queries: list[dict[str, Any]], by_items: list[dict[str, Any]], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 2, figsize=(11, 8))
    for column, (records, key, label) in enumerate(
        ((by_queries, "queries", "queries"), (by_items, "items", "candidates per query"))
    ):
        for index, case in enumerate(dict.fromkeys(r["case"] for r in records)):
            mine, color = [r for r in records if r["case"] == case], f"C{index}"
            xs = [r[key] for r in mine]
            axes[0][column].plot(xs, [r["ms"] for r in mine], marker="o", color=color, label=case)
            if mine[0]["state"] is not None:
                axes[1][column].plot(
                    xs, [max(r["state"], 1) for r in mine], marker="o", color=color, label=f"{case}: state"
                )
            if mine[0]["peak"] is not None and index > 0:
                axes[1][column].plot(
                    xs,
                    [max(r["peak"], 1) for r in mine],
                    marker="x",
                    linestyle=":",
                    color=color,
                    label=f"{case}: peak",
                )
        for row, ylabel in ((0, "time, ms (update + compute)"), (1, "bytes")):
            axes[row][column].set(xscale="log", yscale="log", xlabel=label, ylabel=ylabel)
            axes[row][column].grid(True, which="both", alpha=0.3)
            axes[row][column].legend(fontsize=7)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def goals(records: list[dict[str, Any]]) -> str:
    largest = max(r["queries"] for r in records)
    at = {r["case"]: r for r in records if r["queries"] == largest}
    speedup = at[PEER]["ms"] / at[OURS]["ms"]
    states = {r["state"] for r in records if r["case"] == OURS}
    verdict: Callable[[bool], str] = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    return "\n".join(
        [
            "Goals:",
            f"  >= 1,000x faster than torchmetrics.retrieval at {largest:,} queries: {speedup:,.0f}x, "
            f"{verdict(speedup >= 1000) if largest >= 10_000 else 'n/a below 10,000 queries'}",
            f"  constant state memory: ours {', '.join(f'{s:,}' for s in sorted(states))} bytes "
            "at every size, "
            f"{verdict(len(states) == 1)}; torchmetrics.retrieval "
            + " -> ".join(f"{r['state']:,}" for r in records if r["case"] == PEER)
            + " bytes",
        ]
    )


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, seconds (as the tests do)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--device", default="cpu", help="cpu or cuda (synchronised timing, CUDA memory stats)"
    )
    parser.add_argument("--skip", default="", help="comma-separated peers to leave out: torcheval")
    parser.add_argument("--plot", type=Path, default=Path(__file__).resolve().parent / "scaling.png")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    if args.quick:
        queries, items, batch, catalogue_queries, repeats = 5, 100, 50, 20, 1
    else:
        queries, items, batch, catalogue_queries, repeats = 100, 1_000, 100, 200, args.repeats
    started = time.perf_counter()
    by_queries = sweep("queries", [(queries * f, items) for f in (1, 10, 100)], batch, repeats, device, skip)
    by_items = sweep(
        "items", [(catalogue_queries, items * f) for f in (1, 10, 100)], batch, repeats, device, skip
    )
    header = f"{machine(device, args.threads)}; median of {repeats} interleaved round(s)"
    plot(args.plot, by_queries[1], by_items[1], header)
    report = "\n\n".join(
        [
            header,
            by_queries[0],
            by_items[0],
            goals(by_queries[1]),
            f"plot: {args.plot} (total {time.perf_counter() - started:.0f} s)",
        ]
    )
    print(report)
    return report


if __name__ == "__main__":
    main()
