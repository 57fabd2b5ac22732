"""RecBole-style negatives: never a known item, uniform (or by weight) over the others, with replacement,
reproducible with a generator; the frequencies are checked against the multinomial they must follow."""

from __future__ import annotations

import math

import pytest
import torch

from torchrec_eval.sampled.sampler import sample_negatives

KNOWN = torch.tensor([[0, 1, -1, -1], [2, 3, 4, 4], [7, -1, -1, -1], [0, 2, 4, 6]])
N = 8


def _counts(weights: torch.Tensor | None, rounds: int = 2000) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1)
    draws = torch.cat([sample_negatives(KNOWN, N, 5, weights=weights, generator=gen) for _ in range(rounds)], 1)
    return torch.stack([torch.bincount(row, minlength=N) for row in draws]).double()


@pytest.mark.parametrize("weighted", [False, True])
def test_the_draws_follow_the_multinomial_over_the_unknown_items(weighted):
    weights = torch.tensor([1.0, 2.0, 1.0, 4.0, 1.0, 0.5, 1.0, 3.0]) if weighted else None
    counts = _counts(weights)
    total = counts.sum(1, keepdim=True)
    for row, known in enumerate(KNOWN.tolist()):
        allowed = torch.tensor([item not in known for item in range(N)], dtype=torch.float64)
        share = allowed * (weights if weights is not None else torch.ones(N))
        share = share / share.sum()
        expected = total[row] * share
        spread = (total[row] * share * (1 - share)).sqrt()
        assert bool((counts[row][allowed == 0] == 0).all())  # a known item is never drawn
        assert bool(((counts[row] - expected).abs() <= 5 * spread + 1e-9).all()), (row, counts[row], expected)


def test_the_same_generator_seed_gives_the_same_draws():
    one = sample_negatives(KNOWN, N, 6, generator=torch.Generator().manual_seed(3))
    two = sample_negatives(KNOWN, N, 6, generator=torch.Generator().manual_seed(3))
    assert torch.equal(one, two)


def test_a_row_that_knows_all_but_one_item_draws_it():
    known = torch.tensor([list(range(1, 50))])
    assert torch.equal(sample_negatives(known, 50, 7), torch.zeros(1, 7, dtype=torch.long))


@pytest.mark.parametrize(("known", "kwargs", "match"), [
    (torch.tensor([[0, 1, 2]]), {}, "knows every item"),
    (torch.tensor([[0, 9]]), {}, "known_ids"),
    (torch.tensor([[0.5]]), {}, "known_ids"),
    (torch.tensor([[0]]), {"weights": torch.ones(2)}, "weights"),
    (torch.tensor([[0]]), {"weights": -torch.ones(3)}, "weights"),
])
def test_bad_arguments_are_named(known, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sample_negatives(known, 3, 2, **kwargs)


def test_the_expected_share_of_a_rare_item():
    """Uniform over 9,999 unknown items: each gets 1/9,999 of the draws, within 5 standard errors."""
    gen = torch.Generator().manual_seed(0)
    draws = sample_negatives(torch.tensor([[0]] * 200), 10_000, 1000, generator=gen)
    hits = int((draws == 1).sum())
    expected = draws.numel() / 9999
    assert abs(hits - expected) <= 5 * math.sqrt(expected)


def test_pooled_rows_with_the_recbole_preset_give_recboles_uni_metrics():
    """RecBole's ``uniNNN`` on the same draws: m negatives per positive, every positive of a user ranked
    against the user's other positives and the union of the negatives; the suite with
    ``convention="recbole"`` on the pooled rows equals RecBole's per-user formulas, averaged over users."""
    import numpy as np

    import torchrec_eval as tre
    from tests.reference import sampled as ref
    from torchrec_eval.sampled.sampler import pooled_candidates

    gen = torch.Generator().manual_seed(5)
    users, n, m, k = 24, 300, 5, 5
    scores = torch.rand(users, n, generator=gen, dtype=torch.float64)  # distinct: RecBole's topk has no tie order
    positives = torch.stack([torch.randperm(n, generator=gen)[:3] for _ in range(users)])
    positives[torch.rand(users, 3, generator=gen) < 0.4] = -1
    positives[:, 0] = positives[:, 0].abs()  # every user keeps one positive
    seen = torch.stack([torch.randperm(n, generator=gen)[:10] for _ in range(users)])
    known = torch.cat([positives, seen], dim=1)
    negatives = sample_negatives(known, n, positives.shape[1] * m, generator=gen)
    ids, target = pooled_candidates(positives, negatives)
    preds = scores.gather(1, ids.clamp(min=0)).masked_fill(ids < 0, float("-inf"))
    families = ["hitrate", "recall", "mrr", "ndcg", "precision", "map"]
    suite = tre.RankingMetrics([f"{f}@{k}" for f in families], convention="recbole")
    suite.update(preds, target)
    got = suite.compute()
    expected = {family: [] for family in families}
    for u in range(users):
        pos = {int(p) for p in positives[u] if p >= 0}
        drawn = {int(x) for j, p in enumerate(positives[u].tolist()) if p >= 0 for x in negatives[u, j * m:(j + 1) * m]}
        row = {item: float(scores[u, item]) for item in pos | drawn}
        for family, value in ref.recbole_user_metrics(row, pos, k).items():
            expected[family].append(value)
    for family in families:
        assert float(got[f"{family}@{k}"]) == pytest.approx(float(np.mean(expected[family])), abs=1e-12), family
