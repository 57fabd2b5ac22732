"""The memory of ``ModelComparison``'s replicates: an update that draws them in blocks (now) against one block
that holds every draw of the batch at once (how the update drew them before issue 51), side by side in one
run, on the same inputs, for Fisher's signs, the bootstrap's Poisson weights and Tukey's permutations.

Run: ``python benchmarks/bench_comparison_memory.py`` (``--quick`` for small sizes, seconds). One CPU thread.
Columns: ``ms``, one update (median of ``--repeats`` interleaved rounds, in this process); ``peak mem``, how
much the resident set grows at its peak during one update, each case and path in a fresh process of its own
(``--quick``: the cases of one path in one process; ``bench_peers.peak_memory``: Linux ``VmHWM`` reset through
``/proc/self/clear_refs``, the least of three updates after a first one; ``n/a`` where it cannot be read);
``vs one block``, the blocked path's time and memory over the one-block path's; ``same sums``: ``to the bit``
where the two paths' replicate states are equal, else their largest relative difference (the batch's rows split
into blocks add in another order).
Goal (issue 51, item 13): the blocked update's memory beyond its batch under 64 MB whatever B and R, at the
same speed, with the same sums.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

import torchrec_eval as tre
from torchrec_eval.comparison.statistics import replicate_sums

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, _table  # noqa: E402
from bench_peers import least_peak  # noqa: E402

BEFORE, AFTER = "one block (before)", "blocked"
PATHS = {BEFORE: 1 << 62, AFTER: replicate_sums.BLOCK_CELLS}  # the BLOCK_CELLS of each path
STATES = ("replicate_sums", "replicate_counts", "replicate_products")
HEADER = ("test", "batch", "models", "R", "path", "ms", "peak mem", "vs one block: time", "memory", "same sums")


def _update(test: str, rows: int, items: int, models: int, replicates: int) -> tuple[tre.ModelComparison,
                                                                                       Callable[[], None]]:
    """A comparison of ``models`` random models on NDCG@10 and its update on one seeded batch."""
    gen = torch.Generator().manual_seed(0)
    target = (torch.rand(rows, items, generator=gen) < 0.05).long()
    target[:, 0] = 1
    preds = [torch.randn(rows, items, generator=gen) for _ in range(models)]
    compare = tre.ModelComparison(["ndcg@10"], models=[f"m{i}" for i in range(models)], test=test,
                                  replicates=replicates)
    ids = torch.arange(rows)
    return compare, lambda: compare.update(preds, target, query_ids=ids)


def _one_process(specs: str, cells: int, folder: str) -> None:
    """In a fresh process: for each case of ``specs`` (``;``-separated), the peak memory of one update with
    blocks of ``cells``, printed as one JSON list, and the replicate states of one update saved to
    ``folder/<i>.pt``."""
    torch.set_num_threads(1)
    replicate_sums.BLOCK_CELLS = cells
    peaks = []
    for i, spec in enumerate(specs.split(";")):
        test, rows, items, models, replicates = spec.split(",")
        compare, update = _update(test, int(rows), int(items), int(models), int(replicates))
        update()  # the first call builds the cached constants
        compare.reset()
        update()
        torch.save({name: getattr(compare, name) for name in STATES if hasattr(compare, name)},
                   Path(folder) / f"{i}.pt")
        peaks.append(least_peak(update))
    print(json.dumps(peaks))


def _peaks_and_states(specs: list[str], cells: int, folder: str) -> list[tuple[int | None, dict[str, torch.Tensor]]]:
    """:func:`_one_process` of ``specs`` in a child process: (peak, states) per case."""
    out = Path(folder)
    done = subprocess.run([sys.executable, __file__, "--case", ";".join(specs), "--cells", str(cells),
                           "--out", str(out)], capture_output=True, text=True)
    if done.returncode:  # e.g. the one block's gigabytes not available on a busy machine
        raise RuntimeError(f"the cases {specs} with blocks of {cells} cells failed: {done.stderr.strip()[-2000:]}")
    peaks = json.loads(done.stdout.strip().splitlines()[-1])
    return [(peak, torch.load(out / f"{i}.pt")) for i, peak in enumerate(peaks)]


def _times(spec: str, repeats: int) -> dict[str, float]:
    """The two paths' update times, interleaved in this process."""
    test, rows, items, models, replicates = spec.split(",")
    compare, update = _update(test, int(rows), int(items), int(models), int(replicates))

    def with_cells(cells: int) -> Callable[[], None]:
        def run() -> None:
            replicate_sums.BLOCK_CELLS = cells
            try:
                update()
            finally:
                replicate_sums.BLOCK_CELLS = PATHS[AFTER]
        return run

    return _interleaved({path: with_cells(cells) for path, cells in PATHS.items()}, repeats)


def _agreement(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> str:
    """``to the bit``, or the largest difference of the two paths' states relative to the largest sum."""
    if all(torch.equal(value, after[name]) for name, value in before.items()):
        return "to the bit"
    worst = max(float((value - after[name]).abs().max() / value.abs().max()) for name, value in before.items())
    return f"to {worst:.0e} (rows split)"


def _mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:,.1f} MiB"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--repeats", type=int, default=None)
    for hidden in ("--case", "--out"):  # one path of one case, in its own process
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--cells", type=int, default=PATHS[AFTER], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        _one_process(args.case, args.cells, args.out)
        return ""
    torch.set_num_threads(1)
    if args.quick:
        specs = [f"{test},256,50,2,4000" for test in ("fisher", "bootstrap", "tukey")]
    else:  # the case (1024 x 100, 2 models, R = 100,000), then the command's R = 10,000 on 3 models
        specs = [f"{test},1024,100,2,100000" for test in ("fisher", "bootstrap", "tukey")]
        specs += [f"{test},8192,100,3,10000" for test in ("fisher", "bootstrap", "tukey")]
    repeats = args.repeats or (2 if args.quick else 3)
    rows: list[tuple[str, ...]] = []
    # each case in a fresh process of its own; --quick: the cases of one path share one process (and its heap)
    batches = [specs] if args.quick else [[spec] for spec in specs]
    with tempfile.TemporaryDirectory() as folder:
        measured: dict[tuple[str, str], tuple[int | None, dict[str, torch.Tensor]]] = {}
        for i, batch in enumerate(batches):
            for path, cells in PATHS.items():
                place = Path(folder) / f"{i}-{path.split()[0]}"
                place.mkdir()
                for spec, result in zip(batch, _peaks_and_states(batch, cells, str(place)), strict=True):
                    measured[spec, path] = result
        for spec in specs:
            test, batch_size, items, models, replicates = spec.split(",")
            times = _times(spec, repeats)
            peaks = {path: measured[spec, path][0] for path in PATHS}
            same = _agreement(measured[spec, BEFORE][1], measured[spec, AFTER][1])
            for path in PATHS:
                ratios = ("", "")
                if path == AFTER:
                    before, after = peaks[BEFORE], peaks[AFTER]
                    memory = "n/a" if before is None or after is None else f"{after / before:.3f}x"
                    ratios = (f"{times[AFTER] / times[BEFORE]:.2f}x", memory)
                rows.append((test, f"{batch_size} x {items}", models, f"{int(replicates):,}", path,
                             f"{times[path]:.1f}", _mb(peaks[path]), *ratios, same))
    title = (f"torch {torch.__version__}, cpu, 1 thread; one update of ModelComparison(['ndcg@10']), blocks of "
             f"{PATHS[AFTER]:,} cells")
    report = _table(title, rows, HEADER)
    print(report)
    return report


if __name__ == "__main__":
    main()
