"""The house's layers hold: core, families, metric classes, applications, each importing only down.

Read from the source (``tests/layers.py``): a new module must be given a layer, an import that runs up a
layer or closes a circle fails here, and so does a lazy import that dodges one (function-level imports
are edges like any other). ``import torchrec_eval`` alone loads names on first use (so the command line
does not pay for torch); no subpackage does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import layers


@pytest.fixture(scope="module")
def pairs():
    return layers.imports()


def test_every_module_has_a_layer():
    unplaced = []
    for name in layers.modules():
        try:
            layers.layer_of(name)
        except KeyError:
            unplaced.append(name)
    assert unplaced == [], f"add these to tests/layers.py LAYERS and docs/architecture.md: {unplaced}"


def test_no_import_runs_up_a_layer(pairs):
    assert layers.upward(pairs) == []


def test_no_import_circle(pairs):
    assert layers.circles(pairs) == []


def test_only_the_root_loads_names_on_first_use():
    assert layers.lazy_loaders() == []


def test_the_reader_sees_a_real_graph(pairs):
    """The graph is not empty by accident: known edges are in it, a made-up upward edge is found, and a
    made-up loop is a circle."""
    assert ("torchrec_eval.metrics.topk", "torchrec_eval.metrics.base") in pairs
    assert ("torchrec_eval.metrics.topk", "torchrec_eval.ranking") in pairs  # the package an import runs
    assert ("torchrec_eval.ranking.families.gains", "torchrec_eval.metrics.topk") in pairs  # a family's class
    assert layers.upward({("torchrec_eval.pipeline.topk", "torchrec_eval.metrics.base")})
    assert layers.circles({("torchrec_eval.a", "torchrec_eval.b"), ("torchrec_eval.b", "torchrec_eval.a")})


def test_the_architecture_page_lists_the_layers():
    """``docs/architecture.md`` has one row per layer, bottom last, naming every package of it."""
    text = (Path(layers.ROOT) / "docs" / "architecture.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| \*\*(\w+)\*\* \| (.*) \|$", text, re.M)}
    assert list(rows) == list(reversed(layers.LAYERS))
    for layer, names in layers.LAYERS.items():
        for name in names:
            shown = "`torchrec_eval/__init__.py`" if name == "__init__" else f"`{name}"
            assert shown in rows[layer], (layer, name)


def test_no_pipeline_function_takes_more_than_six_parameters():
    """The pipeline passes records (``Inputs``, ``Needs``, ``Rules``, ``CandidateItems``, ``TargetTable``,
    ``TieRule``), not long parameter lists (``_scored_batch`` took 16)."""
    counts = layers.parameter_counts("pipeline")
    assert counts[0][0] > 3  # the reader counts
    assert [entry for entry in counts if entry[0] > 6] == []


def test_no_test_module_imports_another():
    """Shared test code lives in helper modules (``tests/harness.py``, ``tests/processes.py``,
    ``tests/reference/``, ...), imported plainly: no test module imports another test module, and none
    wraps an import of them in ``try``/``except ImportError``."""
    import ast

    tests = Path(layers.ROOT) / "tests"
    offending = []
    for path in tests.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if any(name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_") for name in names):
                offending.append(f"{path.relative_to(tests)}:{node.lineno}")
            if isinstance(node, ast.Try) and any(isinstance(n, (ast.Import, ast.ImportFrom)) and
                                                 getattr(n, "module", "") and n.module.startswith("tests.")
                                                 for n in node.body):
                offending.append(f"{path.relative_to(tests)}:{node.lineno} (try)")
    assert offending == []
