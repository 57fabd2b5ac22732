"""The sampled-evaluation benchmark runs (quick sizes) and reports every case."""

import pytest

from tests.benchmark_runs import run_benchmark

pytestmark = pytest.mark.slow  # a benchmark smoke run


def test_bench_sampled_quick():
    report = run_benchmark("bench_sampled", "--quick")
    for case in ("torch.sort(scores) (floor)", "update, validate_args=False", "fit: bias_variance", "fit: em"):
        assert case in report


def test_bench_sampled_scale_quick():
    """Every estimator at n = 10^3 and 10^6 (m = 20), its ratio to the smallest n beside its time."""
    report = run_benchmark("bench_sampled_scale", "--quick")
    for estimator in ("naive", "rank_estimate", "bias_variance", "constrained", "em"):
        assert sum(f"  {estimator}  " in line for line in report.splitlines()) == 2, estimator
    assert "1e+06" in report and "vs smallest n" in report
