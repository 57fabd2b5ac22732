"""``convention="lenskit"`` side by side with LensKit itself (not collected by pytest).

Runs LensKit's ``Precision``, ``Recall``, ``NDCG`` (binary and graded), ``DCG``, ``RBP``, ``RecipRank``,
``Hit`` and, where it has it, ``AveragePrecision`` on random lists -- empty lists, lists shorter than k,
graded test ratings -- and this library on the same lists through the ranked form under the preset, and
prints one line per metric x k with the largest difference; then its ``ListGini`` and ``ExposureGini``
against ``GiniIndex`` and ``ExposureGini``, and its ``entropy`` and ``rank_biased_entropy`` of random
multi-hot genres against ``CategoryEntropy`` and ``RankBiasedEntropy`` under the preset. Exit status 1
if a per-list metric or an entropy differs by more than 1e-12, or a Gini index by more than 1e-6 (LensKit
sums the exposures in float32). LensKit's test users always have test items (its runs are built from the
test set), so every user here has at least one.

LensKit needs its own environment (its dependencies pin pandas)::

    python3 -m venv /tmp/lk && /tmp/lk/bin/pip install torch==2.13.0 torchmetrics lenskit
    PYTHONPATH=. /tmp/lk/bin/python tests/scripts/lenskit_side_by_side.py
"""

from __future__ import annotations

import sys

import numpy as np
import torch

import torchrec_eval as tre

# LensKit is imported where it is used: pytest imports this module for its doctests, without LensKit

KS = (1, 3, 5, 10)
NUM_USERS, NUM_ITEMS, MAX_LEN, MAX_TEST = 80, 30, 12, 8


def users(seed: int) -> list[tuple[list[int], dict[int, int]]]:
    rng = np.random.default_rng(seed)
    out = []
    for user in range(NUM_USERS):
        length = 0 if user < 3 else int(rng.integers(1, MAX_LEN + 1))
        ranked = [int(i) for i in rng.permutation(NUM_ITEMS)[:length]]
        test = {int(i): int(rng.integers(1, 6)) for i in rng.permutation(NUM_ITEMS)[: int(rng.integers(1, MAX_TEST + 1))]}
        out.append((ranked, test))
    return out


def as_tensors(rows: list[tuple[list[int], dict[int, int]]]) -> dict[str, torch.Tensor]:
    ranked_ids = torch.full((len(rows), MAX_LEN), -1, dtype=torch.long)
    target_ids = torch.full((len(rows), MAX_TEST), -1, dtype=torch.long)
    target_gains = torch.zeros(len(rows), MAX_TEST)
    for row, (ranked, test) in enumerate(rows):
        ranked_ids[row, : len(ranked)] = torch.tensor(ranked, dtype=torch.long)
        target_ids[row, : len(test)] = torch.tensor(list(test), dtype=torch.long)
        target_gains[row, : len(test)] = torch.tensor(list(test.values()), dtype=torch.float32)
    return {"ranked_ids": ranked_ids, "target_ids": target_ids, "target_gains": target_gains}


def theirs(metric, rows) -> tuple[np.ndarray, np.ndarray]:
    """LensKit's value per user, and where it raised (``RBP(normalize=True)`` divides by 0 on an empty list)."""
    from lenskit.data import ItemList

    values, raised = [], []
    for ranked, test in rows:
        recs = ItemList(item_ids=np.array(ranked, dtype=np.int64), ordered=True)
        truth = ItemList(item_ids=np.array(list(test), dtype=np.int64), rating=np.array(list(test.values()), dtype=np.float64))
        try:
            values.append(float(metric.measure_list(recs, truth)))
            raised.append(False)
        except ZeroDivisionError:
            values.append(np.nan)
            raised.append(True)
    return np.array(values), np.array(raised)


def main() -> int:
    from lenskit import metrics as lk

    rows = users(seed=0)
    binary = as_tensors(rows)
    binary_ids = {key: value for key, value in binary.items() if key != "target_gains"}
    worst = 0.0
    for k in KS:
        cases = [
            ("precision", lk.Precision(k), {}, binary_ids),
            ("recall", lk.Recall(k), {}, binary_ids),
            ("ndcg", lk.NDCG(k), {}, binary_ids),
            ("ndcg", lk.NDCG(k, gain="rating"), {}, binary),
            ("dcg", lk.DCG(k), {}, binary_ids),
            ("rbp", lk.RBP(k), {}, binary_ids),
            ("rbp", lk.RBP(k, normalize=True), {"normalize": True}, binary_ids),
            ("mrr", lk.RecipRank(k), {}, binary_ids),
            ("hitrate", lk.Hit(k), {}, binary_ids),
        ]
        average_precision = getattr(lk, "AveragePrecision", None) or getattr(lk.ranking, "AveragePrecision", None)
        if average_precision is not None:
            cases.append(("map", average_precision(k), {}, binary_ids))
        for name, metric, options, inputs in cases:
            function = getattr(tre.functional, name)
            # DCG has no ideal: LensKit scores every user, as empty_target_action="neg" does here
            common = {"empty_target_action": "neg"} if name == "dcg" else {}
            ours = function(k=k, convention="lenskit", reduction="none", **common, **options, **inputs).numpy()
            expected, raised = theirs(metric, rows)
            ours, expected = ours[~raised], expected[~raised]
            same_nan = np.array_equal(np.isnan(ours), np.isnan(expected))
            difference = float(np.nanmax(np.abs(ours - expected))) if same_nan else float("inf")
            worst = max(worst, difference)
            label = f"{metric.label}" + (" (graded)" if "target_gains" in inputs else "") + (" normalize" if options else "")
            note = f" (LensKit raised ZeroDivisionError on {raised.sum()} empty lists)" if raised.any() else ""
            print(f"{label:<34} k={k:<3} max |ours - LensKit| = {difference:.3g}{note}")
    print(f"worst: {worst:.3g}")
    return int(worst > 1e-12) | int(ginis(rows, binary_ids, lk) > 1e-6) | int(entropies(rows, binary_ids) > 1e-12)


def entropies(rows, inputs) -> float:
    """LensKit's list entropy of categories, plain and rank-biased (its categories: the list's rows)."""
    from lenskit.data import ItemList
    from lenskit.metrics.ranking._entropy import entropy, rank_biased_entropy

    genres = (np.random.default_rng(1).random((NUM_ITEMS, 4)) < 0.4).astype(np.float64)
    worst = 0.0
    for k in KS:
        for theirs_function, ours_class in ((entropy, tre.CategoryEntropy), (rank_biased_entropy, tre.RankBiasedEntropy)):
            values = [theirs_function(ItemList(item_ids=np.array(ranked, dtype=np.int64), ordered=True), genres[ranked], n=k)
                      for ranked, _ in rows if ranked]
            ours = ours_class(k=k, item_categories=torch.from_numpy(genres), convention="lenskit")
            ours.update(**inputs)
            difference = abs(float(ours.compute()) - float(np.mean(values)))
            worst = max(worst, difference)
            print(f"{theirs_function.__name__:<34} k={k:<3} |ours - LensKit| = {difference:.3g}")
    return worst


def ginis(rows, inputs, lk) -> float:
    """LensKit's ListGini and ExposureGini (global metrics: per-list data, then one aggregate)."""
    from lenskit.data import ItemList

    worst = 0.0
    for k in KS:
        for theirs_metric, ours_metric in ((lk.ListGini(k, items=NUM_ITEMS), tre.GiniIndex(k=k, num_items=NUM_ITEMS)),
                                           (lk.ExposureGini(k, items=NUM_ITEMS), tre.ExposureGini(k=k, num_items=NUM_ITEMS))):
            data = [theirs_metric.compute_list_data(ItemList(item_ids=np.array(ranked, dtype=np.int64), ordered=True), None)
                    for ranked, _ in rows if ranked]  # an empty list adds nothing (and no arrow type)
            expected = float(theirs_metric.global_aggregate(data))
            ours_metric.update(**inputs)
            difference = abs(float(ours_metric.compute()) - expected)
            worst = max(worst, difference)
            print(f"{theirs_metric.label:<34} k={k:<3} |ours - LensKit| = {difference:.3g}")
    return worst


if __name__ == "__main__":
    sys.exit(main())
