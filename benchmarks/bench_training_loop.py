"""What the training-loop safety costs, and what a huge cut-off costs, side by side in one run.

Run: ``python benchmarks/bench_training_loop.py`` (``--quick`` for small sizes, ``--json PATH``,
``--device cuda``: every case then ends with ``torch.cuda.synchronize()``). Single-threaded CPU by
default; every row is measured on the same data, interleaved, median of ``--repeats``
rounds, as a multiple of a bare ``torch.topk(scores, 100)``:

* a 6-metric suite's ``update`` and its ``forward`` (all-or-nothing: the state is snapshot first);
* the same suite with ``k = N``, ``k = 10**7`` and ``k = 10**12`` (no allocation depends on k
  beyond min(k, N); ``k=10**12`` with binary gains used to ask for 8 TB);
* seen items removed by ``mask=`` and by ``-inf`` scores (the same exact result);
* the flat form in one call and split across two calls (a query carried between them).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, _table, add_device_option, device_label, parse_args  # noqa: E402

import torchrec_eval as tre  # noqa: E402

SUITE = ["ndcg", "map", "recall", "precision", "mrr", "hitrate"]


def run(queries: int, items: int, repeats: int, device: torch.device | None = None) -> list[dict[str, object]]:
    device = device or torch.device("cpu")
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(queries, items, generator=gen).to(device)
    target = (torch.rand(queries, items, generator=gen) < 0.01).to(device)
    seen = (torch.rand(queries, items, generator=gen) < 0.05).to(device)
    masked = scores.masked_fill(seen, float("-inf"))
    flat = (scores[:64].flatten(), target[:64].flatten(), torch.arange(64, device=device).repeat_interleave(items))
    half = flat[0].numel() // 2 + items // 2  # the cut falls inside a query

    def suite(k: int) -> tre.RankingMetrics:
        return tre.RankingMetrics(SUITE, k=[k]).to(device)

    metrics = {name: suite(100) for name in ("update", "forward", "mask", "-inf")}
    by_k = {k: suite(k) for k in (items, 10**7, 10**12)}
    flat_whole, flat_split = suite(10), suite(10)

    def split() -> None:
        flat_split.update(flat[0][:half], flat[1][:half], indexes=flat[2][:half])
        flat_split.update(flat[0][half:], flat[1][half:], indexes=flat[2][half:])
        flat_split.compute()
        flat_split.reset()

    def whole() -> None:
        flat_whole.update(*flat[:2], indexes=flat[2])
        flat_whole.compute()
        flat_whole.reset()

    cases = {
        "torch.topk(scores, 100) (floor)": lambda: torch.topk(scores, 100, dim=1),
        "suite k=100, update": lambda: metrics["update"].update(scores, target),
        "suite k=100, forward (all-or-nothing)": lambda: metrics["forward"](scores, target),
        f"suite k=N={items}, update": lambda: by_k[items].update(scores, target),
        "suite k=10**7, update": lambda: by_k[10**7].update(scores, target),
        "suite k=10**12, update": lambda: by_k[10**12].update(scores, target),
        "seen items as mask=": lambda: metrics["mask"].update(scores, target, mask=~seen),
        "seen items as -inf scores": lambda: metrics["-inf"].update(masked, target),
        "flat form, 64 queries in one call": whole,
        "flat form, split inside a query (carried)": split,
    }
    times = _interleaved(cases, repeats, device)
    floor = times["torch.topk(scores, 100) (floor)"]
    assert torch.allclose(  # the two ways of removing seen items give one result
        torch.stack(list(metrics["mask"].compute().values())), torch.stack(list(metrics["-inf"].compute().values()))
    )
    return [{"case": name, "ms": ms, "ratio": ms / floor} for name, ms in times.items()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this file")
    add_device_option(parser)
    return parser


def main(argv: list[str] | None = None) -> None:
    args, device = parse_args(build_parser(), argv)
    torch.set_num_threads(1)
    queries, items = (64, 2_000) if args.quick else (512, 20_000)
    rows = run(queries, items, args.repeats or (3 if args.quick else 7), device)
    where = device_label(device, 1)
    print(_table(
        f"Training-loop safety and huge k: {len(SUITE)} metrics, {queries} x {items} scores, {where}",
        [(row["case"], f"{row['ms']:.2f}", f"{row['ratio']:.2f}x") for row in rows],
        ("case", "ms", "vs topk"),
    ))
    if args.json:
        report = {"device": where, "queries": queries, "items": items, "rows": rows}
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
