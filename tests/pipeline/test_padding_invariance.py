"""Padding a ranked list with -1 columns never changes a metric (issue 19.1).

Before: the ideal DCG of graded gains was cut at the tensor's width instead of min(k, R), so
``ranked_ids [[0, 1, 2]]`` gave NDCG@10 0.1564 and the same list padded with seven -1 columns 0.1466
(ranx's value, checked below against ranx itself).
"""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from tests.ranx_ids import doc_id
from torchrec_eval.ranking.families import REGISTRY

PRESETS = [None, "trec", "ranx", "torchmetrics", "recbole", "jurity", "recommenders", "spark", "rectools"]
GAINS = [{}, {"ndcg": {"gain": "exp"}, "dcg": {"gain": "exp"}}, {"ndcg": {"gain": "binary"}, "dcg": {"gain": "binary"}}]


def ranked_batch(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    rows, items = 6, 30
    ranked = torch.stack([torch.randperm(items, generator=gen)[:5] for _ in range(rows)])
    ranked[1, 3:] = -1  # a short list
    targets = torch.stack([torch.randperm(items, generator=gen)[:8] for _ in range(rows)])
    targets[2, 4:] = -1
    gains = torch.randint(1, 4, targets.shape, generator=gen).double()
    return ranked, targets, gains


@pytest.mark.parametrize("convention", PRESETS)
@pytest.mark.parametrize("gain_options", range(len(GAINS)))
@pytest.mark.parametrize("seed", [0, 1])
def test_padding_columns_change_nothing(convention, gain_options, seed):
    ranked, targets, gains = ranked_batch(seed)
    # (FallOut needs every candidate's score: not the ranked form)
    names = [f"{family}@{k}" for family, spec in REGISTRY.items() if spec.cutoff == "k" and not spec.reads_non_relevant
             for k in (3, 10)] + ["rprecision", "num_rel"]
    values = []
    for pad in (0, 1, 7):
        padded = torch.cat([ranked, torch.full((ranked.shape[0], pad), -1)], dim=1)
        suite = tre.RankingMetrics(names, convention=convention, options=GAINS[gain_options])
        suite.update(ranked_ids=padded, target_ids=targets, target_gains=gains)
        values.append(suite.compute())
    for key in values[0]:
        for other in values[1:]:
            assert torch.allclose(other[key], values[0][key], atol=1e-12, equal_nan=True), key


@pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
def test_the_issue_example_against_ranx():
    ranx = pytest.importorskip("ranx")
    qrels = ranx.Qrels({"q": {doc_id(0): 1, doc_id(5): 3, doc_id(6): 3, doc_id(7): 3}})
    run = ranx.Run({"q": {doc_id(0): 3.0, doc_id(1): 2.0, doc_id(2): 1.0}})
    expected = ranx.evaluate(qrels, run, "ndcg@10")
    for pad in (0, 7):
        ranked = torch.tensor([[0, 1, 2] + [-1] * pad])
        got = tre.functional.ndcg(ranked_ids=ranked, target_ids=torch.tensor([[0, 5, 6, 7]]),
                                  target_gains=torch.tensor([[1.0, 3, 3, 3]]), k=10, convention="ranx")
        assert float(got) == pytest.approx(expected, abs=1e-12)
