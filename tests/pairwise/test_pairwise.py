"""AUC, GAUC, MPR, FCP, CTR@k and the rating re-exports against independent references.

* scikit-learn's ``roc_auc_score`` per query, with many tied scores;
* the brute-force pair counting of ``tests/reference/pairwise.py`` for GAUC, MPR, FCP and CTR;
* both rank-sum paths (searchsorted on the CPU, cumulative sums elsewhere) on the same data;
* every input form, masks, groups, every ``empty_target_action``, a suite sharing one sort;
* a 256 x 50,000 batch, which any [N, N] pair tensor would not survive.
"""

import functools
import math

import pytest
import torch
from sklearn.metrics import roc_auc_score

import torchrec_eval as tre
from tests.reference import pairwise as ref
from torchrec_eval.members.steps import prepare
from torchrec_eval.metrics import pairwise as M
from torchrec_eval.pairwise import functional as P
from torchrec_eval.pairwise import sorted_rows
from torchrec_eval.pairwise.member import PairwiseMember
from torchrec_eval.pairwise.ranks import rank_sums
from torchrec_eval.pairwise.sorted_rows import SortedRows
from torchrec_eval.pipeline import Inputs, Rules
from torchrec_eval.suites import ranking as collection

TOL = {"rtol": 1e-9, "atol": 1e-9}


def _close(actual, expected):
    actual = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    expected = torch.as_tensor(expected, dtype=torch.float64)
    torch.testing.assert_close(actual, expected.reshape(actual.shape), equal_nan=True, **TOL)


def _nan(v):
    return math.nan if v is None else v


def _data(seed, B=40, N=30, levels=4, tie_levels=5, p_rel=0.3, masked=True):
    """Heavily tied integer scores, graded targets 0..levels-1, empty and all-relevant rows, a mask."""
    g = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, tie_levels, (B, N), generator=g).to(torch.float32)
    grades = torch.randint(1, levels, (B, N), generator=g)
    target = torch.where(torch.rand(B, N, generator=g) < p_rel, grades, torch.zeros_like(grades))
    target[0] = 0  # no relevant item
    target[1] = grades[1]  # every item relevant
    target[2, :] = 0
    target[2, 3] = 2  # one relevant item
    mask = torch.rand(B, N, generator=g) < 0.8 if masked else None
    if mask is not None:
        mask[3] = False
        mask[3, 5] = True  # one candidate
        mask[1] = True
    return preds, target, mask


@pytest.fixture(params=["sparse", "dense"])
def rank_path(request, monkeypatch):
    """Run with the CPU searchsorted path and with the cumulative-sum path used on other devices."""
    monkeypatch.setattr(sorted_rows, "rank_sums", functools.partial(rank_sums, sparse=request.param == "sparse"))
    return request.param


@pytest.fixture
def suite_modules():
    """RankingMetrics takes every pairwise family (torchrec_eval.metrics.families): nothing to wire."""


# ----------------------------------------------------------------------------------------------
# worked examples
# ----------------------------------------------------------------------------------------------
def test_fcp_worked_example():
    # true order A > B > C, predicted B, A, C: A>C, B>C concordant, A>B discordant -> 2/3 (not 1/3)
    preds = torch.tensor([[0.8, 0.9, 0.1]])
    for target in ([[3, 2, 1]], [[2, 1, 0]], [[2.5, 1.0, 0.5]]):
        _close(P.fcp(preds, torch.tensor(target)), 2 / 3)
    metric = M.FCP()
    metric.update(preds, torch.tensor([[3, 2, 1]]))
    _close(metric.compute(), 2 / 3)


def test_mpr_definition():
    # 5 candidates: rank 1 -> 0, rank 3 -> 50, rank 5 -> 100; constant scores -> 50; one candidate -> 0
    preds = torch.tensor([[0.9, 0.7, 0.5, 0.1, 0.0]])
    _close(P.mpr(preds, torch.tensor([[1, 0, 0, 0, 0]])), 0.0)
    _close(P.mpr(preds, torch.tensor([[0, 0, 1, 0, 0]])), 50.0)
    _close(P.mpr(preds, torch.tensor([[0, 0, 0, 0, 1]])), 100.0)
    _close(P.mpr(torch.zeros(1, 7), torch.tensor([[0, 1, 0, 0, 1, 0, 1]])), 50.0)
    _close(P.mpr(torch.tensor([[0.3, 0.2]]), torch.tensor([[1, 0]]), mask=torch.tensor([[True, False]])), 0.0)


def test_constant_scores_auc_half():
    _close(P.auc(torch.zeros(3, 9), torch.tensor([[1, 0, 0] * 3] * 3)), 0.5)


# ----------------------------------------------------------------------------------------------
# AUC / GAUC / MPR against sklearn and the brute-force reference
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_matches_sklearn_per_query(seed, rank_path):
    preds, target, mask = _data(seed)
    got = P.auc(preds, target, mask=mask, reduction="none")
    expected = []
    for scores, t in ref.split_rows(preds, target, mask):
        labels = [int(x > 0) for x in t]
        expected.append(roc_auc_score(labels, scores) if 0 < sum(labels) < len(labels) else math.nan)
        ours = ref.auc(scores, t)
        assert ours is None or abs(ours - expected[-1]) < 1e-12  # the reference agrees with sklearn
    _close(got, expected)
    _close(P.auc(preds, target, mask=mask), sum(v for v in expected if not math.isnan(v))
           / sum(1 for v in expected if not math.isnan(v)))


@pytest.mark.parametrize("action", ["skip", "neg", "pos"])
@pytest.mark.parametrize("threshold", [None, 2])
def test_auc_gauc_empty_actions_and_threshold(action, threshold, rank_path):
    preds, target, mask = _data(3)
    rows = ref.split_rows(preds, target, mask)
    per_query = [ref.apply_empty(ref.auc(s, t, threshold), action) for s, t in rows]
    _close(P.auc(preds, target, mask=mask, empty_target_action=action, relevance_threshold=threshold),
           ref.mean(per_query))
    weights = [ref.num_relevant(t, threshold) for s, t in rows]
    pairs = [(w * v, w) for v, w in zip(per_query, weights, strict=True) if v is not None]
    expected = sum(a for a, _ in pairs) / sum(w for _, w in pairs)
    kwargs = {"empty_target_action": action, "relevance_threshold": threshold}
    _close(P.gauc(preds, target, mask=mask, **kwargs), expected)
    metric = M.GAUC(empty_target_action=action, relevance_threshold=threshold)
    metric.update(preds[:20], target[:20], mask=mask[:20])
    metric.update(preds[20:], target[20:], mask=mask[20:])
    _close(metric.compute(), expected)


def test_empty_target_error():
    preds, target, mask = _data(4)
    for fn in (P.auc, P.gauc, P.mpr):
        with pytest.raises(ValueError, match="empty_target_action"):
            fn(preds, target, mask=mask, empty_target_action="error")
    # a batch where every query has both classes passes
    _close(P.auc(torch.tensor([[0.1, 0.2]]), torch.tensor([[0, 1]]), empty_target_action="error"), 1.0)


@pytest.mark.parametrize("average", ["pooled", "query"])
@pytest.mark.parametrize("action", ["skip", "neg", "pos"])
def test_mpr_matches_reference(average, action, rank_path):
    preds, target, mask = _data(5)
    rows = ref.split_rows(preds, target, mask)
    items = [ref.mpr_items(s, t) for s, t in rows]
    per_query = [sum(x) / len(x) if x else None for x in items]
    _close(P.mpr(preds, target, mask=mask, reduction="none"), [_nan(v) for v in per_query])
    if average == "pooled":
        flat = [p for x in items for p in x]
        expected = sum(flat) / len(flat)
    else:
        expected = ref.mean([ref.apply_empty(v, action, worst=100.0, best=0.0) for v in per_query])
    _close(P.mpr(preds, target, mask=mask, average=average, empty_target_action=action), expected)
    metric = M.MPR(average=average, empty_target_action=action)
    assert metric.higher_is_better is False
    metric.update(preds, target, mask=mask)
    _close(metric.compute(), expected)


def test_rank_sum_paths_agree_on_random_floats():
    g = torch.Generator().manual_seed(7)
    preds = torch.randn(64, 3000, generator=g).half().float()  # ~2k distinct values: many ties
    target = torch.rand(64, 3000, generator=g) < 0.05
    mask = torch.rand(64, 3000, generator=g) < 0.9
    cand = prepare([PairwiseMember([("auc", None)])], Inputs(preds=preds, target=target, mask=mask), Rules()).candidates
    rows = SortedRows(cand)
    r1, a1 = rank_sums(rows, cand.relevant, sparse=True)
    r2, a2 = rank_sums(rows, cand.relevant, sparse=False)
    torch.testing.assert_close(r1, r2, rtol=0, atol=0)
    torch.testing.assert_close(a1, a2, rtol=0, atol=0)


# ----------------------------------------------------------------------------------------------
# FCP
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", ["int", "float", "bool", "no_zero"])
def test_fcp_matches_brute_force(seed, kind):
    preds, target, mask = _data(seed, levels=5)
    if kind == "float":
        target = target.to(torch.float64) * 0.75
    elif kind == "bool":
        target = target > 1
    elif kind == "no_zero":
        target = target + 1  # every item graded: no grade-0 level at all
    rows = ref.split_rows(preds, target, mask)
    pairs = [ref.fcp_pairs(s, t) for s, t in rows]
    per_query = [c / (c + d) if c + d else math.nan for c, d in pairs]
    _close(P.fcp(preds, target, mask=mask, reduction="none"), per_query)
    expected = sum(c for c, _ in pairs) / sum(c + d for c, d in pairs)
    _close(P.fcp(preds, target, mask=mask), expected)
    metric = M.FCP()
    for chunk in range(0, preds.shape[0], 13):
        metric.update(preds[chunk:chunk + 13], target[chunk:chunk + 13], mask=mask[chunk:chunk + 13])
    _close(metric.compute(), expected)


def test_fcp_no_pairs_is_nan():
    assert math.isnan(P.fcp(torch.rand(2, 4), torch.ones(2, 4)).item())
    assert math.isnan(P.fcp(torch.rand(2, 4), torch.zeros(2, 4)).item())


# ----------------------------------------------------------------------------------------------
# CTR
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", ["index", "pessimistic"])
def test_ctr_matches_reference(ties):
    preds, target, mask = _data(6, levels=2)  # 0 / 1 clicks, tied scores
    ks = [1, 5, 10, 40]
    rows = ref.split_rows(preds, target, mask)
    got = P.ctr(preds, target, k=ks, mask=mask, ties=ties, reduction="none")
    got_mean = P.ctr(preds, target, k=ks, mask=mask, ties=ties)
    for k in ks:
        counts = []
        for s, t in rows:
            if not s:
                counts.append((0, 0))
                continue
            # the reference ranks the observed items; ties by the original index among them
            counts.append(ref.ctr_counts(s, t, k, ties=ties))
        _close(got[f"ctr@{k}"], [c / n if n else math.nan for c, n in counts])
        _close(got_mean[f"ctr@{k}"], sum(c for c, _ in counts) / sum(n for _, n in counts))
    # ignore_index marks the same unobserved items as the mask
    coded = target.masked_fill(~mask, -1)
    _close(P.ctr(preds, coded, k=5, ignore_index=-1, ties=ties), got_mean["ctr@5"])
    metric = M.CTR(k=[5, 10], ignore_index=-1, ties=ties)
    metric.update(preds, coded)
    result = metric.compute()
    _close(result["ctr@5"], got_mean["ctr@5"])
    _close(result["ctr@10"], got_mean["ctr@10"])


def test_ctr_ranked_and_ids_forms():
    ranked = torch.tensor([[4, 2, 7, -1], [1, 0, 3, 5]])
    clicked = torch.tensor([[2, -1], [5, 0]])
    # top 2: row 0 shows 4, 2 (1 click); row 1 shows 1, 0 (1 click); all: 3 shown/1 click, 4 shown/2 clicks
    _close(P.ctr(ranked_ids=ranked, target_ids=clicked, k=2), 2 / 4)
    _close(P.ctr(ranked_ids=ranked, target_ids=clicked, k=10), 3 / 7)
    preds = torch.tensor([[0.1, 0.9, 0.8, 0.2]])
    _close(P.ctr(preds, target_ids=torch.tensor([[2, 3]]), k=2), 0.5)
    observed = torch.tensor([[True, False, True, True]])
    _close(P.ctr(preds, target_ids=torch.tensor([[2, 3]]), k=2, mask=observed), 1.0)


# ----------------------------------------------------------------------------------------------
# input forms, groups, suites, errors
# ----------------------------------------------------------------------------------------------
def _ids(target):
    """Target ids / gains of a dense target (-1 padded)."""
    width = int((target > 0).sum(1).max())
    order = torch.argsort((target <= 0).to(torch.uint8), dim=1, stable=True)[:, :width]
    present = torch.arange(width) < (target > 0).sum(1, keepdim=True)
    return torch.where(present, order, -1), torch.where(present, target.gather(1, order), 0)


def test_input_forms_agree(rank_path):
    preds, target, mask = _data(8, masked=False)
    ids, gains = _ids(target)
    B, N = preds.shape
    indexes = torch.arange(B).repeat_interleave(N)
    for fn, kwargs in ((P.auc, {}), (P.gauc, {}), (P.mpr, {}), (P.fcp, {}), (P.ctr, {"k": 7})):
        dense = fn(preds, target, **kwargs)
        _close(fn(preds, target_ids=ids, target_gains=gains, **kwargs), dense)
        _close(fn(preds.reshape(-1), target.reshape(-1), indexes=indexes, **kwargs), dense)
        _close(fn(preds, target, validate_args=False, **kwargs), dense)
    # exclude_ids == mask False
    excl = torch.tensor([[0, 3, -1]] * B)
    keep = torch.ones(B, N, dtype=torch.bool)
    keep[:, [0, 3]] = False
    for fn in (P.auc, P.mpr, P.fcp):
        _close(fn(preds, target, exclude_ids=excl), fn(preds, target, mask=keep))


def test_ranked_form_rejected_for_full_ranking():
    for fn in (P.auc, P.gauc, P.mpr, P.fcp):
        with pytest.raises(ValueError, match="score for every candidate"):
            fn(ranked_ids=torch.tensor([[1, 2]]), target_ids=torch.tensor([[1]]))


def test_groups(rank_path):
    preds, target, mask = _data(9)
    groups = torch.arange(preds.shape[0]) % 3
    metric = M.AUC(num_groups=3)
    metric.update(preds, target, mask=mask, groups=groups)
    got = metric.compute()
    assert got.shape == (3,)
    for gi in range(3):
        rows = groups == gi
        _close(got[gi], P.auc(preds[rows], target[rows], mask=mask[rows]))
    ctr = M.CTR(k=[3], num_groups=3)
    ctr.update(preds, target, mask=mask, groups=groups)
    assert ctr.compute()["ctr@3"].shape == (3,)


def test_suite_shares_one_member(suite_modules, rank_path):
    preds, target, mask = _data(10)
    suite = collection.RankingMetrics(["auc", "gauc", "mpr", "fcp", "ctr@10", "ndcg@10", "ctr@3"],
                                      options={"mpr": {"average": "query"}})
    assert sum(isinstance(m, PairwiseMember) for m in suite.members) == 1
    suite.update(preds, target, mask=mask)
    got = suite.compute()
    assert list(got) == ["auc", "gauc", "mpr", "fcp", "ctr@10", "ndcg@10", "ctr@3"]
    _close(got["auc"], P.auc(preds, target, mask=mask))
    _close(got["gauc"], P.gauc(preds, target, mask=mask))
    _close(got["mpr"], P.mpr(preds, target, mask=mask, average="query"))
    _close(got["fcp"], P.fcp(preds, target, mask=mask))
    _close(got["ctr@10"], P.ctr(preds, target, mask=mask, k=10))
    _close(got["ctr@3"], P.ctr(preds, target, mask=mask, k=3))
    from torchrec_eval.functional import ndcg
    _close(got["ndcg@10"], ndcg(preds, target, mask=mask, k=10))
    # a suite of CTR alone takes the ranked form
    ctr_only = collection.RankingMetrics(["ctr@2", "precision@2"])
    ctr_only.update(ranked_ids=torch.tensor([[4, 2, 7]]), target_ids=torch.tensor([[2]]))
    _close(ctr_only.compute()["ctr@2"], 0.5)


def test_suite_errors(suite_modules):
    with pytest.raises(ValueError, match="no cut-off"):
        collection.RankingMetrics(["auc@10"])
    with pytest.raises(ValueError, match="cut-off"):
        collection.RankingMetrics(["ctr"])
    with pytest.raises(ValueError, match="average"):
        collection.RankingMetrics(["mpr"], options={"mpr": {"average": "bad"}})
    with pytest.raises(ValueError, match="no option"):
        collection.RankingMetrics(["auc"], options={"auc": {"x": 1}})


def test_argument_errors():
    preds, target = torch.rand(2, 4), torch.tensor([[1, 0, 0, 1], [0, 1, 0, 0]])
    with pytest.raises(ValueError, match="reduction"):
        P.auc(preds, target, reduction="sum")
    with pytest.raises(ValueError, match="average"):
        P.mpr(preds, target, average="micro")
    with pytest.raises(ValueError, match="average"):
        M.MPR(average="micro")
    with pytest.raises(ValueError, match="ignore_index"):
        M.CTR(ignore_index="x")
    with pytest.raises(ValueError, match="`k`"):
        M.CTR(k=0)
    with pytest.raises(ValueError, match="`k`"):
        P.ctr(preds, target, k=[])
    with pytest.raises(ValueError, match="empty_target_action"):
        M.AUC(empty_target_action="bad")
    with pytest.raises(ValueError, match="target"):
        P.ctr(preds, target_ids=torch.tensor([[0], [1]]), ignore_index=-1)
    with pytest.raises(ValueError, match="not NaN"):
        P.auc(torch.tensor([[0.1, float("nan")]]), torch.tensor([[1, 0]]))
    with pytest.raises(ValueError, match="squared"):
        tre.RMSE(squared=True)


def test_state_is_small_and_summable():
    metric = M.AUC()
    states = {name: getattr(metric, name) for name in metric._defaults}
    # the statistics, plus the empty state that names the configuration
    assert sorted(tuple(v.shape) for v in states.values()) == [(0,), (1, 3)]
    assert all(v.dtype == torch.float64 for v in states.values())
    assert all(metric._reductions[name] is not None for name in states)


def test_rating_metrics_are_torchmetrics():
    import torchmetrics

    assert issubclass(tre.MAE, torchmetrics.MeanAbsoluteError) and issubclass(tre.MSE, torchmetrics.MeanSquaredError)
    assert issubclass(tre.RMSE, torchmetrics.MeanSquaredError)
    preds, target = torch.tensor([2.5, 0.0, 2.0, 8.0]), torch.tensor([3.0, -0.5, 2.0, 7.0])
    for metric, expected in ((tre.MAE(), 0.5), (tre.MSE(), 0.375), (tre.RMSE(), math.sqrt(0.375))):
        assert abs(metric(preds, target).item() - expected) < 1e-12  # float64 sums (torchmetrics': float32)


# ----------------------------------------------------------------------------------------------
# scale: 256 x 50,000 (an [N, N] pair tensor per query would need 2.5e9 entries)
# ----------------------------------------------------------------------------------------------
def test_scale_256_x_50000(suite_modules):
    g = torch.Generator().manual_seed(11)
    B, N = 256, 50_000
    preds = torch.randn(B, N, generator=g).half().float()  # float16 grid: plenty of ties
    target = torch.where(torch.rand(B, N, generator=g) < 0.002, torch.randint(1, 4, (B, N), generator=g), 0)
    suite = collection.RankingMetrics(["auc", "mpr", "fcp", "ctr@10"])
    suite.update(preds, target)
    got = suite.compute()
    per_query = P.auc(preds, target, reduction="none")
    for row in (0, 100, 255):
        _close(per_query[row], roc_auc_score((target[row] > 0).int().numpy(), preds[row].numpy()))
    _close(got["auc"], per_query.nanmean())
    assert 40 < got["mpr"].item() < 60 and 0.4 < got["fcp"].item() < 0.6  # random scores
