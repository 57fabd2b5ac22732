"""Every device gives the CPU's values, and on an accelerator ``update`` reads nothing on the host.

The ``device`` fixture (``conftest.py``) runs each test on the CPU and, where present, on CUDA. On a
CUDA device: values equal the CPU's (ties included, for every batch size) and, with
``validate_args=False``, ``update`` passes under ``torch.cuda.set_sync_debug_mode("error")`` for every
family and input form, except the documented ones (docs/host-syncs.md, "Host syncs"),
which are asserted to sync.
"""

from __future__ import annotations

import contextlib

import pytest
import torch

import torchrec_eval as tre

N = 200
SUITES = {
    "top-k": ["ndcg@10", "map@10", "recall@20", "precision@5", "mrr@10", "hitrate@5", "rprecision@10", "ctr@5"],
    "full ranking": ["auc", "gauc", "mpr", "pauc@5"],
    "beyond": ["coverage@5", "novelty@5", "intra_list_diversity@5"],
}
FORMS = ("dense", "ids", "exclude_ids", "ranked")


def _suite(name: str, **kwargs) -> tre.RankingMetrics:
    gen = torch.Generator().manual_seed(1)
    options = {"coverage": {"num_items": N}, "novelty": {"item_popularity": torch.randint(0, 9, (N,), generator=gen)},
               "intra_list_diversity": {"item_features": torch.rand(N, 4, generator=gen)}}
    metrics = SUITES[name]
    return tre.RankingMetrics(metrics, options={k: v for k, v in options.items() if any(m.startswith(k) for m in metrics)},
                              **kwargs)


def _inputs(form: str, rows: int, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, 4, (rows, N), generator=gen).float()  # ties at every cut-off
    target_ids = torch.stack([torch.randperm(N, generator=gen)[:6] for _ in range(rows)])
    target_ids[:, -1] = -1
    if form == "dense":
        return {"preds": scores, "target": torch.rand(rows, N, generator=gen) < 0.05}
    if form == "ids":
        return {"preds": scores, "target_ids": target_ids}
    if form == "exclude_ids":
        seen = torch.stack([torch.randperm(N, generator=gen)[:9] for _ in range(rows)])
        return {"preds": scores, "target_ids": target_ids, "exclude_ids": seen}
    return {"ranked_ids": torch.argsort(scores, dim=1, descending=True)[:, :40], "target_ids": target_ids}


def _to(inputs: dict, device: torch.device) -> dict:
    return {name: value.to(device) for name, value in inputs.items()}


@pytest.mark.parametrize("validate_args", [True, False])
@pytest.mark.parametrize("rows", [1, 7, 1024])
@pytest.mark.parametrize("ties", ["index", "reverse_index", "pessimistic", "average"])
@pytest.mark.parametrize("suite", list(SUITES))
def test_every_device_gives_the_cpu_values(device, suite, ties, rows, validate_args):
    """``validate_args=False`` takes the sync-free path on a GPU (ties at the cut-off repaired by
    masked work on every row): on an H200 its values once trusted CUDA's ``topk`` with them, and erred."""
    for form in FORMS:
        if form == "ranked" and suite == "full ranking":
            continue
        inputs = _inputs(form, rows)
        on_cpu = _suite(suite, ties=ties)
        on_device = _suite(suite, ties=ties, validate_args=validate_args).to(device)
        on_cpu.update(**inputs)
        on_device.update(**_to(inputs, device))
        got, want = on_device.compute(), on_cpu.compute()
        for key in want:
            assert got[key].device.type == device.type
            torch.testing.assert_close(got[key].cpu(), want[key], rtol=0, atol=1e-12, equal_nan=True,
                                       msg=f"{form} {key}")


# (suite, form, ties, metrics override) that need the data on the host, by design
SYNCS = [
    ("fcp", ["fcp"]),  # its grade levels
    ("rprecision", ["rprecision"]),  # the depth is the batch's largest R
]


def _sync_mode(device: torch.device, mode: str):
    class Mode:
        def __enter__(self):
            torch.cuda.synchronize(device)
            torch.cuda.set_sync_debug_mode(mode)

        def __exit__(self, *exc):
            torch.cuda.set_sync_debug_mode("default")

    return Mode()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("suite", list(SUITES))
def test_update_reads_nothing_on_the_host(device, suite, form):
    if device.type != "cuda":
        pytest.skip("a host read is free on the CPU (and used there to skip work)")
    if form == "ranked" and suite == "full ranking":
        pytest.skip("AUC/MPR need a score for every candidate")
    metric = _suite(suite, validate_args=False).to(device)
    inputs = _to(_inputs(form, 64), device)
    metric.update(**inputs)  # warm-up: first-call allocations
    with _sync_mode(device, "error"):
        metric.update(**inputs)


@pytest.mark.parametrize(("name", "metrics"), SYNCS)
def test_the_documented_exceptions_do_sync(device, name, metrics):
    if device.type != "cuda":
        pytest.skip("host reads are only syncs on an accelerator")
    metric = tre.RankingMetrics(metrics, validate_args=False).to(device)
    inputs = _to(_inputs("dense", 64), device)
    metric.update(**inputs)
    with pytest.raises(RuntimeError), _sync_mode(device, "error"):
        metric.update(**inputs)


# the families of issue 37 that read more than the top-k view: every candidate (FallOut, AUC's strict pairs,
# cornac's MAP by tie groups), every relevant item (PSP), the judgments (bpref, Judged, infAP's pool), the curve's 2K values
ROUND_37 = {
    "scored": ["fallout@5", "auc", "map@20", "psp@5", "psndcg@5", "num_rel", "err@5", "sdcg@5", "iprec@10"],
    "ranked": ["bpref@10", "judged@10", "infap@10", "num_rel", "psp@5", "rbp@5", "ncrr@10"],
}
ROUND_37_OPTIONS = {"auc": {"tie_credit": 0.0}, "map": {"tie_rank": "group_max", "normalizer": "r"},
                    "psp": {"inverse_propensity": torch.linspace(1, 3, N)},
                    "psndcg": {"inverse_propensity": torch.linspace(1, 3, N)}}


@pytest.mark.parametrize("form", FORMS)
def test_this_rounds_families_equal_the_cpu_and_read_nothing(device, form):
    metrics = ROUND_37["ranked" if form == "ranked" else "scored"]
    options = {key: value for key, value in ROUND_37_OPTIONS.items() if any(m.startswith(key) for m in metrics)}
    inputs = _inputs(form, 64)
    on_cpu = tre.RankingMetrics(metrics, options=options)
    on_device = tre.RankingMetrics(metrics, options=options, validate_args=False).to(device)
    curve, curve_cpu = tre.PrecisionRecallCurve(6, validate_args=False).to(device), tre.PrecisionRecallCurve(6)
    there = _to(inputs, device)
    on_cpu.update(**inputs)
    curve_cpu.update(**inputs)
    on_device.update(**there)  # warm-up: first-call allocations
    curve.update(**there)
    with _sync_mode(device, "error") if device.type == "cuda" else contextlib.nullcontext():
        on_device.update(**there)
        curve.update(**there)
    on_cpu.update(**inputs)
    curve_cpu.update(**inputs)
    got, want = on_device.compute(), on_cpu.compute()
    for key in want:
        torch.testing.assert_close(got[key].cpu(), want[key], rtol=0, atol=1e-12, equal_nan=True, msg=f"{form} {key}")
    for ours, theirs in zip(curve.compute(), curve_cpu.compute(), strict=True):
        torch.testing.assert_close(ours.cpu(), theirs, rtol=0, atol=1e-12)
