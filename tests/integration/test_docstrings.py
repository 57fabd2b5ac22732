"""Docstrings are written out in the source, as editors and ``help()`` on a stub read them: no function or
class of the package has its ``__doc__`` assembled or changed at import time (it was: ``{common}``
templates filled in by decorators, which editors never showed)."""

from __future__ import annotations

import ast
import importlib

import pytest

from tests import layers

# modules that import optional libraries at import time (checked where they are installed)
OPTIONAL = {"torchrec_eval.data.frames": "pandas", "torchrec_eval.data.movielens": "pandas"}


@pytest.mark.parametrize("name", sorted(layers.modules()))
def test_every_docstring_is_the_one_in_the_source(name):
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name])
    module = importlib.import_module(name)
    tree = ast.parse(layers.modules()[name].read_text())
    changed = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and hasattr(module, node.name):
            written = ast.get_docstring(node, clean=False)
            if written is not None and getattr(module, node.name).__doc__ != written:
                changed.append(node.name)
    assert changed == []


def test_the_check_sees_a_changed_docstring(tmp_path, monkeypatch):
    """The comparison fails on a docstring a decorator rewrites."""
    source = 'def fill(fn):\n    fn.__doc__ = fn.__doc__.replace("{x}", "y")\n    return fn\n\n\n' \
             '@fill\ndef f():\n    """a {x}"""\n'
    (tmp_path / "templated_module.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("templated_module")
    node = ast.parse(source).body[1]
    assert module.f.__doc__ != ast.get_docstring(node, clean=False)
