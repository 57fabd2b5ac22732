"""benchmarks/bench_pointwise.py runs (quick sizes): every case timed, and the binned AUC within its bound."""

import importlib.util
import pathlib
import re

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_bench_pointwise_quick():
    spec = importlib.util.spec_from_file_location("bench_pointwise", ROOT / "benchmarks" / "bench_pointwise.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    try:
        report = module.main(["--quick"])
    finally:
        torch.set_num_threads(threads)
    for case in ("floor: weighted binary_cross_entropy", "Windowed(window=100)", "BinaryAUC (exact, stores samples)",
                 "torchmetrics BinaryAUROC(thresholds=None)"):
        assert case in report
    assert len(re.findall(r"\d+\.\dx", report)) == 8  # a ratio on every timed row
    accuracy = re.findall(r"^(\d+)\s+(click|buy)\s+([0-9.]+)\s+([0-9.e+-]+)\s+([0-9.e+-]+)\s*$", report, flags=re.M)
    assert len(accuracy) == 6
    assert all(float(error) <= float(bound) for *_, error, bound in accuracy)
