"""The per-batch pipeline makes no tensor on the CPU behind the user's back.

A constant made without ``device=`` lives on the CPU; mixed into a CUDA computation it is copied to the
device on every call, a host sync (found on an H200: ``torch.where(found, ..., torch.zeros(()))`` in
the ids form's lookup failed ``torch.cuda.set_sync_debug_mode("error")``). The simulated accelerator
path cannot see this (every tensor is on the CPU there), so this test reads the source: every tensor
factory in ``torchrec_eval/pipeline/`` names its device (or is a ``new_*``/``*_like`` of a tensor).
"""

from __future__ import annotations

import ast
from pathlib import Path

import torchrec_eval

FACTORIES = {"zeros", "ones", "full", "empty", "arange", "tensor", "as_tensor", "linspace", "eye",
             "rand", "randn", "randint"}
PIPELINE = Path(torchrec_eval.__file__).parent / "pipeline"


def _factories_without_device(source: str) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FACTORIES
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
                and not any(keyword.arg == "device" for keyword in node.keywords)):
            lines.append(node.lineno)
    return lines


def test_every_pipeline_factory_names_its_device():
    found = {str(path.relative_to(PIPELINE)): lines for path in sorted(PIPELINE.rglob("*.py"))
             if (lines := _factories_without_device(path.read_text()))}
    assert found == {}


def test_the_scan_finds_a_cpu_constant():
    assert _factories_without_device("import torch\nx = torch.where(m, v, torch.zeros((), dtype=v.dtype))\n") == [2]
    assert _factories_without_device("import torch\nx = torch.zeros((), device=v.device)\n") == []
