"""``exclude_ids`` kept as ids (no [B, N] mask) gives exactly what the equivalent ``mask`` gives.

The mask path is the one tested against the oracles; here every top-k family, both target forms,
every tie order that takes the id path, boundary ties, repeated and padded ids, rows with every
item excluded, excluded relevant items, and -inf scores on top.
"""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.ranking.families import REGISTRY

NAMES = [f"{family}@{k}" for family, spec in REGISTRY.items() if spec.cutoff == "k" for k in (1, 4, 9)] + \
    ["rprecision", "num_rel"]


def batch(kind: str, seed: int):
    gen = torch.Generator().manual_seed(seed)
    rows, items = 7, 12
    if kind == "constant":
        scores = torch.zeros(rows, items)
    elif kind == "ties":
        scores = torch.randint(0, 3, (rows, items), generator=gen).float()
    else:
        scores = torch.randn(rows, items, generator=gen)
    target = torch.randint(0, 4, (rows, items), generator=gen) * (torch.rand(rows, items, generator=gen) < 0.5)
    exclude = torch.randint(-1, items, (rows, 5), generator=gen)
    exclude[0] = torch.tensor([3, 3, -1, 3, 0])  # repeats and padding
    exclude[1] = -1  # nothing excluded
    exclude[2] = torch.arange(items)[:5]
    keep = torch.ones(rows, items, dtype=torch.bool)
    for row in range(rows):
        ids = exclude[row][exclude[row] >= 0]
        keep[row, ids] = False
    return scores, target, exclude, keep


@pytest.mark.parametrize("kind", ["random", "ties", "constant"])
@pytest.mark.parametrize("ties", ["index", "reverse_index", "pessimistic", "optimistic"])
@pytest.mark.parametrize("form", ["binary", "graded", "ids"])
@pytest.mark.parametrize("validate_args", [True, False])
def test_exclude_ids_equal_the_mask(kind, ties, form, validate_args):
    scores, target, exclude, keep = batch(kind, seed=len(kind) + len(ties))
    suites = [tre.RankingMetrics(NAMES, ties=ties, validate_args=validate_args) for _ in range(2)]
    if form == "ids":
        width = int((target > 0).sum(1).max())
        order = torch.argsort((target == 0).to(torch.uint8), dim=1, stable=True)[:, :width]
        ids = torch.where(torch.arange(width) < (target > 0).sum(1, keepdim=True), order, -1)
        gains = target.gather(1, order).double()
        suites[0].update(scores, target_ids=ids, target_gains=gains, exclude_ids=exclude)
        suites[1].update(scores, target_ids=ids, target_gains=gains, mask=keep)
    else:
        target = target > 0 if form == "binary" else target
        suites[0].update(scores, target, exclude_ids=exclude)
        suites[1].update(scores, target, mask=keep)
    got, expected = suites[0].compute(), suites[1].compute()
    for key, value in expected.items():
        assert torch.allclose(got[key], value, atol=1e-12, equal_nan=True), key


def test_exclude_ids_with_neg_inf_scores_too():
    scores, target, exclude, keep = batch("ties", seed=3)
    gone = torch.rand(scores.shape, generator=torch.Generator().manual_seed(4)) < 0.2
    a, b = tre.RankingMetrics(NAMES), tre.RankingMetrics(NAMES)
    a.update(scores.masked_fill(gone, float("-inf")), target, exclude_ids=exclude)
    b.update(scores, target, mask=keep & ~gone)
    for key, value in b.compute().items():
        assert torch.allclose(a.compute()[key], value, atol=1e-12, equal_nan=True), key


@pytest.mark.parametrize("ties", ["index", "reverse_index"])
def test_the_best_scored_items_excluded(ties):
    """Seen items are often the model's best: more excluded items at the top than the first read holds."""
    gen = torch.Generator().manual_seed(7)
    scores = torch.randint(0, 50, (6, 300), generator=gen).float()  # ties too
    target = torch.rand(6, 300, generator=gen) < 0.2
    exclude = torch.topk(scores, 80, dim=1).indices  # the 80 best of every row
    exclude[1, 40:] = -1
    keep = torch.ones_like(target).scatter_(1, exclude.clamp(min=0), False)
    keep[1] = True
    keep[1, exclude[1, :40]] = False
    a, b = tre.RankingMetrics(NAMES, ties=ties), tre.RankingMetrics(NAMES, ties=ties)
    a.update(scores, target, exclude_ids=exclude)
    b.update(scores, target, mask=keep)
    for key, value in b.compute().items():
        assert torch.allclose(a.compute()[key], value, atol=1e-12, equal_nan=True), key


@pytest.mark.parametrize("validate_args", [True, False])
@pytest.mark.parametrize("excluded", [True, False])
def test_ids_form_with_neg_inf_scores_equals_the_mask(validate_args, excluded):
    """The ids form reads -inf off the ranked list and the targets' scores (no pass over [B, N]): equal
    to the dense mask, with targets scored -inf, rows with fewer candidates than k, and precision
    over the retrieved items (which reads the number of candidates)."""
    scores, target, exclude, keep = batch("ties", seed=11)
    gone = torch.rand(scores.shape, generator=torch.Generator().manual_seed(12)) < 0.3
    gone[3, 2:] = True  # two candidates left: fewer than k
    gone[4] = True  # none left
    target[5, 0] = 3
    gone[5, 0] = True  # a relevant item scored -inf is not a candidate
    width = int((target > 0).sum(1).max())
    order = torch.argsort((target == 0).to(torch.uint8), dim=1, stable=True)[:, :width]
    ids = torch.where(torch.arange(width) < (target > 0).sum(1, keepdim=True), order, -1)
    gains = target.gather(1, order).double()
    # bpref and Judged read the judgments: the dense form judges every candidate, so their ids form lists every
    # item (gain 0: judged non-relevant); the others' the relevant items only
    judging = [name for name in NAMES if REGISTRY[name.partition("@")[0]].reads_judged]
    others = [name for name in NAMES if name not in judging]  # precision@1/4/9 over the retrieved items
    every = torch.arange(scores.shape[1]).expand_as(scores)
    for names, target_ids, target_gains in ((others, ids, gains), (judging, every, target.double())):
        options = {"precision": {"denominator": "retrieved"}} if "precision@1" in names else {}
        a = tre.RankingMetrics(names, validate_args=validate_args, options=options, empty_target_action="neg")
        b = tre.RankingMetrics(names, options=options, empty_target_action="neg")
        a.update(scores.masked_fill(gone, float("-inf")), target_ids=target_ids, target_gains=target_gains,
                 exclude_ids=exclude if excluded else None)
        b.update(scores, target, mask=(keep if excluded else torch.ones_like(keep)) & ~gone)
        for key, value in b.compute().items():
            assert torch.allclose(a.compute()[key], value, atol=1e-12, equal_nan=True), key
