"""alpha-nDCG, ERR-IA and nERR-IA on an accelerator: the device's values equal the CPU's, and what an update costs.

Run: ``python tests/scripts/intents_on_device.py --device cuda`` (``--quick`` for small sizes).

* **values**: each input form (dense, ids, ranked) of a seeded batch with multi-hot intents, updated with
  ``validate_args=False`` on the device and on the CPU: the largest difference of every value.
* **cost**: the median time of one ``update`` of a suite of the three families at k = 5, 10, 20 beside the same
  suite's ``ndcg`` alone, for the dense form (the greedy ideal reads the catalogue's table) and the ids form
  over a large catalogue (it reads the relevant items' own intents), with the peak memory of the update.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import torchrec_eval as tre

FAMILIES = ("alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia")
NAMES = [f"{family}@{k}" for family in FAMILIES for k in (5, 10, 20)]


def _suite(names: list[str], intents: torch.Tensor, device: str) -> tre.RankingMetrics:
    options = {family: {"item_intents": intents} for family in FAMILIES if any(n.startswith(family) for n in names)}
    return tre.RankingMetrics(names, options=options, validate_args=False).to(device)


def _batch(rows: int, items: int, intents: int, targets: int, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    table = torch.rand(items, intents, generator=gen) < 2.0 / intents
    preds = torch.rand(rows, items, generator=gen)
    ids = torch.stack([torch.randperm(items, generator=gen)[:targets] for _ in range(rows)])
    ids[:, targets // 2 :] = torch.where(torch.rand(rows, targets - targets // 2, generator=gen) < 0.5, -1,
                                         ids[:, targets // 2 :])
    ids[0] = -1  # a query without a relevant item
    target = torch.zeros(rows, items + 1).scatter_(1, torch.where(ids >= 0, ids, items), 1.0)[:, :items] > 0
    ranked = preds.argsort(1, descending=True)[:, :30]
    return {"table": table, "dense": {"preds": preds, "target": target},
            "ids": {"preds": preds, "target_ids": ids}, "ranked": {"ranked_ids": ranked, "target_ids": ids}}


def check_values(device: str, quick: bool) -> float:
    data = _batch(64 if quick else 512, 300 if quick else 3000, 8, 12, seed=0)
    worst = 0.0
    for form in ("dense", "ids", "ranked"):
        out = {}
        for where in ("cpu", device):
            suite = _suite(NAMES, data["table"], where)
            suite.update(**{name: value.to(where) for name, value in data[form].items()})
            out[where] = {name: float(value) for name, value in suite.compute().items()}
        diff = max(abs(out["cpu"][name] - out[device][name]) for name in NAMES)
        worst = max(worst, diff)
        print(f"values {form:6s}: largest |{device} - cpu| = {diff:.3g}  (alpha_ndcg@20 = {out['cpu']['alpha_ndcg@20']:.6f})")
    return worst


def _median_update(suite: tre.RankingMetrics, inputs: dict[str, torch.Tensor], device: str, reps: int) -> float:
    times = []
    for rep in range(reps + 2):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        suite.update(**inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        if rep >= 2:  # warm-up: constants, kernels
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def cost(device: str, quick: bool) -> None:
    cases = {"dense": (256, 2_000, 16, 50)} if quick else {"dense": (1024, 20_000, 20, 50),
                                                          "ids": (1024, 1_000_000, 20, 50)}
    for form, (rows, items, intents, targets) in cases.items():
        data = _batch(rows, items, intents, targets, seed=1)
        inputs = {name: value.to(device) for name, value in data[form].items()}
        table = data["table"]
        base = _median_update(_suite(["ndcg@20"], table, device), inputs, device, 5)
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        with_intents = _median_update(_suite(NAMES + ["ndcg@20"], table, device), inputs, device, 5)
        peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else float("nan")
        print(f"cost {form:5s} {rows} x {items} items, {intents} intents: ndcg@20 alone {base * 1e3:.2f} ms, "
              f"with the 9 intent-aware values {with_intents * 1e3:.2f} ms; peak {peak:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(torch.__version__, args.device, torch.cuda.get_device_name() if args.device == "cuda" else "")
    worst = check_values(args.device, args.quick)
    cost(args.device, args.quick)
    raise SystemExit(0 if worst <= 1e-12 else 1)


if __name__ == "__main__":
    main()
