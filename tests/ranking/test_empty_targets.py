"""Queries without a relevant item in a binary view: every top-k family that reads relevance is 0 there by its
formula, so its member leaves the values as they are; ``empty_target_action`` must still score such a query 0
("neg") or leave it out of the mean ("skip") for every such family, alone and beside NumRet (which reads no
relevance: it counts every query with a judgment, as trec_eval does), in the dense, ids and ranked forms, against
a batch that holds the other queries only."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.ranking.families import REGISTRY

# every family whose empty query is the one without a relevant item (FallOut's and Judged@k's have counts of their own)
FAMILIES = [name if spec.cutoff == "none" else f"{name}@5" for name, spec in REGISTRY.items()
            if spec.empty_basis == "relevant"]
EMPTY = [0, 3, 4]  # the queries without a relevant item


def _batch(form: str) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(11)
    scores = torch.randn(7, 12, generator=gen)
    target_ids = torch.stack([torch.randperm(12, generator=gen)[:4] for _ in range(7)])
    target_ids[:, -1] = -1
    target_ids[EMPTY] = -1
    if form == "dense":
        target = torch.zeros(7, 13, dtype=torch.bool).scatter_(1, torch.where(target_ids < 0, 12, target_ids), True)
        return {"preds": scores, "target": target[:, :12]}
    if form == "ranked":
        return {"ranked_ids": torch.topk(scores, 8, dim=1).indices, "target_ids": target_ids}
    return {"preds": scores, "target_ids": target_ids}


def _rows(batch: dict[str, torch.Tensor], rows: list[int]) -> dict[str, torch.Tensor]:
    return {name: value[rows] for name, value in batch.items()}


@pytest.mark.parametrize("form", ["dense", "ids", "ranked"])
@pytest.mark.parametrize("metrics", [[name] for name in FAMILIES] + [["num_ret@5", "ndcg@5", "map@5"]], ids=str)
def test_an_empty_query_scores_zero_or_is_left_out(metrics, form):
    if form == "ranked" and any(REGISTRY[name.split("@")[0]].reads_non_relevant for name in metrics):
        pytest.skip("FallOut reads every candidate: not the ranked form")
    batch = _batch(form)
    kept = [row for row in range(7) if row not in EMPTY]
    judged = form == "dense"  # the dense form judges every candidate; the ids forms' empty queries list no id
    scored = tre.RankingMetrics(metrics, empty_target_action="neg", validate_args=False).per_query(**batch)
    for key, values in scored.items():
        want_empty = 5.0 if key == "num_ret@5" and judged else 0.0  # NumRet: the listed items of a judged query
        assert values[EMPTY].eq(want_empty).all(), (key, values)
    skipping = tre.RankingMetrics(metrics, empty_target_action="skip", validate_args=False)
    skipping.update(**batch)
    alone = tre.RankingMetrics(metrics, empty_target_action="skip", validate_args=False)
    alone.update(**_rows(batch, kept))
    got, want = skipping.compute(), alone.compute()
    for key in want:
        if key == "num_ret@5" and judged:
            continue  # counted on every query: 5 each, the mean of all 7 and of the 4 kept alike
        torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=0, msg=key)
