"""The inputs training loops really produce: ties, bf16 logits, exclusions, graded targets, small batches.

Run: ``python benchmarks/bench_inputs.py`` (``--quick`` for small sizes, ``--json PATH``, ``--device
cuda``). One thread, CPU by default. Every case is timed interleaved with its floor in one run (median
of ``--repeats`` rounds; on CUDA each run ends with ``torch.cuda.synchronize()``), then run once more
for its peak memory. Columns:

* ``vs floor``: time / the floor's time. The floor of a top-k case is a bare ``torch.topk(scores, 100)``
  of the same scores; of AUC/FCP a bare ``torch.sort`` of them.
* ``extra mem``: how much memory grows at its peak during one update (the resident set on CPU,
  ``torch.cuda.max_memory_allocated`` on CUDA: ``peak_memory`` of ``bench_peers.py``), beyond the
  floor's own growth, as a multiple of the scores' bytes.

Cases (issue 14's table): constant scores (every row tied at the cut-off; also with
``ties="pessimistic"``), scores rounded through bf16, a dense target with ``exclude_ids``,
``target_ids`` with ``exclude_ids``, ``ties="average"``, AUC on the ids form, FCP on graded targets,
a graded target (dense, and the same as ``target_ids`` + ``target_gains``), and batches of 100 rows
x 1,000 items. Last, the aten ops one update dispatches and,
on CUDA, the kernels it launches (torch.profiler).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import (  # noqa: E402
    _interleaved,
    _table,
    aten_ops,
    device_label,
    kernel_launches,
    parse_args,
    standard_parser,
)
from bench_peers import peak_memory  # noqa: E402

import torchrec_eval as tre  # noqa: E402
from torchrec_eval.metrics.pairwise import AUC, FCP

SUITE = ["ndcg", "map", "recall", "precision", "mrr", "hitrate"]
GOALS = {  # (time vs floor, extra memory vs scores) from issue 14
    "constant scores (ties at the cut-off)": (1.5, 0.5),
    'constant scores, ties="pessimistic"': (1.5, 0.5),
    "scores rounded through bf16": (1.3, 0.5),
    "dense target + exclude_ids": (1.3, 0.5),
    "target_ids + exclude_ids": (1.3, 0.5),
    'ties="average"': (2.0, 1.0),
    "AUC, ids form": (1.5, 1.5),
    "FCP, graded": (1.5, 1.5),
    "graded target": (1.3, None),
    "graded target as ids (target_gains)": (1.3, None),
    "batches of 100 x 1,000": (1.5, None),
}


def _ids(flags: torch.Tensor, width: int | None = None) -> torch.Tensor:
    """The True columns of each row as -1 padded ids [B, T]."""
    counts = flags.sum(1)
    width = width or max(int(counts.max()), 1)
    order = torch.argsort((~flags).to(torch.uint8), dim=1, stable=True)[:, :width]
    return torch.where(torch.arange(width) < counts.unsqueeze(1), order, -1)


def cases(
    queries: int, items: int, pair_queries: int, device: torch.device | None = None
) -> list[tuple[str, Callable[[], object], Callable[[], object], int]]:
    """(name, case, its floor, bytes of its scores), every tensor and metric on ``device``."""
    device = device or torch.device("cpu")
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(queries, items, generator=gen)
    target = torch.rand(queries, items, generator=gen) < 0.005
    graded = torch.where(target, torch.randint(1, 5, (queries, items), generator=gen), 0)
    seen = _ids(torch.rand(queries, items, generator=gen) < 0.002)
    target_ids = _ids(target)
    small = [(torch.randn(100, 1_000, generator=gen).to(device),
              (torch.rand(100, 1_000, generator=gen) < 0.02).to(device))
             for _ in range(max(1, queries // 100))]
    scores, target, graded, seen, target_ids = (t.to(device) for t in (scores, target, graded, seen, target_ids))
    constant = torch.zeros(queries, items, device=device)
    bf16 = scores.to(torch.bfloat16).float()
    pair_scores = scores[:pair_queries]
    pair_ids, pair_graded = target_ids[:pair_queries], graded[:pair_queries]

    def suite(**kwargs):
        return tre.RankingMetrics(SUITE, k=[10, 20, 50, 100], validate_args=False, **kwargs).to(device)

    topk = lambda x: (lambda: torch.topk(x, 100, dim=1))  # noqa: E731
    sort = lambda x: (lambda: torch.sort(x, dim=1, descending=True))  # noqa: E731
    s = {name: suite() for name in ("constant", "bf16", "dense_ex", "ids_ex", "graded", "graded_ids", "small")}
    graded_gains = graded.gather(1, target_ids.clamp(min=0)).masked_fill(target_ids < 0, 0)
    pessimistic = suite(ties="pessimistic")
    average = suite(ties="average")
    auc, fcp = AUC(validate_args=False).to(device), FCP(validate_args=False).to(device)

    def small_batches():
        for batch_scores, batch_target in small:
            s["small"].update(batch_scores, batch_target)

    def small_floor():
        for batch_scores, _ in small:
            torch.topk(batch_scores, 100, dim=1)

    nbytes = scores.numel() * scores.element_size()
    return [
        ("constant scores (ties at the cut-off)", lambda: s["constant"].update(constant, target), topk(constant), nbytes),
        ('constant scores, ties="pessimistic"', lambda: pessimistic.update(constant, target), topk(constant),
         nbytes),
        ("scores rounded through bf16", lambda: s["bf16"].update(bf16, target), topk(bf16), nbytes),
        ("dense target + exclude_ids", lambda: s["dense_ex"].update(scores, target, exclude_ids=seen), topk(scores), nbytes),
        ("target_ids + exclude_ids", lambda: s["ids_ex"].update(scores, target_ids=target_ids, exclude_ids=seen),
         topk(scores), nbytes),
        ('ties="average"', lambda: average.update(scores, target), topk(scores), nbytes),
        ("AUC, ids form", lambda: auc.update(pair_scores, target_ids=pair_ids), sort(pair_scores),
         pair_scores.numel() * 4),
        ("FCP, graded", lambda: fcp.update(pair_scores, pair_graded), sort(pair_scores), pair_scores.numel() * 4),
        ("graded target", lambda: s["graded"].update(scores, graded), topk(scores), nbytes),
        ("graded target as ids (target_gains)",
         lambda: s["graded_ids"].update(scores, target_ids=target_ids, target_gains=graded_gains), topk(scores), nbytes),
        ("batches of 100 x 1,000", small_batches, small_floor, sum(b.numel() * 4 for b, _ in small)),
    ]


def _one_update(device: torch.device) -> tuple[tre.RankingMetrics, torch.Tensor, torch.Tensor]:
    """The suite (6 metrics @10, validate_args=False) after one update of a 100 x 1,000 batch, and
    that batch: the next update is the one counted (the first may build caches)."""
    gen = torch.Generator().manual_seed(1)
    scores = torch.randn(100, 1_000, generator=gen).to(device)
    target = (torch.rand(100, 1_000, generator=gen) < 0.02).to(device)
    suite = tre.RankingMetrics(SUITE, k=[10], validate_args=False).to(device)
    suite.update(scores, target)
    return suite, scores, target


def ops_per_update(device: torch.device | None = None) -> int:
    """aten ops one ``update`` of the suite dispatches (100 x 1,000, validate_args=False; views excluded, as
    ``bench_compile.py`` counts them)."""
    suite, scores, target = _one_update(device or torch.device("cpu"))
    return aten_ops(lambda: suite.update(scores, target))


def kernels_per_update(device: torch.device) -> tuple[int, int] | None:
    """(CUDA kernels, memory copies and sets) that one ``update`` of the suite runs on the GPU, from
    torch.profiler's CUDA activity; None on the CPU, which launches no kernels."""
    if device.type != "cuda":
        return None
    suite, scores, target = _one_update(device)
    return kernel_launches(lambda: suite.update(scores, target), device)


def run(
    queries: int, items: int, pair_queries: int, repeats: int, device: torch.device | None = None
) -> list[dict[str, object]]:
    rows = []
    for name, case, floor, nbytes in cases(queries, items, pair_queries, device):
        times = _interleaved({"floor": floor, "case": case}, repeats, device)
        floor_peak, case_peak = peak_memory(floor, device), peak_memory(case, device)
        extra = None if case_peak is None else max(0, case_peak - (floor_peak or 0)) / nbytes
        goal_time, goal_mem = GOALS[name]
        rows.append({"case": name, "ms": times["case"], "floor_ms": times["floor"],
                     "ratio": times["case"] / times["floor"], "extra_mem": extra,
                     "goal_ratio": goal_time, "goal_mem": goal_mem})
    return rows


def build_parser() -> argparse.ArgumentParser:
    parser = standard_parser(__doc__.splitlines()[0])
    return parser


def main(argv: list[str] | None = None) -> None:
    args, device = parse_args(build_parser(), argv)
    torch.set_num_threads(1)
    queries, items, pair_queries = (64, 5_000, 32) if args.quick else (512, 200_000, 128)
    rows = run(queries, items, pair_queries, args.repeats or (3 if args.quick else 5), device)

    def fmt(value, goal, suffix="x"):
        got = "n/a" if value is None else f"{value:.2f}{suffix}"
        return got if goal is None else f"{got} (goal <= {goal}{suffix})"

    where = device_label(device, 1)
    print(_table(
        f"Real inputs: 6 metrics x k in {{10,20,50,100}}, {queries} x {items} scores "
        f"(AUC/FCP {pair_queries} x {items}), validate_args=False, {where}",
        [(r["case"], f"{r['ms']:.1f}", fmt(r["ratio"], r["goal_ratio"]), fmt(r["extra_mem"], r["goal_mem"]))
         for r in rows],
        ("case", "ms", "vs floor", "extra mem vs scores"),
    ))
    ops = ops_per_update(device)
    print(f"aten ops per update (6 metrics @10, 100 x 1,000, validate_args=False): {ops} (goal <= 30)")
    kernels = kernels_per_update(device)
    if kernels is not None:
        print(f"CUDA kernel launches per update (6 metrics @10, 100 x 1,000, validate_args=False): {kernels[0]} "
              f"kernels, {kernels[1]} memory copies/sets")
    if args.json:
        report = {"device": where, "queries": queries, "items": items, "rows": rows, "ops": ops, "kernels": kernels}
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
