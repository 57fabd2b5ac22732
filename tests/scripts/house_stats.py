"""The shape of the package, for the layout's before/after (issue 27): modules at the root, the largest
module, the longest function and class, README lines and the package's line count.

Usage: ``python tests/scripts/house_stats.py [ROOT]`` (default: this checkout).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _spans(tree: ast.AST, kind: type) -> list[tuple[int, str]]:
    return [(node.end_lineno - node.lineno + 1, node.name) for node in ast.walk(tree) if isinstance(node, kind)]


def stats(root: Path) -> dict[str, object]:
    package = root / "torchrec_eval"
    files = sorted(path for path in package.rglob("*.py") if "__pycache__" not in path.parts)
    sizes, functions, classes = [], [], []
    for path in files:
        text = path.read_text()
        name = str(path.relative_to(root))
        sizes.append((len(text.splitlines()), name))
        tree = ast.parse(text)
        functions += [(n, f"{name}:{f}") for n, f in _spans(tree, (ast.FunctionDef, ast.AsyncFunctionDef))]
        classes += [(n, f"{name}:{c}") for n, c in _spans(tree, ast.ClassDef)]
    root_modules = [p for p in files if p.parent == package and p.name not in ("__init__.py", "__main__.py")]
    return {
        "modules at the root": len(root_modules),
        "subpackages": len({p.parent for p in files} - {package}),
        "modules": len(files),
        "package lines": sum(n for n, _ in sizes),
        "largest module": max(sizes),
        "longest function": max(functions),
        "functions over 60 lines": sum(n > 60 for n, _ in functions),
        "longest class": max(classes),
        "classes over 200 lines": sum(n > 200 for n, _ in classes),
        "README lines": len((root / "README.md").read_text().splitlines()),
    }


if __name__ == "__main__":
    for key, value in stats(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])).items():
        print(f"{key}: {value}")
