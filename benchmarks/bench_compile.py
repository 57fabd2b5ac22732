"""What ``compile_update()`` (one ``torch.compile(fullgraph=True)`` graph per batch shape) saves per update.

Run: ``python benchmarks/bench_compile.py`` (``--quick``, ``--json PATH``, ``--device cuda``, ``--profile``
for the time of the first compiled calls and torch.profiler's top operators of one).
A 6-metric suite, ``validate_args=False``, one update of the same batch, eager and compiled
(inductor, compiled before timing), as a multiple of a bare ``torch.topk(scores, 20)``, and its peak
memory beyond the floor's, as a multiple of the scores' bytes; small
batches (where per-op overhead dominates) and a large one. On a GPU the compiled graph also removes
kernel-launch gaps; these CPU figures show the Python and dispatch overhead it removes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, _table, add_device_option, device_label, parse_args, synchronize  # noqa: E402
from bench_peers import peak_memory  # noqa: E402

import torchrec_eval as tre  # noqa: E402

SUITE = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@20"]


def run(shapes: list[tuple[int, int]], repeats: int, device: torch.device) -> list[dict[str, object]]:
    rows = []
    for queries, items in shapes:
        gen = torch.Generator().manual_seed(0)
        scores = torch.randn(queries, items, generator=gen).to(device)
        target_ids = torch.randint(0, items, (queries, 10), generator=gen).to(device)
        target_ids = torch.where(target_ids == target_ids.roll(1, 1), -1, target_ids)
        eager = tre.RankingMetrics(SUITE, validate_args=False).to(device)
        compiled = tre.RankingMetrics(SUITE, validate_args=False).to(device).compile_update()

        def step(metric: tre.RankingMetrics, scores=scores, target_ids=target_ids):
            def go() -> None:
                metric.update(scores, target_ids=target_ids)
            return go

        def floor(scores=scores) -> None:
            torch.topk(scores, 20, dim=1)

        cases = {"torch.topk(scores, 20) (floor)": floor, "eager update": step(eager),
                 "compile_update()": step(compiled)}
        times = _interleaved(cases, repeats, device)
        floor = times["torch.topk(scores, 20) (floor)"]
        floor_peak = peak_memory(cases["torch.topk(scores, 20) (floor)"], device) or 0
        for name, ms in times.items():
            peak = peak_memory(cases[name], device)
            extra = None if peak is None else max(0, peak - floor_peak) / (scores.numel() * scores.element_size())
            rows.append({"shape": f"{queries} x {items:,}", "case": name, "ms": ms, "ratio": ms / floor,
                         "extra_mem": extra})
    return rows


def profile_compiled(queries: int, items: int, device: torch.device) -> str:
    """Where one compiled update's time goes: the time of the first calls (a recompile shows
    as a slow call; ``TORCH_LOGS=recompiles`` names its cause) and torch.profiler's top operators."""
    from torch.profiler import ProfilerActivity, profile

    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(queries, items, generator=gen).to(device)
    target_ids = torch.randint(0, items, (queries, 10), generator=gen).to(device)
    metric = tre.RankingMetrics(SUITE, validate_args=False).to(device).compile_update()
    calls = []
    for _ in range(4):
        calls.append(_interleaved({"update": lambda: metric.update(scores, target_ids=target_ids)}, 1, device)["update"])
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        metric.update(scores, target_ids=target_ids)
        synchronize(device)
    tables = [prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20)]
    if device.type == "cuda":
        tables.append(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=10))
    return (f"compiled update, {queries} x {items:,}: ms of four calls, each after an untimed one: "
            + ", ".join(f"{ms:.2f}" for ms in calls) + "\n" + "\n".join(tables))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    add_device_option(parser)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--profile", action="store_true", help="also profile one compiled update of the largest batch")
    args, device = parse_args(parser, None)
    torch.set_num_threads(args.threads)
    shapes = [(16, 500)] if args.quick else [(100, 1_000), (1024, 20_000)]
    rows = run(shapes, args.repeats or (5 if args.quick else 21), device)
    print(_table(f"compile_update(): 6 metrics, ids form, validate_args=False, {device_label(device, args.threads)}",
                 [(row["shape"], row["case"], f"{row['ms']:.3f}", f"{row['ratio']:.2f}x",
                   "n/a" if row["extra_mem"] is None else f"{row['extra_mem']:.2f}x") for row in rows],
                 ("batch", "case", "ms", "vs topk", "extra mem vs scores")))
    if args.profile:
        print(profile_compiled(*shapes[-1], device))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
