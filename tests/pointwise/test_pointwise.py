"""Pointwise metrics (NE, log loss, calibration, CTR, MSE/RMSE/MAE, AUC/AUPRC exact and binned) against
scikit-learn, brute-force weighted pairs and a line-by-line reference of TorchRec's source.

Every class is fed several batches with sample weights; its value must equal the oracle's on all the
samples at once. Also: tasks ([B, T] inputs, named results), groups, the binned error bound, bad input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import (
    average_precision_score,
    log_loss,
    mean_absolute_error,
    mean_squared_error,
    roc_auc_score,
)

import torchrec_eval as tre
from tests.reference import pointwise as brute
from tests.reference import torchrec_metrics as torchrec_ref
from torchrec_eval.pointwise import functional as F


def _data(seed: int, n: int = 300, tasks: int | None = None, ties: bool = False, soft: bool = False):
    gen = torch.Generator().manual_seed(seed)
    shape = (n,) if tasks is None else (n, tasks)
    preds = torch.rand(shape, generator=gen, dtype=torch.float64) * 0.98 + 0.01
    if ties:
        preds = (preds * 10).round() / 10
    target = (torch.rand(shape, generator=gen, dtype=torch.float64) < preds).double()
    if soft:
        target = torch.rand(shape, generator=gen, dtype=torch.float64)
    weight = torch.rand(shape, generator=gen, dtype=torch.float64) * 2
    return preds, target, weight


def _feed(metric, preds, target, weight=None, groups=None, sizes=None):
    """Update with batches of uneven sizes (an empty one included) covering all samples."""
    count = preds.shape[0]
    sizes = sizes or [count // 7, 1, count // 3, 0, count]
    start = 0
    for size in sizes:
        end = min(start + size, preds.shape[0])
        metric.update(
            preds[start:end], target[start:end],
            sample_weight=None if weight is None else weight[start:end],
            groups=None if groups is None else groups[start:end],
        )
        start = end
    assert start == preds.shape[0]
    return metric.compute()


def _np(*tensors):
    return [t.numpy() for t in tensors]


# --- scikit-learn ------------------------------------------------------------------------------------


def test_log_loss_matches_sklearn():
    preds, target, weight = _data(0)
    value = _feed(tre.LogLoss(), preds, target, weight)
    assert value.dtype == torch.float64
    assert value.item() == pytest.approx(log_loss(*_np(target, preds), sample_weight=weight.numpy()), rel=1e-12)
    bits = _feed(tre.LogLoss(log_base=2), preds, target, weight)
    assert bits.item() == pytest.approx(value.item() / math.log(2), rel=1e-12)


def test_ne_is_log_loss_over_the_log_loss_of_the_base_rate():
    preds, target, weight = _data(1)
    y, p, w = _np(target, preds, weight)
    base_rate = np.average(y, weights=w)
    expected = log_loss(y, p, sample_weight=w) / log_loss(y, np.full_like(p, base_rate), sample_weight=w)
    assert _feed(tre.NE(), preds, target, weight).item() == pytest.approx(expected, rel=1e-12)
    assert F.ne(preds, target, weight).item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("cls", "oracle"),
    [
        (tre.PointwiseMSE, lambda y, p, w: mean_squared_error(y, p, sample_weight=w)),
        (tre.PointwiseRMSE, lambda y, p, w: math.sqrt(mean_squared_error(y, p, sample_weight=w))),
        (tre.PointwiseMAE, lambda y, p, w: mean_absolute_error(y, p, sample_weight=w)),
        (tre.Calibration, lambda y, p, w: np.sum(w * p) / np.sum(w * y)),
        (tre.PointwiseCTR, lambda y, p, w: np.average(y, weights=w)),
    ],
)
def test_sum_metrics_match_sklearn_and_numpy(cls, oracle):
    preds, target, weight = _data(2)
    assert _feed(cls(), preds, target, weight).item() == pytest.approx(oracle(*_np(target, preds, weight)), rel=1e-12)


@pytest.mark.parametrize("ties", [False, True])
def test_exact_auc_and_auprc_match_sklearn(ties):
    preds, target, weight = _data(3, ties=ties)
    y, p, w = _np(target, preds, weight)
    assert _feed(tre.BinaryAUC(), preds, target, weight).item() == pytest.approx(
        roc_auc_score(y, p, sample_weight=w), rel=1e-12)
    assert _feed(tre.BinaryAUPRC(), preds, target, weight).item() == pytest.approx(
        average_precision_score(y, p, sample_weight=w), rel=1e-12)


def test_exact_auc_accepts_logits_and_soft_labels():
    preds, target, weight = _data(4, n=40, ties=True, soft=True)
    logits = torch.logit(preds.clamp(0.05, 0.95)) * 3
    assert F.binary_auc(logits, target, weight).item() == pytest.approx(
        brute.auc(logits.tolist(), target.tolist(), weight.tolist()), rel=1e-12)
    assert F.binary_auprc(logits, target, weight).item() == pytest.approx(
        brute.average_precision(logits.tolist(), target.tolist(), weight.tolist()), rel=1e-12)


@pytest.mark.parametrize("bins", [1, 7, 100])
def test_binned_curves_are_the_exact_curves_of_binned_scores(bins):
    preds, target, weight = _data(5, ties=True)
    preds[:3] = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64)  # the edges of the range
    rounded = np.minimum(np.floor(preds.numpy() * bins), bins - 1)
    y, w = _np(target, weight)
    auc, auprc = _feed(tre.BinnedAUC(bins=bins), preds, target, weight), _feed(tre.BinnedAUPRC(bins=bins), preds, target, weight)
    if bins == 1:  # every pair tied
        assert auc.item() == 0.5
    else:
        assert auc.item() == pytest.approx(roc_auc_score(y, rounded, sample_weight=w), rel=1e-12)
    assert auprc.item() == pytest.approx(average_precision_score(y, rounded, sample_weight=w), rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_binned_error_bound_holds_and_shrinks(seed):
    preds, target, weight = _data(10 + seed, n=400)
    y, p, w = _np(target, preds, weight)
    exact_auc = roc_auc_score(y, p, sample_weight=w)
    exact_ap = average_precision_score(y, p, sample_weight=w)
    bounds = []
    for bins in (4, 32, 256):
        auc_metric, ap_metric = tre.BinnedAUC(bins=bins), tre.BinnedAUPRC(bins=bins)
        auc, ap = _feed(auc_metric, preds, target, weight), _feed(ap_metric, preds, target, weight)
        auc_bound, ap_bound = auc_metric.error_bound().item(), ap_metric.error_bound().item()
        assert abs(auc.item() - exact_auc) <= auc_bound + 1e-12
        assert abs(ap.item() - exact_ap) <= ap_bound + 1e-12
        # the a-priori bound of the documentation: max share of negative weight in one bin / 2
        index = np.minimum(np.floor(p * bins), bins - 1).astype(int)
        negatives = np.bincount(index, weights=w * (1 - y), minlength=bins)
        assert auc_bound <= negatives.max() / negatives.sum() / 2 + 1e-12
        bounds.append((auc_bound, ap_bound))
    assert bounds[0][0] > bounds[1][0] > bounds[2][0] and bounds[0][1] > bounds[1][1] > bounds[2][1]


# --- TorchRec's source -------------------------------------------------------------------------------


def test_ne_and_log_loss_follow_torchrec_with_its_clamps():
    preds, target, weight = _data(20, n=120)
    preds[:4] = torch.tensor([0.0, 1.0, 0.0, 1.0], dtype=torch.float64)  # clamped to eta and 1 - eta
    target[:4] = torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    args = (preds.tolist(), target.tolist(), weight.tolist())
    assert _feed(tre.NE(), preds, target, weight).item() == pytest.approx(torchrec_ref.ne(*args), rel=1e-12)
    assert _feed(tre.LogLoss(log_base=2), preds, target, weight).item() == pytest.approx(
        torchrec_ref.log_loss_bits(*args), rel=1e-12)
    assert _feed(tre.NE(eta=1e-6), preds, target, weight).item() == pytest.approx(
        torchrec_ref.ne(*args, eta=1e-6), rel=1e-12)
    # all labels positive: the base rate is clamped to 1 - eta, NE is huge but finite, as in TorchRec
    ones = torch.ones(10, dtype=torch.float64)
    assert F.ne(ones * 0.9, ones).item() == pytest.approx(torchrec_ref.ne([0.9] * 10, [1.0] * 10, [1.0] * 10), rel=1e-9)


@pytest.mark.parametrize(
    ("cls", "reference"),
    [
        (tre.Calibration, torchrec_ref.calibration),
        (tre.PointwiseCTR, torchrec_ref.ctr),
        (tre.PointwiseMSE, torchrec_ref.mse),
        (tre.PointwiseMAE, torchrec_ref.mae),
        (tre.BinaryAUC, torchrec_ref.auc),  # distinct scores: TorchRec's sort order does not matter
        (tre.BinaryAUPRC, torchrec_ref.auprc),
    ],
)
def test_values_follow_torchrec(cls, reference):
    preds, target, weight = _data(21, soft=cls is not tre.BinaryAUC)
    expected = reference(preds.tolist(), target.tolist(), weight.tolist())
    assert _feed(cls(), preds, target, weight).item() == pytest.approx(expected, rel=1e-12)


def test_auprc_follows_torchrec_with_ties():
    preds, target, weight = _data(22, ties=True)
    expected = torchrec_ref.auprc(preds.tolist(), target.tolist(), weight.tolist())
    assert F.binary_auprc(preds, target, weight).item() == pytest.approx(expected, rel=1e-12)


# --- tasks, groups, accumulation ---------------------------------------------------------------------


ALL = ["ne", "log_loss", "calibration", "ctr", "mse", "rmse", "mae", "auc", "auprc"]


def test_tasks_are_independent_columns_with_named_results():
    preds, target, weight = _data(30, tasks=3)
    tasks = ["click", "like", "buy"]
    suite = tre.PointwiseMetrics(ALL, tasks=tasks, options={"auc": {"bins": 50}, "auprc": {"bins": 50}})
    got = _feed(suite, preds, target, weight)
    assert list(got) == [f"{task}/{key}" for key in ALL for task in tasks]
    assert suite.keys() == list(got)
    for i, task in enumerate(tasks):
        alone = _feed(tre.PointwiseMetrics(ALL, options={"auc": {"bins": 50}, "auprc": {"bins": 50}}),
                      preds[:, i], target[:, i], weight[:, i])
        for key in ALL:
            assert got[f"{task}/{key}"].item() == pytest.approx(alone[key].item(), rel=1e-12), (task, key)
    exact = _feed(tre.BinaryAUC(tasks=tasks), preds, target, weight)
    assert list(exact) == [f"{task}/auc" for task in tasks]
    for i, task in enumerate(tasks):
        assert exact[f"{task}/auc"].item() == pytest.approx(
            roc_auc_score(target[:, i], preds[:, i], sample_weight=weight[:, i]), rel=1e-12)


def test_a_per_sample_weight_is_shared_by_the_tasks():
    preds, target, weight = _data(31, tasks=2)
    shared = weight[:, 0]
    got = _feed(tre.NE(tasks=["a", "b"]), preds, target, shared)
    expected = _feed(tre.NE(tasks=["a", "b"]), preds, target, shared.unsqueeze(1).expand(-1, 2).contiguous())
    assert got == expected
    unweighted = _feed(tre.NE(tasks=["a", "b"]), preds, target)
    ones = _feed(tre.NE(tasks=["a", "b"]), preds, target, torch.ones(preds.shape[0]))
    assert unweighted == ones


@pytest.mark.parametrize("cls", [tre.NE, tre.BinaryAUC, tre.BinnedAUPRC, tre.PointwiseMAE])
def test_groups_give_the_value_of_each_segment(cls):
    preds, target, weight = _data(32, tasks=2)
    groups = torch.randint(0, 4, (preds.shape[0],), generator=torch.Generator().manual_seed(1))
    groups[groups == 3] = 2  # segment 3 stays empty: NaN
    got = _feed(cls(tasks=["a", "b"], num_groups=4), preds, target, weight, groups)
    key = next(iter(got)).split("/")[1]
    for g in range(3):
        rows = groups == g
        alone = _feed(cls(tasks=["a", "b"]), preds[rows], target[rows], weight[rows], sizes=(int(rows.sum()),))
        for task in "ab":
            assert got[f"{task}/{key}"].shape == (4,)
            assert got[f"{task}/{key}"][g].item() == pytest.approx(alone[f"{task}/{key}"].item(), rel=1e-12)
    assert all(torch.isnan(value[3]) for value in got.values())


def test_accumulation_is_exact_and_memory_is_fixed():
    preds, target, weight = _data(33, n=3000)
    suite = tre.PointwiseMetrics(ALL, options={"auc": {"bins": 64}, "auprc": {"bins": 64}})
    sizes = [state.numel() for state in suite.metric_state.values()]
    many = _feed(suite, preds, target, weight, sizes=[1] * 50 + [7] * 50 + [2600])
    assert [state.numel() for state in suite.metric_state.values()] == sizes
    assert all(state.dtype == torch.float64 for state in suite.metric_state.values())
    once = _feed(tre.PointwiseMetrics(ALL, options={"auc": {"bins": 64}, "auprc": {"bins": 64}}),
                 preds, target, weight, sizes=[3000])
    for key in ALL:
        assert many[key].item() == pytest.approx(once[key].item(), rel=1e-12)


def test_functional_matches_the_classes_and_takes_tasks():
    preds, target, weight = _data(34, tasks=2)
    for fn, cls in [(F.ne, tre.NE), (F.calibration, tre.Calibration), (F.binned_auc, tre.BinnedAUC),
                    (F.binary_auprc, tre.BinaryAUPRC), (F.rmse, tre.PointwiseRMSE)]:
        values = fn(preds, target, weight)
        assert values.shape == (2,)
        for i in range(2):
            one = _feed(cls(), preds[:, i], target[:, i], weight[:, i])
            assert values[i].item() == pytest.approx(one.item(), rel=1e-12)
            assert fn(preds[:, i], target[:, i], weight[:, i]).shape == ()


def test_undefined_values_are_nan():
    ones, zeros = torch.ones(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    assert torch.isnan(F.binary_auc(ones * 0.5, ones)) and torch.isnan(F.binned_auc(ones * 0.5, zeros))
    assert torch.isnan(F.binary_auprc(ones * 0.5, zeros))
    for metric in (tre.NE(), tre.LogLoss()):  # no sample (an empty batch)
        metric.update(torch.zeros(0), torch.zeros(0))
        assert torch.isnan(metric.compute())
    assert torch.isnan(F.ctr(ones, ones, zeros))


def test_states_are_float64_non_persistent_and_survive_a_bf16_module():
    metric = tre.PointwiseMetrics(["ne", "auc"], options={"auc": {"bins": 8}})
    assert metric.state_dict() == {}
    metric.persistent(True)
    assert len(metric.state_dict()) == 1
    metric.to(torch.bfloat16)
    preds, target, weight = _data(35)
    got = _feed(metric, preds, target, weight)
    assert metric.stats.dtype == torch.float64
    assert got["ne"].item() == pytest.approx(F.ne(preds, target, weight).item(), rel=1e-12)


# --- bad input ---------------------------------------------------------------------------------------


BAD = [
    ({"preds": [0.5, 0.5]}, "`preds` must be a tensor"),
    ({"preds": torch.tensor([[0.5, 0.5]])}, r"`preds` must have shape \[B\]"),
    ({"preds": torch.tensor([1, 0])}, "`preds` must be a float tensor"),
    ({"target": torch.tensor([1, 0, 1])}, "`target` must have the shape of `preds`"),
    ({"preds": torch.tensor([0.5, 1.5])}, r"`preds` must hold finite values in \[0.0, 1.0\], got values from 0.5 to 1.5"),
    ({"preds": torch.tensor([0.5, float("nan")])}, "`preds` must hold finite values"),
    ({"target": torch.tensor([2, 0])}, r"`target` must hold finite values in \[0.0, 1.0\]"),
    ({"sample_weight": torch.tensor([1.0, -1.0])}, "`sample_weight` must hold finite values >= 0.0"),
    ({"sample_weight": torch.tensor([1.0, 1.0, 1.0])}, r"`sample_weight` must be a number tensor of shape \[B\]"),
    ({"groups": torch.tensor([0, 1])}, "`groups` must be given exactly when"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_input_names_the_argument_and_changes_nothing(change, message):
    metric = tre.PointwiseMetrics(["ne", "auc"], options={"auc": {"bins": 4}})
    good = (torch.tensor([0.2, 0.7], dtype=torch.float64), torch.tensor([0, 1]))
    metric.update(*good)
    before = metric.stats.clone()
    inputs = {"preds": good[0], "target": good[1], **change}
    with pytest.raises(ValueError, match=message):
        metric.update(inputs.pop("preds"), inputs.pop("target"), **inputs)
    assert torch.equal(metric.stats, before) and metric._update_count == 1


def test_bad_task_and_group_inputs():
    metric = tre.NE(tasks=["a", "b"], num_groups=2)
    with pytest.raises(ValueError, match=r"`preds` must have shape \[B, 2\] \(one column per task\), got .* \(3, 3\)"):
        metric.update(torch.rand(3, 3), torch.zeros(3, 3))
    with pytest.raises(ValueError, match=r"`groups` must lie in \[0, 2\), got values from 0 to 2"):
        metric.update(torch.rand(3, 2), torch.zeros(3, 2), groups=torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="`groups` must be an integer tensor of shape"):
        metric.update(torch.rand(3, 2), torch.zeros(3, 2), groups=torch.tensor([0.0, 1.0, 1.0]))
    assert metric._update_count == 0 and not metric.stats.any()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: tre.NE(tasks="click"), "`tasks` must be None or a non-empty list"),
        (lambda: tre.NE(tasks=["a", "a"]), "`tasks` must hold distinct non-empty strings"),
        (lambda: tre.NE(num_groups=0), "`num_groups` must be an int >= 1"),
        (lambda: tre.NE(eta=0.7), r"`eta` of ne must be a number in \(0, 0.5\), got 0.7"),
        (lambda: tre.LogLoss(log_base=1), "`log_base` of log_loss must be a number > 0 other than 1"),
        (lambda: tre.BinnedAUC(bins=0), "`bins` of auc must be an int >= 1, got 0"),
        (lambda: tre.PointwiseMetrics(["ne", "gauc"]), r"Unknown pointwise metric 'gauc'; known: \['ne'"),
        (lambda: tre.PointwiseMetrics(["ne", "ne"]), "requested twice"),
        (lambda: tre.PointwiseMetrics(["ne"], options={"auc": {"bins": 3}}), "`options` names 'auc'"),
        (lambda: tre.PointwiseMetrics(["auc"], options={"auc": {"eta": 3}}), "auc has no option 'eta'"),
        (lambda: tre.PointwiseMetrics("ne"), "`metrics` must be a non-empty list"),
    ],
)
def test_bad_arguments(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_validate_args_false_skips_value_checks_only():
    metric = tre.NE(validate_args=False)
    metric.update(torch.tensor([0.5, 1.5]), torch.tensor([1, 0]))  # not checked: no host sync
    with pytest.raises(ValueError, match="`target` must have the shape"):
        metric.update(torch.tensor([0.5]), torch.tensor([1, 0]))


def test_readme_names_exported_classes():
    """The README's pointwise rows and section name classes that exist, with the keys they return."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines() if line.startswith("| `") and "| pointwise" in line]
    names = [name for row in rows for name in row.split("|")[1].replace("`", "").replace(" ", "").split(",")]
    assert len(names) == 11 and all(name in tre.__all__ for name in names), names
    section = readme.split("## Pointwise metrics (TorchRec-style)")[1].split("\n## ")[0]
    namespace: dict = {"torch": torch, "tre": tre}
    exec(section.split("```python\n")[1].split("```")[0], namespace)  # noqa: S102 - our own README
    tasks, values, scopes = ("click", "conversion"), ("ne", "calibration", "auc"), ("lifetime", "window")
    assert set(namespace["logged"]) == {f"{t}/{s}_{v}" for t in tasks for v in values for s in scopes}


@pytest.mark.parametrize(("validate_args", "syncs"), [(True, 1), (False, 0)])
def test_update_waits_for_the_device_once_or_never(monkeypatch, validate_args, syncs):
    """All value checks share one host sync; ``validate_args=False`` has none (a hot loop never waits)."""
    count = [0]
    for name in ("__bool__", "item", "__int__", "__float__", "tolist"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, **kwargs):
            count[0] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    metric = tre.Windowed(tre.PointwiseMetrics(["ne", "calibration", "auc"], tasks=["a", "b"], num_groups=3,
                                               options={"auc": {"bins": 10}}, validate_args=validate_args), window=4)
    metric.update(torch.rand(8, 2), torch.ones(8, 2), sample_weight=torch.rand(8), groups=torch.arange(8) % 3)
    assert count[0] == syncs
