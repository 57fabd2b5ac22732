"""Typed as it ships: the package passes ``mypy --strict`` (its one stated exception in ``pyproject.toml``),
and a user's code (``tests/typing/user_code.py``) type-checks with ``mypy --strict`` and pyright's strict
mode, with the return types it expects (``assert_type``), while a misspelt option fails both checkers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# one xdist worker for the module: its module-scoped fixtures (a mypy run of the user's files, ~15 s) then run once,
# where two workers would each run them
pytestmark = pytest.mark.xdist_group("typing")

ROOT = Path(__file__).resolve().parents[2]
USER_CODE = ROOT / "tests" / "typing" / "user_code.py"
MISSPELT = ROOT / "tests" / "typing" / "misspelt_option.py"


def _run(*command: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MYPY_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy_cache")


def test_the_package_passes_mypy_strict(cache):
    done = _run("mypy", cache=cache)  # [tool.mypy] in pyproject.toml: strict, the package's files
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Success" in done.stdout


@pytest.fixture(scope="module")
def user_errors(cache) -> list[str]:
    """``mypy --strict`` on both user files in one run (``--follow-imports=silent``: as for an installed
    package, errors inside torchrec_eval are not the user's): its error lines."""
    done = _run("mypy", "--strict", "--follow-imports=silent", str(USER_CODE), str(MISSPELT), cache=cache)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if ": error:" in line]


def test_user_code_passes_mypy_strict(user_errors):
    assert [error for error in user_errors if "user_code.py" in error] == []


def _pyright(path: Path) -> list[str]:
    """pyright on ``path`` with this interpreter's packages (by default it takes the first ``python`` on PATH,
    which need not be the test environment's)."""
    return [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, str(path)]


def test_user_code_passes_pyright_strict():
    pytest.importorskip("pyright")
    done = subprocess.run(_pyright(USER_CODE), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 errors" in done.stdout


def test_a_misspelt_option_fails_both_checkers(user_errors):
    errors = [error for error in user_errors if "misspelt_option.py" in error]
    assert all(any(f"misspelt_option.py:{line}:" in error for error in errors) for line in (12, 13, 14, 15)), errors
    pytest.importorskip("pyright")
    checked = subprocess.run(_pyright(MISSPELT), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 1
    assert all(f"misspelt_option.py:{line}:" in checked.stdout for line in (12, 13, 14, 15)), checked.stdout


def test_the_user_code_runs():
    done = subprocess.run([sys.executable, str(USER_CODE)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["ndcg@2", "recall@2", "auc"]
