"""Every ``ValueError`` of the package shows what it received, not only the rule it enforces."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import torchrec_eval as tre

PACKAGE = Path(tre.__file__).parent
# errors about the object's own lifecycle, not about an argument: there is nothing received to show
LIFECYCLE = ("This catalogue batch is closed", "This catalogue batch is already closed")


def _value_errors() -> list[tuple[str, int, ast.expr]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                    and getattr(node.exc.func, "id", None) == "ValueError"):
                found.append((str(path.relative_to(PACKAGE)), node.lineno, node.exc.args[0] if node.exc.args else None))
    return found


def test_every_value_error_interpolates_what_it_received():
    errors = _value_errors()
    assert len(errors) > 200  # the scan sees the package
    silent = []
    for where, line, message in errors:
        if message is None:
            silent.append(f"{where}:{line}: no message")
        elif isinstance(message, (ast.Constant, ast.JoinedStr, ast.BinOp)):  # a literal: must interpolate
            text = ast.unparse(message)
            if not any(isinstance(node, ast.FormattedValue) for node in ast.walk(message)) and \
                    not any(text.strip("'\"").startswith(prefix) for prefix in LIFECYCLE):
                silent.append(f"{where}:{line}: {text[:90]}")
    assert not silent, "ValueErrors that do not show what they received:\n" + "\n".join(silent)


def test_target_gains_with_a_dense_target_shows_both():
    metric = tre.NDCG(k=3)
    with pytest.raises(ValueError) as error:
        metric.update(torch.randn(2, 5), torch.ones(2, 5), target_gains=torch.ones(2, 3, dtype=torch.int32))
    message = str(error.value)
    assert "shape (2, 5) and dtype torch.float32" in message and "shape (2, 3) and dtype torch.int32" in message
    assert metric._update_count == 0 and float(metric.stats.abs().sum()) == 0.0
