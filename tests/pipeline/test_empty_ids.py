"""Batches without any id: a catalogue batch of no query is refused with a ``ValueError`` (it was a
``RuntimeError`` from ``aminmax``), and ``target_ids`` of no column ([B, 0], what ``pad_sequence``
of empty lists gives) mean "no relevant item", as an all-zero dense target does (it was an
``IndexError`` deep in the lookup)."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre

METRICS = ["ndcg@3", "mrr@3", "recall@3"]


def test_a_catalogue_batch_of_no_query_is_refused():
    metric = tre.NDCG(k=3)
    with pytest.raises(ValueError, match=r"`target_ids` must have shape \[B, T\].*B >= 1.*\(0, 2\)"):
        metric.catalogue(5, target_ids=torch.zeros(0, 2, dtype=torch.long))


@pytest.mark.parametrize("action", ["neg", "pos", "skip"])
def test_ids_of_no_column_are_queries_without_relevant_items(action):
    gen = torch.Generator().manual_seed(0)
    scores = torch.rand(3, 6, generator=gen)
    dense = tre.RankingMetrics([*METRICS, "auc"], empty_target_action=action)
    dense.update(scores, torch.zeros(3, 6))
    ids = tre.RankingMetrics([*METRICS, "auc"], empty_target_action=action)
    ids.update(scores, target_ids=torch.zeros(3, 0, dtype=torch.long), target_gains=torch.zeros(3, 0))
    chunked = tre.RankingMetrics(METRICS, empty_target_action=action)
    with chunked.catalogue(6, target_ids=torch.zeros(3, 0, dtype=torch.long)) as batch:
        batch.add(scores[:, :4], 0)
        batch.add(scores[:, 4:], 4)
    want = dense.compute()
    for got in (ids.compute(), chunked.compute()):
        for key, value in got.items():
            torch.testing.assert_close(value, want[key], equal_nan=True, msg=key)


@pytest.mark.parametrize("ties", ["index", "average", "pessimistic"])
def test_exclude_ids_of_no_column_exclude_nothing(ties):
    """[B, 0] ``exclude_ids`` (no query has a seen item) failed in the range check's ``aminmax``."""
    gen = torch.Generator().manual_seed(1)
    scores, target = torch.rand(3, 6, generator=gen), torch.rand(3, 6, generator=gen) < 0.5
    without, with_none = (tre.RankingMetrics([*METRICS, "auc"], ties=ties) for _ in range(2))
    without.update(scores, target)
    with_none.update(scores, target, exclude_ids=torch.zeros(3, 0, dtype=torch.long))
    want = without.compute()
    for key, value in with_none.compute().items():
        torch.testing.assert_close(value, want[key], equal_nan=True, msg=key)
