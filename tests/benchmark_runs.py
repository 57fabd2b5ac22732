"""Running a script of ``benchmarks/`` from a test: loaded as a module (the scripts are not a package) and
its ``main`` called with the arguments given, the thread count it sets put back afterwards."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_benchmark(name: str, *argv: str) -> Any:
    """``main([*argv])`` of ``benchmarks/<name>.py``, torch's thread count restored whatever it set."""
    threads = torch.get_num_threads()
    try:
        return load_benchmark(name).main(list(argv))
    finally:
        torch.set_num_threads(threads)
