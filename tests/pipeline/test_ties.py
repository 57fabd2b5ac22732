"""Tie handling: every tie order against the brute-force reference, ``ties="average"`` against enumeration."""

import math

import pytest
import torch

import torchrec_eval as tre
from tests.reference import ranking as ref

METRICS = ref.METRICS


def _case(seed, rows=6, items=7, levels=3, grades=(0, 0, 1, 2)):
    generator = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, levels, (rows, items), generator=generator).float()
    choice = torch.randint(0, len(grades), (rows, items), generator=generator)
    target = torch.tensor(grades)[choice]
    mask = torch.rand(rows, items, generator=generator) > 0.15
    return preds, target, mask


@pytest.mark.parametrize("ties", ["index", "reverse_index", "pessimistic", "optimistic"])
@pytest.mark.parametrize("metric", METRICS)
def test_deterministic_tie_orders_match_reference(metric, ties):
    preds, target, mask = _case(1)
    k = None if metric == "rprecision" else 3
    expected = ref.evaluate_dense(metric, preds, target, k, mask=mask, ties=ties)
    got = getattr(tre.functional, metric)(preds, target, k=k, mask=mask, ties=ties, reduction="none")
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64), equal_nan=True)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("metric", METRICS)
def test_average_ties_equal_the_mean_over_all_orderings(metric, seed):
    preds, target, mask = _case(seed)
    for k in [None] if metric == "rprecision" else [1, 3, 7]:
        got = getattr(tre.functional, metric)(preds, target, k=k, mask=mask, ties="average", reduction="none")
        expected = [
            ref.average_over_ties(metric, p, t, k, mask=m)
            for p, t, m in zip(preds, target, mask, strict=False)
        ]
        expected = torch.tensor([math.nan if v is None else v for v in expected], dtype=torch.float64)
        torch.testing.assert_close(got, expected, equal_nan=True, msg=f"{metric}@{k}")


def test_average_ties_in_the_ids_form_and_a_suite():
    preds, target, mask = _case(7, rows=4, items=6)
    target = (target > 0).long()
    width = int(target.sum(1).max())
    order = torch.argsort(1 - target, dim=1, stable=True)[:, :width]
    ids = torch.where(torch.arange(width) < target.sum(1, keepdim=True), order, -1)
    names = ["ndcg@3", "map@3", "mrr@3", "hitrate@2", "recall@3"]
    dense = tre.RankingMetrics(names, ties="average")
    dense.update(preds, target)
    by_ids = tre.RankingMetrics(names, ties="average")
    by_ids.update(preds, target_ids=ids)
    for name in names:
        family, k = name.split("@")
        expected = [ref.average_over_ties(family, p, t, int(k)) for p, t in zip(preds, target, strict=False)]
        expected = sum(v for v in expected if v is not None) / sum(v is not None for v in expected)
        assert dense.compute()[name].item() == pytest.approx(expected, abs=1e-12)
        assert by_ids.compute()[name].item() == pytest.approx(expected, abs=1e-12)


def test_constant_scores_are_judged_honestly():
    """A model with constant scores: index order flatters it when relevant items come first."""
    target = torch.tensor([[1, 1, 0, 0, 0, 0, 0, 0, 0, 0]])
    preds = torch.zeros(1, 10)
    naive = tre.functional.ndcg(preds, target, k=2).item()
    pessimistic = tre.functional.ndcg(preds, target, k=2, ties="pessimistic").item()
    average = tre.functional.ndcg(preds, target, k=2, ties="average").item()
    assert naive == pytest.approx(1.0)
    assert pessimistic == 0.0
    assert average == pytest.approx(0.2)  # each of the 2 slots holds a relevant item with probability 2/10


def test_boundary_ties_resolved_the_same_for_any_batch_size():
    generator = torch.Generator().manual_seed(3)
    preds = torch.randint(0, 4, (64, 300), generator=generator).float()
    target = torch.rand(64, 300, generator=generator) < 0.1
    whole = tre.functional.ndcg(preds, target, k=10, reduction="none")
    parts = torch.cat(
        [
            tre.functional.ndcg(p, t, k=10, reduction="none")
            for p, t in zip(preds.split(5), target.split(5), strict=False)
        ]
    )
    torch.testing.assert_close(whole, parts, equal_nan=True)
    expected = torch.tensor(ref.evaluate_dense("ndcg", preds, target, 10), dtype=torch.float64)
    torch.testing.assert_close(whole, expected, equal_nan=True)


def test_unknown_ties_value_is_rejected():
    with pytest.raises(ValueError, match="`ties` must be one of"):
        tre.NDCG(k=3, ties="random")


@pytest.mark.parametrize("metric", ["ndcg", "map", "mrr", "hitrate", "dcg"])
def test_average_ties_across_row_chunks_and_graded_targets(metric):
    """Many rows whose last tie group goes on past the cut (counted a few rows at a time), graded gains."""
    gen = torch.Generator().manual_seed(11)
    preds = torch.randint(0, 2, (20, 7), generator=gen).double()
    preds[::3] = 0.5  # constant rows
    target = torch.randint(0, 3, (20, 7), generator=gen)
    got = getattr(tre.functional, metric)(preds, target, k=2, ties="average", reduction="none")
    expected = [ref.average_over_ties(metric, p, t, 2) for p, t in zip(preds.tolist(), target.tolist(), strict=True)]
    expected = torch.tensor([math.nan if v is None else v for v in expected], dtype=torch.float64)
    torch.testing.assert_close(got, expected, equal_nan=True)
