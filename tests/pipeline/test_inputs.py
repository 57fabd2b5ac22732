"""Input validation, torchmetrics semantics (forward, reset, deterministic mode) and state size."""

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.pipeline.tensor_cache import count_true

P = torch.tensor([[0.9, 0.1, 0.5, 0.3], [0.2, 0.8, 0.4, 0.6]])
T = torch.tensor([[1, 0, 0, 1], [0, 1, 0, 0]])


def _update(**kwargs):
    tre.NDCG(k=2).update(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(preds=P, target=T[:, :3]), r"`target` must have the shape of `preds` \(2, 4\)"),
        (dict(preds=P.long(), target=T), r"`preds` must be a floating point tensor.*torch.int64"),
        (dict(preds=P[0], target=T[0]), r"`preds` must have shape \[B, N\].*\(4,\)"),
        (
            dict(preds=torch.tensor([[0.1, float("nan")]]), target=torch.tensor([[1, 0]])),
            r"`preds` must be real scores, not NaN or \+inf.*nan",
        ),
        (
            dict(preds=torch.tensor([[0.1, float("inf")]]), target=torch.tensor([[1, 0]])),
            r"`preds` must be real scores, not NaN or \+inf.*max=inf",
        ),
        (dict(preds=P, target=-T), r"`target` must be >= 0.*-1"),
        (dict(preds=P, target=T.float().masked_fill(T == 1, float("nan"))), r"`target` must be finite"),
        (dict(preds=P, target_ids=torch.tensor([[0, 7], [1, -1]])), r"`target_ids` must be item ids < 4.*7"),
        (
            dict(preds=P, target_ids=torch.tensor([[0, -2], [1, -1]])),
            r"`target_ids` must be item ids >= 0.*-2",
        ),
        (
            dict(preds=P, target_ids=torch.tensor([[0, 0], [1, -1]])),
            r"`target_ids` has an item id repeated.*row 0",
        ),
        (
            dict(preds=P, target_ids=torch.tensor([[0.0, 1.0], [1.0, 2.0]])),
            r"`target_ids` must be an integer tensor",
        ),
        (dict(preds=P, target_ids=torch.tensor([[0, 1]])), r"`target_ids` must have shape \[2, T\]"),
        (
            dict(preds=P, target=T, target_ids=torch.tensor([[0], [1]])),
            r"exactly one of `target` and `target_ids`",
        ),
        (dict(preds=P), r"exactly one of `target` and `target_ids`"),
        (dict(target=T), r"No input form recognised"),
        (
            dict(ranked_ids=torch.tensor([[0, 1]]), target_ids=torch.tensor([[1]]), preds=P[:1]),
            r"ranked form takes",
        ),
        (
            dict(ranked_ids=torch.tensor([[0, 0]]), target_ids=torch.tensor([[1]])),
            r"`ranked_ids` has an item id repeated",
        ),
        (dict(preds=torch.empty(0, 4), target=torch.empty(0, 4)), r"`preds` is an empty batch"),
        (dict(preds=torch.empty(2, 0), target=torch.empty(2, 0)), r"`preds` is an empty batch"),
        (dict(preds=P, target=T, mask=torch.ones(2, 4)), r"`mask` must be a bool tensor"),
        (
            dict(preds=P, target=T, exclude_ids=torch.tensor([[5], [0]])),
            r"`exclude_ids` must be item ids < 4.*5",
        ),
        (
            dict(preds=P.reshape(-1), target=T.reshape(-1), indexes=torch.tensor([0, 0, 1])),
            r"`indexes` must have the shape",
        ),
        (dict(preds=P, target=[[1, 0, 0, 1]]), r"`target` must be a torch.Tensor, got list"),
    ],
)
def test_bad_input_raises_a_value_error_that_names_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _update(**kwargs)


@pytest.mark.parametrize("extra", [{"mask": torch.ones(2, 4, dtype=torch.bool)}, {"exclude_ids": torch.tensor([[1], [2]])},
                                   {"preds": P.masked_fill(T == 1, float("-inf"))}])
def test_a_target_id_past_the_items_is_a_value_error_with_a_mask_exclusions_or_neg_inf(extra):
    """The ids form reads a mask, the full ranking's candidates or the scores at the target ids only after their
    checks: an id past N is the named ValueError, not an index error, and the state stays as it was."""
    suite = tre.RankingMetrics(["auc", "ndcg@2"])
    suite.update(P, target_ids=torch.tensor([[0, 1], [1, -1]]))
    before = {name: value.clone() for name, value in suite.metric_state.items()}
    with pytest.raises(ValueError, match=r"`target_ids` must be item ids < 4 .*got 7"):
        suite.update(**{"preds": P, "target_ids": torch.tensor([[0, 7], [1, -1]]), **extra})
    assert all(torch.equal(suite.metric_state[name], value) for name, value in before.items())


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: tre.NDCG(k=0), r"`k` must be an int >= 1, got 0"),
        (lambda: tre.NDCG(k=[5, 5]), r"repeated cut-offs"),
        (lambda: tre.NDCG(k=2.5), r"`k` must be an int >= 1, got 2.5"),
        (lambda: tre.Precision(k=5, denominator="n"), r"`denominator` of precision must be one of"),
        (lambda: tre.NDCG(k=5, ideal="full"), r"defined for binary relevance"),
        (lambda: tre.NDCG(k=5, log_base=1), r"`log_base` of ndcg must be a number > 1"),
        (lambda: tre.MAP(k=5, empty_target_action="drop"), r"`empty_target_action` must be one of"),
        (
            lambda: tre.MAP(k=5, convention="trec_eval"),
            r"Unknown `convention` 'trec_eval'; known conventions",
        ),
        (
            lambda: tre.RankingMetrics(["ndcg@10", "foo@3"]),
            r"Unknown metric 'foo@3'; known metrics: .*'ndcg'",
        ),
        (lambda: tre.RankingMetrics(["ndcg@x"]), r"cut-off in 'ndcg@x'"),
        (lambda: tre.RankingMetrics(["ndcg"]), r"needs a cut-off"),
        (lambda: tre.RankingMetrics(["ndcg@5", "ndcg@5"]), r"requested twice"),
        (lambda: tre.RankingMetrics("ndcg@5"), r"non-empty list"),
        (
            lambda: tre.RankingMetrics(["ndcg@5"], options={"map": {"normalizer": "r"}}),
            r"`options` names 'map'",
        ),
        (lambda: tre.NDCG(k=5, num_groups=0), r"`num_groups` must be an int >= 1"),
    ],
)
def test_bad_construction_raises(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_groups_must_match_num_groups():
    metric = tre.NDCG(k=2, num_groups=2)
    with pytest.raises(ValueError, match="`groups` must be given exactly"):
        metric.update(P, T)
    with pytest.raises(ValueError, match=r"`groups` must lie in \[0, 2\), got values from 0 to 2"):
        metric.update(P, T, groups=torch.tensor([0, 2]))
    with pytest.raises(ValueError, match=r"`groups` must have shape \[2\]"):
        metric.update(P, T, groups=torch.tensor([0]))


def test_empty_target_action_error_names_the_query():
    with pytest.raises(ValueError, match="Query 1 of the batch has no relevant item"):
        tre.functional.mrr(P, torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0]]), k=2, empty_target_action="error")


def test_validate_args_false_skips_value_checks_but_not_shape_checks():
    metric = tre.NDCG(k=2, validate_args=False)
    metric.update(P, -T)  # no value check, no error
    with pytest.raises(ValueError, match="must have the shape"):
        metric.update(P, T[:, :2])


def test_logits_at_or_below_zero_rank_like_any_score():
    """torchmetrics.retrieval treats scores <= 0 as not retrieved in P/R/MAP/MRR; we rank every score."""
    logits = torch.tensor([[-3.0, -1.0, -2.0, -0.5]])
    target = torch.tensor([[0, 1, 0, 0]])
    shifted = logits + 10  # the same ranking with positive scores
    for name in ["precision", "recall", "map", "mrr", "ndcg", "hitrate"]:
        fn = getattr(tre.functional, name)
        assert fn(logits, target, k=2).item() == fn(shifted, target, k=2).item() > 0


def test_forward_returns_the_batch_value_and_accumulates():
    metric = tre.RankingMetrics(["ndcg@2", "mrr@2"])
    first = metric(P[:1], T[:1])
    second = metric(P[1:], T[1:])
    assert first["mrr@2"].item() == 1.0 and second["mrr@2"].item() == 1.0
    total = tre.functional.ndcg(P, T, k=2)
    assert metric.compute()["ndcg@2"].item() == pytest.approx(total.item())
    metric.reset()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert torch.isnan(metric.compute()["ndcg@2"])  # nothing counted after reset


def test_deterministic_algorithms_mode():
    torch.use_deterministic_algorithms(True)
    try:
        generator = torch.Generator().manual_seed(0)
        preds = torch.randint(0, 3, (8, 40), generator=generator).float()
        target = torch.rand(8, 40, generator=generator) < 0.3
        suite = tre.RankingMetrics(["ndcg@5", "map@5", "rprecision"], num_groups=2, ties="average")
        suite.update(preds, target, groups=torch.arange(8) % 2)
        assert all(torch.isfinite(v).all() for v in suite.compute().values())
    finally:
        torch.use_deterministic_algorithms(False)


def test_state_does_not_grow_with_updates():
    suite = tre.RankingMetrics(["ndcg", "map", "recall", "precision", "mrr", "hitrate"], k=[10, 20, 50, 100])
    sizes = set()
    for _ in range(3):
        suite.update(torch.randn(16, 200), torch.rand(16, 200) < 0.1)
        sizes.add(sum(t.numel() for t in (getattr(suite, name) for name in suite._defaults)))
    assert sizes == {2 * 24 + 1}
    assert all(getattr(suite, name).dtype == torch.float64 for name in suite._defaults)


@pytest.mark.parametrize("cols", [1, 7, 8, 15, 16, 17, 2039, 2040, 4096])
def test_count_true_matches_sum(cols):
    flags = torch.rand(5, cols) < 0.5
    assert torch.equal(count_true(flags), flags.sum(1))
    big = torch.rand((1 << 20) // cols + 3, cols) < 0.5  # large enough for the packed-word path
    assert torch.equal(count_true(big), big.sum(1))
    assert torch.equal(count_true(big[1:2]), big[1:2].sum(1))  # one row of a wider tensor
    assert torch.equal(count_true(flags[:, ::2]), flags[:, ::2].sum(1))  # non-contiguous input
    full = torch.ones((1 << 20) // cols + 3, cols, dtype=torch.bool)  # every byte lane of every word at its most
    assert torch.equal(count_true(full), torch.full((full.shape[0],), cols))


def test_integer_float_and_bool_targets_agree():
    results = [tre.functional.map(P, t, k=3) for t in (T, T.float(), T.bool())]
    assert results[0].item() == results[1].item() == results[2].item()
