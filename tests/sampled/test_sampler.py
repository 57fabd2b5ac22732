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
