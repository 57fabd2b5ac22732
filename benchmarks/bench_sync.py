"""Cost of the distributed sync: ``compute()`` of a whole suite vs one metric, on real processes.

Every rank builds the metrics, updates them with one batch (not timed), and then times
``compute()``, which gathers the state from all ranks (torchmetrics ``sync_on_compute``) and
computes the values. A barrier before each timed call lines the ranks up so that the timing is the
collective itself, not a rank waiting for a slower one. The table (rank 0) gives the median time,
the collectives one ``compute()`` issues (the second one: a metric's first sync adds one all_gather, where
the ranks compare their configurations), and the ratio to one metric.

Cases:

* ``NDCG@10``: one metric, one cut-off (one state [1, 3]);
* ``RankingMetrics`` with 24 metric/k pairs (12 families x k in {5, 10}; one state [1, 49]);
* the same 24 pairs as a ``torchmetrics.MetricCollection`` of 12 metric objects (12 states, 12 syncs);
* ``RankingMetrics`` with ``dist_sync_fn`` = one ``all_reduce`` (the minimum: one collective);
* ``RankingMetrics`` 24 pairs with ``num_groups=1000`` (a [1000, 49] state, 392 KB);
* ``RankingMetrics`` without sync (``sync_on_compute=False``): the compute alone.

Run::

    python benchmarks/bench_sync.py                  # 2 ranks, gloo on CPU, 300 timed calls per case
    python benchmarks/bench_sync.py --quick          # 30 timed calls, a few seconds
    python benchmarks/bench_sync.py --world-size 4 --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torchmetrics import MetricCollection

try:
    import torchrec_eval as tre
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torchrec_eval as tre

from torchrec_eval.ranking.families import REGISTRY  # noqa: E402  (the package registers every family)

FAMILIES = list(REGISTRY)  # every top-k family
CLASSES = [
    "Precision",
    "Recall",
    "F1",
    "HitRate",
    "MRR",
    "ARHR",
    "MAP",
    "MAR",
    "NDCG",
    "DCG",
    "CG",
    "RPrecision",
]
COLLECTIVES = [
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "gather",
    "scatter",
]
BASELINE = "NDCG@10 (1 metric)"


def all_reduce_sum(tensor: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
    """``dist_sync_fn`` for summed states: one all_reduce instead of barrier + 2 all_gathers."""
    out = tensor.clone()
    dist.all_reduce(out, group=group)
    return [out]


def make_cases() -> dict[str, tuple[Any, int, bool]]:
    """name -> (metric, number of metric/k pairs, uses groups)."""

    def rpk(cls: str) -> Any:  # RPrecision's k is a cap, the others' k a cut-off: both give 2 pairs
        return getattr(tre, cls)(k=[5, 10])

    return {
        BASELINE: (tre.NDCG(k=10), 1, False),
        "RankingMetrics (24 pairs)": (tre.RankingMetrics(FAMILIES, k=[5, 10]), 24, False),
        "MetricCollection of 12 classes (24 pairs)": (
            MetricCollection({cls: rpk(cls) for cls in CLASSES}, compute_groups=False),
            24,
            False,
        ),
        "RankingMetrics (24 pairs), all_reduce sync": (
            tre.RankingMetrics(FAMILIES, k=[5, 10], dist_sync_fn=all_reduce_sum),
            24,
            False,
        ),
        "RankingMetrics (24 pairs), 1000 groups": (
            tre.RankingMetrics(FAMILIES, k=[5, 10], num_groups=1000),
            24,
            True,
        ),
        "RankingMetrics (24 pairs), no sync": (
            tre.RankingMetrics(FAMILIES, k=[5, 10], sync_on_compute=False),
            24,
            False,
        ),
    }


class Counting:
    """Counts torch.distributed collectives while `on`."""

    def __init__(self) -> None:
        self.on, self.counts = False, Counter()
        for name in COLLECTIVES:
            original = getattr(dist, name, None)
            if original is not None:
                setattr(dist, name, self._wrap(name, original))

    def _wrap(self, name: str, original: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if self.on:
                self.counts[name] += 1
            return original(*args, **kwargs)

        return wrapped


def worker(rank: int, world_size: int, port: int, reps: int, warmup: int, out_path: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    try:
        counting = Counting()
        gen = torch.Generator().manual_seed(rank)
        preds = torch.randn(64, 200, generator=gen)
        target = (torch.rand(64, 200, generator=gen) < 0.05).int()
        groups = torch.randint(0, 1000, (64,), generator=gen)
        cases = make_cases()
        times: dict[str, list[float]] = {name: [] for name in cases}
        collectives: dict[str, dict[str, int]] = {}
        # Round-robin over the cases, so that a slow spell of the machine hits them all alike.
        for rep in range(warmup + reps):
            for name, (metric, _, grouped) in cases.items():
                if grouped:
                    metric.update(preds, target, groups=groups)  # also invalidates the cached value
                else:
                    metric.update(preds, target)
                dist.barrier()
                counting.counts.clear()
                counting.on = rep == 1  # the second compute: the first also compares the configurations
                start = time.perf_counter()
                metric.compute()
                elapsed = time.perf_counter() - start
                counting.on = False
                if rep == 1:
                    collectives[name] = dict(counting.counts)
                if rep >= warmup:
                    times[name].append(elapsed)
        rows = []
        for name, (_, pairs, _) in cases.items():
            rows.append(
                {
                    "case": name,
                    "pairs": pairs,
                    "collectives": collectives[name],
                    "num_collectives": sum(collectives[name].values()),
                    "median_ms": 1000 * statistics.median(times[name]),
                }
            )
        if rank == 0:
            Path(out_path).write_text(json.dumps(rows))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(world_size: int, reps: int, warmup: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "rows.json")
        start_method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        mp.start_processes(
            worker,
            args=(world_size, _free_port(), reps, warmup, out_path),
            nprocs=world_size,
            join=True,
            start_method=start_method,
        )
        rows = json.loads(Path(out_path).read_text())
    base = next(row["median_ms"] for row in rows if row["case"] == BASELINE)
    for row in rows:
        row["ratio"] = row["median_ms"] / base
    return rows


def format_table(rows: list[dict[str, Any]], world_size: int, reps: int) -> str:
    lines = [
        f"compute() with sync, {world_size} ranks, gloo on CPU, median of {reps} calls "
        f"(torch {torch.__version__.split('+')[0]})",
        "",
        "| case | metric/k pairs | collectives per compute | median ms | vs 1 metric |",
        "|---|---:|---|---:|---:|",
    ]
    for row in rows:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(row["collectives"].items())) or "none"
        lines.append(
            f"| {row['case']} | {row['pairs']} | {row['num_collectives']} ({kinds}) | "
            f"{row['median_ms']:.3f} | {row['ratio']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description="Sync cost of compute(): RankingMetrics vs one metric.")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="30 timed calls per case")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    reps, warmup = (30, 3) if args.quick else (args.reps, 20)
    rows = run(args.world_size, reps, warmup)
    print(format_table(rows, args.world_size, reps))
    if args.json:
        args.json.write_text(
            json.dumps({"world_size": args.world_size, "reps": reps, "rows": rows}, indent=1)
        )
    return rows


if __name__ == "__main__":
    main()
