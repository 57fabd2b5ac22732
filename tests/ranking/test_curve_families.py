"""The retrieval precision-recall curve and the recall at a fixed precision through the one harness
(``tests/harness.py``), their points against the brute-force Precision@k and Recall@k of
``tests/reference/ranking.py`` (ties, a query without a relevant item, fewer candidates than K, short ranked
lists, groups) and the point read off the curve by torchmetrics' rule written out here; and both classes
against torchmetrics' own ``RetrievalPrecisionRecallCurve`` and ``RetrievalRecallAtFixedPrecision``."""

from __future__ import annotations

import math

import pytest
import torch
from torchmetrics.retrieval import RetrievalPrecisionRecallCurve, RetrievalRecallAtFixedPrecision

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import ranking as ref

Batch = dict[str, torch.Tensor]
K, ITEMS, GROUPS, MIN_PRECISION = 5, 8, 2, 0.42
CASES = ["curve", "curve/adaptive_k", "curve/ranked", "curve/groups", "recall_at_precision",
         "recall_at_precision/groups"]


def _batches(seed: int, form: str) -> list[Batch]:
    """Three uneven batches of 8 items, tied scores, a query without a relevant item; ``adaptive_k``: a mask
    leaving some queries fewer candidates than K; ``ranked``: lists of K + 1 ids with padding anywhere;
    ``groups``: each query's group."""
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for rows in (4, 1, 6):
        preds = torch.randint(0, 5, (rows, ITEMS), generator=gen).double()
        target = (torch.rand(rows, ITEMS, generator=gen) < 0.35).long()
        target[0] = 0
        batch = {"preds": preds, "target": target}
        if form == "adaptive_k":
            batch["mask"] = torch.rand(rows, ITEMS, generator=gen) < 0.5
        elif form == "ranked":
            order = torch.stack([torch.randperm(ITEMS, generator=gen) for _ in range(rows)])
            order = order.masked_fill(torch.rand(rows, ITEMS, generator=gen) < 0.3, -1)
            relevant = torch.where(target > 0, torch.arange(ITEMS), ITEMS).sort(dim=1).values
            batch = {"ranked_ids": order[:, :K + 1], "target_ids": torch.where(relevant < ITEMS, relevant, -1)}
        elif form == "groups":
            batch["groups"] = torch.randint(0, GROUPS, (rows,), generator=gen)
        batches.append(batch)
    return batches


def _queries(batches: list[Batch]) -> list[tuple[list[float], list[float]]]:
    """(ranked gains, every gain) per query, from the brute force's ranking of the scores or the ranked ids."""
    whole = {key: torch.cat([batch[key] for batch in batches]) for key in batches[0]}
    if "ranked_ids" in whole:  # an item outside the target ids is not relevant (None: unjudged, for bpref)
        queries = ref.ids_queries(whole["ranked_ids"], whole["target_ids"])
        return [([0.0 if g is None else g for g in ranked], gains) for ranked, gains in queries]
    return ref.dense_queries(whole["preds"], whole["target"], whole.get("mask"))


def _curve(queries: list[tuple[list[float], list[float]]], adaptive_k: bool) -> tuple[list[float], list[float]]:
    """The mean over queries with a relevant item of Precision@k and Recall@k, k = 1..K."""
    denominator = "retrieved" if adaptive_k else "k"
    precision = [ref.mean([ref.precision(r, g, k, denominator) for r, g in queries]) for k in range(1, K + 1)]
    recall = [ref.mean([ref.recall(r, g, k) for r, g in queries]) for k in range(1, K + 1)]
    return precision, recall


def _read_off(precision: list[float], recall: list[float]) -> tuple[float, int]:
    """torchmetrics' rule: the largest (recall, k) among the points of precision >= p; (0, K) where none
    reaches it or its recall is 0 (a NaN precision, no query counted, reaches nothing)."""
    best = max(((r, k) for k, (p, r) in enumerate(zip(precision, recall, strict=True), 1) if p >= MIN_PRECISION),
               default=(0.0, K))
    return (0.0, K) if best[0] == 0 else best


def _points(result: tuple[torch.Tensor, ...]) -> dict[str, float]:
    """A curve ([K] or [num_groups, K] points, the cut-offs) or a read-off point as key -> float."""
    if len(result) == 2:  # (recall, cut-off), [num_groups] each with groups
        recall, cutoff = (value.reshape(-1).tolist() for value in result)
        return {f"{name}[{g}]": float(v) for name, values in (("recall", recall), ("k", cutoff))
                for g, v in enumerate(values)}
    precision, recall, top_k = result
    assert top_k.tolist() == list(range(1, K + 1))
    return {f"{name}@{k}[{g}]": float(v) for name, values in (("precision", precision), ("recall", recall))
            for g, row in enumerate(values.reshape(-1, K).tolist()) for k, v in enumerate(row, 1)}


def _expected(kind: str, batches: list[Batch], adaptive_k: bool) -> dict[str, float]:
    queries = _queries(batches)
    groups = torch.cat([b["groups"] for b in batches]).tolist() if "groups" in batches[0] else [0] * len(queries)
    out = {}
    for g in sorted(set(groups)):
        precision, recall = _curve([q for q, group in zip(queries, groups, strict=True) if group == g], adaptive_k)
        if kind == "curve":
            out |= {f"precision@{k}[{g}]": p for k, p in enumerate(precision, 1)}
            out |= {f"recall@{k}[{g}]": r for k, r in enumerate(recall, 1)}
        else:
            out[f"recall[{g}]"], out[f"k[{g}]"] = _read_off(precision, recall)
    return out


def build(name: str) -> MetricCase:
    """``curve`` or ``recall_at_precision``, then ``/form`` (module level: processes rebuild it by name)."""
    kind, _, form = name.partition("/")
    batches = _batches(len(name), form)
    options = {"max_k": K, "adaptive_k": form == "adaptive_k"}
    options |= {"num_groups": GROUPS} if form == "groups" else {}
    if kind == "curve":
        make = lambda: tre.PrecisionRecallCurve(**options)  # noqa: E731
        functional = None if form == "groups" else lambda **batch: tre.functional.precision_recall_curve(**batch, **options)
    else:
        make, functional = lambda: tre.RecallAtFixedPrecision(MIN_PRECISION, **options), None  # noqa: E731
    return MetricCase(name=name, make=make, batches=batches, expected=_expected(kind, batches, form == "adaptive_k"),
                      functional=functional, flatten=_points)


@pytest.mark.parametrize("name", CASES)
def test_metric(name):
    case = build(name)
    assert not any(math.isnan(value) for value in case.expected.values())  # every group counted a query
    check_metric(case)


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, CASES, str(tmp_path))


@pytest.mark.parametrize("adaptive_k", [False, True])
def test_both_equal_torchmetrics_retrieval_classes(adaptive_k):
    """torchmetrics on the flat form of distinct scores (its order of tied scores is not fixed), skipping
    the query without a relevant item as the classes do by default; torchmetrics computes in float32."""
    gen = torch.Generator().manual_seed(1)
    preds = torch.rand(9, ITEMS, generator=gen, dtype=torch.float64)
    target = (torch.rand(9, ITEMS, generator=gen) < 0.35).long()
    target[0] = 0
    mask = torch.rand(9, ITEMS, generator=gen) < 0.6  # fewer candidates than K: adaptive_k divides by them
    flat = {"preds": preds[mask], "target": target[mask], "indexes": torch.arange(9).unsqueeze(1).expand_as(mask)[mask]}
    ours = tre.PrecisionRecallCurve(K + 2, adaptive_k=adaptive_k)
    ours.update(preds, target, mask=mask)
    theirs = RetrievalPrecisionRecallCurve(max_k=K + 2, adaptive_k=adaptive_k, empty_target_action="skip")
    theirs.update(**flat)
    for got, want in zip(ours.compute(), theirs.compute(), strict=True):
        torch.testing.assert_close(got.double(), want.double(), rtol=0, atol=1e-6)
    for min_precision in (0.0, 0.3, 0.6, 1.0):
        ours = tre.RecallAtFixedPrecision(min_precision, K + 2, adaptive_k=adaptive_k)
        ours.update(preds, target, mask=mask)
        theirs = RetrievalRecallAtFixedPrecision(min_precision, max_k=K + 2, adaptive_k=adaptive_k,
                                                 empty_target_action="skip")
        theirs.update(**flat)
        (recall, cutoff), (their_recall, their_cutoff) = ours.compute(), theirs.compute()
        assert recall.item() == pytest.approx(their_recall.item(), abs=1e-6) and cutoff.item() == their_cutoff.item()
