"""Full-ranking benchmark: AUC + MPR (one shared sort) against a bare ``torch.sort`` of the same scores.

Run: ``python benchmarks/bench_pairwise.py`` (``--quick`` for small sizes, ``--device cuda``: every case
then ends with ``torch.cuda.synchronize()``). Single-threaded CPU by default; the cases are measured in
alternating rounds on the same data and reported as the median of ``--repeats`` rounds, so the ratios
are comparable even on a busy machine. Goal: AUC + MPR <= 2x the sort.
FCP (graded targets 0..4) is shown for information.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.pairwise.member import build_member

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import (  # noqa: E402  (interleaved synchronised median timing, shared by the benchmarks)
    _interleaved,
    add_device_option,
    device_label,
    parse_args,
)


def _metric(families: list[str], **kwargs: object) -> MemberMetric:
    return MemberMetric([build_member([(family, None) for family in families], {})], **kwargs)


def bench(
    queries: int, items: int, repeats: int, seed: int = 0, device: torch.device | None = None
) -> tuple[str, dict[str, float]]:
    device = device or torch.device("cpu")
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(queries, items, generator=generator)
    binary = torch.rand(queries, items, generator=generator) < 0.005
    graded = torch.where(binary, torch.randint(1, 5, (queries, items), generator=generator), 0)
    scores, binary, graded = scores.to(device), binary.to(device), graded.to(device)
    checked = _metric(["auc", "mpr"]).to(device)
    fast = _metric(["auc", "mpr"], validate_args=False).to(device)
    fcp = _metric(["fcp"]).to(device)
    cases = {
        "torch.sort(scores) (floor)": lambda: torch.sort(scores, dim=1),
        "AUC + MPR, one update": lambda: checked.update(scores, binary),
        "AUC + MPR, validate_args=False": lambda: fast.update(scores, binary),
        "FCP, graded target 0..4": lambda: fcp.update(scores, graded),
    }
    times = _interleaved(cases, repeats, device)
    floor = times["torch.sort(scores) (floor)"]
    ratios = {name: ms / floor for name, ms in times.items()}
    header = ("case", "ms", "vs sort")
    rows = [(name, f"{ms:.1f}", f"{ratios[name]:.2f}x") for name, ms in times.items()]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
    line = lambda row: "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))  # noqa: E731
    title = f"AUC + MPR on {queries} x {items} scores (0.5% relevant) vs one torch.sort of the scores, on {device}"
    return "\n".join([title, line(header), line(tuple("-" * w for w in widths)), *map(line, rows)]), ratios


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, as the tests do)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    add_device_option(parser)
    return parser


def main(argv: list[str] | None = None) -> str:
    args, device = parse_args(build_parser(), argv)
    torch.set_num_threads(args.threads)
    queries, items, repeats = (64, 2000, 2) if args.quick else (1024, 20_000, args.repeats)
    table, _ = bench(queries, items, repeats, device=device)
    setup = (
        f"torch {torch.__version__}, {device_label(device, args.threads)}, median of {repeats} interleaved rounds"
    )
    report = f"{setup}\n\n{table}"
    print(report)
    return report


if __name__ == "__main__":
    main()
