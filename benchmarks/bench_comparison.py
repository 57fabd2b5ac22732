"""The cost of comparing models: one ``ModelComparison`` update of 3 models on a 6-metric suite, against the
three suites' own updates on the same scores (the floor: scoring each model is the least a comparison does),
for each test at R = 1,000 replicates; and its state's bytes, which do not grow with the queries.

Run: ``python benchmarks/bench_comparison.py`` (``--quick`` for small sizes). Single-threaded CPU by default;
the cases are measured in alternating rounds on the same data (median of ``--repeats``).
``peak mem``: each update's peak memory growth (``bench_peers.peak_memory``, the least of three runs) as a
multiple of the three models' scores' bytes. Goal (issue 36): the update within 2x the three suites'
updates, memory independent of the queries.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

import torchrec_eval as tre

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, device_label, parse_args, standard_parser  # noqa: E402
from bench_peers import least_peak  # noqa: E402

KEYS = ["ndcg@10", "recall@10", "precision@10", "hitrate@10", "map@10", "mrr@10"]
TESTS = ("student", "fisher", "bootstrap", "tukey")


def cases(rows: int, items: int, replicates: int, device: torch.device) -> tuple[dict[str, Callable[[], object]],
                                                                             dict[str, int], int]:
    """The floor and each test's update on the same scores of 3 models, each case's state bytes, and the
    bytes of the three models' scores."""
    gen = torch.Generator().manual_seed(0)
    target = (torch.rand(rows, items, generator=gen) < 0.01).to(device)
    preds = [torch.randn(rows, items, generator=gen).to(device) for _ in range(3)]
    ids = torch.arange(rows, device=device)
    suites = [tre.RankingMetrics(KEYS).to(device) for _ in range(3)]

    def floor() -> None:
        for suite, scores in zip(suites, preds, strict=True):
            suite.update(scores, target)

    out: dict[str, Callable[[], object]] = {"3 suites' updates (floor)": floor}
    states = {"3 suites' updates (floor)": sum(_bytes(suite) for suite in suites)}
    for test in TESTS:
        compare = tre.ModelComparison(KEYS, models=["a", "b", "c"], test=test, replicates=replicates).to(device)
        out[f"ModelComparison, {test}"] = partial(compare.update, preds, target, query_ids=ids)
        states[f"ModelComparison, {test}"] = _bytes(compare)
    return out, states, sum(p.numel() * p.element_size() for p in preds)


def _bytes(metric: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in metric.metric_state.values())  # type: ignore[union-attr]


def main(argv: list[str] | None = None) -> str:
    args, device = parse_args(standard_parser(__doc__.splitlines()[0]), argv)
    torch.set_num_threads(1)
    shapes = [(64, 200)] if args.quick else [(256, 1000), (1024, 1000), (1024, 20_000)]
    replicates = 100 if args.quick else 1000
    repeats = args.repeats or (2 if args.quick else 7)
    lines = [f"torch {torch.__version__}, {device_label(device, 1)}; 3 models, {len(KEYS)} metrics, R = {replicates}", ""]
    for rows, items in shapes:
        timed, states, scores = cases(rows, items, replicates, device)
        times = _interleaved(timed, repeats, device)
        base = times["3 suites' updates (floor)"]
        for name, ms in times.items():
            least = least_peak(timed[name], device)
            peak = "n/a" if least is None else f"{least / scores:.2f}x"
            lines.append(f"{rows} x {items:<7} {name:<30} {ms:9.3f} ms  {ms / base:5.2f}x  "
                         f"state {states[name]:>9,} bytes  peak mem {peak} the scores")
    report = "\n".join(lines)
    print(report)
    return report


if __name__ == "__main__":
    main()
