"""The model-comparison benchmark runs (quick sizes) and reports every case."""

import pytest

from tests.benchmark_runs import run_benchmark

pytestmark = pytest.mark.slow  # a benchmark smoke run


def test_bench_comparison_quick():
    report = run_benchmark("bench_comparison", "--quick")
    for case in ("3 suites' updates (floor)", "ModelComparison, student", "ModelComparison, fisher",
                 "ModelComparison, bootstrap", "ModelComparison, tukey"):
        assert case in report


def test_study_comparison_quick():
    report = run_benchmark("study_comparison", "--quick")
    null = next(line for line in report.splitlines() if line.startswith("50 ") and "null" in line)
    assert len(null.split()) == 6  # queries, setting, one rate per test
