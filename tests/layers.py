"""The package's layers and its import graph, read from the source with ``ast`` (nothing is imported).

A module may import its own layer and the layers below it, never one above, and no chain of imports may
come back to where it started. Every import counts: at module level, inside a function (a lazy import
that dodged a loop would show as a circle here) or under ``TYPE_CHECKING``; importing ``a.b.c`` also
runs the ``__init__`` of ``a.b``, which counts as an import of that package. Used by
``tests/integration/test_layers.py`` and ``tests/scripts/house_stats.py``; ``docs/architecture.md``
shows the same table.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "torchrec_eval"
ROOT = Path(__file__).resolve().parents[1]

#: bottom first: the first part of a module's path below ``torchrec_eval`` -> its layer (a longer dotted prefix,
#: ``comparison.models``, places a module of a package whose other modules sit lower)
LAYERS: dict[str, tuple[str, ...]] = {
    "core": ("pipeline", "members", "comparison", "trec", "syncs", "conventions"),
    "families": ("ranking", "pairwise", "beyond", "sampled"),
    "classes": ("metrics", "ranking.families", "pointwise", "catalogue", "suites", "functional", "comparison.models",
                "comparison.uncertainty", "comparison.report", "plotting"),
    "applications": ("data", "demo", "cli", "__init__", "__main__"),
}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package by its ``__init__``)."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of a module, by the longest prefix of its path that a layer names (KeyError: a
    module no layer names)."""
    parts = module.split(".")[1:] or ["__init__"]
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        for index, names in enumerate(LAYERS.values()):
            if prefix in names:
                return index
    raise KeyError(module)


def imports(root: Path = ROOT) -> set[tuple[str, str]]:
    """Every (importer, imported) pair of package modules, with the packages an import runs."""
    known = modules(root)
    pairs = set()
    for name, path in known.items():
        for target in _imported(name, path, known):
            parts = target.split(".")
            for end in range(2, len(parts) + 1):  # a.b.c runs a.b's __init__ (the root's is always loaded)
                package = ".".join(parts[:end])
                if package != name and not name.startswith(package + "."):
                    pairs.add((name, package))
    return pairs


def _imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + is_package]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                child = f"{module}.{alias.name}"
                found.add(child if child in known else module)
    return found


def upward(pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The imports from a lower layer to a higher one."""
    return sorted((a, b) for a, b in pairs if layer_of(a) < layer_of(b))


def circles(pairs: set[tuple[str, str]]) -> list[list[str]]:
    """The import circles: strongly connected sets of more than one module (Tarjan)."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(pairs):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in graph:
        if node not in index:
            visit(node)
    return sorted(found)


def lazy_loaders(root: Path = ROOT) -> list[str]:
    """Modules below the root that load names on first use (a module ``__getattr__``, PEP 562)."""
    return sorted(name for name, path in modules(root).items() if name != PACKAGE and any(
        isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
        for node in ast.parse(path.read_text()).body))


def parameter_counts(folder: str, root: Path = ROOT) -> list[tuple[int, str]]:
    """(number of parameters, ``file:function``) of every function under ``torchrec_eval/<folder>``, largest
    first (``self`` and ``cls`` not counted)."""
    counts = []
    for path in sorted((root / PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                count = len(names) - (names[:1] in (["self"], ["cls"]))
                counts.append((count, f"{path.relative_to(root)}:{node.name}"))
    return sorted(counts, reverse=True)
