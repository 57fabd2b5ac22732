"""Which package files name a top-k family, read from the source with ``ast`` (issue 52: a family lives in one
module, and outside it only the public indexes and a convention table name it).

A file *names* a family where its code (not its prose) says it: a string constant equal to the family's name or a
metric name of it (``"rbp"``, ``"rbp@10"``), or an identifier equal to its class name (``RBP``), or a definition
or import of its function (``def rbp``, ``import rbp``). A module of ``ranking/families/`` is read by what it
defines and registers instead: an option of one family that is spelt like another family (IPrec's ``recall``)
is not a use of that family. Not read: ``trec/`` and ``cli/``, which speak trec_eval's and the command's names
(as the issue says), ``sampled/``, whose metrics of one held-out item's rank are its own formulas under the same
names, and the other applications (``data/``, ``demo.py``), whose default suites are a user's choice of metrics,
as a test's are: adding a family touches none of them.
Used by ``tests/integration/test_family_modules.py`` and ``tests/scripts/house_stats.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import layers

#: the files besides a family's own module that may name it: the two public indexes and the presets' table
INDEXES = ("torchrec_eval/__init__.py", "torchrec_eval/functional/__init__.py", "torchrec_eval/members/conventions.py")
FAMILY_MODULES = "torchrec_eval/ranking/families/"
NOT_READ = ("torchrec_eval/trec/", "torchrec_eval/cli/", "torchrec_eval/sampled/", "torchrec_eval/data/",
            "torchrec_eval/demo.py")


def exported_families() -> dict[str, tuple[str, str]]:
    """Every registered top-k family -> (its class, its function), as the public indexes of this checkout export
    them."""
    import inspect

    import torchrec_eval as tre
    from torchrec_eval.metrics.topk import TopKMetric
    from torchrec_eval.ranking.families import REGISTRY

    classes = {cls.name: name for name in tre.__all__
               if inspect.isclass(cls := getattr(tre, name)) and issubclass(cls, TopKMetric)}
    return {family: (classes[family], family) for family in REGISTRY}


def _words(path: Path) -> tuple[set[str], set[str]]:
    """(the string constants, as family names, and the identifiers) of one file."""
    strings, identifiers = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value.split("@")[0])
        elif isinstance(node, ast.alias):
            identifiers |= {node.name.split(".")[-1], node.asname or ""}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            identifiers.add(node.name)
        elif isinstance(node, ast.Name) and node.id[:1].isupper():
            identifiers.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr[:1].isupper():
            identifiers.add(node.attr)
    return strings, identifiers


def _defined(path: Path) -> tuple[set[str], set[str]]:
    """(the families registered, the classes and functions defined) by a module of ``ranking/families/``."""
    registered, defined = set(), set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
              and getattr(node.value.func, "id", "") == "register"):
            registered.add(node.value.args[0].value)
    return registered, defined


def files_naming(families: dict[str, tuple[str, str]], root: Path = layers.ROOT) -> dict[str, list[str]]:
    """Family -> the package files (paths from ``root``) that name it; ``families``: name -> (class, function)."""
    found: dict[str, list[str]] = {name: [] for name in families}
    for path in sorted((root / layers.PACKAGE).rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(NOT_READ):
            continue
        if relative.startswith(FAMILY_MODULES):
            registered, defined = _defined(path)
            hits = [name for name, (cls, function) in families.items()
                    if name in registered or cls in defined or function in defined]
        else:
            strings, identifiers = _words(path)
            hits = [name for name, (cls, function) in families.items()
                    if name in strings or cls in identifiers or function in identifiers]
        for name in hits:
            found[name].append(relative)
    return found
