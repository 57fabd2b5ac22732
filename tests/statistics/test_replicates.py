"""The hashed replicates against the distributions they must follow (moments within 4 standard errors), and
their one property that makes a comparison exact across batches: a function of the query id alone."""

from __future__ import annotations

import math

import pytest
import torch

from torchrec_eval.comparison.statistics.replicates import (
    enumerated_signs,
    permutations,
    poisson_weights,
    signs,
)

IDS = torch.arange(20_000)


def test_signs_are_fair_coins_independent_across_replicates():
    flips = signs(IDS, 64, seed=3)
    assert set(flips.unique().tolist()) == {-1.0, 1.0}
    assert abs(float(flips.mean())) < 4 / math.sqrt(flips.numel())
    correlation = float((flips[:, :-1] * flips[:, 1:]).mean())  # neighbouring replicates share a word's bits
    assert abs(correlation) < 4 / math.sqrt(flips[:, 1:].numel())


def test_poisson_weights_have_mean_and_variance_one():
    weights = poisson_weights(IDS, 50, seed=1)
    assert abs(float(weights.mean()) - 1) < 4 / math.sqrt(weights.numel())
    assert abs(float(weights.var()) - 1) < 4 * math.sqrt(2 / weights.numel())
    assert abs(float((weights == 0).double().mean()) - math.exp(-1)) < 4 * math.sqrt(0.25 / weights.numel())


@pytest.mark.parametrize("models", [3, 7])  # orders from a table of all 3!, and by argsort beyond 6 models
def test_permutations_are_uniform_orders(models):
    orders = permutations(IDS[:5000], 20, models, seed=2)
    assert torch.equal(orders.sort(dim=2).values, torch.arange(models).expand_as(orders))
    first = torch.bincount(orders[..., 0].flatten(), minlength=models).double() / orders[..., 0].numel()
    share = 1 / models
    assert bool(((first - share).abs() < 4 * math.sqrt(share * (1 - share) / orders[..., 0].numel())).all())


def test_draws_depend_on_the_query_id_alone():
    ids = torch.tensor([5, 9, 5])
    for draw in (signs(ids, 40, 0), poisson_weights(ids, 40, 0), permutations(ids, 40, 4, 0)):
        assert torch.equal(draw[0], draw[2]) and not torch.equal(draw[0], draw[1])
    assert not torch.equal(signs(ids, 40, 0), signs(ids, 40, 1))  # another seed, other draws


def test_the_enumeration_holds_every_sign_pattern_once():
    patterns = enumerated_signs(torch.arange(5), 32).T  # [32, 5]
    assert len({tuple(row.tolist()) for row in patterns}) == 32 and bool((patterns[0] == 1).all())
