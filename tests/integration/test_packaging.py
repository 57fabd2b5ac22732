"""The distributions: ``python -m build`` gives a wheel and an sdist that install into a fresh venv and work.

The build runs on a copy of the checkout's files (tracked and untracked-not-ignored, as ``git`` lists
them), so it leaves no ``build/`` or ``*.egg-info`` behind, with ``--no-isolation`` (the build backend
of the ``test`` extra: fast, no download). Each distribution is installed with ``--no-deps`` into a new
venv that sees the *running* interpreter's site-packages (torch and torchmetrics, wherever this suite
runs: a venv or not) through a ``.pth`` file, and is exercised from a temporary working directory, with
``PYTHONPATH`` cleared, so that only the installed copy can be imported.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import torchrec_eval

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
# one xdist worker for the module: its module-scoped fixture (the distributions' build) then runs once, not once per worker
pytestmark = pytest.mark.xdist_group("packaging")
SUITES = sorted(path.name for path in (ROOT / "torchrec_eval" / "suites").glob("*.yaml"))


def _clean_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONNOUSERSITE="1", OMP_NUM_THREADS="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(part) for part in command], cwd=cwd, env=_clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{command}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def _source_files() -> list[str]:
    """The checkout's files as git lists them; outside a git checkout, what the distributions are built from."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True)
    if listed.returncode == 0:
        names = listed.stdout.decode().split("\0")
    else:
        package = [str(path.relative_to(ROOT)) for path in (ROOT / "torchrec_eval").rglob("*")
                   if "__pycache__" not in path.parts]
        names = ["pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in", *package]
    return [name for name in names if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """Build the sdist, then the wheel from the sdist (``python -m build``'s default), once."""
    source = tmp_path_factory.mktemp("source")
    for name in _source_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source, cwd=source)
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


def test_one_version_source():
    """pyproject reads the version from ``torchrec_eval/__init__.py``; the CHANGELOG has an entry for it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "torchrec_eval.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", torchrec_eval.__version__)
    assert f"## {torchrec_eval.__version__}" in (ROOT / "CHANGELOG.md").read_text()
    assert project["project"]["license"] == "Apache-2.0"
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in (ROOT / "LICENSE").read_text()


def test_wheel_contents(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
        info = f"torchrec_eval-{torchrec_eval.__version__}.dist-info"
        metadata = wheel.read(f"{info}/METADATA").decode()
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert {f"torchrec_eval/suites/{name}" for name in SUITES} <= names and len(SUITES) == 5
    assert {"torchrec_eval/py.typed", f"{info}/licenses/LICENSE"} <= names
    modules = {str(path.relative_to(ROOT)) for path in (ROOT / "torchrec_eval").rglob("*.py")}
    assert modules <= names, sorted(modules - names)
    assert f"\nVersion: {torchrec_eval.__version__}\n" in metadata
    assert "\nLicense-Expression: Apache-2.0\n" in metadata
    assert "torchrec-eval = torchrec_eval.cli:main" in entry_points


def test_sdist_contents(dists):
    with tarfile.open(dists["sdist"]) as sdist:
        names = {name.partition("/")[2] for name in sdist.getnames()}
    expected = {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "torchrec_eval/py.typed",
                *(f"torchrec_eval/suites/{name}" for name in SUITES)}
    assert expected <= names, sorted(expected - names)


# The run of the smoke test: one query, d1 (relevant) above d2 above d3 (relevant), so
# NDCG@3 = (1 + 1/log2(4)) / (1 + 1/log2(3)) by the definition, not by this library.
RUN = "q1 Q0 d1 1 3.0 smoke\nq1 Q0 d2 2 2.0 smoke\nq1 Q0 d3 3 1.0 smoke\n"
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\n"
NDCG_AT_3 = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))

SMOKE = """
import importlib.metadata, importlib.resources, json, sys
import torch
import torchrec_eval as tre

assert tre.__file__.startswith(sys.prefix), (tre.__file__, sys.prefix)  # the installed copy
assert tre.__version__ == importlib.metadata.version("torchrec_eval"), tre.__version__
assert importlib.resources.files("torchrec_eval").joinpath("py.typed").is_file()
suite = tre.RankingMetrics.from_config("recsys")                  # a suite shipped in the package
suite.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
print(json.dumps({key: value.item() for key, value in suite.compute().items()}))
"""


def _venv_seeing_this_interpreter(venv: Path) -> Path:
    """A new venv whose ``sys.path`` ends with the running interpreter's site-packages; its python."""
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=venv.parent)
    python = venv / "bin" / "python"
    own = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=venv).stdout.strip())
    ours = [*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    if site.ENABLE_USER_SITE:
        ours.append(site.getusersitepackages())
    # path lines only: the .pth files of those folders (an editable install of this checkout) are not run
    (own / "running_interpreter.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    return python


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_installs_into_a_fresh_venv(dists, kind, tmp_path):
    venv = tmp_path / "venv"
    python = _venv_seeing_this_interpreter(venv)
    # the machine's pip installs into the venv; --ignore-installed: the checkout may be installed too
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--ignore-installed", dists[kind], cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    values = json.loads(_run(python, "-c", SMOKE, cwd=work).stdout)
    # four candidates, two relevant, the best-scored one relevant: every item is in the top 10
    assert sorted(values) == sorted(f"{name}@{k}" for name in ("ndcg", "recall", "precision", "hitrate",
                                                               "map", "mrr") for k in (10, 20))
    assert values["recall@10"] == 1.0 and values["hitrate@20"] == 1.0 and values["mrr@10"] == 1.0
    assert values["precision@10"] == pytest.approx(2 / 10, abs=1e-12)

    (work / "run.trec").write_text(RUN)
    (work / "qrels.trec").write_text(QRELS)
    out = _run(venv / "bin" / "torchrec-eval", "evaluate", "run.trec", "qrels.trec", "-m", "ndcg@3", "--json",
               cwd=work)
    assert json.loads(out.stdout) == {"ndcg@3": pytest.approx(NDCG_AT_3, abs=1e-12)}
