"""Windowed: lifetime and window values in one object, against the wrapped metric recomputed from scratch
on the updates that the window must hold (the last W; TorchRec's WindowBuffer for a window in samples).

Also: any sum-state metric can be wrapped (pointwise suites with tasks and groups, ranking metrics,
torchmetrics' own), no drift over long runs, constant memory, all-or-nothing updates, forward, resume.
"""

from __future__ import annotations

import pytest
import torch
import torchmetrics

import torchrec_eval as tre
from tests.reference.torchrec_metrics import WindowBuffer

TASKS = ["click", "buy"]


def _suite(**kwargs):
    return tre.PointwiseMetrics(["ne", "calibration", "mae", "auc"], tasks=TASKS, num_groups=3,
                                options={"auc": {"bins": 16}}, **kwargs)


def _batches(seed: int, count: int, sizes=(5, 9, 1, 12, 7)):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in range(count):
        size = sizes[i % len(sizes)]
        preds = torch.rand(size, 2, generator=gen, dtype=torch.float64)
        target = (torch.rand(size, 2, generator=gen) < preds).double()
        out.append({"preds": preds, "target": target, "sample_weight": torch.rand(size, generator=gen) * 3,
                    "groups": torch.randint(0, 3, (size,), generator=gen)})
    return out


def _fresh(build, batches):
    metric = build()
    for batch in batches:
        metric.update(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=batch["groups"])
    return metric.compute()


def _assert_prefixed(got, expected, prefix):
    for key, value in expected.items():
        task, name = key.split("/")
        torch.testing.assert_close(got[f"{task}/{prefix}{name}"], value, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("window", [1, 3, 8])
def test_window_of_updates_is_the_metric_of_the_last_w_updates(window):
    batches = _batches(0, 11)
    metric = tre.Windowed(_suite(), window=window)
    for step in range(len(batches)):
        metric.update(batches[step]["preds"], batches[step]["target"],
                      sample_weight=batches[step]["sample_weight"], groups=batches[step]["groups"])
        got = metric.compute()
        assert len(got) == 2 * 4 * len(TASKS)
        _assert_prefixed(got, _fresh(_suite, batches[: step + 1]), "lifetime_")
        _assert_prefixed(got, _fresh(_suite, batches[max(0, step + 1 - window) : step + 1]), "window_")


@pytest.mark.parametrize(("window", "max_updates"), [(20, None), (20, 2), (12, None), (60, 4)])
def test_window_of_samples_follows_torchrec_window_buffer(window, max_updates):
    batches = _batches(1, 12)
    metric = tre.Windowed(_suite(), window=window, unit="samples", max_updates=max_updates)
    reference = WindowBuffer(window, max_buffer_count=max_updates or min(window, 1000))
    for step, batch in enumerate(batches):
        metric.update(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=batch["groups"])
        reference.aggregate_state([0.0], batch["preds"].shape[0])
        held = reference.updates_in_window()
        assert 1 <= held <= step + 1
        _assert_prefixed(metric.compute(), _fresh(_suite, batches[step + 1 - held : step + 1]), "window_")


def test_window_of_samples_refuses_an_update_larger_than_the_window():
    metric = tre.Windowed(tre.NE(), window=4, unit="samples")
    metric.update(torch.tensor([0.2, 0.7]), torch.tensor([0, 1]))
    before = {name: state.clone() for name, state in metric.metric_state.items()}
    with pytest.raises(ValueError, match="`preds`: an update of 5 samples does not fit in a window of 4 samples"):
        metric.update(torch.full((5,), 0.5), torch.ones(5))
    assert all(torch.equal(metric.metric_state[name], state) for name, state in before.items())


def _ranking_batches(seed, count):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.rand(4, 10, generator=gen), (torch.rand(4, 10, generator=gen) < 0.3).long()) for _ in range(count)]


@pytest.mark.parametrize(
    "build",
    [lambda: tre.NDCG(k=3), lambda: tre.RankingMetrics(["ndcg@5", "recall@3", "auc"]), lambda: tre.GAUC(num_groups=2)],
)
def test_ranking_metrics_can_be_windowed(build):
    batches = _ranking_batches(2, 6)
    metric = tre.Windowed(build(), window=2)
    grouped = build().num_groups is not None
    for scores, target in batches:
        metric.update(scores, target, **({"groups": torch.arange(4) % 2} if grouped else {}))
    fresh = build()
    for scores, target in batches[-2:]:
        fresh.update(scores, target, **({"groups": torch.arange(4) % 2} if grouped else {}))
    expected = fresh.compute()
    got = metric.compute()
    if isinstance(expected, dict):
        for key, value in expected.items():
            torch.testing.assert_close(got[f"window_{key}"], value, rtol=1e-12, atol=0)
    else:
        name = build().value_keys[0]
        torch.testing.assert_close(got[f"window_{name}"], expected, rtol=1e-12, atol=0, equal_nan=True)


def test_torchmetrics_metrics_can_be_windowed():
    metric = tre.Windowed(torchmetrics.MeanSquaredError(), window=2, name="mse")
    for value in (1.0, 2.0, 3.0):
        metric.update(torch.tensor([value]), torch.tensor([0.0]))
    got = metric.compute()
    assert got["lifetime_mse"].item() == pytest.approx((1 + 4 + 9) / 3)
    assert got["window_mse"].item() == pytest.approx((4 + 9) / 2)


def test_no_drift_over_a_long_run():
    """Window sums come from the ring's slots, not from adding and subtracting: huge past values leave
    nothing behind."""
    metric = tre.Windowed(tre.PointwiseMSE(), window=2)
    for step in range(300):
        scale = 1e12 if step % 3 == 0 else 1.0
        metric.update(torch.tensor([scale, 0.0], dtype=torch.float64), torch.zeros(2, dtype=torch.float64))
    metric.update(torch.tensor([0.1], dtype=torch.float64), torch.zeros(1, dtype=torch.float64))
    metric.update(torch.tensor([0.2], dtype=torch.float64), torch.zeros(1, dtype=torch.float64))
    assert metric.compute()["window_mse"].item() == (0.1**2 + 0.2**2) / 2


def test_memory_is_constant_and_states_keep_their_dtype():
    metric = tre.Windowed(_suite(), window=5)
    sizes = {name: state.numel() for name, state in metric.metric_state.items()}
    inner = _suite().stats.numel()
    assert sum(sizes.values()) == (2 + 5) * inner + 5 + 1  # lifetime, window, ring; samples; next slot
    metric.to(torch.bfloat16)
    for batch in _batches(3, 20):
        metric.update(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=batch["groups"])
    assert {name: state.numel() for name, state in metric.metric_state.items()} == sizes
    assert all(state.dtype == torch.float64 for name, state in metric.metric_state.items() if "stats" in name)


def test_a_failed_update_changes_nothing():
    batches = _batches(4, 4)
    metric = tre.Windowed(_suite(), window=2)
    for batch in batches[:3]:
        metric.update(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=batch["groups"])
    before = {name: state.clone() for name, state in metric.metric_state.items()}
    bad = batches[3]
    with pytest.raises(ValueError, match="`groups` must lie in"):
        metric.update(bad["preds"], bad["target"], sample_weight=bad["sample_weight"], groups=bad["groups"] + 3)
    with pytest.raises(ValueError, match="unexpected keyword argument 'weights'"):
        metric.update(bad["preds"], bad["target"], weights=bad["sample_weight"], groups=bad["groups"])
    assert all(torch.equal(metric.metric_state[name], state) for name, state in before.items())
    assert not metric.metric.stats.any()  # the wrapped metric is a formula: its own state stays empty
    metric.update(bad["preds"], bad["target"], sample_weight=bad["sample_weight"], groups=bad["groups"])
    _assert_prefixed(metric.compute(), _fresh(_suite, batches[2:]), "window_")


def test_forward_returns_the_batch_values_and_accumulates():
    batches = _batches(5, 3)
    metric = tre.Windowed(_suite(), window=2)
    for batch in batches:
        out = metric(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=batch["groups"])
        alone = _fresh(_suite, [batch])
        _assert_prefixed(out, alone, "lifetime_")
        _assert_prefixed(out, alone, "window_")
    _assert_prefixed(metric.compute(), _fresh(_suite, batches), "lifetime_")
    _assert_prefixed(metric.compute(), _fresh(_suite, batches[1:]), "window_")


def test_mid_run_resume_from_a_checkpoint():
    batches = _batches(6, 7)
    first = tre.Windowed(_suite(), window=3 * 7, unit="samples", max_updates=5)
    whole = tre.Windowed(_suite(), window=3 * 7, unit="samples", max_updates=5)
    for batch in batches[:4]:
        for metric in (whole, first):
            metric.update(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=batch["groups"])
    first.persistent(True)
    second = tre.Windowed(_suite(), window=3 * 7, unit="samples", max_updates=5)
    second.persistent(True)
    second.load_state_dict(first.state_dict())
    for batch in batches[4:]:
        for metric in (whole, second):
            metric.update(batch["preds"], batch["target"], sample_weight=batch["sample_weight"], groups=batch["groups"])
    for key, value in whole.compute().items():
        torch.testing.assert_close(second.compute()[key], value, rtol=0, atol=0, equal_nan=True)


def test_reset_empties_both():
    metric = tre.Windowed(tre.Calibration(), window=2)
    metric.update(torch.tensor([0.5]), torch.tensor([1]))
    metric.reset()
    metric.update(torch.tensor([0.25]), torch.tensor([1]))
    assert metric.compute() == {"lifetime_calibration": 0.25, "window_calibration": 0.25}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: tre.Windowed(tre.BinaryAUC(), window=2), "a window needs fixed sufficient statistics"),
        (lambda: tre.Windowed(torchmetrics.MaxMetric(), window=2), "not tensors summed across processes"),
        (lambda: tre.Windowed(tre.NE, window=2), "`metric` must be a torchmetrics Metric"),
        (lambda: tre.Windowed(tre.NE(), window=0), "`window` must be an int >= 1, got 0"),
        (lambda: tre.Windowed(tre.NE(), window=2, unit="batches"), "`unit` must be one of"),
        (lambda: tre.Windowed(tre.NE(), window=2, max_updates=3), "`max_updates` applies to unit='samples'"),
        (lambda: tre.Windowed(tre.NE(), window=2, unit="samples", max_updates=0), "`max_updates` must be an int"),
    ],
)
def test_bad_arguments(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_the_flat_form_is_refused():
    metric = tre.Windowed(tre.NDCG(k=2), window=2)
    with pytest.raises(ValueError, match="`indexes`: a windowed metric does not take the flat form"):
        metric.update(torch.rand(4), torch.tensor([1, 0, 0, 1]), indexes=torch.tensor([0, 0, 1, 1]))


def test_plot_draws_a_bar_per_lifetime_and_window_value():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    metric = tre.Windowed(tre.PointwiseMetrics(["ne", "calibration"], tasks=["a"]), window=1)
    metric.update(torch.full((4, 1), 0.5), torch.tensor([[1], [0], [0], [0]]))
    metric.update(torch.full((4, 1), 0.25), torch.tensor([[1], [0], [0], [0]]))
    values = metric.compute()
    fig, ax = metric.plot()
    assert [tick.get_text() for tick in ax.get_xticklabels()] == list(values)
    assert [bar.get_height() for bar in ax.patches] == pytest.approx([value.item() for value in values.values()])
    assert values["a/window_calibration"].item() == 1.0 and values["a/lifetime_calibration"].item() == 1.5
    matplotlib.pyplot.close(fig)
