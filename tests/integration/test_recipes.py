"""``docs/recipes.md`` stays true: each recipe's steps, applied as written to a copy of the package, give a
package whose check passes (and the unchanged package fails it, so the steps are what makes it pass)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "recipes.md"
STEP = re.compile(r"^```\{code-block\} python\n:caption: (?P<caption>[^\n]*)\n\n(?P<body>.*?)^```$", re.S | re.M)


def _recipes() -> dict[str, list[tuple[str, str]]]:
    """Recipe title -> its steps (caption, code), in page order."""
    recipes: dict[str, list[tuple[str, str]]] = {}
    for section in re.split(r"^## ", PAGE.read_text(), flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        recipes[title] = [(m.group("caption").strip(), m.group("body")) for m in STEP.finditer(section)]
    return recipes


def _apply(caption: str, body: str, root: Path) -> None:
    if caption.startswith("new file "):
        path = root / caption.removeprefix("new file ")
        assert not path.exists(), caption
        path.write_text(body)
        return
    where, verb, anchor = re.fullmatch(r"(\S+), (after|replace): (.*)", caption).groups()
    path = root / where
    lines = path.read_text().splitlines(keepends=True)
    (index,) = [i for i, line in enumerate(lines) if anchor in line][:1] or [None]
    assert index is not None, f"{caption}: no line holds {anchor!r}"
    new = body.splitlines(keepends=True)
    lines[index : index + 1] = new if verb == "replace" else [lines[index], *new]
    path.write_text("".join(lines))


def _start(code: str, root: Path) -> subprocess.Popen:
    """The check on the package under ``root``, started (the copies before and after run side by side)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.Popen([sys.executable, "-c", code], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_the_page_has_three_recipes_each_with_steps_and_a_check():
    recipes = _recipes()
    assert len(recipes) == 3
    for title, steps in recipes.items():
        assert [caption for caption, _ in steps][-1] == "check", title
        assert len(steps) >= 3, title


@pytest.mark.parametrize("title", list(_recipes()))
def test_the_recipe_works_on_a_copy_of_the_package(title, tmp_path):
    *steps, (_, check) = _recipes()[title]
    unchanged, changed = tmp_path / "before", tmp_path / "after"
    for root in (unchanged, changed):
        shutil.copytree(ROOT / "torchrec_eval", root / "torchrec_eval", ignore=shutil.ignore_patterns("__pycache__"))
    for caption, body in steps:
        _apply(caption, body, changed)
    before, after = _start(check, unchanged), _start(check, changed)
    _, after_err = after.communicate(timeout=300)
    before.communicate(timeout=300)
    assert before.returncode != 0, f"{title}: the check passes without the recipe"
    assert after.returncode == 0, f"{title}:\n{after_err[-3000:]}"


def test_a_top_k_family_is_its_module_and_a_line_in_each_public_index():
    """Issue 52: adding a top-k family touches its new module and the two public indexes, nothing else in the
    package (the check above shows that these steps are enough: suite, class and function)."""
    steps = _recipes()["Add a top-k family"][:-1]
    paths = {re.sub(r"^new file |, (after|replace): .*$", "", caption) for caption, _ in steps}
    assert paths == {"torchrec_eval/ranking/families/top_gain.py", "torchrec_eval/__init__.py",
                     "torchrec_eval/functional/__init__.py"}
