"""The beyond-accuracy families through the one harness (``tests/harness.py``), against the references of
``tests/reference/beyond.py`` on the top-k lists (distinct scores: one list per query)."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import beyond as ref

NUM_ITEMS, K = 10, 3
POPULARITY = torch.tensor([9.0, 7.0, 5.0, 4.0, 3.0, 2.0, 1.0, 1.0, 6.0, 8.0])
FAMILIES = {
    "coverage": (lambda: tre.Coverage(k=K, num_items=NUM_ITEMS), lambda lists: ref.coverage(lists, NUM_ITEMS)),
    "gini": (lambda: tre.GiniIndex(k=K, num_items=NUM_ITEMS), lambda lists: ref.gini(lists, NUM_ITEMS)),
    "entropy": (lambda: tre.Entropy(k=K, num_items=NUM_ITEMS), lambda lists: ref.entropy(lists, NUM_ITEMS)),
    "inter_list_diversity": (lambda: tre.InterListDiversity(k=K, num_items=NUM_ITEMS), ref.inter_list_diversity),
    "novelty": (lambda: tre.Novelty(k=K, item_popularity=POPULARITY),
                lambda lists: ref.novelty(lists, POPULARITY.tolist())),
    "average_popularity": (lambda: tre.AveragePopularity(k=K, item_popularity=POPULARITY),
                           lambda lists: ref.average_popularity(lists, POPULARITY.tolist())),
}


def _batches(seed: int) -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for rows in (4, 1, 5):
        preds = torch.rand(rows, NUM_ITEMS, generator=gen).argsort(1).float()  # distinct scores per row
        target = (torch.rand(rows, NUM_ITEMS, generator=gen) < 0.3).long()
        target[:, 0] = 1
        batches.append({"preds": preds, "target": target})
    return batches


def build(family: str) -> MetricCase:
    """The case of one family (module level: spawned processes rebuild it by name)."""
    make, reference = FAMILIES[family]
    batches = _batches(seed=len(family))
    preds = torch.cat([b["preds"] for b in batches])
    lists = preds.argsort(dim=1, descending=True)[:, :K].tolist()
    return MetricCase(name=family, make=make, batches=batches, expected={f"{family}@{K}": float(reference(lists))})


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family(family):
    check_metric(build(family))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, sorted(FAMILIES), str(tmp_path))
