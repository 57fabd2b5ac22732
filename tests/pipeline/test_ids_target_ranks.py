"""The ids form finds its targets in the list by one of four reads, chosen by the row's shape: a comparison of
every (listed item, target id) pair (few pairs), a map of list positions over the row's items (short rows), a
binary search of the targets' scores (a list whose scores strictly decrease, on the CPU), or a lookup of the
list in the sorted targets (the rest). Each must give what the dense form gives (its own path: the target read
at each ranked item), per query, for ties at and inside the cut, -inf scores, a mask, both index tie orders,
graded gains, padding and relevance thresholds at or below 0."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from tests.pipeline.ids_batches import dense_form, ids_batch
from torchrec_eval.pipeline.forms import ids

SUITE = ["ndcg@10", "map@10", "recall@10", "precision@5", "mrr@10", "hitrate@5", "rprecision@10", "coverage@10"]

# (rows, items, targets per row): which read the suite's depth 10 takes
SHAPES = {
    "comparison": (9, 3_000, 6),  # 60 pairs <= 1024
    "map": (5, 3_000, 120),  # 1,200 pairs > 1024, 3,000 items <= 4 x 1,200
    "search or lookup": (5, 9_000, 120),  # 9,000 items > 4 x 1,200
}


def _looked_up(suite: tre.RankingMetrics, batch: dict[str, torch.Tensor], monkeypatch) -> dict[str, torch.Tensor]:
    """The values through the lookup of the list in the sorted targets, the read every shape once took."""
    with monkeypatch.context() as patch:
        patch.setattr(ids, "_target_ranks", lambda *args: None)
        patch.setattr(ids, "_COMPARED", 0)
        return suite.per_query(**batch)


@pytest.mark.parametrize("threshold", [None, 2, 0])  # binary gains; relevance read off the gains; or scattered
@pytest.mark.parametrize("ties", ["index", "reverse_index"])
@pytest.mark.parametrize("scores", ["distinct", "ties", "-inf"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_read_gives_the_dense_forms_values(shape, scores, ties, threshold, monkeypatch):
    """A threshold at or below 0 makes every non-target item of a dense target relevant (its target, 0, is
    >= the threshold), which the ids form has no entry for: there the reference is the lookup."""
    rows, items, targets = SHAPES[shape]
    batch = ids_batch(rows, items, targets, scores, seed=len(shape) + len(scores))
    suite = tre.RankingMetrics(SUITE, ties=ties, relevance_threshold=threshold, validate_args=False,
                               options={"coverage": {"num_items": items}})
    got = suite.per_query(**batch)
    references = [_looked_up(suite, batch, monkeypatch)]
    if threshold is None or threshold > 0:
        references.append(suite.per_query(**dense_form(batch)))
    for want in references:
        for key in want:
            torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=1e-12, equal_nan=True, msg=key)
    merged_ids, merged_dense = suite.clone(), suite.clone()
    merged_ids.update(**batch)
    merged_dense.update(**dense_form(batch))
    assert merged_ids.compute()["coverage@10"] == merged_dense.compute()["coverage@10"]  # the listed ids


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_mask_gives_the_dense_forms_values(shape):
    rows, items, targets = SHAPES[shape]
    batch = ids_batch(rows, items, targets, "ties", seed=5)
    mask = torch.rand(batch["preds"].shape, generator=torch.Generator().manual_seed(6)) < 0.5
    suite = tre.RankingMetrics(SUITE[:-1], validate_args=False)
    got = suite.per_query(**batch, mask=mask)
    want = suite.per_query(**dense_form(batch), mask=mask)
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=1e-12, equal_nan=True, msg=key)


def test_the_shapes_take_the_read_they_are_named_for(monkeypatch):
    """Each shape above reaches its read (a read that raises shows which one ran)."""
    taken = []
    for name in ("_mapped_ranks", "table_ranked", "lookup"):
        original = getattr(ids, name)

        def spy(*args, original=original, name=name, **kwargs):
            taken.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(ids, name, spy)
    suite = tre.RankingMetrics(SUITE[:-1], validate_args=False)
    expected = {  # (distinct scores, ties): a distinct list is searched where it is not compared or mapped
        "comparison": (["table_ranked"], ["table_ranked"]),
        "map": (["_mapped_ranks"], ["_mapped_ranks"]),
        "search or lookup": ([], ["table_ranked", "lookup"]),
    }
    for shape, reads in expected.items():
        for scores, read in zip(("distinct", "ties"), reads, strict=True):
            taken.clear()
            suite.update(**ids_batch(*SHAPES[shape], scores, seed=1))
            assert taken == read, (shape, scores, taken)
