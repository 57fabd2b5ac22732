"""FallOut against torchmetrics' ``RetrievalFallOut`` itself, in every input form that has scores, with each
``empty_target_action`` (the empty query is the one without a non-relevant candidate), in a suite beside the
families whose empty query has no relevant item, and in a chunked catalogue."""

from __future__ import annotations

import math

import pytest
import torch
from torchmetrics.retrieval import RetrievalFallOut

import torchrec_eval as tre
from torchrec_eval import functional as F


def _batch(seed: int, rows: int = 20, items: int = 9) -> tuple[torch.Tensor, torch.Tensor]:
    """Distinct scores (no library's tie rule matters), short lists (-inf: not a candidate), a query without a
    relevant item, one with only relevant candidates, one with a single candidate."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randperm(rows * items, generator=gen).reshape(rows, items).double()
    target = torch.rand(rows, items, generator=gen) < 0.4
    lengths = torch.randint(1, items + 1, (rows,), generator=gen)
    lengths[2], lengths[3] = items, 1
    target[0], target[2] = False, True
    listed = torch.arange(items) < lengths.unsqueeze(1)
    return preds.masked_fill(~listed, float("-inf")), target & listed


def _torchmetrics(preds: torch.Tensor, target: torch.Tensor, k: int, action: str) -> float:
    """torchmetrics' class on the candidates only (it has no notion of a non-candidate)."""
    listed = preds > float("-inf")
    rows = torch.arange(len(preds)).unsqueeze(1).expand_as(preds)
    metric = RetrievalFallOut(top_k=k, empty_target_action=action)
    metric.update(preds[listed].float(), target[listed], indexes=rows[listed])
    return float(metric.compute())


@pytest.mark.parametrize("action", ["pos", "neg", "skip"])
@pytest.mark.parametrize("k", [1, 4, 9])
def test_fallout_equals_torchmetrics(k, action):
    preds, target = _batch(seed=k)
    expected = _torchmetrics(preds, target, k, action)
    ours = F.fallout(preds, target, k=k, empty_target_action=action)
    assert float(ours) == pytest.approx(expected, abs=1e-6)  # torchmetrics averages in float32
    assert F.fallout(preds, target, k=k, empty_target_action=action, reduction="none").isnan().sum() == \
        (2 if action == "skip" else 0)  # the all-relevant query and the single relevant candidate


def test_every_scored_form_gives_the_same_values():
    preds, target = _batch(seed=5)
    listed = preds > float("-inf")
    dense = F.fallout(preds, target, k=4, reduction="none")
    ids = torch.where(target, torch.arange(preds.shape[1]), -1)
    forms = {
        "ids, -inf": F.fallout(preds, target_ids=ids, k=4, reduction="none"),
        "ids, mask": F.fallout(preds.nan_to_num(neginf=0.0), target_ids=ids, mask=listed, k=4, reduction="none"),
        "dense, mask": F.fallout(preds.nan_to_num(neginf=0.0), target, mask=listed, k=4, reduction="none"),
        "ids, validate_args=False": F.fallout(preds, target_ids=ids, k=4, reduction="none", validate_args=False),
    }
    for name, values in forms.items():
        torch.testing.assert_close(values, dense, rtol=0, atol=1e-15, equal_nan=True, msg=name)
    full = preds.nan_to_num(neginf=-1.0)  # every item a candidate: the ids form reads the list's own ranks
    torch.testing.assert_close(F.fallout(full, target_ids=ids, k=4, reduction="none"),
                               F.fallout(full, target, k=4, reduction="none"), rtol=0, atol=1e-15, equal_nan=True)
    # excluded ids are not candidates: excluding a row's unlisted items changes nothing, excluding a listed
    # non-relevant one leaves one fewer non-relevant candidate
    full = torch.arange(preds.shape[1]).expand_as(preds)
    excluded = F.fallout(preds.nan_to_num(neginf=-1e9), target_ids=ids, exclude_ids=torch.where(listed, -1, full),
                         k=4, reduction="none")
    torch.testing.assert_close(excluded, dense, rtol=0, atol=1e-15, equal_nan=True)


def test_the_empty_query_is_the_one_without_a_non_relevant_candidate_in_a_suite():
    """FallOut keeps its own count of queries beside NDCG's: each skips its own empty queries, per query too."""
    preds, target = _batch(seed=7)
    suite = tre.RankingMetrics(["fallout@4", "ndcg@4"])
    for half in (slice(0, 7), slice(7, None)):
        suite.update(preds[half], target[half])
    out = suite.compute()
    assert float(out["fallout@4"]) == pytest.approx(_torchmetrics(preds, target, 4, "skip"), abs=1e-6)
    assert float(out["ndcg@4"]) == pytest.approx(float(F.ndcg(preds, target, k=4)), abs=1e-15)
    values = F.fallout(preds, target, k=4, reduction="none")
    assert not math.isnan(values[0]) and math.isnan(values[2])  # no relevant item: counted; all relevant: not
    with pytest.raises(ValueError, match="Query 2 of the batch has no relevant item \\(for FallOut: no non-relevant"):
        F.fallout(preds, target, k=4, empty_target_action="error")
    listed = tre.FallOut(k=4, empty_target_action="neg", empty_list_action="skip")
    listed.update(preds, target)
    kept = values.nan_to_num(0.0)  # "neg" scores the all-relevant queries 0, every list here is non-empty
    assert float(listed.compute()) == pytest.approx(float(kept.mean()), abs=1e-15)


def test_the_ranked_form_is_refused_and_leaves_the_state_as_it_was():
    metric = tre.FallOut(k=3)
    preds, target = _batch(seed=3)
    metric.update(preds, target)
    before = metric.stats.clone()
    with pytest.raises(ValueError, match="FallOut divides by each query's non-relevant candidates.*`ranked_ids`"):
        metric.update(ranked_ids=torch.tensor([[0, 1, 2]]), target_ids=torch.tensor([[1]]))
    assert torch.equal(metric.stats, before)


def test_a_chunked_catalogue_counts_every_candidate():
    preds, target = _batch(seed=11, items=12)
    ids = torch.where(target, torch.arange(12), -1)
    metric = tre.FallOut(k=[2, 5])
    with metric.catalogue(num_items=12, target_ids=ids) as catalogue:
        for start, stop in ((5, 9), (0, 5), (9, 12)):
            catalogue.add(preds[:, start:stop], start)
    expected = F.fallout(preds, target, k=[2, 5])
    for key, value in metric.compute().items():
        assert float(value) == pytest.approx(float(expected[key]), abs=1e-15)
