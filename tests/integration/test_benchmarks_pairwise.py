"""The pairwise benchmark runs (quick sizes) and reports every case against the sort."""

import re

import pytest

from tests.benchmark_runs import load_benchmark, run_benchmark

pytestmark = pytest.mark.slow  # multi-process or benchmark smoke: `-m "not slow"` skips it locally


def test_bench_pairwise_quick():
    report = run_benchmark("bench_pairwise", "--quick")
    cases = ("torch.sort(scores) (floor)", "AUC + MPR, one update", "AUC + MPR, validate_args=False", "FCP")
    for case in cases:
        assert case in report
    assert len(re.findall(r"\d+\.\d\dx", report)) == 4  # a ratio on every row
    assert ", cpu, 1 thread(s)," in report and "torch.sort of the scores, on cpu" in report


def test_bench_pairwise_ratios_are_finite():
    table, ratios = load_benchmark("bench_pairwise").bench(16, 500, 1)
    assert ratios["torch.sort(scores) (floor)"] == 1.0
    assert all(0 < value < float("inf") for value in ratios.values())
