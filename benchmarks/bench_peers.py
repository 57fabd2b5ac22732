"""Peers side by side: torchrec_eval vs torchmetrics.retrieval, torcheval, ranx, sklearn and the bare floor.

Run: ``python benchmarks/bench_peers.py`` (``--quick`` for small sizes, seconds). Every table is measured
in this one run, on the same data for every row, interleaved, median of ``--repeats`` rounds
(single-threaded CPU by default). Columns:

* ``ms``: end to end over all batches (update of every batch + compute), median;
* ``vs floor``: ratio to the physical floor of the section, a bare ``torch.topk`` (top-k and
  beyond-accuracy sections) or ``torch.sort`` (AUC/MPR) of the same score batches;
* ``peak mem``: how much the process's resident set grows at its peak during one end-to-end run
  (CPU: Linux ``VmHWM`` reset through ``/proc/self/clear_refs`` after ``gc`` and ``malloc_trim``, in
  this process; torch has no CPU allocator statistics and ``tracemalloc`` does not see torch's
  allocations. CUDA: ``torch.cuda.max_memory_allocated`` above the memory allocated before the run);
* ``state bytes``: what the metric keeps between updates after all batches (the torchmetrics /
  torcheval states, list states included; for the functional peers the per-query values or top-k
  lists the caller has to keep).

Sections:

1. Top-k suite, 6 metrics @10 (NDCG, MAP, recall, precision, MRR, hit rate), every query has at least
   one relevant item (ranx's Qrels cannot hold a query without one), positive scores (torchmetrics
   drops scores <= 0). torchmetrics.retrieval gets the flat form with ``indexes``; ranx gets Qrels/Run
   dicts built outside the timed region (their conversion cost is stated below the table) after a
   JIT warm-up; torcheval's ``retrieval_precision`` (2-D, one task per query) gives precision@10 only.
2. One relevant item per query: torcheval's ``hit_rate`` and ``reciprocal_rank`` take one target class
   per row, so this section gives each query exactly one relevant item (hit rate@10 and MRR@10).
3. AUC and MPR (torchrec_eval.pairwise) vs torchmetrics ``RetrievalAUROC`` (flat), torcheval
   ``binary_auroc`` (one task per query) and ``sklearn.metrics.roc_auc_score`` per query.
4. Beyond accuracy (torchrec_eval.beyond) @10 vs keeping the top-k lists and computing with numpy at
   the end (the list-state approach; no installed library computes these on tensors).

Each table ends with the largest difference between our values and each peer's (with the matching ``convention``).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torchmetrics import MetricCollection

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import torchrec_eval as tre
except ImportError:  # a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torchrec_eval as tre
from bench_core import _interleaved, _state_bytes, _table, bench_floor  # noqa: E402

SUITE = ["ndcg@10", "map@10", "recall@10", "precision@10", "mrr@10", "hitrate@10"]
HEADER = ("case", "metrics", "ms", "vs floor", "peak mem", "state bytes")


# ----------------------------------------------------------------------------------------------
# measuring
# ----------------------------------------------------------------------------------------------
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _rss(field_name: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(field_name)


def _trim() -> None:
    # freeze what survives: the next collection walks only the objects made since (a full walk of the heap that
    # torch, torchmetrics and numba leave took 0.3 s per measurement)
    gc.collect()
    gc.freeze()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def peak_memory(fn: Callable[[], object], device: torch.device | None = None) -> int | None:
    """Bytes by which memory grows at its peak while ``fn`` runs; None where it cannot be measured.

    CPU: the resident set (Linux ``VmHWM`` after resetting it through ``/proc/self/clear_refs``),
    relative to the resident set just before, after ``gc.collect()`` and ``malloc_trim(0)``.
    CUDA: ``torch.cuda.max_memory_allocated`` relative to ``torch.cuda.memory_allocated`` before.
    """
    _trim()
    if device is not None and device.type == "cuda":
        _sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        _sync(device)
        return max(0, torch.cuda.max_memory_allocated(device) - base)
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        base = _rss("VmRSS")
    except OSError:
        return None
    fn()
    return max(0, _rss("VmHWM") - base)


def least_peak(fn: Callable[[], object], device: torch.device | None = None) -> int | None:
    """The least of three :func:`peak_memory` runs: small runs share the heap with whatever ran before."""
    peaks = [peak_memory(fn, device) for _ in range(3)]
    return None if any(p is None for p in peaks) else min(p for p in peaks if p is not None)


def _tensor_bytes(values: list[Any]) -> int:
    return sum(int(v.numel() * v.element_size()) if torch.is_tensor(v) else int(v.nbytes) for v in values)


def _mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:,.1f} MB"


@dataclass
class Case:
    """One row. ``run(record)`` does a whole evaluation (update every batch + compute) from a clean state
    and returns the values and, when ``record``, the state bytes after the last update (else None)."""

    name: str
    metrics: str
    run: Callable[[bool], tuple[dict[str, float], int | None]]
    values: dict[str, float] = field(default_factory=dict)


def measure(cases: list[Case], repeats: int, device: torch.device) -> list[dict[str, Any]]:
    """Time the cases interleaved (bench_core's helper), then run each once more for its peak memory,
    values and state. The first case is the floor. Returns one dict per case."""

    def timed(case: Case) -> Callable[[], None]:
        return lambda: (case.run(False), _sync(device))

    times = _interleaved({case.name: timed(case) for case in cases}, repeats)
    results = []
    for case in cases:
        out: dict[str, Any] = {}
        peak = peak_memory(lambda: out.update(zip(("values", "state"), case.run(True), strict=False)), device)  # noqa: B023
        case.values = out["values"]
        results.append(
            {
                "case": case.name,
                "metrics": case.metrics,
                "ms": times[case.name],
                "ratio": times[case.name] / times[cases[0].name],
                "peak": peak,
                "state": out["state"],
            }
        )
    return results


def rows_of(results: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return [
        (
            r["case"],
            r["metrics"],
            f"{r['ms']:.1f}",
            f"{r['ratio']:.2f}x",
            _mb(r["peak"]),
            "-" if r["state"] is None else f"{r['state']:,}",
        )
        for r in results
    ]


def _differences(ours: Case, peers: list[tuple[Case, dict[str, str]]]) -> str:
    """'max |ours - peer|' over the shared values; ``peers``: (case, our key -> the peer's key)."""
    parts = []
    for peer, keys in peers:
        gaps = [abs(ours.values[mine] - peer.values[theirs]) for mine, theirs in keys.items()]
        parts.append(f"{peer.name.split(' ')[0]} {max(gaps):.1e}")
    return "max |our value - peer's value|: " + ", ".join(parts)


# ----------------------------------------------------------------------------------------------
# building blocks shared by the sections (and bench_scaling.py)
# ----------------------------------------------------------------------------------------------
def make_data(
    queries: int, items: int, density: float, device: torch.device, seed: int = 0, one_relevant: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive float32 scores [Q, N] and a bool target [Q, N] with at least one relevant item per query
    (exactly one with ``one_relevant``) and, when N > 1, at least one non-relevant item."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.rand(queries, items, generator=generator) + 0.01
    target = (
        torch.zeros(queries, items, dtype=torch.bool)
        if one_relevant
        else torch.rand(queries, items, generator=generator) < density
    )
    rows, chosen = torch.arange(queries), torch.randint(0, items, (queries,), generator=generator)
    if items > 1:
        target[rows, (chosen + 1) % items] = False
    target[rows, chosen] = True
    return scores.to(device), target.to(device)


def floor_case(chunks: list[tuple[torch.Tensor, ...]], k: int | None, name: str | None = None) -> Case:
    """A bare ``torch.topk(scores, k)`` (or ``torch.sort`` with k=None) of every score batch."""

    def run(record: bool) -> tuple[dict[str, float], None]:
        for scores, *_ in chunks:
            torch.topk(scores, k, dim=1) if k else torch.sort(scores, dim=1, descending=True)
        return {}, None

    return Case(name or (f"torch.topk(scores, {k}) (floor)" if k else "torch.sort(scores) (floor)"), "-", run)


def metric_case(
    name: str,
    metrics: str,
    metric: Any,
    chunks: list[tuple[torch.Tensor, ...]],
    update: Callable[[Any, int, tuple[torch.Tensor, ...]], None],
) -> Case:
    """A torchmetrics-style metric (ours, torchmetrics, a MetricCollection): reset, ``update(metric,
    first query of the batch, batch)`` for every batch, compute, reset (so nothing is left behind)."""

    def run(record: bool) -> tuple[dict[str, float], int | None]:
        metric.reset()
        start = 0
        for batch in chunks:
            update(metric, start, batch)
            start += len(batch[0])
        state = (
            _state_bytes(*(metric.values() if isinstance(metric, MetricCollection) else [metric]))
            if record
            else None
        )
        values = metric.compute()
        metric.reset()
        values = values if isinstance(values, dict) else {"": values}
        return {key: float(value) for key, value in values.items()}, state

    return Case(name, metrics, run)


def flat_update(metric: Any, start: int, batch: tuple[torch.Tensor, ...]) -> None:
    """torchmetrics.retrieval's flat form: one index per query, every candidate a row."""
    scores, target = batch[0], batch[1]
    index = torch.arange(start, start + len(scores), device=scores.device).unsqueeze(1).expand_as(scores)
    metric.update(scores.reshape(-1), target.reshape(-1), indexes=index.reshape(-1))


def torchmetrics_suite(names: list[str]) -> Any:
    from torchmetrics import retrieval as tm

    classes = {
        "ndcg": tm.RetrievalNormalizedDCG,
        "map": tm.RetrievalMAP,
        "recall": tm.RetrievalRecall,
        "precision": tm.RetrievalPrecision,
        "mrr": tm.RetrievalMRR,
        "hitrate": tm.RetrievalHitRate,
    }
    metrics = {}
    for name in names:
        family, _, k = name.partition("@")
        metrics[name] = classes[family](top_k=int(k))
    return MetricCollection(metrics, compute_groups=False)


def list_case(
    name: str,
    metrics: str,
    chunks: list[tuple[torch.Tensor, ...]],
    per_batch: Callable[[tuple[torch.Tensor, ...]], dict[str, Any]],
    finish: Callable[[dict[str, list[Any]]], dict[str, float]],
) -> Case:
    """A functional peer: ``per_batch`` gives per-query values (or lists) that the caller keeps in lists
    (that is its state), ``finish`` turns the kept lists into the values."""

    def run(record: bool) -> tuple[dict[str, float], int | None]:
        kept: dict[str, list[Any]] = {}
        for batch in chunks:
            for key, value in per_batch(batch).items():
                kept.setdefault(key, []).append(value)
        state = sum(_tensor_bytes(values) for values in kept.values()) if record else None
        return finish(kept), state

    return Case(name, metrics, run)


def _means(kept: dict[str, list[Any]]) -> dict[str, float]:
    return {key: float(torch.cat(values).double().mean()) for key, values in kept.items()}


# ----------------------------------------------------------------------------------------------
# section 1: the top-k suite
# ----------------------------------------------------------------------------------------------
def _to_ranx(scores: torch.Tensor, target: torch.Tensor, start: int = 0) -> tuple[Any, Any]:
    from ranx import Qrels, Run

    docs = [f"d{j}" for j in range(scores.shape[1])]
    queries = [f"q{start + i}" for i in range(scores.shape[0])]
    run = Run(
        {
            q: dict(zip(docs, row, strict=False))
            for q, row in zip(queries, scores.cpu().double().tolist(), strict=False)
        }
    )
    qrels = Qrels(
        {
            q: {docs[j]: 1 for j in np.flatnonzero(row)}
            for q, row in zip(queries, target.cpu().numpy(), strict=False)
        }
    )
    return qrels, run


def section_topk(
    queries: int, items: int, batch: int, repeats: int, device: torch.device, skip: set[str]
) -> tuple[str, dict[str, float]]:
    scores, binary = make_data(queries, items, 0.02, device)
    graded = torch.where(
        binary, torch.randint(1, 5, binary.shape, generator=torch.Generator().manual_seed(1)).to(device), 0
    )
    chunks = list(zip(scores.split(batch), binary.split(batch), graded.split(batch), strict=False))
    dense = lambda metric, start, b: metric.update(b[0], b[1])  # noqa: E731
    cases = [
        floor_case(chunks, 10),
        metric_case(
            "torchrec_eval RankingMetrics, binary target", "6", tre.RankingMetrics(SUITE), chunks, dense
        ),
        metric_case(
            "torchrec_eval, binary, validate_args=False",
            "6",
            tre.RankingMetrics(SUITE, validate_args=False),
            chunks,
            dense,
        ),
        metric_case(
            "torchrec_eval, graded target (int 1..4)",
            "6",
            tre.RankingMetrics(SUITE),
            chunks,
            lambda metric, start, b: metric.update(b[0], b[2]),
        ),
        metric_case(
            "torchmetrics.retrieval (flat, indexes)", "6", torchmetrics_suite(SUITE), chunks, flat_update
        ),
    ]
    notes = []
    if "ranx" not in skip:
        from ranx import evaluate

        converted: dict[str, Any] = {}

        def convert() -> None:
            converted["qrels"], converted["run"] = _to_ranx(scores, binary)

        start = time.perf_counter()
        convert()
        seconds = time.perf_counter() - start
        peak = peak_memory(convert)
        ranx_names = [name.replace("hitrate", "hit_rate") for name in SUITE]
        evaluate(converted["qrels"], converted["run"], ranx_names)  # JIT warm-up
        cases.append(
            Case(
                "ranx evaluate (Qrels/Run prebuilt)",
                "6",
                lambda record: (
                    {
                        name.replace("hit_rate", "hitrate"): value
                        for name, value in evaluate(converted["qrels"], converted["run"], ranx_names).items()
                    },
                    None,
                ),
            )
        )
        notes.append(
            f"ranx: converting the tensors to Qrels/Run dicts (not in its row) took {seconds * 1e3:,.0f} ms, "
            f"peak mem {_mb(peak)}; ranx then holds every (query, item, score) in those dicts."
        )
    if "torcheval" not in skip:
        from torcheval.metrics.functional import retrieval_precision

        cases.append(
            list_case(
                "torcheval retrieval_precision (2-D)",
                "1",
                chunks,
                lambda b: {
                    "precision@10": retrieval_precision(b[0], b[1].float(), k=10, num_tasks=len(b[0]))
                },
                _means,
            )
        )
    rows = rows_of(measure(cases, repeats, device))
    # agreement, with our conventions that match each peer (not timed)
    by_name = {case.name: case for case in cases}
    peers = []
    for peer, convention in (
        ("torchmetrics.retrieval (flat, indexes)", "torchmetrics"),
        ("ranx evaluate (Qrels/Run prebuilt)", "ranx"),
        ("torcheval retrieval_precision (2-D)", None),
    ):
        if peer in by_name:
            ours = metric_case(
                "torchrec_eval", "6", tre.RankingMetrics(SUITE, convention=convention), chunks, dense
            )
            ours.values = ours.run(False)[0]
            peers.append((ours, by_name[peer]))
    agreement = "max |our value - peer's value| (same convention): " + ", ".join(
        f"{peer.name.split(' ')[0]} {max(abs(ours.values[k] - v) for k, v in peer.values.items()):.1e}"
        for ours, peer in peers
    )
    title = (
        f"1. Top-k suite: 6 metrics @10 (ndcg, map, recall, precision, mrr, hit rate), {queries:,} queries x "
        f"{items:,} candidates in batches of {batch}, update + compute; 2% relevant, >= 1 per query"
    )
    table = _table(title, rows, HEADER)
    ratios = {row[0]: float(row[3][:-1]) for row in rows}
    return "\n".join([table, agreement, *notes]), ratios


def section_one_relevant(
    queries: int, items: int, batch: int, repeats: int, device: torch.device, skip: set[str]
) -> str:
    scores, target = make_data(queries, items, 0.0, device, seed=2, one_relevant=True)
    ids = target.to(torch.uint8).argmax(1)
    chunks = list(zip(scores.split(batch), target.split(batch), ids.split(batch), strict=False))
    names = ["hitrate@10", "mrr@10"]
    cases = [
        floor_case(chunks, 10),
        metric_case(
            "torchrec_eval RankingMetrics, ids form",
            "2",
            tre.RankingMetrics(names),
            chunks,
            lambda metric, start, b: metric.update(b[0], target_ids=b[2].unsqueeze(1)),
        ),
        metric_case(
            "torchmetrics.retrieval (flat, indexes)", "2", torchmetrics_suite(names), chunks, flat_update
        ),
    ]
    if "torcheval" not in skip:
        from torcheval.metrics.functional import hit_rate, reciprocal_rank

        cases.append(
            list_case(
                "torcheval hit_rate + reciprocal_rank",
                "2",
                chunks,
                lambda b: {
                    "hitrate@10": hit_rate(b[0], b[2], k=10),
                    "mrr@10": reciprocal_rank(b[0], b[2], k=10),
                },
                _means,
            )
        )
    rows = rows_of(measure(cases, repeats, device))
    diff = _differences(cases[1], [(case, {key: key for key in names}) for case in cases[2:]])
    title = (
        "2. One relevant item per query (torcheval's hit_rate/reciprocal_rank take one target class "
        f"per row): hit rate@10 + MRR@10, {queries:,} x {items:,} in batches of {batch}"
    )
    return "\n".join([_table(title, rows, HEADER), diff])


# ----------------------------------------------------------------------------------------------
# section 3: AUC / MPR
# ----------------------------------------------------------------------------------------------
def section_pairwise(
    queries: int, items: int, batch: int, repeats: int, device: torch.device, skip: set[str]
) -> str:
    from torchmetrics.retrieval import RetrievalAUROC

    from torchrec_eval.metrics.base import MemberMetric
    from torchrec_eval.pairwise.member import build_member

    scores, target = make_data(queries, items, 0.02, device, seed=3)
    chunks = list(zip(scores.split(batch), target.split(batch), strict=False))
    dense = lambda metric, start, b: metric.update(b[0], b[1])  # noqa: E731
    both = MemberMetric([build_member([("auc", None), ("mpr", None)], {})])
    auc = MemberMetric([build_member([("auc", None)], {})])
    cases = [
        floor_case(chunks, None),
        metric_case("torchrec_eval AUC + MPR (one sort)", "2", both, chunks, dense),
        metric_case("torchrec_eval AUC", "1", auc, chunks, dense),
        metric_case("torchmetrics RetrievalAUROC (flat)", "1", RetrievalAUROC(), chunks, flat_update),
    ]
    peers = [(cases[3], {"auc": ""})]
    if "torcheval" not in skip:
        from torcheval.metrics.functional import binary_auroc

        cases.append(
            list_case(
                "torcheval binary_auroc (task per query)",
                "1",
                chunks,
                lambda b: {"auc": binary_auroc(b[0], b[1].float(), num_tasks=len(b[0]))},
                _means,
            )
        )
        peers.append((cases[-1], {"auc": "auc"}))
    if "sklearn" not in skip:
        from sklearn.metrics import roc_auc_score

        def per_query(b: tuple[torch.Tensor, ...]) -> dict[str, Any]:
            s, t = b[0].cpu().numpy(), b[1].cpu().numpy()
            return {"auc": torch.tensor([roc_auc_score(t[i], s[i]) for i in range(len(s))])}

        cases.append(list_case("sklearn roc_auc_score per query", "1", chunks, per_query, _means))
        peers.append((cases[-1], {"auc": "auc"}))
    rows = rows_of(measure(cases, repeats, device))
    title = (
        f"3. AUC (per query, mean) and MPR (pooled), {queries:,} x {items:,} in batches of {batch}, "
        "2% relevant; "
        f"no peer computes MPR"
    )
    return "\n".join([_table(title, rows, HEADER), _differences(cases[1], peers)])


# ----------------------------------------------------------------------------------------------
# section 4: beyond accuracy
# ----------------------------------------------------------------------------------------------
BEYOND = [
    "coverage",
    "gini",
    "entropy",
    "inter_list_diversity",
    "novelty",
    "average_popularity",
    "intra_list_diversity",
]


def _numpy_beyond(lists: np.ndarray, num_items: int, popularity: np.ndarray, features: np.ndarray) -> dict:
    """The list-state approach: all top-k lists [Q, k] at the end, pooled numpy formulas."""
    counts = np.bincount(lists.ravel(), minlength=num_items).astype(np.float64)
    total, n, k = counts.sum(), len(lists), lists.shape[1]
    ranks = np.arange(1, num_items + 1)
    p = counts[counts > 0] / total
    information = -np.log2(popularity / popularity.sum())
    unit = features / np.linalg.norm(features, axis=1, keepdims=True)
    vectors = unit[lists]  # [Q, k, d]
    pair_sum = (np.square(vectors.sum(1)).sum(1) - k) / 2
    return {
        "coverage@10": float((counts > 0).mean()),
        "gini@10": float(((2 * ranks - num_items - 1) * np.sort(counts)).sum() / (num_items * total)),
        "entropy@10": float(-(p * np.log2(p)).sum()),
        "inter_list_diversity@10": float(1 - (counts * (counts - 1)).sum() / (k * n * (n - 1))),
        "novelty@10": float(information[lists].mean()),
        "average_popularity@10": float(popularity[lists].mean()),
        "intra_list_diversity@10": float((1 - pair_sum / (k * (k - 1) / 2)).mean()),
    }


def section_beyond(queries: int, items: int, batch: int, repeats: int, device: torch.device) -> str:
    from torchrec_eval.beyond import build_member
    from torchrec_eval.metrics.base import MemberMetric

    scores, target = make_data(queries, items, 0.02, device, seed=4)
    # distinct scores per row (a permutation), so that every top-k list is the same whatever the tie order
    scores = scores.argsort(dim=1).float() + 1
    generator = torch.Generator().manual_seed(5)
    popularity = torch.randint(1, 1000, (items,), generator=generator).double()
    features = torch.randn(items, 16, generator=generator)
    options = {"num_items": items}
    member = build_member(
        [(family, 10) for family in BEYOND],
        {
            "coverage": options,
            "gini": options,
            "entropy": options,
            "inter_list_diversity": options,
            "novelty": {"item_popularity": popularity.to(device)},
            "average_popularity": {"item_popularity": popularity.to(device)},
            "intra_list_diversity": {"item_features": features.to(device)},
        },
    )
    chunks = list(zip(scores.split(batch), target.split(batch), strict=False))
    ours = MemberMetric([member]).to(device)
    pop_np, feat_np = popularity.numpy(), features.double().numpy()
    cases = [
        floor_case(chunks, 10),
        metric_case(
            "torchrec_eval beyond, 7 metrics", "7", ours, chunks, lambda metric, start, b: metric.update(*b)
        ),
        list_case(
            "top-k lists kept, numpy at the end",
            "7",
            chunks,
            lambda b: {"lists": torch.topk(b[0], 10, dim=1).indices.cpu().numpy()},
            lambda kept: _numpy_beyond(np.concatenate(kept["lists"]), items, pop_np, feat_np),
        ),
    ]
    rows = rows_of(measure(cases, repeats, device))
    keys = {f"{family}@10": f"{family}@10" for family in BEYOND}
    title = (
        f"4. Beyond accuracy @10 ({', '.join(BEYOND)}), {queries:,} queries x {items:,} items in batches "
        f"of {batch}"
    )
    return "\n".join([_table(title, rows, HEADER), _differences(cases[1], [(cases[2], keys)])])


# ----------------------------------------------------------------------------------------------
def machine(device: torch.device, threads: int) -> str:
    """One line naming the machine the figures come from."""
    if device.type == "cuda":
        where = f"{torch.cuda.get_device_name(device)} (CUDA, synchronised timing)"
    else:
        where = (
            f"CPU {platform.processor() or platform.machine()}, {threads} thread(s) of {os.cpu_count()} cores"
        )
    return f"{where}; {platform.system()}, python {platform.python_version()}, torch {torch.__version__}"


def goals(ratios: dict[str, float], floor_table: str | None) -> str:
    """The issue's goals for the suite, from this run: table 1 (end to end, k=10) and bench_core.py's
    single-update table (a) (6 metrics x k in {10, 20, 50, 100} vs ``torch.topk(scores, 100)``, CPU)."""
    peer = (
        ratios["torchmetrics.retrieval (flat, indexes)"]
        / ratios["torchrec_eval RankingMetrics, binary target"]
    )
    verdict = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    lines = ["Goals (the speed-up at 10,000 queries and the flat state memory are bench_scaling.py's):"]
    if floor_table is not None:
        single = {
            line.split("  ")[0]: float(line.split()[-1][:-1])
            for line in floor_table.splitlines()
            if line.startswith("suite")
        }
        binary, graded = single["suite, binary target (bool)"], single["suite, graded target (int)"]
        lines = [
            floor_table,
            "",
            *lines,
            f"  suite <= 1.2x bare topk, binary target (table (a)): {binary:.2f}x, {verdict(binary <= 1.2)}",
            f"  suite <= 2x bare topk, graded target (table (a)):   {graded:.2f}x, {verdict(graded <= 2)}",
        ]
    return "\n".join(
        [
            *lines,
            f"  end to end in table 1: binary {ratios['torchrec_eval RankingMetrics, binary target']:.2f}x, "
            f"graded {ratios['torchrec_eval, graded target (int 1..4)']:.2f}x the bare topk; "
            f"torchmetrics.retrieval {peer:,.0f}x slower than ours",
        ]
    )


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, seconds (as the tests do)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--device", default="cpu", help="cpu or cuda (synchronised timing, CUDA memory stats)"
    )
    parser.add_argument(
        "--skip", default="", help="comma-separated peers to leave out: ranx, torcheval, sklearn"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    if args.quick:
        topk, pairwise, beyond, floor, repeats = (100, 100, 50), (100, 100, 50), (100, 500, 50), (64, 2000), 1
    else:
        topk, pairwise, beyond, floor = (
            (2_000, 1_000, 500),
            (2_000, 1_000, 500),
            (10_000, 5_000, 1_000),
            (1024, 20_000),
        )
        repeats = args.repeats
    started = time.perf_counter()
    topk_table, ratios = section_topk(*topk, repeats, device, skip)
    sections = [
        f"{machine(device, args.threads)}; median of {repeats} interleaved round(s); "
        "ratios to the floor of each table",
        topk_table,
        section_one_relevant(*topk, repeats, device, skip),
        section_pairwise(*pairwise, repeats, device, skip),
        section_beyond(*beyond, repeats, device),
        goals(ratios, bench_floor(*floor, max(repeats, 2)) if device.type == "cpu" else None),
    ]
    report = "\n\n".join(sections) + f"\n\n(total {time.perf_counter() - started:.0f} s)"
    print(report)
    return report


if __name__ == "__main__":
    main()
