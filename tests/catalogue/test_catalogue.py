"""A catalogue scored in chunks gives exactly what ``update`` on the whole [B, N] score matrix gives.

The oracle is the library's dense ``update`` on the full matrix (itself tested against pytrec_eval,
ranx, scikit-learn and brute force elsewhere): any chunking, sizes 1..N, uneven, in any order, with
tied scores, ``-inf`` non-candidates, exclusions, graded gains and groups, for every tie order.
"""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from tests.catalogue.cases import BEYOND, FULL, TOPK, N, beyond_options, catalogue_batch, target_scores_of


def _suite(ties: str, num_groups: int | None = None, **kwargs) -> tre.RankingMetrics:
    return tre.RankingMetrics([*TOPK, *FULL, *BEYOND], options=beyond_options(N), ties=ties,
                              num_groups=num_groups, **kwargs)




def _chunks(seed: int) -> list[tuple[int, int]]:
    generator = torch.Generator().manual_seed(seed)
    cuts = sorted(set(torch.randint(1, N, (int(torch.randint(0, 8, (1,), generator=generator)),),
                                    generator=generator).tolist()))
    bounds = [0, *cuts, N]
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))
    return [spans[i] for i in torch.randperm(len(spans), generator=generator).tolist()]




def _assert_equal(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=0, atol=1e-12, equal_nan=True, msg=key)


@pytest.mark.parametrize("ties", ["index", "reverse_index", "pessimistic", "optimistic"])
@pytest.mark.parametrize("seed", range(6))
def test_any_chunking_equals_the_dense_update(ties, seed):
    scores, target_ids, gains, exclude, groups = catalogue_batch(seed, tied=seed % 3 != 2)
    dense, chunked = _suite(ties, num_groups=3), _suite(ties, num_groups=3)
    inputs = dict(target_ids=target_ids, target_gains=gains, exclude_ids=exclude, groups=groups)
    dense.update(scores, **inputs)
    with chunked.catalogue(N, target_scores=target_scores_of(scores, target_ids), **inputs) as batch:
        for start, stop in _chunks(seed):
            batch.add(scores[:, start:stop], offset=start)
    _assert_equal(chunked.compute(), dense.compute())


@pytest.mark.parametrize("size", [1, 2, 5, N])
def test_every_chunk_size(size):
    scores, target_ids, gains, exclude, _ = catalogue_batch(size)
    dense, chunked = _suite("pessimistic"), _suite("pessimistic")
    dense.update(scores, target_ids=target_ids, target_gains=gains, exclude_ids=exclude)
    batch = chunked.catalogue(N, target_ids=target_ids, target_gains=gains, exclude_ids=exclude,
                              target_scores=target_scores_of(scores, target_ids))
    for start in reversed(range(0, N, size)):
        batch.add(scores[:, start : start + size], offset=start)
    batch.close()
    _assert_equal(chunked.compute(), dense.compute())


def test_top_k_metrics_read_the_target_scores_from_the_chunks():
    scores, target_ids, gains, exclude, _ = catalogue_batch(11)
    dense = tre.RankingMetrics([*TOPK, *BEYOND], options=beyond_options(N))
    chunked = tre.RankingMetrics([*TOPK, *BEYOND], options=beyond_options(N))
    dense.update(scores, target_ids=target_ids, target_gains=gains, exclude_ids=exclude)
    for _ in range(2):  # two batches accumulate like two updates
        dense.update(scores.flip(0), target_ids=target_ids.flip(0), target_gains=gains, exclude_ids=exclude)
    with chunked.catalogue(N, target_ids=target_ids, target_gains=gains, exclude_ids=exclude) as batch:
        batch.add(scores[:, 10:], offset=10)
        batch.add(scores[:, :10], offset=0)
    for _ in range(2):
        with chunked.catalogue(N, target_ids=target_ids.flip(0), target_gains=gains, exclude_ids=exclude) as batch:
            for start in range(0, N, 4):
                batch.add(scores.flip(0)[:, start : start + 4], offset=start)
    _assert_equal(chunked.compute(), dense.compute())


def test_given_target_scores_stand_for_the_chunks_entries():
    scores, target_ids, _, _, _ = catalogue_batch(5, tied=False)
    replaced = scores.clone()
    target_scores = torch.rand(target_ids.shape)
    rows = torch.arange(scores.shape[0]).unsqueeze(1).expand_as(target_ids)
    present = target_ids >= 0
    replaced[rows[present], target_ids[present]] = target_scores[present]
    dense, chunked = _suite("index"), _suite("index")
    dense.update(replaced, target_ids=target_ids)
    with chunked.catalogue(N, target_ids=target_ids, target_scores=target_scores) as batch:
        batch.add(scores, offset=0)
    _assert_equal(chunked.compute(), dense.compute())


def test_bf16_chunks():
    scores, target_ids, gains, _, _ = catalogue_batch(8, tied=False)
    scores = scores.to(torch.bfloat16)
    dense, chunked = _suite("index"), _suite("index")
    dense.update(scores, target_ids=target_ids, target_gains=gains)
    with chunked.catalogue(N, target_ids=target_ids, target_gains=gains,
                           target_scores=target_scores_of(scores, target_ids)) as batch:
        batch.add(scores[:, 7:], offset=7)
        batch.add(scores[:, :7], offset=0)
    _assert_equal(chunked.compute(), dense.compute())


def test_single_metric_classes_and_conventions():
    scores, target_ids, gains, exclude, _ = catalogue_batch(2)
    for make in (lambda: tre.NDCG(k=5, convention="ranx"), lambda: tre.AUC(), lambda: tre.MPR(),
                 lambda: tre.MAP(k=[3, 10], convention="trec"), lambda: tre.Precision(k=4, convention="rectools")):
        dense, chunked = make(), make()
        dense.update(scores, target_ids=target_ids, target_gains=gains, exclude_ids=exclude)
        with chunked.catalogue(N, target_ids=target_ids, target_gains=gains, exclude_ids=exclude,
                               target_scores=target_scores_of(scores, target_ids)) as batch:
            batch.add(scores[:, :3], offset=0)
            batch.add(scores[:, 3:], offset=3)
        got, want = chunked.compute(), dense.compute()
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12, equal_nan=True)


# ---------------------------------------------------------------------------------------------- errors
def _state(metric):
    return {name: value.clone() for name, value in metric.metric_state.items()}


def test_bad_input_raises_and_leaves_the_metric_unchanged():
    scores, target_ids, gains, exclude, _ = catalogue_batch(1)
    metric = _suite("index")
    metric.update(scores, target_ids=target_ids)
    before = _state(metric)
    ts = target_scores_of(scores, target_ids)
    with pytest.raises(ValueError, match="`target_scores`"):
        metric.catalogue(N, target_ids=target_ids)  # AUC needs them
    with pytest.raises(ValueError, match="`num_items`"):
        metric.catalogue(0, target_ids=target_ids, target_scores=ts)
    with pytest.raises(ValueError, match="`target_ids`"):
        metric.catalogue(N, target_ids=target_ids + N, target_scores=ts)
    batch = metric.catalogue(N, target_ids=target_ids, target_scores=ts)
    with pytest.raises(ValueError, match="does not fit"):
        batch.add(scores[:, :5], offset=N - 2)
    with pytest.raises(ValueError, match=r"`scores` must have shape \[7, C\]"):
        batch.add(scores[:3], offset=0)
    batch.add(scores[:, :10], offset=0)
    with pytest.raises(ValueError, match="overlaps"):
        batch.add(scores[:, 5:12], offset=5)
    bad = scores[:, 10:].clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        batch.add(bad, offset=10)
    with pytest.raises(ValueError, match=r"Items 10\.\.22 .* missing"):
        batch.close()
    with pytest.raises(ValueError, match="dtype"):
        batch.add(scores[:, 10:].double(), offset=10)
    batch.add(scores[:, 10:], offset=10)  # the failures above left the stream usable
    assert _state(metric).keys() == before.keys()
    assert all(torch.equal(_state(metric)[name], before[name]) for name in before)
    batch.close()
    dense = _suite("index")
    for _ in range(2):
        dense.update(scores, target_ids=target_ids)
    _assert_equal(metric.compute(), dense.compute())


def test_an_error_inside_the_with_block_drops_the_batch():
    scores, target_ids, _, _, _ = catalogue_batch(4)
    metric = tre.NDCG(k=3)
    with pytest.raises(RuntimeError), metric.catalogue(N, target_ids=target_ids) as batch:
        batch.add(scores[:, :4], offset=0)
        raise RuntimeError("the scoring loop failed")
    assert metric.metric_state["stats"].abs().sum() == 0
    with pytest.raises(ValueError, match="closed"):
        batch.add(scores[:, 4:], offset=4)


def test_average_ties_are_refused():
    with pytest.raises(ValueError, match="average"):
        tre.NDCG(k=3, ties="average").catalogue(N, target_ids=torch.tensor([[1]]))
    with pytest.raises(ValueError, match="average"):
        tre.NDCG(k=3, convention="torchmetrics").catalogue(N, target_ids=torch.tensor([[1]]))


def test_many_targets_per_query_take_the_binary_search():
    generator = torch.Generator().manual_seed(9)
    rows, num_items, width = 5, 120, 40  # more targets than the compare passes handle
    scores = torch.randint(0, 30, (rows, num_items), generator=generator).float()
    target_ids = torch.stack([torch.randperm(num_items, generator=generator)[:width] for _ in range(rows)])
    gains = torch.randint(0, 5, (rows, width), generator=generator)
    make = lambda: tre.RankingMetrics(["auc", "gauc", "mpr", "fcp", "ndcg@10"], ties="optimistic")  # noqa: E731
    dense, chunked = make(), make()
    dense.update(scores, target_ids=target_ids, target_gains=gains)
    with chunked.catalogue(num_items, target_ids=target_ids, target_gains=gains,
                           target_scores=target_scores_of(scores, target_ids)) as batch:
        for start in (90, 0, 37):
            batch.add(scores[:, start : {90: num_items, 0: 37, 37: 90}[start]], offset=start)
    _assert_equal(chunked.compute(), dense.compute())


def test_a_trained_model_counts_only_the_items_near_its_targets(monkeypatch):
    """Targets near the top: only the items at or above a query's lowest target are compared (compacted)."""
    from torchrec_eval.catalogue import counts

    calls = []
    original = counts.compact
    monkeypatch.setattr(counts, "compact", lambda *args: calls.append(1) or original(*args))
    gen = torch.Generator().manual_seed(12)
    rows, num_items = 9, 400
    scores = torch.randint(0, 60, (rows, num_items), generator=gen).float()  # ties among the contenders too
    best = torch.topk(scores + torch.rand(rows, num_items, generator=gen), 30, dim=1).indices
    target_ids = best[:, torch.randperm(30, generator=gen)[:5]]  # 5 of each query's 30 best items
    target_ids[0, 1:] = -1
    gains = torch.randint(0, 3, target_ids.shape, generator=gen)
    make = lambda: tre.RankingMetrics(["auc", "gauc", "mpr", "fcp", "ndcg@10"], ties="pessimistic")  # noqa: E731
    dense, chunked = make(), make()
    dense.update(scores, target_ids=target_ids, target_gains=gains)
    with chunked.catalogue(num_items, target_ids=target_ids, target_gains=gains,
                           target_scores=target_scores_of(scores, target_ids)) as batch:
        for start in (300, 0, 100, 200):
            batch.add(scores[:, start : start + 100], offset=start)
    assert calls  # the narrow path ran
    _assert_equal(chunked.compute(), dense.compute())
