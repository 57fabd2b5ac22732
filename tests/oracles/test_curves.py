"""PrecisionRecallCurve and RecallAtFixedPrecision against torchmetrics' ``RetrievalPrecisionRecallCurve`` and
``RetrievalRecallAtFixedPrecision`` themselves, with adaptive k, each ``empty_target_action`` and lists shorter
than the curve; split into batches, by group, through a checkpoint, and drawn."""

from __future__ import annotations

import pytest
import torch
from torchmetrics.retrieval import RetrievalPrecisionRecallCurve, RetrievalRecallAtFixedPrecision

import torchrec_eval as tre
from torchrec_eval import functional as F


def _batch(seed: int, rows: int = 18, items: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Distinct scores, lists of 1..items candidates (-inf: not one), a query without a relevant item."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randperm(rows * items, generator=gen).reshape(rows, items).double()
    target = torch.rand(rows, items, generator=gen) < 0.35
    lengths = torch.randint(1, items + 1, (rows,), generator=gen)
    target[0] = False
    listed = torch.arange(items) < lengths.unsqueeze(1)
    return preds.masked_fill(~listed, float("-inf")), target & listed


def _peer(make, preds: torch.Tensor, target: torch.Tensor):
    """torchmetrics' class on the candidates only, as one flat batch with query indexes."""
    listed = preds > float("-inf")
    rows = torch.arange(len(preds)).unsqueeze(1).expand_as(preds)
    metric = make()
    metric.update(preds[listed].float(), target[listed], indexes=rows[listed])
    return metric.compute()


@pytest.mark.parametrize("action", ["neg", "pos", "skip"])
@pytest.mark.parametrize("adaptive_k", [False, True])
@pytest.mark.parametrize("max_k", [1, 5, 11])  # 11: past every list
def test_the_curve_equals_torchmetrics(max_k, adaptive_k, action):
    preds, target = _batch(seed=max_k)
    precision, recall, top_k = _peer(lambda: RetrievalPrecisionRecallCurve(
        max_k=max_k, adaptive_k=adaptive_k, empty_target_action=action), preds, target)
    functional = F.precision_recall_curve(preds, target, max_k=max_k, adaptive_k=adaptive_k,
                                          empty_target_action=action)
    metric = tre.PrecisionRecallCurve(max_k, adaptive_k=adaptive_k, empty_target_action=action)
    for half in (slice(0, 7), slice(7, None)):
        metric.update(preds[half], target[half])
    # torchmetrics averages in float32; a class's one-point curve (max_k=1) is 0-d there and here, as
    # torchmetrics squeezes every one-element result of compute (the functions return [1])
    assert [value.shape for value in metric.compute()] == [value.shape for value in (precision, recall, top_k)]
    for ours in (functional, metric.compute()):
        torch.testing.assert_close(ours[0].reshape(-1), precision.double().reshape(-1), rtol=0, atol=1e-6)
        torch.testing.assert_close(ours[1].reshape(-1), recall.double().reshape(-1), rtol=0, atol=1e-6)
        assert torch.equal(ours[2].reshape(-1), top_k.reshape(-1))
    assert recall.reshape(-1)[-1] > (recall[0] if max_k > 1 else 0)  # the oracle's curve rises: it saw queries


@pytest.mark.parametrize("min_precision", [0.0, 0.3, 0.5, 0.99])
@pytest.mark.parametrize("adaptive_k", [False, True])
def test_recall_at_fixed_precision_equals_torchmetrics(min_precision, adaptive_k):
    preds, target = _batch(seed=3)
    recall, k = _peer(lambda: RetrievalRecallAtFixedPrecision(
        min_precision=min_precision, max_k=6, adaptive_k=adaptive_k), preds, target)
    metric = tre.RecallAtFixedPrecision(min_precision, 6, adaptive_k=adaptive_k, empty_target_action="neg")
    metric.update(preds, target)
    ours_recall, ours_k = metric.compute()
    assert float(ours_recall) == pytest.approx(float(recall), abs=1e-6)
    assert int(ours_k) == int(k)


def test_equal_recalls_take_the_largest_cut_off_and_an_unreachable_precision_gives_zero_and_max_k():
    """torchmetrics' rule, on a curve whose recall is flat from k = 2 to 3 at a precision above the level."""
    preds = torch.tensor([[4.0, 3.0, 2.0, 1.0]])
    target = torch.tensor([[True, True, False, False]])  # P = 1, 1, 2/3, 1/2; R = 1/2, 1, 1, 1
    metric = tre.RecallAtFixedPrecision(0.6, 4)
    metric.update(preds, target)
    assert [float(v) for v in metric.compute()] == [1.0, 3]
    peer = _peer(lambda: RetrievalRecallAtFixedPrecision(min_precision=0.6, max_k=4), preds, target)
    assert [float(v) for v in peer] == [1.0, 3]
    unreachable = tre.RecallAtFixedPrecision(1.0, 4)
    unreachable.update(preds, ~target)  # P = 0, 0, 1/3, 1/2
    assert [float(v) for v in unreachable.compute()] == [0.0, 4]
    peer = _peer(lambda: RetrievalRecallAtFixedPrecision(min_precision=1.0, max_k=4), preds, ~target)
    assert [float(v) for v in peer] == [0.0, 4]


def test_groups_per_query_curves_and_a_checkpoint():
    preds, target = _batch(seed=9)
    groups = torch.arange(len(preds)) % 3
    metric = tre.PrecisionRecallCurve(4, num_groups=3)
    metric.update(preds, target, groups=groups)
    precision, recall, _ = metric.compute()
    assert precision.shape == recall.shape == (3, 4)
    for group in range(3):  # each group's curve is the curve of its queries alone
        alone = F.precision_recall_curve(preds[groups == group], target[groups == group], max_k=4)
        torch.testing.assert_close(precision[group], alone[0], rtol=0, atol=1e-15)
        torch.testing.assert_close(recall[group], alone[1], rtol=0, atol=1e-15)
    rows = F.precision_recall_curve(preds, target, max_k=4, reduction="none")
    assert rows[0].shape == (len(preds), 4) and rows[0][0].isnan().all()  # skipped: no relevant item
    torch.testing.assert_close(rows[1].nanmean(0), F.precision_recall_curve(preds, target, max_k=4)[1])
    metric.persistent(True)
    restored = tre.PrecisionRecallCurve(4, num_groups=3)
    restored.persistent(True)
    restored.load_state_dict(metric.state_dict())
    for ours, theirs in zip(restored.compute(), metric.compute(), strict=True):
        assert torch.equal(ours, theirs)
    with pytest.raises(ValueError, match="not made by this metric's configuration"):  # another curve's state
        tre.PrecisionRecallCurve(5, num_groups=3).load_state_dict(metric.state_dict())


def test_plots_draw_the_curve_and_the_point():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    preds, target = _batch(seed=4)
    metric = tre.RecallAtFixedPrecision(0.3, 5)
    metric.update(preds, target)
    precision, recall, _ = F.precision_recall_curve(preds, target, max_k=5)
    fig, ax = metric.plot()
    curve, point = ax.lines
    assert curve.get_xdata().tolist() == pytest.approx(recall.tolist())
    assert curve.get_ydata().tolist() == pytest.approx(precision.tolist())
    best, k = metric.compute()
    assert point.get_xdata().tolist() == [float(best)] and point.get_ydata().tolist() == [float(precision[k - 1])]
    plt.close(fig)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: tre.PrecisionRecallCurve(0), "`max_k` must be an int >= 1"),
    (lambda: tre.PrecisionRecallCurve(3, adaptive_k="yes"), "`adaptive_k` must be True or False, got 'yes'"),
    (lambda: tre.RecallAtFixedPrecision(1.5, 3), r"`min_precision` must be a number in \[0, 1\], got 1.5"),
    (lambda: F.precision_recall_curve(torch.rand(2, 3), torch.rand(2, 3) > 0.5, max_k=None),
     "`max_k` must be an int >= 1 .*got None"),
])
def test_bad_arguments_name_the_argument(make, message):
    with pytest.raises(ValueError, match=message):
        make()
