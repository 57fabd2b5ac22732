"""benchmarks/bench_pointwise.py runs (quick sizes): every case timed, and the binned AUC within its bound."""

import re

from tests.benchmark_runs import run_benchmark


def test_bench_pointwise_quick():
    report = run_benchmark("bench_pointwise", "--quick")
    for case in ("floor: weighted binary_cross_entropy", "Windowed(window=100)", "BinaryAUC (exact, stores samples)",
                 "torchmetrics BinaryAUROC(thresholds=None)"):
        assert case in report
    assert len(re.findall(r"\d+\.\dx", report)) == 8  # a ratio on every timed row
    accuracy = re.findall(r"^(\d+)\s+(click|buy)\s+([0-9.]+)\s+([0-9.e+-]+)\s+([0-9.e+-]+)\s*$", report, flags=re.M)
    assert len(accuracy) == 6
    assert all(float(error) <= float(bound) for *_, error, bound in accuracy)
