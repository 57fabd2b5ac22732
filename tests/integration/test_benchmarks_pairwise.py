"""The pairwise benchmark runs (quick sizes) and reports every case against the sort."""

import importlib.util
import pathlib
import re

import pytest
import torch

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("bench_pairwise", ROOT / "benchmarks" / "bench_pairwise.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_pairwise_quick():
    threads = torch.get_num_threads()
    try:
        report = _load().main(["--quick"])
    finally:
        torch.set_num_threads(threads)
    cases = ("torch.sort(scores) (floor)", "AUC + MPR, one update", "AUC + MPR, validate_args=False", "FCP")
    for case in cases:
        assert case in report
    assert len(re.findall(r"\d+\.\d\dx", report)) == 4  # a ratio on every row
    assert ", cpu, 1 thread(s)," in report and "torch.sort of the scores, on cpu" in report


def test_bench_pairwise_ratios_are_finite():
    table, ratios = _load().bench(16, 500, 1)
    assert ratios["torch.sort(scores) (floor)"] == 1.0
    assert all(0 < value < float("inf") for value in ratios.values())
