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
    one_size, per_query = report.split("a catalogue size per query")
    for estimator in ("naive", "rank_estimate", "bias_variance", "constrained", "em"):
        assert sum(f"  {estimator}  " in line for line in one_size.splitlines()) == 2, estimator
    assert "1e+06" in one_size and "vs smallest n" in one_size
    for estimator in ("bias_variance", "constrained"):  # the largest range of sizes, each query its own
        assert sum(line.startswith("1e+05..1e+06") and f"  {estimator}  " in line
                   for line in per_query.splitlines()) == 1, estimator
