"""The ids form's ranks counted over each row (pipeline/counted_ranks.py), with no top-k list: each target's
rank is its position in the brute-force reference's ranking, and every value equals the dense form's and the
list's read, for ties at and inside the cut, ``-inf`` scores, a mask, padding, graded gains, thresholds, both
index tie orders, and the families that read more than the list (FallOut's candidates, bpref's judgments)."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from tests.pipeline.ids_batches import dense_form, ids_batch
from tests.reference import ranking as ref
from tests.reference.host_reads import NoHostReads
from torchrec_eval.pipeline import counted_ranks as counting
from torchrec_eval.pipeline.counted_ranks import (
    counted_ranks,
    counting_is_cheaper,
    counting_way,
    flagged_count,
    keyed_count,
)
from torchrec_eval.pipeline.forms import ids
from torchrec_eval.syncs import simulate_accelerator

SUITE = ["ndcg@10", "map@10", "recall@10", "precision@5", "mrr@10", "hitrate@5", "rprecision@10", "err@5",
         "rbp@10", "fallout@5", "bpref@10", "num_rel"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("ties", ["index", "reverse_index"])
@pytest.mark.parametrize("scores", ["distinct", "ties", "signed", "-inf"])
def test_a_counted_rank_is_the_position_in_the_reference_ranking(scores, ties, dtype):
    """Each way to count: by ranking keys (float32, float16 and bfloat16 scores) and by flags, ties and signed zeros
    included; and the way :func:`counted_ranks` takes."""
    batch = ids_batch(7, 30, 6, scores, seed=4)
    preds, target_ids = batch["preds"].to(dtype), batch["target_ids"]
    own = preds.gather(1, target_ids.clamp(min=0))
    ways = {"counted_ranks": counted_ranks(preds, target_ids, own, ties),
            "flags": flagged_count(preds, target_ids, own, ties, fused=False)}
    if dtype != torch.float64:
        ways["keys"] = keyed_count(preds, target_ids, ties)
    for way, got in ways.items():
        for row in range(preds.shape[0]):
            order = ref.rank(preds[row], ties=ties)  # every item, -inf ones last
            for column, item in enumerate(target_ids[row].tolist()):
                if item >= 0:
                    assert got[row, column] == order.index(item), (way, row, item)


def test_each_count_takes_its_cheapest_way(monkeypatch):
    """Keys where a row holds a few targets, flags for one (the keys' passes over the row cost more) and for float64
    scores (no room for a tie key), one fused loop compiled."""
    assert counting_way(1, torch.float32) == "flags" and counting_way(2, torch.float32) == "keys"
    assert counting_way(10, torch.bfloat16) == "keys" and counting_way(10, torch.float64) == "flags"
    monkeypatch.setattr(counting.torch.compiler, "is_compiling", lambda: True)
    assert counting_way(10, torch.float32) == "fused"


def _values(suite: tre.RankingMetrics, batch: dict, counted: bool, monkeypatch, **extra) -> dict:
    with monkeypatch.context() as patch:
        patch.setattr(ids, "counting_is_cheaper", lambda *args: counted)
        if not counted:  # the list read the longest: looked up in the sorted targets
            patch.setattr(ids, "_target_ranks", lambda *args: None)
            patch.setattr(ids, "_COMPARED", 0)
        return suite.per_query(**batch, **extra)


@pytest.mark.parametrize("threshold", [None, 2, 0])
@pytest.mark.parametrize("ties", ["index", "reverse_index"])
@pytest.mark.parametrize("scores", ["distinct", "ties", "-inf"])
def test_counted_ranks_give_the_lists_and_the_dense_forms_values(scores, ties, threshold, monkeypatch):
    batch = ids_batch(9, 40, 6, scores, seed=len(scores))
    suite = tre.RankingMetrics(SUITE, ties=ties, relevance_threshold=threshold, validate_args=False)
    got = _values(suite, batch, True, monkeypatch)
    references = [_values(suite, batch, False, monkeypatch)]
    if threshold is None or threshold > 0:  # (a dense target judges every item: bpref's differs there)
        dense = suite.per_query(**dense_form(batch))
        references.append({key: value for key, value in dense.items() if not key.startswith("bpref")})
    for want in references:
        for key in want:
            torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=1e-12, equal_nan=True, msg=key)


def test_a_mask_counts_the_same(monkeypatch):
    batch = ids_batch(9, 40, 6, "ties", seed=5)
    mask = torch.rand(batch["preds"].shape, generator=torch.Generator().manual_seed(6)) < 0.5
    suite = tre.RankingMetrics(SUITE, validate_args=False)
    got, want = (_values(suite, batch, counted, monkeypatch, mask=mask) for counted in (True, False))
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=1e-12, equal_nan=True, msg=key)


def test_the_cheaper_ranking_is_taken(monkeypatch):
    """Sampled evaluation's rows (1 + 100 candidates, one target or ten) are counted by keys; ten targets a row
    of 1,000 items, float64 scores (no keys: five passes over the pairs), a list of the ids (coverage) or a
    gain-aware tie order take the top-k."""
    taken = []
    monkeypatch.setattr(ids, "counted_ranks", lambda *args: taken.append(True) or counted_ranks(*args))
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(64, 101, generator=gen)
    one, ten = torch.randint(0, 101, (64, 1), generator=gen), torch.randperm(101, generator=gen)[:10].expand(64, -1)
    long_rows = torch.randn(64, 1_000, generator=gen)
    cases = [(["ndcg@10"], scores, one, "index", True), (["ndcg@10"], scores, ten, "index", True),
             (["ndcg@10"], long_rows, ten, "index", False), (["ndcg@10"], scores.double(), ten, "index", False),
             (["ndcg@10", "coverage@10"], scores, one, "index", False),
             (["ndcg@10"], scores, one, "pessimistic", False)]
    for metrics, preds, target_ids, ties, counted in cases:
        taken.clear()
        options = {"coverage": {"num_items": 101}} if "coverage@10" in metrics else None
        suite = tre.RankingMetrics(metrics, ties=ties, validate_args=False, options=options)
        suite.update(preds, target_ids=target_ids)
        assert taken == ([True] if counted else []), (metrics, preds.shape, preds.dtype, target_ids.shape, ties)
    assert counting_is_cheaper(1, 101, 11, torch.float64) and not counting_is_cheaper(10, 101, 11, torch.float64)
    monkeypatch.setattr(counting.torch.compiler, "is_compiling", lambda: True)  # one fused loop: 15x cheaper
    assert counting_is_cheaper(10, 101, 11) and counting_is_cheaper(10, 1_000, 21)
    assert not counting_is_cheaper(10, 20_000, 21)  # the blocked top-k of long rows is cheaper


def test_counted_ranks_read_nothing_on_the_host_on_the_accelerator_path(monkeypatch):
    """Sampled evaluation's rows on the accelerator path (the CPU answering as CUDA does): counted, no host
    read (tests/reference/host_reads.py fails on any), and the CPU path's values."""
    gen = torch.Generator().manual_seed(3)
    scores = torch.randint(0, 4, (64, 101), generator=gen).float()  # ties with the held-out item
    scores[:, 7] = float("-inf")
    target_ids = torch.randint(0, 101, (64, 1), generator=gen)
    suite = tre.RankingMetrics(["ndcg@10", "map@10", "recall@20", "mrr@10", "hitrate@5", "fallout@10"],
                               validate_args=False)
    want = suite.clone()
    want.update(scores, target_ids=target_ids)
    taken = []
    monkeypatch.setattr(ids, "counted_ranks", lambda *args: taken.append(True) or counted_ranks(*args))
    with simulate_accelerator():
        suite.clone().update(scores, target_ids=target_ids)  # constants built once, from the host
        with NoHostReads():
            suite.update(scores, target_ids=target_ids)
    assert taken == [True, True]
    got, expected = suite.compute(), want.compute()
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=1e-12, msg=key)
