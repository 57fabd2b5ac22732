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


def test_bench_comparison_memory_quick():
    """Each test's update in blocks beside one block of every draw (the update before): the same sums, a
    time and a peak for each path, and the blocked path's ratios."""
    report = run_benchmark("bench_comparison_memory", "--quick")
    rows = [line.split() for line in report.splitlines() if line.startswith(("fisher", "bootstrap", "tukey"))]
    assert [(row[0], row[6]) for row in rows] == [(test, path) for test in ("fisher", "bootstrap", "tukey")
                                                  for path in ("one", "blocked")]
    assert all(row[-3:] == ["to", "the", "bit"] for row in rows)  # the same sums: the rows fit one block
    assert all(row[-5].endswith("x") for row in rows if row[6] == "blocked")  # the time ratio
