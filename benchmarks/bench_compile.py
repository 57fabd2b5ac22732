"""What one update costs next to the top-k it needs, eager and compiled, at every batch shape; and its aten ops.

Run: ``python benchmarks/bench_compile.py`` (``--quick``, ``--json PATH``, ``--device cuda``, ``--profile``
for the time of the first compiled calls and torch.profiler's top operators of one).

Table 1: a 6-metric suite (``SUITE``), ids form, ``validate_args=False``, one update of the same batch,
eager and after ``compile_update()`` (inductor, compiled before timing), as a multiple of a bare
``torch.topk(scores, 20)`` measured in the same run, interleaved; and its peak memory beyond the
floor's, as a multiple of the scores' bytes. Shapes: a training loop's small batch (100 x 1,000),
sampled evaluation's 1 + 100 candidates (1024 x 101, with 10 target ids per query as the other rows, and
with the one held-out item it has) and a large batch (1024 x 20,000). On one CPU
thread by default; ``--device cuda`` times the same rows on a GPU (synchronised), with the CUDA kernels
of one update, and adds ``compile_update(mode="reduce-overhead")`` (the graph replayed as a CUDA graph).
The compiled metrics' values are checked against the eager one's.

Table 1b: the eager update alone against the floor (table 1 interleaves the compiled metric's calls with
them, which share the caches and the allocator).

Table 1c: the reads by which a list finds its targets (``pipeline/forms/ids.py``), whose times set its rules: the
map of list positions before the comparison on short rows in eager mode, and a compiled comparison of a few
targets taken one target column at a time.

Table 1d: the ranks of a row's targets counted over the row (``pipeline/counted_ranks.py``), each way beside the
library's top 21 of the same scores, and what the cost model (``counting_is_cheaper``, ``counting_way``) takes
there: eager, five passes over the pairs (flags) or one comparison of integer ranking keys (keys); compiled, one
fused loop.

Table 2: the top k of random scores by the library's selection (the blocked top-k of long CPU rows where
it is cheaper, else ``torch.topk``) as a multiple of ``torch.topk`` itself.

Table 3: the aten ops one eager update dispatches (views excluded: they launch nothing), for each
family of the suite alone and for the whole suite, in each input form (100 x 1,000): on a CPU each is
a dispatch, on a GPU a kernel launch; in brackets those of the top-k selection itself (one ``torch.topk``, or
the blocked top-k's six on CPU rows of 16 x k items or more, which cost 0.4-0.7x of one). Table 3b: the suite's on
the path a GPU takes, simulated on the CPU (no host read: every row's cut-off repaired by masked work).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import unittest.mock
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import (  # noqa: E402
    _interleaved,
    _table,
    add_device_option,
    aten_ops,
    device_label,
    kernel_launches,
    parse_args,
    synchronize,
)
from bench_peers import peak_memory  # noqa: E402

import torchrec_eval as tre  # noqa: E402
from torchrec_eval.pipeline.topk import top_scores  # noqa: E402
from torchrec_eval.syncs import simulate_accelerator  # noqa: E402

SUITE = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@20"]
# (queries, items, target ids per query): sampled evaluation's 1 + 100 candidates hold one held-out item
SHAPES = [(100, 1_000, 10), (1024, 101, 10), (1024, 101, 1), (1024, 20_000, 10)]
# (eager, compiled) goals as multiples of the top-k; None: no goal but "compiled no slower than eager"
GOALS: dict[tuple[int, int], tuple[float | None, float | None]] = {
    (100, 1_000): (1.3, 1.1), (1024, 101): (1.3, 1.1), (1024, 20_000): (None, None)}  # by (queries, items)
COMPILED_MEMORY_GOAL = 0.5
FLOOR, EAGER, COMPILED = "torch.topk(scores, 20) (floor)", "eager update", "compile_update()"
GRAPHED = 'compile_update(mode="reduce-overhead")'  # CUDA graphs: one replay per update, on a GPU only


def batch(queries: int, items: int, device: torch.device, form: str = "ids", seed: int = 0,
          targets: int = 10) -> dict[str, torch.Tensor]:
    """One batch of random scores with ``targets`` target ids per query (some padding where 10), in ``form``."""
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(queries, items, generator=gen)
    target_ids = torch.randint(0, items, (queries, targets), generator=gen)
    if targets > 1:  # a repeated id becomes padding (one id is never repeated)
        target_ids = torch.where(target_ids == target_ids.roll(1, 1), -1, target_ids)
    if form == "dense":
        target = torch.zeros(queries, items, dtype=torch.bool).scatter_(1, target_ids.clamp(min=0), True)
        target &= (target_ids >= 0).any(1, keepdim=True)
        inputs = {"preds": scores, "target": target}
    elif form == "ranked":
        inputs = {"ranked_ids": torch.topk(scores, 20, dim=1).indices, "target_ids": target_ids}
    else:
        inputs = {"preds": scores, "target_ids": target_ids}
    return {name: value.to(device) for name, value in inputs.items()}


def timed_rows(shapes: list[tuple[int, int]], repeats: int, device: torch.device,
               backend: str = "inductor") -> list[dict[str, object]]:
    rows = []
    for queries, items, targets in shapes:
        inputs = batch(queries, items, device, targets=targets)
        scores = inputs["preds"]
        eager = tre.RankingMetrics(SUITE, validate_args=False).to(device)
        compiled = {COMPILED: tre.RankingMetrics(SUITE, validate_args=False).to(device).compile_update(
            backend=backend)}
        if device.type == "cuda":
            compiled[GRAPHED] = tre.RankingMetrics(SUITE, validate_args=False).to(device).compile_update(
                mode="reduce-overhead")
        compile_s = {}
        for name, metric in compiled.items():  # the compilation, untimed in the table
            start = time.perf_counter()
            metric.update(**inputs)
            synchronize(device)
            compile_s[name] = time.perf_counter() - start

        def step(metric: tre.RankingMetrics, inputs=inputs):
            return lambda: metric.update(**inputs)

        def floor(scores=scores) -> None:
            torch.topk(scores, 20, dim=1)

        cases = {FLOOR: floor, EAGER: step(eager), **{name: step(metric) for name, metric in compiled.items()}}
        times = _interleaved(cases, repeats, device)
        floor_peak = peak_memory(cases[FLOOR], device) or 0
        for name, ms in times.items():
            peak = peak_memory(cases[name], device)
            extra = None if peak is None else max(0, peak - floor_peak) / (scores.numel() * scores.element_size())
            launches = kernel_launches(cases[name], device) if name != FLOOR else None
            shape = f"{queries} x {items:,}" + (f", {targets} target" if targets == 1 else "")
            rows.append({"shape": shape, "case": name, "ms": ms, "ratio": ms / times[FLOOR],
                         "goal": _goal(queries, items, name), "extra_mem": extra,
                         "kernels": None if launches is None else launches[0], "compile_s": compile_s.get(name)})
        for name, metric in compiled.items():  # every update added the same batch: the same means
            got, want = metric.compute(), eager.compute()
            for key in want:
                torch.testing.assert_close(got[key], want[key], rtol=1e-9, atol=1e-12, msg=f"{name}: {key}")
    return rows


def alone_rows(shapes: list[tuple[int, int, int]], repeats: int, device: torch.device) -> list[tuple[str, float]]:
    """The eager update against the floor with no compiled metric between their calls (table 1 interleaves all
    three cases, which share the caches and the allocator): (batch, multiple of the floor)."""
    rows = []
    for queries, items, targets in shapes:
        inputs = batch(queries, items, device, targets=targets)
        eager = tre.RankingMetrics(SUITE, validate_args=False).to(device)
        times = _interleaved({FLOOR: lambda scores=inputs["preds"]: torch.topk(scores, 20, dim=1),
                              EAGER: lambda inputs=inputs, eager=eager: eager.update(**inputs)}, repeats, device)
        shape = f"{queries} x {items:,}" + (f", {targets} target" if targets == 1 else "")
        rows.append((shape, times[EAGER] / times[FLOOR]))
    return rows


def selection_rows(shapes: list[tuple[int, int, int]], repeats: int, device: torch.device) -> list[tuple[str, float]]:
    """The top ``take`` of random scores by the library's selection (``pipeline/topk.py``'s ``top_scores``: blocks on CPU
    rows where they are cheaper, else ``torch.topk`` itself) as a multiple of ``torch.topk``, side by side."""
    rows = []
    for queries, items, take in shapes:
        scores = torch.randn(queries, items, generator=torch.Generator().manual_seed(1)).to(device)
        times = _interleaved({"topk": lambda s=scores, t=take: torch.topk(s, t, dim=1),
                              "blocked": lambda s=scores, t=take: top_scores(s, t)}, repeats, device)
        rows.append((f"top {take} of {queries} x {items:,}", times["blocked"] / times["topk"]))
    return rows


def compiled_call_cost(repeats: int, device: torch.device) -> float:
    """ms of one call of a compiled function that adds one to one element: what any compiled update pays
    (dynamo's guards, the compiled code's wrappers) before it computes anything."""
    one = torch.zeros(1, device=device)
    add_one = torch.compile(lambda x: x + 1, fullgraph=True)
    return _interleaved({"call": lambda: add_one(one)}, repeats * 10, device)["call"]


def _goal(queries: int, items: int, case: str) -> str:
    if case == FLOOR:
        return ""
    eager_goal, compiled_goal = GOALS.get((queries, items), (None, None))
    goal = eager_goal if case == EAGER else compiled_goal
    if goal is not None and case != GRAPHED:
        return f"<= {goal}x"
    return "<= eager" if case == COMPILED else ""


def count_ops(metrics: list[str], form: str, device: torch.device) -> tuple[int, int]:
    """aten ops (views excluded) that the second eager update of ``metrics`` dispatches (the first builds caches),
    and how many of them select the top k (``pipeline/topk.py``'s ``top_scores``: one ``torch.topk``, or six ops of the
    blocked top-k on CPU rows of 16 x k items or more)."""
    inputs = batch(100, 1_000, device, form)
    suite = tre.RankingMetrics(metrics, validate_args=False).to(device)
    suite.update(**inputs)
    return (aten_ops(lambda: suite.update(**inputs)),
            aten_ops(lambda: suite.update(**inputs), within="pipeline/topk.py:top_scores"))


def read_rows(repeats: int, device: torch.device, rows: int = 1024, items: int = 101, depth: int = 20,
              targets: int = 10) -> list[tuple[str, float, float | None]]:
    """How a list of ``depth`` items finds a row's ``targets`` relevant target ids (``pipeline/forms/ids.py``), the
    reads its rules choose between: (read, ms, peak extra memory in the scores' bytes). Eager: the one-byte map of
    list positions and the gains placed at the ranks (short rows), or the [B, K, T] comparison reduced over the
    targets; compiled (inductor): that reduction, or one target column at a time."""
    from torchrec_eval.pipeline.forms import ids

    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(rows, items, generator=gen).to(device)
    listed = torch.topk(scores, depth, dim=1).indices
    target_ids = torch.randint(0, items, (rows, targets), generator=gen).to(device)
    relevant = torch.rand(rows, targets, generator=gen).to(device) < 0.8

    def mapped() -> torch.Tensor:
        ranks = ids._mapped_ranks(listed, target_ids, items)
        return relevant.to(torch.float64).new_zeros(rows, depth + 1).scatter_add_(1, ranks, relevant.to(torch.float64))

    def read(target_ids: torch.Tensor, relevant: torch.Tensor) -> torch.Tensor:
        return ids.list_reader(listed, target_ids)(relevant)

    def compiled(unrolled: int):
        def step() -> torch.Tensor:
            ids._UNROLLED = unrolled  # a guarded global: each setting its own graph
            return compiled_read(target_ids, relevant)
        compiled_read = torch.compile(read, fullgraph=True)
        step()
        return step

    unrolled = ids._UNROLLED
    try:
        cases = {"eager: map of list positions, gains placed": mapped,
                 "eager: [B, K, T] comparison, reduced": lambda: read(target_ids, relevant),
                 "compiled: [B, K, T] comparison, reduced": compiled(0),
                 "compiled: one target column at a time": compiled(unrolled)}
        times = _interleaved(cases, repeats, device)
        memory = {name: peak_memory(fn, device) for name, fn in cases.items()}
    finally:
        ids._UNROLLED = unrolled
    size = scores.numel() * scores.element_size()
    return [(name, ms, None if memory[name] is None else memory[name] / size) for name, ms in times.items()]


COUNTED_SHAPES = [(1024, 101, 1), (1024, 101, 3), (1024, 101, 10), (1024, 300, 3), (100, 1_000, 1),
                  (1024, 1_000, 1), (1024, 1_000, 3), (100, 1_000, 10)]  # (rows, items, targets)


def count_rows(repeats: int, device: torch.device) -> list[tuple[str, str, float, float, str]]:
    """Each way to count a row's targets' ranks over the row (``pipeline/counted_ranks.py``), each timed beside the
    library's top 21 of the same float32 scores (``top_scores``) with nothing else between their calls: (batch,
    way, ms, multiple of the top-k, what the cost model takes there: the way, or the top-k)."""
    return [row for shape in COUNTED_SHAPES for row in _count_shape(*shape, repeats, device)]


def _count_shape(queries: int, items: int, targets: int, repeats: int,
                 device: torch.device) -> list[tuple[str, str, float, float, str]]:
    from torchrec_eval.pipeline.counted_ranks import (
        counting_is_cheaper,
        counting_way,
        flagged_count,
        keyed_count,
    )

    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(queries, items, generator=gen).to(device)
    target_ids = torch.randint(0, items, (queries, targets), generator=gen).to(device)
    own = scores.gather(1, target_ids)
    fused = torch.compile(lambda: flagged_count(scores, target_ids, own, "index", fused=True), fullgraph=True)
    fused()
    ways = {"flags": lambda: flagged_count(scores, target_ids, own, "index", fused=False),
            "keys": lambda: keyed_count(scores, target_ids, "index"), "fused": fused}
    rows = []
    for way, count in ways.items():
        times = _interleaved({"top 21": lambda: top_scores(scores, 21), way: count}, repeats, device)
        with unittest.mock.patch.object(torch.compiler, "is_compiling", lambda way=way: way == "fused"):
            taken = counting_way(targets, scores.dtype) if counting_is_cheaper(targets, items, 21) else "top-k"
        rows.append((f"{queries} x {items:,}, {targets} target{'s' if targets > 1 else ''}",
                     "compiled: one fused loop" if way == "fused" else f"eager: {way}", times[way],
                     times[way] / times["top 21"], taken))
    return rows


def op_rows(device: torch.device, quick: bool = False, accelerator: bool = False) -> list[dict[str, object]]:
    """For each family alone and the suite: the ops of each form, and (``top-k ...``) the top-k selection's;
    ``accelerator``: on the path a GPU takes (``torchrec_eval.syncs.simulate_accelerator``: no host read)."""
    members = ([] if quick else [[name] for name in SUITE]) + [SUITE]
    rows = []
    for metrics in members:
        with simulate_accelerator() if accelerator else contextlib.nullcontext():
            counts = {form: count_ops(metrics, form, device) for form in ("dense", "ids", "ranked")}
        rows.append({"metrics": "the 6-metric suite" if len(metrics) > 1 else metrics[0],
                     **{form: total for form, (total, _) in counts.items()},
                     **{f"top-k {form}": selection for form, (_, selection) in counts.items()}})
    return rows


def profile_compiled(queries: int, items: int, device: torch.device) -> str:
    """Where one compiled update's time goes: the time of the first calls (a recompile shows
    as a slow call; ``TORCH_LOGS=recompiles`` names its cause) and torch.profiler's top operators."""
    from torch.profiler import ProfilerActivity, profile

    inputs = batch(queries, items, device)
    metric = tre.RankingMetrics(SUITE, validate_args=False).to(device).compile_update()
    calls = []
    for _ in range(4):
        calls.append(_interleaved({"update": lambda: metric.update(**inputs)}, 1, device)["update"])
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        metric.update(**inputs)
        synchronize(device)
    tables = [prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20)]
    if device.type == "cuda":
        tables.append(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=10))
    return (f"compiled update, {queries} x {items:,}: ms of four calls, each after an untimed one: "
            + ", ".join(f"{ms:.2f}" for ms in calls) + "\n" + "\n".join(tables))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one small shape, the suite's ops only, no compiled call cost (seconds)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backend", default="inductor",
                        help="torch.compile's backend (default inductor; aot_eager traces without code generation)")
    add_device_option(parser)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--profile", action="store_true", help="also profile one compiled update of the largest batch")
    args, device = parse_args(parser, argv)
    torch.set_num_threads(args.threads)
    shapes = [(16, 500, 10)] if args.quick else SHAPES
    rows = timed_rows(shapes, args.repeats or (5 if args.quick else 21), device, args.backend)
    where = device_label(device, args.threads)

    def fmt(value: object, suffix: str = "x") -> str:
        return "n/a" if value is None else f"{value:.2f}{suffix}"

    print(_table(f"One update of {len(SUITE)} metrics ({', '.join(SUITE)}), ids form, validate_args=False, {where}",
                 [(row["shape"], row["case"], f"{row['ms']:.3f}", fmt(row["ratio"]), row["goal"],
                   fmt(row["extra_mem"]), f"<= {COMPILED_MEMORY_GOAL}x" if row["case"] == COMPILED else "",
                   "" if row["kernels"] is None else str(row["kernels"]),
                   "" if row["compile_s"] is None else f"{row['compile_s']:.1f}")
                  for row in rows],
                 ("batch", "case", "ms", "vs topk", "goal", "extra mem vs scores", "goal", "CUDA kernels",
                  "first call s")))
    call = None if args.quick else compiled_call_cost(args.repeats or 21, device)
    if call is not None:
        first_floor = next(row["ms"] for row in rows if row["case"] == FLOOR)
        print(f"torch.compile's own cost of a call (a compiled x + 1 on one element): {call:.3f} ms, "
              f"{call / first_floor:.2f}x the top-k of {rows[0]['shape']}")
    if not args.quick:
        alone = alone_rows(SHAPES, args.repeats or 21, device)
        print()
        print(_table(f"The eager update alone (no compiled metric between its calls), vs torch.topk, {where}",
                     [(shape, f"{ratio:.2f}x") for shape, ratio in alone], ("batch", "vs topk")))
        reads = read_rows(args.repeats or 21, device)
        print()
        print(_table(f"How a list of 20 items finds a row's 10 target ids, 1024 rows of 101 items, {where}",
                     [(name, f"{ms:.3f}", fmt(memory)) for name, ms, memory in reads],
                     ("read", "ms", "extra mem vs scores")))
        counts = count_rows(args.repeats or 21, device)
        print()
        print(_table(f"Targets' ranks counted over their rows, vs the library's top 21, {where}",
                     [(shape, way, f"{ms:.3f}", f"{ratio:.2f}x", taken) for shape, way, ms, ratio, taken in counts],
                     ("batch", "way", "ms", "vs top 21", "cost model takes")))
        selections = [(100, 1_000, 21), (1024, 1_000, 21), (1024, 20_000, 21), (256, 5_000, 11), (256, 5_000, 51),
                      (256, 20_000, 101)]
        selection = selection_rows(selections, args.repeats or 21, device)
        print()
        print(_table(f"The top k of each row by the library's selection, vs torch.topk, {where}",
                     [(shape, f"{ratio:.2f}x") for shape, ratio in selection], ("batch", "vs torch.topk")))
    ops = op_rows(device, args.quick)
    print()
    print(_table(f"aten ops (views excluded) of one eager update, 100 x 1,000, validate_args=False, {device.type} "
                 "(goal: <= 30 for the suite); in brackets those of the top-k selection",
                 [(row["metrics"], *(f"{row[form]} ({row[f'top-k {form}']})" for form in ("dense", "ids", "ranked")))
                  for row in ops],
                 ("metrics", "dense", "ids", "ranked")))
    # what a GPU launches, on the CPU: the path that reads nothing on the host (every row's cut-off repaired)
    ops_on_accelerator = op_rows(device, True, accelerator=True) if device.type == "cpu" else None
    if ops_on_accelerator is not None:
        print()
        print(_table("aten ops of the same update on the accelerator path (simulated on the CPU: what a GPU "
                     "launches, no host read); in brackets those of the top-k selection",
                     [(row["metrics"], *(f"{row[form]} ({row[f'top-k {form}']})" for form in ("dense", "ids", "ranked")))
                      for row in ops_on_accelerator],
                     ("metrics", "dense", "ids", "ranked")))
    if args.profile:
        print(profile_compiled(*shapes[-1][:2], device))  # the largest batch of table 1
    if args.json:
        args.json.write_text(json.dumps({"device": where, "rows": rows, "ops": ops, "ops_on_accelerator": ops_on_accelerator,
                                         "compiled_call_ms": call},
                                        indent=1))


if __name__ == "__main__":
    main()
