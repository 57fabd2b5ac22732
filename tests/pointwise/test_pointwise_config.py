"""Pointwise suites from configuration: the shipped ``ctr`` suite, YAML files and dicts."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.suites.config import pointwise_suite_kwargs


def _batch(tasks: int = 2):
    gen = torch.Generator().manual_seed(0)
    preds = torch.rand(50, tasks, generator=gen)
    return preds, (torch.rand(50, tasks, generator=gen) < preds).long(), torch.rand(50, generator=gen)


def test_shipped_ctr_suite_is_a_windowed_two_task_suite():
    metrics = tre.PointwiseMetrics.from_config("ctr")
    assert isinstance(metrics, tre.Windowed) and metrics.window == 100 and metrics.unit == "updates"
    preds, target, weight = _batch()
    metrics.update(preds, target, sample_weight=weight)
    got = metrics.compute()
    names = ["ne", "log_loss", "calibration", "ctr", "auc"]
    assert set(got) == {f"{task}/{scope}_{name}" for task in ("click", "conversion") for scope in ("lifetime", "window")
                        for name in names}
    direct = tre.PointwiseMetrics(names, tasks=["click", "conversion"], options={"auc": {"bins": 1000}})
    direct.update(preds, target, sample_weight=weight)
    for key, value in direct.compute().items():
        task, name = key.split("/")
        assert got[f"{task}/lifetime_{name}"] == value and got[f"{task}/window_{name}"] == value


def test_overrides_and_a_yaml_file(tmp_path):
    one_task = tre.PointwiseMetrics.from_config("ctr", tasks=["ctr"], window=None)
    assert isinstance(one_task, tre.PointwiseMetrics) and one_task.keys()[:2] == ["ctr/ne", "ctr/log_loss"]
    path = tmp_path / "suite.yaml"
    path.write_text("kind: pointwise\nmetrics: [ne, auprc]\noptions: {auprc: {bins: 64}}\n"
                    "window: 30\nwindow_unit: samples\nmax_updates: 3\n", encoding="utf-8")
    metrics = tre.PointwiseMetrics.from_config(path)
    assert (metrics.window, metrics.unit, metrics.capacity) == (30, "samples", 3)
    preds, target, weight = _batch(1)
    metrics.update(preds[:20, 0], target[:20, 0])
    metrics.update(preds[20:, 0], target[20:, 0])  # 30 samples: the window holds this update only
    got = metrics.compute()
    assert got["window_auprc"] == tre.pointwise.functional.binned_auprc(preds[20:, 0], target[20:, 0], bins=64)
    assert got["lifetime_ne"] == tre.pointwise.functional.ne(preds[:, 0], target[:, 0])


def test_a_ranking_suite_loader_refuses_a_pointwise_suite():
    with pytest.raises(ValueError, match="is a 'pointwise' suite: load it with torchrec_eval.PointwiseMetrics"):
        tre.RankingMetrics.from_config("ctr")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"metrics": ["ne"], "window_size": 3}, "Unknown key 'window_size' in the metric suite config; allowed keys: kind"),
        ({"kind": "ranking", "metrics": ["ne"]}, "`kind` must be 'pointwise'"),
        ({"tasks": ["a"]}, "has no `metrics` key"),
        ({"metrics": "ne"}, "`metrics` must be a non-empty list of names such as \\['ne'\\]"),
        ({"metrics": ["ne"], "tasks": "click"}, "`tasks` must be a list of task names"),
        ({"metrics": ["ne"], "window": "100"}, "`window` must be an int"),
        ({"metrics": ["ne"], "window_unit": 3}, "`window_unit` must be a string"),
        ({"metrics": ["ne"], "options": {"ne": 3}}, "`options.ne` must be a mapping"),
        ({"metrics": ["ne"], "validate_args": "yes"}, "`validate_args` must be true or false"),
    ],
)
def test_bad_configs_name_the_key(config, message):
    with pytest.raises(ValueError, match=message):
        pointwise_suite_kwargs(config)


def test_bad_values_are_checked_by_the_classes():
    with pytest.raises(ValueError, match="Unknown pointwise metric 'ndcg@10'"):
        tre.PointwiseMetrics.from_config({"metrics": ["ndcg@10"]})
    with pytest.raises(ValueError, match="`unit` must be one of"):
        tre.PointwiseMetrics.from_config({"metrics": ["ne"], "window": 3, "window_unit": "days"})
