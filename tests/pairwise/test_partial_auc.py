"""pAUC@k (RecTools' ``PartialAUC``) against RecTools' own test cases and a transcription of its source.

* ``tests/reference/pairwise.py::rectools_partial_auc`` follows rectools/metrics/auc.py (0.17.0) step by
  step; it reproduces every case of RecTools' tests/metrics/test_auc.py and its docstring examples;
* the class equals it on RecTools' cases and on random recommendation lists written as full rankings;
* tied scores: the value is the mean of RecTools' value over every order of the tied items;
* the brute-force reference on tied random batches with masks, ``-inf``, ``exclude_ids``, queries without
  a relevant item or with fewer than k non-relevant candidates, every input form and both paths
  (searchsorted on the CPU, cumulative counts elsewhere), a suite, per-query values and a catalogue.
"""

from __future__ import annotations

import functools
import math

import pytest
import torch

import torchrec_eval as tre
from tests.reference import pairwise as ref
from torchrec_eval.members.steps import prepare
from torchrec_eval.pairwise import sorted_rows
from torchrec_eval.pairwise.member import PairwiseMember
from torchrec_eval.pairwise.negatives_above import partial_credits
from torchrec_eval.pairwise.sorted_rows import SortedRows
from torchrec_eval.pipeline import Inputs, Rules

TOL = {"rtol": 0, "atol": 1e-12}


def _close(actual, expected):
    actual = torch.as_tensor(actual).detach().to(torch.float64)
    expected = torch.as_tensor(expected, dtype=torch.float64).reshape(actual.shape)
    torch.testing.assert_close(actual, expected, equal_nan=True, **TOL)


def _nan(value):
    return math.nan if value is None else value


@pytest.fixture(params=["sparse", "dense"])
def credit_path(request, monkeypatch):
    """Run with the CPU searchsorted path and with the cumulative path used on other devices."""
    monkeypatch.setattr(sorted_rows, "partial_credits",
                        functools.partial(partial_credits, sparse=request.param == "sparse"))
    return request.param


# ----------------------------------------------------------------------------------------------
# RecTools' cases (tests/metrics/test_auc.py::TestPartialAUC and the PartialAUC docstring)
# ----------------------------------------------------------------------------------------------
CALC_RECO = list(zip([1, 2, 3, 3, 3, 4, 5, 5, 5, 5], [1, 2, 1, 2, 3, 1, 1, 2, 3, 5], [9, 1, 1, 2, 3, 1, 3, 7, 9, 1],
                     strict=True))
CALC_INTERACTIONS = list(zip([1, 2, 3, 3, 3, 4, 5, 5, 5, 5], [1, 1, 1, 2, 3, 1, 1, 2, 3, 4], strict=True))
DUP_RECO = list(zip([1, 1, 1, 2, 2, 2], [1, 2, 3, 1, 2, 3], [1, 2, 3, 4, 5, 6], strict=True))
DUP_INTERACTIONS = list(zip([1, 1, 1, 2, 2, 2], [1, 2, 1, 1, 2, 3], strict=True))
DOC_RECO = list(zip([1, 1, 2, 2, 2, 3, 3], [1, 2, 3, 1, 2, 3, 2], [1, 2, 1, 2, 3, 1, 2], strict=True))
DOC_INTERACTIONS = list(zip([1, 1, 2, 2, 3, 3], [1, 2, 1, 3, 1, 2], strict=True))

RECTOOLS_CASES = [  # (reco, interactions, k, insufficient_handling, {user: expected})
    (CALC_RECO, CALC_INTERACTIONS, 1, "ignore", {1: 0, 2: 0, 3: 1, 4: 1, 5: 0}),
    (CALC_RECO, CALC_INTERACTIONS, 3, "ignore", {1: 0, 2: 0, 3: 1, 4: 1, 5: 1 / 12}),
    (CALC_RECO, CALC_INTERACTIONS, 1, "exclude", {1: 0, 2: 0, 3: 1, 4: 1, 5: 0}),
    (CALC_RECO, CALC_INTERACTIONS, 3, "exclude", {1: 0, 3: 1, 4: 1, 5: 1 / 12}),  # user 2 excluded
    *[(DUP_RECO, DUP_INTERACTIONS, k, handling, {1: 1, 2: 0})
      for k in (1, 3) for handling in ("raise", "exclude", "ignore")],
    *[(DUP_RECO, [*DUP_INTERACTIONS, (1, 10)], 1, handling, {1: 2 / 3, 2: 0}) for handling in ("ignore", "exclude")],
    (DOC_RECO, DOC_INTERACTIONS, 1, "ignore", {1: 1, 2: 1, 3: 0}),
    (DOC_RECO, DOC_INTERACTIONS, 3, "ignore", {1: 1, 2: 1, 3: 1 / 3}),
    (DOC_RECO, DOC_INTERACTIONS, 3, "exclude", {1: 1, 2: 1}),
]


@pytest.mark.parametrize(("reco", "interactions", "k", "handling", "expected"), RECTOOLS_CASES)
def test_the_transcription_reproduces_rectools_tests(reco, interactions, k, handling, expected):
    got = ref.rectools_partial_auc(reco, interactions, k, handling)
    assert got.keys() == expected.keys()
    for user, value in expected.items():
        assert abs(got[user] - value) < 1e-12, (user, got[user], value)


def test_the_transcription_raises_and_skips_as_rectools():
    with pytest.raises(ValueError):  # test_raise_when_insufficient_recs
        ref.rectools_partial_auc(CALC_RECO, CALC_INTERACTIONS, 3, "raise")
    for handling in ("raise", "exclude", "ignore"):  # test_when_no_interactions: no user, a NaN mean
        assert ref.rectools_partial_auc([(1, 1, 1), (2, 1, 1)], [], 3, handling) == {}


def _as_full_ranking(reco, interactions, k, fillers):
    """Each test user's RecTools list as a full ranking (dense rows, distinct scores, mask for padding): its
    ranks 1..max (a missing rank: a non-relevant item), then ``fillers`` non-relevant items, then the test
    positives it did not recommend."""
    positives, ranked = {}, {}
    for user, item in interactions:
        positives.setdefault(user, set()).add(item)
    for user, item, rank in reco:
        ranked.setdefault(user, {})[rank] = item
    users, rows = sorted(positives), []
    for user in users:
        ranks = ranked.get(user, {})
        row = [ranks.get(rank) in positives[user] for rank in range(1, max(ranks, default=0) + 1)]
        row += [False] * fillers + [True] * len(positives[user] - set(ranks.values()))
        rows.append(row)
    width = max(len(row) for row in rows)
    target = torch.tensor([row + [False] * (width - len(row)) for row in rows])
    mask = torch.tensor([[i < len(row) for i in range(width)] for row in rows])
    preds = torch.arange(width, 0, -1, dtype=torch.float32).expand(len(rows), -1)
    return users, preds, target, mask


@pytest.mark.parametrize(("reco", "interactions", "k", "handling", "expected"),
                         [case for case in RECTOOLS_CASES if case[3] == "ignore"])
def test_partial_auc_reproduces_rectools_cases(reco, interactions, k, handling, expected):
    # k non-relevant items past each list: RecTools' unranked positives rank below k negatives
    users, preds, target, mask = _as_full_ranking(reco, interactions, k, fillers=k)
    metric = tre.PartialAUC(k=k, convention="rectools")
    values = metric.per_query(preds, target, mask=mask)
    _close(values, [expected[user] for user in users])
    metric.update(preds, target, mask=mask)
    _close(metric.compute(), sum(expected.values()) / len(expected))


def _random_lists(seed, users=12, items=9):
    gen = torch.Generator().manual_seed(seed)
    reco, interactions = [], []
    for user in range(users):
        length = int(torch.randint(0, items, (1,), generator=gen))
        listed = torch.randperm(items, generator=gen)[:length].tolist()
        ranks = sorted(torch.randperm(items + 3, generator=gen)[:length].add(1).tolist())  # gaps in the ranks
        reco += [(user, item, rank) for item, rank in zip(listed, ranks, strict=True)]
        interactions += [(user, int(i)) for i in torch.randint(0, items, (int(torch.randint(1, 4, (1,), generator=gen)),),
                                                             generator=gen)]
    return reco, interactions


@pytest.mark.parametrize("seed", range(3))
def test_random_lists_equal_rectools(seed):
    reco, interactions = _random_lists(seed)
    for k in (1, 2, 4):
        expected = ref.rectools_partial_auc(reco, interactions, k)
        users, preds, target, mask = _as_full_ranking(reco, interactions, k, fillers=k)
        got = tre.functional.partial_auc(preds, target, k=k, mask=mask, reduction="none")
        _close(got, [expected[user] for user in users])


def test_insufficient_queries_beside_rectools_rule():
    """A full ranking has every relevant candidate ranked: a query is insufficient when it has fewer than k
    non-relevant candidates. Written as the list alone (the unranked positives last), RecTools' excluded
    users are excluded here too, and so are the users whose list has fewer than k negatives and no
    unranked positive (which RecTools keeps: it counts on the catalogue's other items)."""
    reco, interactions = _random_lists(5)
    reco, interactions = [*reco, (100, 1, 1)], [*interactions, (100, 1)]  # every positive listed, no negative
    for k in (2, 3):
        kept = ref.rectools_partial_auc(reco, interactions, k, "exclude")
        users, preds, target, mask = _as_full_ranking(reco, interactions, k, fillers=0)
        got = tre.functional.partial_auc(preds, target, k=k, mask=mask, reduction="none",
                                         insufficient_handling="exclude")
        short = (mask & ~target).sum(1) < k
        for row, user in enumerate(users):
            if short[row]:
                assert math.isnan(got[row])
            else:
                assert user in kept and abs(float(got[row]) - kept[user]) < 1e-12
        assert kept[100] == 1.0 and 100 not in {user for row, user in enumerate(users) if not short[row]}


# ----------------------------------------------------------------------------------------------
# tied scores
# ----------------------------------------------------------------------------------------------
def test_ties_are_the_mean_over_every_order_of_the_tied_items(credit_path):
    gen = torch.Generator().manual_seed(2)
    preds = torch.randint(0, 3, (24, 6), generator=gen).float()
    target = (torch.rand(24, 6, generator=gen) < 0.4).long()
    for k in (1, 2, 3, 7):
        got = tre.functional.partial_auc(preds, target, k=k, reduction="none")
        expected = [ref.partial_auc_over_tie_orders(p, t, k) for p, t in zip(preds.tolist(), target.tolist(),
                                                                             strict=True)]
        _close(got, [_nan(v) for v in expected])
        _close(got, [_nan(ref.partial_auc(p, t, k)) for p, t in zip(preds.tolist(), target.tolist(), strict=True)])


def test_constant_scores_do_not_look_good():
    target = torch.tensor([[1, 0, 0, 0, 0, 0, 0, 0, 0, 1]])
    # each relevant item: c uniform on 0..8, E max(2 - c, 0) = (2 + 1) / 9
    _close(tre.functional.partial_auc(torch.zeros(1, 10), target, k=2), 3 / 9 / 2)
    _close(tre.functional.partial_auc(torch.zeros(1, 10), target, k=8), (8 + 7 + 6 + 5 + 4 + 3 + 2 + 1) / 9 / 8)


# ----------------------------------------------------------------------------------------------
# the brute-force reference: masks, -inf, empty and short queries, options, both paths
# ----------------------------------------------------------------------------------------------
def _data(seed, B=30, N=20):
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, 5, (B, N), generator=gen).float()
    target = torch.where(torch.rand(B, N, generator=gen) < 0.3, torch.randint(1, 4, (B, N), generator=gen), 0)
    mask = torch.rand(B, N, generator=gen) < 0.8
    preds[torch.rand(B, N, generator=gen) < 0.1] = float("-inf")  # not candidates either
    target[0] = 0  # no relevant item
    target[1] = 2  # every item relevant: no non-relevant candidate
    mask[2] = False
    mask[2, :3] = True  # three candidates: fewer than k non-relevant ones
    target[2, :3] = torch.tensor([0, 2, 0])
    return preds, target, mask


def _expected(preds, target, mask, k, action="skip", handling="ignore", threshold=None):
    """Per-query values (None: not counted) from the brute-force reference."""
    valid = mask & (preds > float("-inf"))
    out = []
    for scores, grades in ref.split_rows(preds, target, valid):
        value = ref.partial_auc(scores, grades, k, threshold)
        negatives = sum(1 for t in grades if not ref._relevant(t, threshold))
        if value is not None and negatives < k and handling == "exclude":
            value = "excluded"
        out.append(value)
    values = [ref.apply_empty(v, action) if v != "excluded" else None for v in out]
    return values


@pytest.mark.parametrize("action", ["skip", "neg", "pos"])
@pytest.mark.parametrize("handling", ["ignore", "exclude"])
def test_matches_the_reference(action, handling, credit_path):
    preds, target, mask = _data(3)
    ks = [1, 4, 30]
    metric = tre.PartialAUC(k=ks, empty_target_action=action, insufficient_handling=handling,
                            relevance_threshold=2)
    metric.update(preds[:11], target[:11], mask=mask[:11])
    metric.update(preds[11:], target[11:], mask=mask[11:])
    got = metric.compute()
    per_query = tre.functional.partial_auc(preds, target, k=ks, mask=mask, reduction="none",
                                           empty_target_action=action, insufficient_handling=handling,
                                           relevance_threshold=2)
    for k in ks:
        expected = _expected(preds, target, mask, k, action, handling, threshold=2)
        _close(per_query[f"pauc@{k}"], [_nan(v) for v in expected])
        _close(got[f"pauc@{k}"], ref.mean(expected))


def test_paths_agree_on_many_ties():
    gen = torch.Generator().manual_seed(7)
    preds = torch.randn(16, 2000, generator=gen).half().float()  # a float16 grid: many ties
    target = torch.rand(16, 2000, generator=gen) < 0.05
    mask = torch.rand(16, 2000, generator=gen) < 0.9
    candidates = prepare([PairwiseMember([("pauc", 3)])], Inputs(preds=preds, target=target, mask=mask),
                         Rules()).candidates
    rows = SortedRows(candidates)
    ks = [1, 10, 100, 1000]
    r1, c1 = partial_credits(rows, candidates.relevant, ks, sparse=True)
    r2, c2 = partial_credits(rows, candidates.relevant, ks, sparse=False)
    torch.testing.assert_close(r1, r2, rtol=0, atol=0)
    torch.testing.assert_close(c1, c2, rtol=1e-13, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# input forms, suites, per-query values, the catalogue
# ----------------------------------------------------------------------------------------------
def _ids(target):
    width = int((target > 0).sum(1).max())
    order = torch.argsort((target <= 0).to(torch.uint8), dim=1, stable=True)[:, :width]
    present = torch.arange(width) < (target > 0).sum(1, keepdim=True)
    return torch.where(present, order, -1), torch.where(present, target.gather(1, order), 0)


def test_input_forms_agree(credit_path):
    preds, target, mask = _data(8)
    preds = preds.masked_fill(~mask, float("-inf"))
    ids, gains = _ids(target)
    B, N = preds.shape
    dense = tre.functional.partial_auc(preds, target, k=[2, 5], reduction="none")
    assert not torch.isnan(dense["pauc@5"][3:]).all()
    for other in (
        tre.functional.partial_auc(preds, target_ids=ids, target_gains=gains, k=[2, 5], reduction="none"),
        tre.functional.partial_auc(preds, target, k=[2, 5], reduction="none", validate_args=False),
        tre.functional.partial_auc(preds.reshape(-1), target.reshape(-1), indexes=torch.arange(B).repeat_interleave(N),
                                   k=[2, 5], reduction="none"),
    ):
        for key in dense:
            _close(other[key], dense[key])
    # exclude_ids == mask False
    exclude = torch.tensor([[0, 3, -1]] * B)
    keep = torch.ones(B, N, dtype=torch.bool)
    keep[:, [0, 3]] = False
    _close(tre.functional.partial_auc(preds, target, k=3, exclude_ids=exclude),
           tre.functional.partial_auc(preds, target, k=3, mask=keep))
    _close(tre.functional.partial_auc(preds, target_ids=ids, k=3, exclude_ids=exclude),
           tre.functional.partial_auc(preds, target, k=3, mask=keep))


def test_suite_shares_the_sort_and_gives_per_query_values(credit_path):
    preds, target, mask = _data(10)
    suite = tre.RankingMetrics(["pauc@3", "auc", "partial_auc@8", "ctr@3", "ndcg@5"],
                               options={"pauc": {"insufficient_handling": "exclude"}})
    assert sum(isinstance(member, PairwiseMember) for member in suite.members) == 1
    assert suite.higher_is_better is True and tre.PartialAUC(k=3).higher_is_better is True
    values = suite.per_query(preds, target, mask=mask)
    suite.update(preds, target, mask=mask)
    got = suite.compute()
    for k in (3, 8):
        want = tre.functional.partial_auc(preds, target, k=k, mask=mask, insufficient_handling="exclude",
                                          reduction="none")
        _close(values[f"pauc@{k}"], want)
        _close(got[f"pauc@{k}"], want.nanmean())
    _close(got["auc"], tre.functional.auc(preds, target, mask=mask))
    groups = torch.arange(preds.shape[0]) % 3
    by_group = tre.PartialAUC(k=3, num_groups=3)
    by_group.update(preds, target, mask=mask, groups=groups)
    for group in range(3):
        rows = groups == group
        _close(by_group.compute()[group], tre.functional.partial_auc(preds[rows], target[rows], k=3, mask=mask[rows]))


def test_a_chunked_catalogue_equals_the_dense_update():
    gen = torch.Generator().manual_seed(4)
    rows, items = 7, 23
    scores = torch.randint(0, 4, (rows, items), generator=gen).float()
    scores[torch.rand(rows, items, generator=gen) < 0.1] = float("-inf")
    target_ids = torch.stack([torch.randperm(items, generator=gen)[:6] for _ in range(rows)])
    target_ids[torch.rand(rows, 6, generator=gen) < 0.25] = -1
    target_ids[0] = -1
    gains = torch.randint(0, 3, (rows, 6), generator=gen).float()  # grade 0: a non-relevant target
    exclude = torch.stack([torch.randperm(items, generator=gen)[:3] for _ in range(rows)])
    for make in (lambda: tre.PartialAUC(k=[1, 4, 30]), lambda: tre.RankingMetrics(["pauc@2", "auc", "ndcg@3"])):
        dense, chunked = make(), make()
        inputs = dict(target_ids=target_ids, target_gains=gains, exclude_ids=exclude)
        dense.update(scores, **inputs)
        with chunked.catalogue(items, target_scores=scores.gather(1, target_ids.clamp(min=0)), **inputs) as batch:
            for start in (15, 0, 6):
                batch.add(scores[:, start : start + {15: 8, 0: 6, 6: 9}[start]], offset=start)
        got, want = chunked.compute(), dense.compute()
        for key in want:
            torch.testing.assert_close(got[key], want[key], rtol=0, atol=1e-12, equal_nan=True)


# ----------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------
def test_bad_arguments_name_the_argument():
    preds, target = torch.rand(2, 4), torch.tensor([[1, 0, 0, 1], [0, 1, 0, 0]])
    with pytest.raises(ValueError, match="`insufficient_handling`.*'error'"):
        tre.PartialAUC(k=3, insufficient_handling="error")
    with pytest.raises(ValueError, match="`insufficient_handling`"):
        tre.functional.partial_auc(preds, target, insufficient_handling="skip")
    with pytest.raises(ValueError, match="insufficient_handling"):
        tre.RankingMetrics(["pauc@3"], options={"pauc": {"insufficient_handling": "strange"}})
    for bad in (0, [], [2, 2], "3"):
        with pytest.raises(ValueError, match="`k`|twice"):
            tre.PartialAUC(k=bad)
    with pytest.raises(ValueError, match="cut-off"):
        tre.RankingMetrics(["pauc"])
    with pytest.raises(ValueError, match="score for every candidate"):
        tre.functional.partial_auc(ranked_ids=torch.tensor([[1, 2]]), target_ids=torch.tensor([[1]]))


def test_raise_and_error_leave_the_state_unchanged():
    metric = tre.PartialAUC(k=3, insufficient_handling="raise")
    metric.update(torch.rand(2, 6), torch.tensor([[1, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0]]))
    before = {name: value.clone() for name, value in metric.metric_state.items()}
    with pytest.raises(ValueError, match=r"Query 1 .* 2 non-relevant candidates, fewer than k=3 .*insufficient_handling"):
        metric.update(torch.rand(2, 4), torch.tensor([[1, 0, 0, 0], [0, 1, 1, 0]]))
    with pytest.raises(ValueError, match="empty_target_action"):
        tre.PartialAUC(k=3, empty_target_action="error").update(torch.rand(1, 4), torch.zeros(1, 4))
    assert metric.update_count == 1
    assert all(torch.equal(metric.metric_state[name], value) for name, value in before.items())
    with pytest.raises(ValueError, match="insufficient_handling='raise'"):
        tre.PartialAUC(k=3, insufficient_handling="raise", validate_args=False).compile_update()
