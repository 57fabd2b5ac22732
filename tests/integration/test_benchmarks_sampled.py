"""The sampled-evaluation benchmark runs (quick sizes) and reports every case."""

import importlib.util
import pathlib

import pytest
import torch

pytestmark = pytest.mark.slow  # a benchmark smoke run

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_bench_sampled_quick():
    spec = importlib.util.spec_from_file_location("bench_sampled", ROOT / "benchmarks" / "bench_sampled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    try:
        report = module.main(["--quick"])
    finally:
        torch.set_num_threads(threads)
    for case in ("torch.sort(scores) (floor)", "update, validate_args=False", "fit: bias_variance", "fit: em"):
        assert case in report
