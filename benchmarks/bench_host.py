"""Host time of one update (issue 53): what an update costs where the batch itself costs nothing.

Run: ``python benchmarks/bench_host.py`` (``--device cuda`` on a GPU, ``--quick`` for fewer repeats,
``--profile`` for the functions the eager update spends its host time in).

The 24-metric suite (6 families x k in {10, 20, 50, 100}, ids form with 10 target ids a query,
``validate_args=False``) on a tiny batch, 8 x 101, where the kernels take almost nothing and what is left is
the Python and the dispatch around them. On the CPU every case runs under
:func:`~torchrec_eval.syncs.simulate_accelerator`, so the update takes the branches it takes on a GPU (no host
read). One thread; every case measured in this one run, interleaved, beside a bare ``torch.topk`` of the same
tensor, and reported as the median of ``--repeats`` rounds: the ratios are comparable on a busy machine.

Columns: median wall time of one call (us), its ratio to the top-k, the aten ops it dispatches (views
excluded: on a GPU each is a kernel launch; for the compiled update, the kernels inductor generated for its
graph), the memory the call grows at its peak (KiB: the resident set on a CPU, the allocator's on a GPU) and,
on a GPU, the kernels and copies the profiler sees.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

try:
    import torchrec_eval as tre
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torchrec_eval as tre

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, aten_ops, kernel_launches  # noqa: E402
from bench_peers import peak_memory  # noqa: E402

from torchrec_eval.syncs import simulate_accelerator  # noqa: E402

SUITE = ["ndcg", "map", "recall", "precision", "mrr", "hitrate"]
KS = [10, 20, 50, 100]
#: the issue's goals on a 2-core VM like the CI's, in us: (eager, compiled)
GOALS_US = (300.0, 100.0)
KERNEL_GOAL = 20


def inputs(queries: int, items: int, device: torch.device, targets: int = 10) -> dict[str, torch.Tensor]:
    """Random scores and ``targets`` target ids a query (a repeated id is padding), on ``device``."""
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(queries, items, generator=generator)
    target_ids = torch.randint(0, items, (queries, targets), generator=generator)
    target_ids = torch.where(target_ids == target_ids.roll(1, 1), -1, target_ids)
    return {"preds": scores.to(device), "target_ids": target_ids.to(device)}


def cases(batch: dict[str, torch.Tensor], device: torch.device,
          compiled: tre.RankingMetrics) -> dict[str, Callable[[], object]]:
    """The calls the table times: a bare top-k, the eager update, and the update of ``compiled``."""
    eager = tre.RankingMetrics(SUITE, k=KS, validate_args=False).to(device)
    scores = batch["preds"]
    return {
        "torch.topk(preds, 100)": lambda: torch.topk(scores, 100, dim=1),
        "update, eager": lambda: eager.update(**batch),
        "update, compile_update()": lambda: compiled.update(**batch),
    }


def rows(queries: int, items: int, repeats: int, device: torch.device,
         backend: str = "inductor") -> tuple[list[tuple[str, float, float, str, str, str]], dict[str, float]]:
    """(case, us, x top-k, aten ops or the compiled graph's kernels, peak memory growth, GPU kernels + copies) for
    each case; and the compiled update's first call (its compile time, s), a second such metric's, and the share
    of its timed calls that replayed the kept graph without Dynamo (``metrics/replay.py``)."""
    from torch._inductor import metrics

    batch = inputs(queries, items, device)
    compiled = tre.RankingMetrics(SUITE, k=KS, validate_args=False).to(device).compile_update(backend=backend)
    calls = cases(batch, device, compiled)
    metrics.reset()
    started = time.perf_counter()
    calls["update, compile_update()"]()  # compiles
    compile_s = time.perf_counter() - started
    generated = metrics.generated_kernel_count
    # a second metric of the same configuration compiles its own graph (inductor's caches are warm by then)
    second = tre.RankingMetrics(SUITE, k=KS, validate_args=False).to(device).compile_update(backend=backend)
    started = time.perf_counter()
    second.update(**batch)
    second_s = time.perf_counter() - started
    for call in calls.values():  # the eager update builds its caches
        call()
    times = _interleaved(calls, repeats, device)
    floor = times["torch.topk(preds, 100)"]
    out = []
    for name, call in calls.items():
        launches = kernel_launches(call, device)
        shown = "" if launches is None else f"{launches[0]} + {launches[1]}"
        # a dispatch mode would make the compiled update fall back to eager: its graph's own kernel count instead
        ops = f"{generated} in graph" if "compile" in name else str(aten_ops(call))
        peak = peak_memory(call, device)
        out.append((name, times[name] * 1e3, times[name] / floor, ops, "n/a" if peak is None else f"{peak / 1024:.0f}",
                    shown))
    step = compiled._compiled_step
    calls_made = compiled._update_count - 1  # the timed calls and the counting ones, after the compiling one
    return out, {"compile_s": compile_s, "second_compile_s": second_s,
                 "replayed": 0.0 if step is None else step.replayed / max(calls_made, 1)}


def profile(queries: int, items: int, device: torch.device, compiled: bool = False, calls: int = 200,
            top: int = 25) -> str:
    """The functions an eager update spends its host time in (cProfile, by own time), or a compiled one (by
    cumulative time: the replay, the signature and the wrappers around them)."""
    batch = inputs(queries, items, device)
    suite = tre.RankingMetrics(SUITE, k=KS, validate_args=False).to(device)
    if compiled:
        suite.compile_update()
    suite.update(**batch)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        suite.update(**batch)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumtime" if compiled else "tottime").print_stats(top)
    return text.getvalue()


def _table(title: str, table: list[tuple[str, float, float, str, str, str]], on_gpu: bool) -> str:
    header = f"{'case':<28} {'us':>9} {'x topk':>8} {'aten ops':>12} {'peak KiB':>9}"
    lines = [title, header + ("  kernels + copies" if on_gpu else "")]
    for name, us, ratio, ops, peak, launches in table:
        lines.append(f"{name:<28} {us:>9.1f} {ratio:>8.2f} {ops:>12} {peak:>9}" + (f"  {launches}" if on_gpu else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="30 repeats")
    parser.add_argument("--profile", action="store_true", help="also print where the eager update's host time goes")
    parser.add_argument("--backend", default="inductor",
                        help="torch.compile's backend (default inductor; aot_eager traces without code generation)")
    parser.add_argument("--json", help="also write the table to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    device = torch.device(args.device)
    repeats = 30 if args.quick else args.repeats
    queries, items = 8, 101
    accelerator = simulate_accelerator() if device.type == "cpu" else contextlib.nullcontext()
    with accelerator:
        table, compiled = rows(queries, items, repeats, device, args.backend)
        where = "CPU under simulate_accelerator(), 1 thread" if device.type == "cpu" else f"{device}"
        print(_table(f"One update of the 24-metric suite ({len(SUITE)} families x k in {KS}), ids form, "
                     f"validate_args=False, {queries} x {items}, {where}, torch {torch.__version__}; goals: "
                     f"eager <= {GOALS_US[0]:.0f} us, compiled <= {GOALS_US[1]:.0f} us, <= {KERNEL_GOAL} kernels "
                     f"eager", table, device.type == "cuda"))
        print(f"compile_update(): first update (compiles) {compiled['compile_s']:.1f} s, a second metric's "
              f"{compiled['second_compile_s']:.1f} s; later updates that replayed the kept graph without Dynamo: "
              f"{compiled['replayed']:.0%}")
        if args.json:
            keys = ("case", "us", "ratio", "ops", "peak_kib", "launches")
            Path(args.json).write_text(json.dumps({"rows": [dict(zip(keys, row, strict=True)) for row in table],
                                                   "compiled": compiled}))
        if args.profile:
            print("\nWhere the eager update's host time goes (cProfile, own time, 200 updates):")
            print(profile(queries, items, device))
            print("\nWhere the compiled update's host time goes (cProfile, cumulative time, 200 updates):")
            print(profile(queries, items, device, compiled=True))


if __name__ == "__main__":
    main()
