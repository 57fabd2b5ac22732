"""``convention="cornac"`` against cornac 3's own metric classes, user by user as its ``ranking_eval`` calls them:
tied scores everywhere (its MAP puts a tie at its group's last rank, its AUC counts a tied pair 0, whatever
the order), users without a positive skipped, and excluded (training) items left out of the candidates."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from torchrec_eval import functional as F

metrics = pytest.importorskip("cornac.metrics")

ITEMS = 12


def _batch(seed: int, rows: int = 30) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scores with many ties (5 levels), binary test positives, and a training item per user that is not a
    candidate; a user without a positive."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, 5, (rows, ITEMS), generator=gen).double()
    target = torch.rand(rows, ITEMS, generator=gen) < 0.3
    target[0] = False
    seen = torch.randint(0, ITEMS, (rows, 1), generator=gen)
    target.scatter_(1, seen, False)
    return preds, target, seen


def _cornac(metric, preds: torch.Tensor, target: torch.Tensor, seen: torch.Tensor, ranked: bool) -> list[float]:
    """cornac's per-user values (NaN for a user it skips: no test positive), on the user's candidates."""
    values = []
    for scores, positives, trained in zip(preds.numpy(), target.numpy(), seen.numpy(), strict=True):
        candidates = np.setdiff1d(np.arange(ITEMS), trained)
        gt_pos = np.nonzero(positives)[0]
        if len(gt_pos) == 0:
            values.append(float("nan"))
            continue
        item_scores = scores[candidates]
        # cornac's Recommender.rank without k: the candidates by descending score (numpy's argsort reversed)
        pd_rank = candidates[item_scores.argsort()[::-1]] if ranked else None
        values.append(float(metric.compute(gt_pos=gt_pos, pd_rank=pd_rank, pd_scores=item_scores,
                                           item_indices=candidates)))
    return values


def _close(ours: torch.Tensor, theirs: list[float]) -> None:
    torch.testing.assert_close(ours, torch.tensor(theirs, dtype=torch.float64), rtol=0, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("ties", ["index", "reverse_index", "average"])
def test_map_and_auc_equal_cornac_on_tied_scores_whatever_the_tie_order(ties):
    preds, target, seen = _batch(seed=1)
    map_values = F.map(preds, target, k=ITEMS, exclude_ids=seen, convention="cornac", ties=ties, reduction="none")
    _close(map_values, _cornac(metrics.MAP(), preds, target, seen, ranked=False))
    auc = tre.AUC(convention="cornac")
    auc.update(preds, target, exclude_ids=seen)
    peer = _cornac(metrics.AUC(), preds, target, seen, ranked=False)
    assert float(auc.compute()) == pytest.approx(np.nanmean(peer), abs=1e-12)
    _close(F.auc(preds, target, exclude_ids=seen, tie_credit=0.0, reduction="none"), peer)
    # the default counts a tied pair 1/2, and the suite's ids form reads the same pairs
    assert float(F.auc(preds, target, exclude_ids=seen)) > float(auc.compute())
    ids = torch.where(target, torch.arange(ITEMS), -1)
    suite = tre.RankingMetrics(["auc", "map@12"], convention="cornac", ties=ties)
    suite.update(preds, target_ids=ids, exclude_ids=seen)
    assert float(suite.compute()["auc"]) == pytest.approx(np.nanmean(peer), abs=1e-12)
    assert float(suite.compute()["map@12"]) == pytest.approx(float(map_values.nanmean()), abs=1e-12)


def test_auc_tie_credit_in_a_chunked_catalogue():
    preds, target, _ = _batch(seed=2)
    ids = torch.where(target, torch.arange(ITEMS), -1)
    metric = tre.AUC(tie_credit=0.0)
    with metric.catalogue(num_items=ITEMS, target_ids=ids, target_scores=preds.gather(1, ids.clamp(min=0))) as chunks:
        for start, stop in ((0, 5), (5, ITEMS)):
            chunks.add(preds[:, start:stop], start)
    assert float(metric.compute()) == pytest.approx(float(F.auc(preds, target, tie_credit=0.0)), abs=1e-12)


@pytest.mark.parametrize("k", [1, 3, 8])
def test_the_top_k_metrics_equal_cornac_on_distinct_scores(k):
    """cornac breaks score ties by numpy's order, which it does not specify: distinct scores here."""
    preds, target, seen = _batch(seed=k)
    preds = preds + torch.rand(preds.shape, generator=torch.Generator().manual_seed(k)) / 10  # no ties
    for ours, theirs in ((F.ndcg, metrics.NDCG(k=k)), (F.precision, metrics.Precision(k=k)),
                         (F.recall, metrics.Recall(k=k)), (F.hitrate, metrics.HitRatio(k=k)),
                         (F.ncrr, metrics.NCRR(k=k)), (F.f1, metrics.FMeasure(k=k))):
        values = ours(preds, target, k=k, exclude_ids=seen, convention="cornac", reduction="none")
        _close(values, _cornac(theirs, preds, target, seen, ranked=True))
    _close(F.mrr(preds, target, k=ITEMS, exclude_ids=seen, convention="cornac", reduction="none"),
           _cornac(metrics.MRR(), preds, target, seen, ranked=True))


def test_group_max_reads_whole_tie_groups_in_the_ranked_form_and_refuses_nothing_else():
    """A ranked list has no tied scores: every item has its own rank, and the option changes nothing."""
    ranked, ids = torch.tensor([[3, 0, 5, 1]]), torch.tensor([[0, 1, -1]])
    assert float(F.map(ranked_ids=ranked, target_ids=ids, k=4, tie_rank="group_max")) == \
        float(F.map(ranked_ids=ranked, target_ids=ids, k=4))
    with pytest.raises(ValueError, match="`tie_rank` of map must be one of"):
        F.map(torch.rand(1, 4), torch.tensor([[1, 0, 0, 1]]), k=2, tie_rank="max")
    with pytest.raises(ValueError, match=r"`tie_credit` of auc must be one of \(0.5, 0.0\), got 0.25"):
        tre.AUC(tie_credit=0.25)
