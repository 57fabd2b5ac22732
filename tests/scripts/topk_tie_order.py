"""Does ``torch.topk`` on this device keep, of the items tied at the cut-off, those of the lowest indices?

Run: ``python tests/scripts/topk_tie_order.py --device cuda`` (``--quick`` for small sizes, ``--json PATH``).

With ``ties="index"`` and ``validate_args=False``, ``update`` on CUDA skips the repair of ties at the
cut-off (a host sync) and trusts ``torch.topk`` (:func:`torchrec_eval.syncs.topk_keeps_lowest_index`):
it reads ``torch.topk(scores, k + 1)`` (sorted) and keeps its first k columns. That is exact when

* **boundary**: the first k columns hold, of the items scored at the k-th value, those of the lowest
  indices (no tied item of a lower index left out), and
* **order**: inside the result, equal scores come in ascending index order (the exclusion path reads a
  deeper top list, stable-sorts it after masking and cuts it, so it relies on this too).

This script checks both for every row, for rows of 1 to 2,000,000 items, k from 1 to 1,000, float32,
bfloat16 and float16, one row and 4,096 rows, on scores with many ties (few integer levels, constant
rows, rounded normal scores and a tie group placed across the cut), and prints one line per (dtype,
rows, items) with the failures. Exit status 1 if any row fails either check.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
ITEMS = [2, 7, 101, 1_024, 20_000, 100_000, 1_000_000, 2_000_000]
KS = [1, 2, 10, 100, 1_000]
ROWS = [1, 4_096]
QUICK_ITEMS, QUICK_KS, QUICK_ROWS = [2, 7, 101, 1_024], [1, 2, 10, 100], [1, 64]
_CHUNK = 1 << 26  # elements checked at once: keeps the check's own memory small beside the scores


def scores_with_ties(rows: int, items: int, dtype: torch.dtype, kind: str, k: int, device: torch.device,
                     gen: torch.Generator) -> torch.Tensor:
    """[rows, items] scores of one kind, made on ``device`` with ``gen`` (a generator of that device),
    a block of rows at a time (the largest case fills a third of an H100)."""
    scores = torch.empty(rows, items, dtype=dtype, device=device)
    step = max(1, _CHUNK // items)
    for start in range(0, rows, step):
        shape = (min(step, rows - start), items)
        scores[start : start + step] = _block(shape, dtype, kind, k, device, gen)
    return scores


def _block(shape: tuple[int, int], dtype: torch.dtype, kind: str, k: int, device: torch.device,
           gen: torch.Generator) -> torch.Tensor:
    if kind == "levels":  # few distinct values: every cut-off falls inside a large tie group
        return torch.randint(0, 4, shape, device=device, generator=gen).to(dtype)
    if kind == "constant":
        return torch.zeros(shape, device=device, dtype=dtype)
    if kind == "normal":  # rounded to the dtype: natural ties near the top of long rows
        return torch.randn(shape, device=device, generator=gen).to(dtype)
    # "across": about k / 2 items above, then a tie group spread over the row, the rest below it
    items = shape[1]
    scores = torch.rand(shape, device=device, generator=gen)
    tied = torch.rand(shape, device=device, generator=gen) < min(0.5, 4 * (k + 1) / items)
    scores = torch.where(tied, 2.0, scores)
    above = torch.rand(shape, device=device, generator=gen) < (k // 2) / items
    return torch.where(above, 3.0, scores).to(dtype)


def failures(scores: torch.Tensor, k: int) -> tuple[int, int]:
    """(rows failing the boundary check, rows failing the order check) of ``torch.topk(scores, k + 1)``."""
    values, idx = torch.topk(scores, k + 1, dim=1)
    boundary_bad = order_bad = 0
    step = max(1, _CHUNK // scores.shape[1])
    for start in range(0, scores.shape[0], step):
        part, v, i = scores[start : start + step], values[start : start + step], idx[start : start + step]
        cut = v[:, k - 1 : k]
        in_list = v[:, :k] == cut  # listed items scored at the k-th value
        need = in_list.sum(1)
        last = torch.where(in_list, i[:, :k], -1).amax(1, keepdim=True)  # the highest index listed among them
        positions = torch.arange(part.shape[1], device=part.device)
        up_to_last = ((part == cut) & (positions <= last)).sum(1)  # tied items of an index <= it
        boundary_bad += int((up_to_last != need).sum())
        equal_next = v[:, 1:] == v[:, :-1]
        order_bad += int((equal_next & (i[:, 1:] < i[:, :-1])).any(1).sum())
    return boundary_bad, order_bad


def run(items_list: list[int], ks: list[int], rows_list: list[int], dtypes: list[str],
        device: torch.device) -> list[dict[str, object]]:
    gen = torch.Generator(device=device).manual_seed(0)
    results = []
    for dtype_name in dtypes:
        for rows in rows_list:
            for items in items_list:
                if rows * items * 4 > (40 << 30):  # the largest case stays within an H100's memory
                    continue
                row: dict[str, object] = {"dtype": dtype_name, "rows": rows, "items": items,
                                          "cases": 0, "boundary": [], "order": []}
                for kind in ("levels", "constant", "normal", "across"):
                    for k in (k for k in ks if k < items):
                        scores = scores_with_ties(rows, items, DTYPES[dtype_name], kind, k, device, gen)
                        boundary_bad, order_bad = failures(scores, k)
                        row["cases"] = int(row["cases"]) + 1
                        if boundary_bad:
                            row["boundary"].append(f"{kind} k={k}: {boundary_bad} rows")  # type: ignore[union-attr]
                        if order_bad:
                            row["order"].append(f"{kind} k={k}: {order_bad} rows")  # type: ignore[union-attr]
                        del scores
                results.append(row)
                print(f"{dtype_name:9} {rows:5} x {items:>9,}  {row['cases']:2} cases  "
                      f"boundary: {'; '.join(row['boundary']) or 'ok'}  "  # type: ignore[arg-type]
                      f"order: {'; '.join(row['order']) or 'ok'}", flush=True)  # type: ignore[arg-type]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"torch.topk(scores, k + 1) tie order on {where}, torch {torch.__version__}", flush=True)
    sizes = (QUICK_ITEMS, QUICK_KS, QUICK_ROWS) if args.quick else (ITEMS, KS, ROWS)
    results = run(*sizes, args.dtypes.split(","), device)
    if args.json:
        args.json.write_text(json.dumps({"device": where, "torch": torch.__version__, "rows": results}, indent=1))
    bad = [r for r in results if r["boundary"] or r["order"]]
    print(f"{len(bad)} of {len(results)} (dtype, rows, items) settings have failing rows")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
