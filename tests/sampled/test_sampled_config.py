"""Sampled suites from configuration: the shipped ``uni100`` suite and YAML files build the metric their keys
say (the same values as the constructor), and every bad key or value is named."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.suites.config import sampled_suite_kwargs


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    preds = torch.randn(64, 101, generator=torch.Generator().manual_seed(0))
    preds[:, 0] += 1.5
    target = torch.zeros(64, 101, dtype=torch.bool)
    target[:, 0] = True
    return preds, target


def test_the_uni100_suite_is_the_constructor_it_describes():
    preds, target = _batch()
    loaded = tre.SampledMetrics.from_config("uni100", num_items=3000)
    built = tre.SampledMetrics(["ndcg@10", "recall@10", "hitrate@10", "mrr"], num_items=3000, num_negatives=100,
                               estimator="bias_variance", gamma=0.01)
    for metric in (loaded, built):
        metric.update(preds, target)
    assert loaded.compute().keys() == built.compute().keys()
    for key, value in built.compute().items():
        assert float(loaded.compute()[key]) == float(value)


def test_a_yaml_file_with_overrides(tmp_path: Path):
    path = tmp_path / "sampled.yaml"
    path.write_text("kind: sampled\nmetrics: [ndcg@5, auc]\nnum_items: 500\nnum_negatives: 100\n"
                    "estimator: naive\nties: average\naudit: true\n")
    metric = tre.SampledMetrics.from_config(path, estimator="em")
    assert metric.member.estimator == "em" and metric.member.audit and metric.ties == "average"
    assert metric.member.num_items == 500 and metric.value_keys[:2] == ["ndcg@5", "auc"]


@pytest.mark.parametrize(("config", "match"), [
    ({"kind": "sampled", "metrics": ["ndcg@10"], "num_negatives": 100}, "num_items"),
    ({"kind": "sampled", "metrics": ["ndcg@10"], "num_items": 10, "num_negatives": 100, "cutoffs": 5}, "cutoffs"),
    ({"kind": "sampled", "metrics": ["ndcg@10"], "num_items": "many", "num_negatives": 100}, "num_items"),
    ({"kind": "sampled", "metrics": ["ndcg@10"], "num_items": 500, "num_negatives": 100, "gamma": "small"}, "gamma"),
    ({"kind": "sampled", "metrics": ["ndcg@10"], "num_items": 500, "num_negatives": 100, "audit": "yes"}, "audit"),
    ({"kind": "pointwise", "metrics": ["ndcg@10"], "num_items": 500, "num_negatives": 100}, "kind"),
    ({"kind": "sampled", "metrics": "ndcg@10", "num_items": 500, "num_negatives": 100}, "metrics"),
])
def test_bad_sampled_configs_are_named(config, match):
    with pytest.raises(ValueError, match=match):
        tre.SampledMetrics.from_config(config)


def test_a_ranking_suite_loader_points_to_the_sampled_one():
    with pytest.raises(ValueError, match="SampledMetrics.from_config"):
        tre.RankingMetrics.from_config("uni100")
    assert sampled_suite_kwargs("uni100")["num_negatives"] == 100
