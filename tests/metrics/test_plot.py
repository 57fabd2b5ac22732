"""``plot()`` of every metric class, a suite, a suite's logged values and a paired comparison, headless (Agg).

Each test reads what was drawn back from the matplotlib objects (bar heights, line data, tick and axis
labels, legend entries, limits) and compares it with the values the metric returned.
"""

from __future__ import annotations

import math
import sys

import pytest
import torch
from torchmetrics import Metric

import torchrec_eval as tre
from tests.reference.classes import FACTORIES, NUM_ITEMS, RATING
from tests.reference.classes import inputs as _inputs
from tests.reference.classes import ranking_batch as _batch
from torchrec_eval.comparison.uncertainty import PairedComparison

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _heights(ax) -> list[float]:
    return [float(bar.get_height()) for bar in ax.patches]


def test_every_public_metric_class_is_covered():
    public = {name for name in tre.__all__ if isinstance(getattr(tre, name), type)
              and issubclass(getattr(tre, name), Metric)
              and name not in ("RankingMetrics", "PointwiseMetrics", "Windowed", "ModelComparison")}  # own tests below
    assert public == set(FACTORIES)


# SampledMetrics: a dict of values, like a suite; the curves draw a curve (tests/oracles/test_curves.py)
SINGLE = sorted(name for name in FACTORIES if name not in ("SampledMetrics", "PrecisionRecallCurve", "RecallAtFixedPrecision"))


@pytest.mark.parametrize("name", SINGLE)
def test_plot_one_value(name):
    metric = FACTORIES[name]()
    metric.update(*_inputs(name, 0))
    value = float(metric.compute())
    assert not math.isnan(value)
    fig, ax = metric.plot()
    assert fig is ax.figure
    if name in RATING:  # torchmetrics' plot: a marker at the value, the class name as y label
        assert [float(y) for y in ax.lines[0].get_ydata()] == pytest.approx([value], abs=1e-6)
        assert ax.get_ylabel() == type(metric).__name__
        return
    direction = {True: " (higher is better)", False: " (lower is better)", None: ""}[metric.higher_is_better]
    assert ax.get_title() == type(metric).__name__ + direction
    key = metric.value_keys[0]
    assert _heights(ax) == pytest.approx([value], abs=1e-12)
    assert [tick.get_text() for tick in ax.get_xticklabels()] == [key]
    assert ax.get_ylabel() == key
    low, high = ax.get_ylim()
    assert low <= min(0.0, value) and high >= value


@pytest.mark.parametrize("name", SINGLE)
def test_plot_values_over_steps(name):
    metric = FACTORIES[name]()
    values = [metric(*_inputs(name, seed)) for seed in range(3)]  # forward: one value per batch
    fig, ax = metric.plot(values)
    if name in RATING:
        assert [float(y) for y in ax.lines[0].get_ydata()] == pytest.approx([float(v) for v in values], abs=1e-6)
        return
    assert len(ax.lines) == 1
    assert list(ax.lines[0].get_xdata()) == [0, 1, 2]
    assert [float(y) for y in ax.lines[0].get_ydata()] == pytest.approx([float(v) for v in values], abs=1e-12)
    assert ax.get_xlabel() == "step" and ax.get_ylabel() == metric.value_keys[0]


def test_plot_on_a_given_axes_and_direction_in_the_title():
    fig, (left, right) = plt.subplots(1, 2)
    ndcg, mpr = tre.NDCG(k=3), tre.MPR()
    for metric in (ndcg, mpr):
        metric.update(*_batch(1))
    assert ndcg.plot(ax=left) == (fig, left) and mpr.plot(ax=right) == (fig, right)
    assert left.get_title() == "NDCG (higher is better)" and right.get_title() == "MPR (lower is better)"
    assert left.get_ylim()[1] >= 1.0 and right.get_ylim()[1] >= 100.0  # up to each metric's bound
    assert left.get_ylim()[1] < 2.0


def test_suite_plot_is_a_bar_per_value_and_lines_over_steps():
    suite = tre.RankingMetrics(["ndcg@3", "recall@5", "mrr@3", "auc"], prefix="val/")
    suite.update(*_batch(2))
    result = suite.compute()
    fig, ax = suite.plot()
    assert [tick.get_text() for tick in ax.get_xticklabels()] == list(result)
    assert _heights(ax) == pytest.approx([float(v) for v in result.values()], abs=1e-12)
    assert ax.get_ylabel() == "value" and ax.get_title() == "RankingMetrics (higher is better)"

    steps = [suite(*_batch(seed)) for seed in range(4)]
    fig, ax = suite.plot(steps)
    lines = {line.get_label(): [float(y) for y in line.get_ydata()] for line in ax.lines}
    assert list(lines) == list(result)
    for key, ys in lines.items():
        assert ys == pytest.approx([float(step[key]) for step in steps], abs=1e-12)
    assert [text.get_text() for text in ax.get_legend().get_texts()] == list(result)


def test_suite_with_groups_draws_a_bar_per_group_and_mixed_directions_no_direction():
    suite = tre.RankingMetrics(["ndcg@3", "mpr"], num_groups=2)
    preds, target = _batch(3)
    suite.update(preds, target, groups=torch.tensor([0, 1, 0, 1, 1, 1]))
    result = suite.compute()
    fig, ax = suite.plot()
    by_group = [[float(v[group]) for v in result.values()] for group in range(2)]
    assert [float(bar.get_height()) for bar in ax.containers[0]] == pytest.approx(by_group[0], abs=1e-12)
    assert [float(bar.get_height()) for bar in ax.containers[1]] == pytest.approx(by_group[1], abs=1e-12)
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["group 0", "group 1"]
    assert suite.higher_is_better is None and ax.get_title() == "RankingMetrics"

    fig, ax = suite.plot([result, result])
    assert [line.get_label() for line in ax.lines] == [
        "ndcg@3 group 0", "ndcg@3 group 1", "mpr group 0", "mpr group 1"]


def test_suite_values_logged_by_lightning_plot_alone():
    suite = tre.RankingMetrics(["ndcg@3", "mpr"], postfix="_val")
    suite.update(*_batch(4))
    result = suite.compute()
    for (key, view), name in zip(suite.items(), ["ndcg@3", "mpr"], strict=True):
        fig, ax = view.plot()
        assert _heights(ax) == pytest.approx([float(result[key])], abs=1e-12)
        assert ax.get_ylabel() == name


def test_paired_comparison_plot():
    compare = PairedComparison(["ndcg@3"])
    preds, target = _batch(5)
    compare.update(preds, torch.randn(6, NUM_ITEMS), target)
    result = compare.compute()
    fig, ax = compare.plot()
    assert [tick.get_text() for tick in ax.get_xticklabels()] == list(result)
    assert _heights(ax) == pytest.approx([float(v) for v in result.values()], abs=1e-12)
    assert ax.get_ylim()[0] <= min(float(v) for v in result.values())  # a difference may be < 0


def test_plot_a_model_comparison():
    compare = tre.ModelComparison(["ndcg@3"], models=["a", "b", "c"])
    preds, target = _batch(5)
    compare.update([preds, torch.randn(6, NUM_ITEMS), torch.randn(6, NUM_ITEMS)], target)
    result = compare.compute()
    fig, ax = compare.plot()
    assert [tick.get_text() for tick in ax.get_xticklabels()] == list(result)
    assert _heights(ax) == pytest.approx([float(v) for v in result.values()], abs=1e-12)


@pytest.mark.parametrize("val", [[], "ndcg", 0.5, [{"a": torch.tensor(1.0)}, {"b": torch.tensor(1.0)}]])
def test_bad_values_raise(val):
    with pytest.raises(ValueError, match="`val`"):
        tre.NDCG(k=3).plot(val)


def test_without_matplotlib_the_error_names_the_extra(monkeypatch):
    metric = tre.NDCG(k=3)
    metric.update(*_batch(6))
    for module in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, module, None)  # `import matplotlib.pyplot` now fails
    with pytest.raises(ModuleNotFoundError, match=r"torchrec_eval\[cli\]"):
        metric.plot()
