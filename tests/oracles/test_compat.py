"""Compat@k (issue 55) against ir-measures' own ``Compat(p, normalize)`` (``compat_provider.py``) on seeded runs:
graded judgments, tied scores (ties by docno, as ir-measures sorts its run, which ``ties="index"`` is when docnos
follow the item index), queries without a relevant item, in the dense, ids and ranked forms, at k 1, 5 and 20."""

from __future__ import annotations

import pytest
import torch

from torchrec_eval import functional as F

ir_measures = pytest.importorskip("ir_measures")

QUERIES, ITEMS = 14, 30


def _run(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive scores with ties (2 decimals), grades 0..3 (two queries without a relevant item)."""
    gen = torch.Generator().manual_seed(seed)
    scores = (torch.randint(1, 40, (QUERIES, ITEMS), generator=gen).double() / 40)
    grades = torch.where(torch.rand(QUERIES, ITEMS, generator=gen) < 0.3,
                         torch.randint(1, 4, (QUERIES, ITEMS), generator=gen), 0)
    grades[:2] = 0
    return scores, grades


def _peer(scores, grades, k, p, normalize) -> torch.Tensor:
    """ir-measures on the run cut at k (score descending, docno ascending) and the qrels in docno order."""
    qrels = {f"q{b}": {f"d{i:02d}": int(grades[b, i]) for i in range(ITEMS)} for b in range(QUERIES)}
    run = {}
    for b in range(QUERIES):
        top = sorted(range(ITEMS), key=lambda i: (-float(scores[b, i]), i))[:k]
        run[f"q{b}"] = {f"d{i:02d}": float(scores[b, i]) for i in top}
    measure = ir_measures.Compat(p=p, normalize=normalize)
    values = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    return torch.tensor([values[f"q{b}"] for b in range(QUERIES)], dtype=torch.float64)


def _forms(scores, grades, k) -> dict[str, dict]:
    order = grades.gt(0).to(torch.int8).argsort(dim=1, descending=True, stable=True)  # the judged relevant items
    judged = torch.where(grades.gather(1, order) > 0, order, -1)
    ranked = torch.stack([torch.tensor(sorted(range(ITEMS), key=lambda i: (-float(scores[b, i]), i))[:k])
                          for b in range(QUERIES)])
    ids = {"target_ids": judged, "target_gains": grades.gather(1, order) * (judged >= 0)}
    return {"dense": {"preds": scores, "target": grades}, "ids": {"preds": scores, **ids},
            "ranked": {"ranked_ids": ranked, **ids}}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(("p", "normalize"), [(0.95, True), (0.5, False), (0.8, True)])
def test_compat_is_ir_measures(seed, p, normalize):
    scores, grades = _run(seed)
    for k in (1, 5, 20):
        want = _peer(scores, grades, k, p, normalize)
        for form, inputs in _forms(scores, grades, k).items():
            got = F.compat(**inputs, k=k, p=p, normalize=normalize, reduction="none", empty_target_action="neg")
            torch.testing.assert_close(got, want, rtol=0, atol=1e-12, msg=f"{form} k={k}")


def test_binary_judgments_and_every_relevant_item_beyond_the_cut():
    """Binary grades (the ideal positions are the hit counts) and queries with more relevant items than k."""
    scores, grades = _run(3)
    grades = (grades > 0).long()
    grades[2:, :12] = 1
    for k in (3, 10):
        want = _peer(scores, grades, k, 0.9, True)
        got = F.compat(scores, grades, k=k, p=0.9, reduction="none", empty_target_action="neg")
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_options_are_refused_by_name():
    scores, grades = _run(4)
    for options, message in (({"p": 1.0}, "`p` of compat must be"), ({"normalize": "yes"}, "`normalize`"),
                             ({"ties": "average"}, "average")):
        with pytest.raises(ValueError, match=message):
            F.compat(scores, grades, k=5, **options)
