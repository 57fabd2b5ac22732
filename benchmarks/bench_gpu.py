"""The GPU figures in one run: each suite's update against its floor, with its kernel launches, host
syncs and peak memory.

Run: ``python benchmarks/bench_gpu.py --device cuda`` (``--quick`` for small sizes, ``--json PATH``,
``--no-compile`` to leave the compiled rows out). Runs on the CPU too (``--device cpu``), where the
launch and sync columns read ``n/a``. Every row of a table is timed interleaved with its floor in this
one run (median of ``--repeats`` rounds, each ending with ``torch.cuda.synchronize()``). Columns:

* ``vs floor``: time / the floor's time. Floor of the ranking rows: a bare ``torch.topk(scores, 100)``;
  of the comparison: two of them (one per model); of the pointwise suite: the model's own weighted
  ``binary_cross_entropy``.
* ``kernels``: CUDA kernels one update launches (torch.profiler), memory copies and sets after the ``+``.
* ``syncs``: host syncs one update makes (``torch.cuda.set_sync_debug_mode("warn")``, counted).
* ``extra mem``: peak memory of one update beyond the floor's, as a multiple of the scores' bytes.

Tables: the 24-metric suite (6 metrics x k in {10, 20, 50, 100}, ids form) at 1024 x 101 (sampled:
one positive among 1 + 100 candidates), 1024 x 20,000 and 1024 x 1,000,000, eager with
``validate_args=False`` and with the default checks, and ``compile_update()``; the paired comparison
of two models on the same suite; the pointwise suite of a 2-task CTR model on 1,000,000 samples.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from torch.nn import functional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import (  # noqa: E402
    _interleaved,
    _table,
    device_label,
    kernel_launches,
    parse_args,
    standard_parser,
    synchronize,
)
from bench_peers import peak_memory  # noqa: E402

import torchrec_eval as tre  # noqa: E402
from torchrec_eval.comparison.uncertainty import PairedComparison  # noqa: E402

SUITE = ["ndcg", "map", "recall", "precision", "mrr", "hitrate"]
KS = [10, 20, 50, 100]
Case = tuple[str, Callable[[], object]]


def _launches(fn: Callable[[], object], device: torch.device) -> str:
    launches = kernel_launches(fn, device)
    return "n/a" if launches is None else f"{launches[0]}+{launches[1]}"


def host_syncs(fn: Callable[[], object], device: torch.device) -> str:
    """How many times one call of ``fn`` waits for the GPU on the host; 'n/a' on the CPU."""
    if device.type != "cuda":
        return "n/a"
    synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return str(sum("synchroniz" in str(w.message) for w in caught))


def measure(floor: Case, cases: list[Case], nbytes: int, repeats: int, device: torch.device) -> list[dict]:
    """One table's rows: every case timed interleaved with the floor, then its launches, syncs, memory."""
    times = _interleaved(dict([floor, *cases]), repeats, device)
    floor_peak = peak_memory(floor[1], device) or 0
    rows = []
    for name, fn in [floor, *cases]:
        peak = peak_memory(fn, device)
        extra = None if peak is None else max(0, peak - floor_peak) / nbytes
        rows.append({"case": name, "ms": times[name], "ratio": times[name] / times[floor[0]],
                     "kernels": _launches(fn, device), "syncs": host_syncs(fn, device), "extra_mem": extra})
    return rows


def _distinct_ids(queries: int, items: int, gen: torch.Generator, width: int = 10) -> torch.Tensor:
    """[queries, width] random relevant items per query, a repeated draw padded with -1."""
    ids = torch.randint(0, items, (queries, width), generator=gen).sort(1).values
    return torch.where(torch.cat([torch.zeros(queries, 1, dtype=torch.bool), ids[:, 1:] == ids[:, :-1]], 1), -1, ids)


def ranking_rows(queries: int, items: int, compiled: bool, repeats: int, device: torch.device) -> list[dict]:
    """The 24-metric suite on [queries, items] scores, ids form: eager, checked, compiled."""
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(queries, items, generator=gen).to(device)
    if items <= 101:  # sampled evaluation: the held-out item is candidate 0, the rest are negatives
        target_ids = torch.zeros(queries, 1, dtype=torch.long, device=device)
    else:
        target_ids = _distinct_ids(queries, items, gen).to(device)
    k = min(100, items)
    eager = tre.RankingMetrics(SUITE, k=KS, validate_args=False).to(device)
    checked = tre.RankingMetrics(SUITE, k=KS).to(device)
    cases: list[Case] = [("eager, validate_args=False", lambda: eager.update(scores, target_ids=target_ids)),
                         ("eager, validate_args=True", lambda: checked.update(scores, target_ids=target_ids))]
    if compiled:
        fast = tre.RankingMetrics(SUITE, k=KS, validate_args=False).to(device).compile_update()
        cases.append(("compile_update()", lambda: fast.update(scores, target_ids=target_ids)))
    floor = (f"torch.topk(scores, {k}) (floor)", lambda: torch.topk(scores, k, dim=1))
    rows = measure(floor, cases, scores.numel() * scores.element_size(), repeats, device)
    return [{"shape": f"{queries} x {items:,}", **row} for row in rows]


def comparison_rows(queries: int, items: int, repeats: int, device: torch.device) -> list[dict]:
    """PairedComparison of two models on the 24-metric suite, ids form, validate_args=False."""
    gen = torch.Generator().manual_seed(1)
    scores_a = torch.randn(queries, items, generator=gen).to(device)
    scores_b = torch.randn(queries, items, generator=gen).to(device)
    target_ids = _distinct_ids(queries, items, gen).to(device)
    compare = PairedComparison([f"{m}@{k}" for m in SUITE for k in KS], validate_args=False).to(device)
    floor = ("2 x torch.topk(scores, 100) (floor)",
             lambda: (torch.topk(scores_a, 100, dim=1), torch.topk(scores_b, 100, dim=1)))
    case = ("PairedComparison, 24 metrics", lambda: compare.update(scores_a, scores_b, target_ids=target_ids))
    rows = measure(floor, [case], 2 * scores_a.numel() * scores_a.element_size(), repeats, device)
    return [{"shape": f"2 x {queries} x {items:,}", **row} for row in rows]


def pointwise_rows(samples: int, repeats: int, device: torch.device) -> list[dict]:
    """NE, log loss, calibration, CTR and binned AUC (1,000 bins) of a 2-task CTR model, one batch per update."""
    gen = torch.Generator().manual_seed(2)
    probs = (torch.rand(samples, 2, generator=gen) ** 4).clamp(1e-6, 1 - 1e-6)
    labels = (torch.rand(samples, 2, generator=gen) < probs).float()
    weights = torch.rand(samples, generator=gen) + 0.5
    probs, labels, weights = probs.to(device), labels.to(device), weights.to(device)
    both = weights.unsqueeze(1).expand(-1, 2)
    names = ["ne", "log_loss", "calibration", "ctr", "auc"]
    binned = {"auc": {"bins": 1000}}
    fast = tre.PointwiseMetrics(names, tasks=["click", "buy"], options=binned, validate_args=False).to(device)
    checked = tre.PointwiseMetrics(names, tasks=["click", "buy"], options=binned).to(device)
    floor = ("weighted binary_cross_entropy (floor)", lambda: functional.binary_cross_entropy(probs, labels, both))
    cases: list[Case] = [("PointwiseMetrics, validate_args=False", lambda: fast.update(probs, labels, sample_weight=weights)),
                         ("PointwiseMetrics, validate_args=True", lambda: checked.update(probs, labels, sample_weight=weights))]
    rows = measure(floor, cases, probs.numel() * probs.element_size(), repeats, device)
    return [{"shape": f"{samples:,} x 2 tasks", **row} for row in rows]


def build_parser() -> argparse.ArgumentParser:
    parser = standard_parser(__doc__.splitlines()[0])
    parser.add_argument("--no-compile", action="store_true", help="leave out the compile_update() rows")
    return parser


def main(argv: list[str] | None = None) -> None:
    args, device = parse_args(build_parser(), argv)
    torch.set_num_threads(1)
    repeats = args.repeats or (3 if args.quick else 21)
    shapes = [(16, 101), (16, 2_000)] if args.quick else [(1024, 101), (1024, 20_000), (1024, 1_000_000)]
    where = device_label(device, 1)
    rows = [row for queries, items in shapes
            for row in ranking_rows(queries, items, not args.no_compile, repeats, device)]
    rows += comparison_rows(*((16, 2_000) if args.quick else (1024, 20_000)), repeats, device)
    rows += pointwise_rows(10_000 if args.quick else 1_000_000, repeats, device)
    print(_table(f"Updates on {where}, torch {torch.__version__}: 24 metrics = {len(SUITE)} x k in {KS}",
                 [(r["shape"], r["case"], f"{r['ms']:.3f}", f"{r['ratio']:.2f}x", r["kernels"], r["syncs"],
                   "n/a" if r["extra_mem"] is None else f"{r['extra_mem']:.2f}x") for r in rows],
                 ("batch", "case", "ms", "vs floor", "kernels", "syncs", "extra mem vs scores")))
    if args.json:
        args.json.write_text(json.dumps({"device": where, "torch": torch.__version__, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
