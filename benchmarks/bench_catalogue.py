"""What exact metrics over a chunked catalogue add to the scoring loop itself, for N = 1M and 10M items.

Run: ``python benchmarks/bench_catalogue.py`` (``--quick`` for small sizes, ``--json PATH``,
``--device cuda``). B users with d-dimensional embeddings are scored against N item embeddings in
chunks of C items. The floor is the loop a user writes by hand: for every chunk one matmul and a
``torch.topk`` merged into the running top k (no exact tie order, no metrics). Each row runs the same
loop and streams every chunk into ``metric.catalogue(...)``, then closes it. Columns:

* ``vs loop``: time as a multiple of the floor (all rows interleaved, median of ``--repeats`` rounds);
  ``extra`` = that minus 1, the goal being <= 10% for the top-k suite.
* ``extra mem``: peak memory beyond the floor's own peak, as a multiple of one chunk of scores
  (B x C float32) -- flat in N: compare the two catalogue sizes.

The targets are random items, except in the last row, where they are among each user's 200 best (a
trained model): AUC and MPR then compare only the few items at or above a user's lowest target.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import _interleaved, _table, add_device_option, device_label, parse_args, synchronize  # noqa: E402
from bench_peers import peak_memory  # noqa: E402

import torchrec_eval as tre  # noqa: E402

SUITE = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@20"]
K = 20


def cases(users: int, items: int, dim: int, chunk: int, device: torch.device) -> dict[str, Callable[[], object]]:
    gen = torch.Generator().manual_seed(0)
    user_emb = torch.randn(users, dim, generator=gen).to(device)
    item_emb = torch.randn(items, dim, generator=gen).to(device)
    target_ids = torch.randint(0, items, (users, 10), generator=gen).to(device)
    target_ids = torch.where(target_ids == target_ids.roll(1, dims=1), -1, target_ids)  # a few pads
    target_ids = torch.sort(target_ids, dim=1).values
    target_ids[:, 1:] = torch.where(target_ids[:, 1:] == target_ids[:, :-1], -1, target_ids[:, 1:])
    seen = torch.randint(0, items, (users, 50), generator=gen).to(device)
    starts = range(0, items, chunk)
    # a trained model ranks its targets high: here 10 of each user's 200 best items
    best = torch.full((users, 200), float("-inf"), device=device), torch.zeros(users, 200, dtype=torch.int64, device=device)
    for start in starts:
        top = torch.topk(user_emb @ item_emb[start : start + chunk].T, min(200, chunk), dim=1)
        merged = torch.topk(torch.cat([best[0], top.values], 1), 200, dim=1)
        best = merged.values, torch.cat([best[1], top.indices + start], 1).gather(1, merged.indices)
    near_top = best[1][:, torch.randperm(200, generator=gen)[:10].to(device)]

    def floor() -> None:
        values = torch.full((users, K), float("-inf"), device=device)
        ids = torch.zeros(users, K, dtype=torch.int64, device=device)
        for start in starts:
            scores = user_emb @ item_emb[start : start + chunk].T
            top = torch.topk(scores, min(K, scores.shape[1]), dim=1)
            values, pick = torch.topk(torch.cat([values, top.values], 1), K, dim=1)
            ids = torch.cat([ids, top.indices + start], 1).gather(1, pick)
        synchronize(device)

    def streamed(metric: tre.RankingMetrics, targets: torch.Tensor = target_ids, **kwargs: object) -> Callable[[], None]:
        def run() -> None:
            extra = dict(kwargs)
            if metric.members[-1].needs_candidates:  # AUC/MPR: the targets' own scores first
                extra["target_scores"] = (user_emb.unsqueeze(1) * item_emb[targets.clamp(min=0)]).sum(-1)
            with metric.catalogue(items, target_ids=targets, **extra) as batch:
                for start in starts:
                    batch.add(user_emb @ item_emb[start : start + chunk].T, offset=start)
            metric.compute()
            metric.reset()
            synchronize(device)

        return run

    def suite(*more: str, **kwargs: object) -> tre.RankingMetrics:
        return tre.RankingMetrics([*SUITE, *more], **kwargs).to(device)

    return {
        "scoring loop: matmul + topk merge (floor)": floor,
        "+ 6-metric suite": streamed(suite()),
        "+ 6-metric suite, validate_args=False": streamed(suite(validate_args=False)),
        "+ 6-metric suite, exclude_ids (50 per user)": streamed(suite(), exclude_ids=seen),
        "+ 6-metric suite + AUC + MPR": streamed(suite("auc", "mpr")),
        "+ 6-metric suite + AUC + MPR, targets in each user's top 200": streamed(suite("auc", "mpr"), near_top),
    }


def run(users: int, items: int, dim: int, chunk: int, repeats: int, device: torch.device) -> list[dict[str, object]]:
    fns = cases(users, items, dim, chunk, device)
    times = _interleaved(fns, repeats, device)
    floor_name = next(iter(fns))
    floor_peak = peak_memory(fns[floor_name], device) or 0
    chunk_bytes = users * min(chunk, items) * 4
    rows = []
    for name, fn in fns.items():
        peak = peak_memory(fn, device)
        extra_mem = None if peak is None else max(0, peak - floor_peak) / chunk_bytes
        rows.append({"items": items, "case": name, "ms": times[name], "ratio": times[name] / times[floor_name],
                     "extra_mem": extra_mem})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--items", type=int, nargs="+", default=None, help="catalogue sizes (1M and 10M)")
    parser.add_argument("--users", type=int, default=256)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--chunk", type=int, default=1 << 17)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    add_device_option(parser)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this file")
    args, device = parse_args(parser, None)
    torch.set_num_threads(args.threads)
    sizes = args.items or ([20_000, 50_000] if args.quick else [1_000_000, 10_000_000])
    users, chunk = (32, 4_096) if args.quick else (args.users, args.chunk)
    rows = [row for items in sizes
            for row in run(users, items, args.dim, chunk, args.repeats or (2 if args.quick else 3), device)]
    print(_table(
        f"Chunked catalogue: {users} users, d={args.dim}, chunks of {chunk:,} items, "
        f"{device_label(device, args.threads)}",
        [(f"{row['items']:,}", row["case"], f"{row['ms']:.0f}", f"{row['ratio']:.3f}x",
          f"{100 * (row['ratio'] - 1):+.1f}%",
          "n/a" if row["extra_mem"] is None else f"{row['extra_mem']:.2f}x") for row in rows],
        ("items", "case", "ms", "vs loop", "extra", "extra mem"),
    ))
    if args.json:
        args.json.write_text(json.dumps({"users": users, "chunk": chunk, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
