"""The shape of the package, for a redesign's before/after: modules and lines, the largest module, the
longest function and class, README lines (issue 27); and the house measures of issue 34: imports that run
up a layer and import circles (the layers of ``tests/layers.py``), the classes between ``RankingMetrics``
and ``torchmetrics.Metric``, the package files one ``update`` of a 2-metric suite runs code in (traced with
``sys.setprofile``), and the largest parameter count in ``pipeline/``; and issue 52's count of the package files
that name each top-k family (``tests/family_names.py``, the families of this checkout).

Usage: ``python tests/scripts/house_stats.py [ROOT]`` (default: this checkout; ROOT may be an older
checkout, e.g. ``git worktree add /tmp/before ebd57a7``: its code is measured with today's layer rules).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests import layers  # noqa: E402  (the layer rules of this checkout)

# run in a fresh process on ROOT's package: the class chain and the files one update touches
_TRACE = """
import json, sys, torch, torchrec_eval as tre
suite = tre.RankingMetrics(["ndcg@10", "recall@10"])
chain = [c.__name__ for c in type(suite).__mro__]
preds, target = torch.rand(8, 50), torch.rand(8, 50) > 0.8
suite.update(preds, target)  # warm: lazy imports and caches
files, entries = set(), []
def profile(frame, event, arg):
    name = frame.f_code.co_filename
    if event == "call" and "torchrec_eval" in name:
        files.add(name.split("torchrec_eval", 1)[1])
        caller = frame.f_back.f_code.co_filename if frame.f_back else ""
        if name.endswith("pipeline/validation.py") and not caller.endswith("pipeline/validation.py"):
            entries.append(frame.f_code.co_name)  # entered from another file
sys.setprofile(profile)
suite.update(preds, target)
sys.setprofile(None)
print(json.dumps({"between": chain[1:chain.index("Metric")], "files": sorted(files), "entries": entries}))
"""


def house(root: Path) -> dict[str, object]:
    """Issue 34's measures of the package under ``root``."""
    pairs = layers.imports(root)
    known = set(layers.modules(root))
    placed = {(a, b) for a, b in pairs if a in known and b in known}
    unplaced = sorted(name for name in known if _layer(name) is None)
    env = {**os.environ, "PYTHONPATH": str(root)}
    traced = json.loads(subprocess.run([sys.executable, "-c", _TRACE], env=env, cwd=root, capture_output=True,
                                       text=True, check=True).stdout.strip().splitlines()[-1])
    return {
        "imports that run up a layer": len([p for p in placed if _layer(p[0]) is not None and _layer(p[1]) is not None
                                            and _layer(p[0]) < _layer(p[1])]),
        "import circles": len(layers.circles(placed)),
        "modules no layer names": unplaced,
        "classes between RankingMetrics and Metric": f"{len(traced['between'])} ({', '.join(traced['between'])})",
        "files one update of a 2-metric suite runs": len(traced["files"]),
        "calls into pipeline/validation.py from other files in that update": len(traced["entries"]),
        "largest parameter count in pipeline/": layers.parameter_counts("pipeline", root)[0],
    }


def _layer(module: str) -> int | None:
    try:
        return layers.layer_of(module)
    except KeyError:
        return None


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


def family_files(root: Path) -> dict[str, object]:
    """How many package files name each top-k family of this checkout in ``root``'s package
    (``tests/family_names.py``; issue 52: its module, the two public indexes and the presets' table)."""
    import statistics

    from tests.family_names import exported_families, files_naming

    counts = {family: len(files) for family, files in files_naming(exported_families(), root).items()}
    return {"package files naming a top-k family (max, median; RBP)":
            f"{max(counts.values())}, {statistics.median(counts.values()):g}; {counts.get('rbp')}"}


if __name__ == "__main__":
    where = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]).resolve()
    for key, value in {**stats(where), **house(where), **family_files(where)}.items():
        print(f"{key}: {value}")
