"""AUC, GAUC, MPR, FCP, CTR@k and pAUC@k through the one harness (``tests/harness.py``), against the pair-counting
references of ``tests/reference/pairwise.py``."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import pairwise as ref

FAMILIES = ("auc", "gauc", "mpr", "fcp", "ctr", "pauc")
K = 3


def _batches(seed: int) -> list[dict[str, torch.Tensor]]:
    """Uneven batches of 9 items with tied scores, graded targets, a query without a relevant item and
    one whose items are all relevant (AUC undefined: skipped)."""
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for rows in (4, 1, 6):
        preds = torch.randint(0, 5, (rows, 9), generator=gen).float()
        target = torch.where(torch.rand(rows, 9, generator=gen) < 0.4, torch.randint(1, 3, (rows, 9), generator=gen), 0)
        target[0] = 0
        if rows > 1:
            target[1] = 1
        batches.append({"preds": preds, "target": target})
    return batches


def _expected(family: str, preds: list, target: list) -> float:
    queries = ref.split_rows(preds, target)
    if family == "auc":
        return ref.mean([ref.auc(s, t) for s, t in queries])
    if family == "gauc":
        weighted = [(ref.auc(s, t), ref.num_relevant(t)) for s, t in queries]
        kept = [(a, r) for a, r in weighted if a is not None]
        return sum(a * r for a, r in kept) / sum(r for _, r in kept)
    if family == "mpr":  # pooled over every relevant item
        items = [p for s, t in queries for p in ref.mpr_items(s, t)]
        return sum(items) / len(items)
    if family == "fcp":
        pairs = [ref.fcp_pairs(s, t) for s, t in queries]
        concordant = sum(c for c, _ in pairs)
        return concordant / (concordant + sum(d for _, d in pairs))
    if family == "pauc":  # pauc@K: the mean over queries with a relevant item
        return ref.mean([ref.partial_auc(s, t, K) for s, t in queries])
    counts = [ref.ctr_counts(s, t, K) for s, t in queries]  # ctr@K: clicks over shown, pooled
    return sum(c for c, _ in counts) / sum(n for _, n in counts)


def build(family: str) -> MetricCase:
    """The case of one family (module level: spawned processes rebuild it by name)."""
    batches = _batches(seed=len(family))
    preds = torch.cat([b["preds"] for b in batches]).tolist()
    target = torch.cat([b["target"] for b in batches]).tolist()
    options = {"k": K} if family in ("ctr", "pauc") else {}
    key = f"{family}@{K}" if options else family
    classes = {"auc": tre.AUC, "gauc": tre.GAUC, "mpr": tre.MPR, "fcp": tre.FCP, "ctr": tre.CTR, "pauc": tre.PartialAUC}

    def functional(**inputs):
        return getattr(tre.functional, "partial_auc" if family == "pauc" else family)(**inputs, **options)

    return MetricCase(name=family, make=lambda: classes[family](**options), batches=batches,
                      expected={key: _expected(family, preds, target)}, functional=functional)


@pytest.mark.parametrize("family", FAMILIES)
def test_family(family):
    check_metric(build(family))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, list(FAMILIES), str(tmp_path))
