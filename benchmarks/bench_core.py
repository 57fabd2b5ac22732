"""Core benchmark: a RankingMetrics suite against the physical floor and against torchmetrics.retrieval.

Run: ``python benchmarks/bench_core.py`` (``--quick`` for small sizes, ``--device cuda``). Single-threaded
CPU by default; every row is measured in this one run on the same data, interleaved, and reported as the
median of ``--repeats`` rounds, so the ratios are comparable even on a busy machine. On CUDA every case
ends with ``torch.cuda.synchronize()``, so a time is the kernels' and not only their launch.

(a) 6 metrics x k in {10, 20, 50, 100} on 1024 x 20,000 scores (`--items`) vs a bare ``torch.topk(scores, 100)``.
(b) the same 6 metrics at k=10 on 2,000 queries x 1,000 candidates vs torchmetrics.retrieval,
    end to end (update in batches + compute), with the state memory of each after all updates.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

import torchrec_eval as tre

SUITE = ["ndcg", "map", "recall", "precision", "mrr", "hitrate"]


def synchronize(device: torch.device | None) -> None:
    """Wait for the kernels queued on a CUDA device (they run asynchronously: without this a timer
    measures their launch only); nothing to wait for on the CPU."""
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


def _interleaved(
    cases: dict[str, Callable[[], object]], repeats: int, device: torch.device | None = None
) -> dict[str, float]:
    """Median time in ms of each case, measured in alternating rounds so drift hits all cases alike.
    Each run of a case ends with ``synchronize(device)`` inside its timed region."""
    for fn in cases.values():
        fn()
        synchronize(device)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            synchronize(device)
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e3 for name, values in samples.items()}


def kernel_launches(fn: Callable[[], object], device: torch.device) -> tuple[int, int] | None:
    """(CUDA kernels, memory copies and sets) one call of ``fn`` runs on the GPU, from torch.profiler's
    CUDA activity; None on the CPU, which launches no kernels."""
    if device.type != "cuda":
        return None
    from torch.profiler import DeviceType, ProfilerActivity, profile

    synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        synchronize(device)
    names = [event.name for event in prof.events() if event.device_type == DeviceType.CUDA]
    copies = sum(name.startswith(("Memcpy", "Memset")) for name in names)
    return len(names) - copies, copies


def aten_ops(fn: Callable[[], object], within: str | None = None) -> int:
    """aten ops one call of ``fn`` dispatches, views excluded (they launch nothing) and in-place ops counted:
    on a CPU each is a dispatch, on a GPU a kernel launch. With ``within`` (a source file's name, or
    ``"file.py:function"``), only the ops dispatched while a function of that file (or that function) runs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    path, _, function = (within or "").partition(":")

    def inside() -> bool:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename.endswith(path) and function in ("", frame.f_code.co_name):
                return True
            frame = frame.f_back
        return False

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            schema = func._schema
            viewing = not schema.is_mutable and any(ret.alias_info is not None for ret in schema.returns)
            if not viewing and (within is None or inside()):
                Count.calls += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.calls


def add_device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device", default="cpu", help="cpu (default) or cuda[:N]: synchronised timing on that GPU"
    )


def standard_parser(description: str) -> argparse.ArgumentParser:
    """The options most benchmarks share: ``--quick``, ``--repeats``, ``--json PATH`` and ``--device``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    add_device_option(parser)
    return parser


def resolve_device(parser: argparse.ArgumentParser, name: str) -> torch.device:
    """The ``--device`` value as a torch.device; exits through ``parser.error`` (status 2, a message
    naming the device) when it is not a CPU or an available CUDA device."""
    try:
        device = torch.device(name)
    except RuntimeError:
        parser.error(f"--device {name!r} is not a device torch knows (use cpu or cuda)")
    if device.type not in ("cpu", "cuda"):
        parser.error(f"--device {name!r}: these benchmarks run on cpu or cuda only")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {name!r}: CUDA is not available here (torch.cuda.is_available() is False)")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        parser.error(f"--device {name!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return device


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, torch.device]:
    """``parser.parse_args(argv)`` and the ``--device`` it names, checked by ``resolve_device``."""
    args = parser.parse_args(argv)
    return args, resolve_device(parser, args.device)


def device_label(device: torch.device, threads: int) -> str:
    """Where the figures come from, for the titles: the GPU's name, or the CPU and its thread count."""
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} ({device}, synchronised timing)"
    return f"cpu, {threads} thread(s)"


def _table(title: str, rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = lambda row: "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False))  # noqa: E731
    return "\n".join([title, line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])


def bench_floor(queries: int, items: int, repeats: int, seed: int = 0, device: torch.device | None = None) -> str:
    device = device or torch.device("cpu")
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(queries, items, generator=generator)
    binary = torch.rand(queries, items, generator=generator) < 0.005
    graded = torch.where(binary, torch.randint(1, 5, (queries, items), generator=generator), 0)
    counts = binary.sum(1)
    width = int(counts.max())
    order = torch.argsort((~binary).to(torch.uint8), dim=1, stable=True)[:, :width]
    ids = torch.where(torch.arange(width) < counts.unsqueeze(1), order, -1)
    scores, binary, graded, ids = (tensor.to(device) for tensor in (scores, binary, graded, ids))
    suite_checked = tre.RankingMetrics(SUITE, k=[10, 20, 50, 100]).to(device)
    suite_fast = tre.RankingMetrics(SUITE, k=[10, 20, 50, 100], validate_args=False).to(device)
    cases = {
        "torch.topk(scores, 100) (floor)": lambda: torch.topk(scores, 100, dim=1),
        "suite, binary target (bool)": lambda: suite_checked.update(scores, binary),
        "suite, binary target, validate_args=False": lambda: suite_fast.update(scores, binary),
        "suite, graded target (int)": lambda: suite_checked.update(scores, graded),
        "suite, ids form (target_ids)": lambda: suite_checked.update(scores, target_ids=ids),
    }
    times = _interleaved(cases, repeats, device)
    floor = times["torch.topk(scores, 100) (floor)"]
    rows = [(name, f"{ms:.1f}", f"{ms / floor:.2f}x") for name, ms in times.items()]
    return _table(
        f"(a) {len(SUITE)} metrics x k in {{10,20,50,100}}, {queries} x {items} scores, one update, on {device}",
        rows,
        ("case", "ms", "vs topk"),
    )


def _state_bytes(*metrics: torch.nn.Module) -> int:
    """Bytes held by the torchmetrics states (tensors and list states) of the metrics."""
    total = 0
    for metric in metrics:
        for name in metric._defaults:
            value = getattr(metric, name)
            for tensor in value if isinstance(value, list) else [value]:
                total += tensor.numel() * tensor.element_size()
    return total


def bench_torchmetrics(
    queries: int, items: int, batches: int, repeats: int, seed: int = 0, device: torch.device | None = None
) -> str:
    from torchmetrics import MetricCollection
    from torchmetrics.retrieval import (
        RetrievalHitRate,
        RetrievalMAP,
        RetrievalMRR,
        RetrievalNormalizedDCG,
        RetrievalPrecision,
        RetrievalRecall,
    )

    device = device or torch.device("cpu")
    generator = torch.Generator().manual_seed(seed)
    scores = torch.rand(queries, items, generator=generator).to(device) + 0.01  # torchmetrics drops <= 0
    target = (torch.rand(queries, items, generator=generator) < 0.02).to(device)
    chunks = list(zip(scores.chunk(batches), target.chunk(batches), strict=False))
    peers = MetricCollection(
        {
            "ndcg@10": RetrievalNormalizedDCG(top_k=10),
            "map@10": RetrievalMAP(top_k=10),
            "recall@10": RetrievalRecall(top_k=10),
            "precision@10": RetrievalPrecision(top_k=10),
            "mrr@10": RetrievalMRR(top_k=10),
            "hitrate@10": RetrievalHitRate(top_k=10),
        },
        compute_groups=False,
    ).to(device)
    # torchmetrics scores a query without relevant items 0 and divides AP@k by the hits in the top k
    ours = tre.RankingMetrics(
        [f"{name}@10" for name in SUITE], options={"map": {"normalizer": "hits"}}, empty_target_action="neg"
    ).to(device)

    def run_peers() -> dict:
        peers.reset()
        for start, (s, t) in zip(range(0, queries, len(chunks[0][0])), chunks, strict=False):
            index = torch.arange(start, start + s.shape[0], device=device).unsqueeze(1).expand_as(s)
            peers.update(s.reshape(-1), t.reshape(-1), indexes=index.reshape(-1))
        return peers.compute()

    def run_ours() -> dict:
        ours.reset()
        for s, t in chunks:
            ours.update(s, t)
        return ours.compute()

    times = _interleaved(
        {"torchmetrics.retrieval (6 metrics)": run_peers, "torchrec_eval RankingMetrics": run_ours}, repeats, device
    )
    expected, got = run_peers(), run_ours()
    agree = max(abs(float(expected[key]) - float(got[key])) for key in expected)
    ours_ms = times["torchrec_eval RankingMetrics"]
    state = {
        "torchmetrics.retrieval (6 metrics)": _state_bytes(*peers.values()),
        "torchrec_eval RankingMetrics": _state_bytes(ours),
    }
    rows = [(name, f"{ms:.1f}", f"{ms / ours_ms:.0f}x", f"{state[name]:,}") for name, ms in times.items()]
    title = (
        f"(b) 6 metrics @10, {queries} queries x {items} candidates in {batches} batches, update + compute, "
        f"on {device} "
        f"(max |difference| of the values: {agree:.1e})"
    )
    return _table(title, rows, ("library", "ms", "vs ours", "state bytes"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, as the tests do)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--items", type=int, default=20_000,
                        help="items per query of table (a) (default 20,000; 1,000,000 for the catalogue-size row)")
    add_device_option(parser)
    return parser


def main(argv: list[str] | None = None) -> str:
    args, device = parse_args(build_parser(), argv)
    torch.set_num_threads(args.threads)
    if args.quick:
        sizes = dict(floor=(64, 2000), peers=(200, 100, 4), repeats=2)
    else:
        sizes = dict(floor=(1024, args.items), peers=(2000, 1000, 10), repeats=args.repeats)
    report = "\n\n".join(
        [
            f"torch {torch.__version__}, {device_label(device, args.threads)}, "
            f"median of {sizes['repeats']} interleaved rounds",
            bench_floor(*sizes["floor"], sizes["repeats"], device=device),
            bench_torchmetrics(*sizes["peers"], sizes["repeats"], device=device),
        ]
    )
    print(report)
    return report


if __name__ == "__main__":
    main()
