"""The sampled-evaluation benchmark runs (quick sizes) and reports every case."""

import pytest

from tests.benchmark_runs import run_benchmark

pytestmark = pytest.mark.slow  # a benchmark smoke run


def test_bench_sampled_quick():
    report = run_benchmark("bench_sampled", "--quick")
    for case in ("torch.sort(scores) (floor)", "update, validate_args=False", "fit: bias_variance", "fit: em"):
        assert case in report
