"""The documentation site (``docs/``): it builds without a warning, covers the API, and its code runs.

* The site is built with the README's command (Sphinx, ``-W``: a warning fails the build) into a
  temporary folder, and the API reference holds every public class and function.
* Every fenced code block of every page is accounted for: ``python`` blocks run in page order, one
  namespace per page (a block that starts with ``>>>`` runs as a doctest, so its shown outputs are
  checked); ``bash`` blocks run in the same working folder; ``console`` blocks (installs, multi-process
  launches that other tests run) and ``text`` blocks (outputs) do not run, and a ``console`` block may
  only hold such commands.
"""

import doctest
import inspect
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# one xdist worker for the module: its module-scoped fixture (the site build) then runs once, not once per worker
pytestmark = pytest.mark.xdist_group("docs")
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
# What a `console` block may show without running it here: installs, and launches run by other tests.
CONSOLE = ("pip install", "torchrun", "python examples/", "python -m sphinx")


def _blocks(page: Path) -> list[tuple[str, str, int]]:
    text = page.read_text()
    return [(m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def _readme_build_command() -> list[str]:
    commands = re.findall(r"python -m sphinx [^\n#&;]*", (ROOT / "README.md").read_text())
    assert len(commands) == 1, f"the README names one docs build command, found {commands}"
    return shlex.split(commands[0])


def _documented_names() -> list[str]:
    import torchrec_eval
    from torchrec_eval import conventions, functional
    from torchrec_eval.comparison import uncertainty
    from torchrec_eval.data import frames, interactions, movielens, sampler, splits

    names = []
    for module, public in (
        (torchrec_eval, torchrec_eval.__all__), (functional, functional.__all__),
        (uncertainty, uncertainty.__all__), (splits, splits.__all__), (interactions, interactions.__all__),
        (frames, frames.__all__), (movielens, movielens.__all__),
        (sampler, ["UnpaddedDistributedSampler"]), (conventions, ["Preset", "preset"]),
    ):
        names += [f"{module.__name__}.{name}" for name in public
                  if callable(getattr(module, name)) and not inspect.ismodule(getattr(module, name))]
    return names


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    command = _readme_build_command()
    assert command[-2:] == ["docs", "docs/_build/html"] and "-W" in command
    assert command[:3] == ["python", "-m", "sphinx"]
    from sphinx.cmd.build import build_main  # `python -m sphinx ARGS` is build_main(ARGS)

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.chdir(ROOT)
    try:
        status = build_main([*command[3:-1], str(out)])
    finally:
        monkeypatch.undo()
    assert status == 0, "the docs build failed: its warnings are above (-W makes each one an error)"
    return out


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # Sphinx's own notices to its plugins
def test_site_builds_without_a_warning_and_documents_the_public_api(site):
    html = "\n".join(path.read_text() for path in site.rglob("*.html"))
    missing = [name for name in _documented_names() if f'id="{name}"' not in html]
    assert not missing, f"not in the API reference: {missing}"
    for page in PAGES:
        assert (site / page.relative_to(DOCS).with_suffix(".html")).is_file(), page


def test_every_page_is_in_a_table_of_contents():
    index = (DOCS / "index.md").read_text()
    for page in PAGES:
        name = page.relative_to(DOCS).with_suffix("").as_posix()
        assert name == "index" or re.search(rf"^{re.escape(name)}$", index, re.M), f"{name} is in no toctree"


def _run_doctest(block: str, namespace: dict, page: Path, line: int) -> None:
    test = doctest.DocTestParser().get_doctest(block, namespace, page.name, str(page), line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    result = runner.run(test, out=report.append, clear_globs=False)
    namespace.update(test.globs)
    assert result.failed == 0, f"{page.name}:{line}:\n" + "".join(report)


def _run_command(command: str, cwd: Path, where: str) -> None:
    """A shell line; ``torchrec-eval ...`` calls the command's entry point in this process (the function
    the console script runs), which spares a Python start-up and a torch import per line."""
    if command.startswith("torchrec-eval "):
        import torch

        from torchrec_eval.cli import main

        threads = torch.get_num_threads()  # the demo sets its own
        try:
            status = main(shlex.split(command)[1:])
        finally:
            torch.set_num_threads(threads)
        assert status == 0, f"{where}: {command} exited with {status}"
        return
    result = subprocess.run(["bash", "-e", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, f"{where}: {command}\n{result.stdout}\n{result.stderr}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(DOCS).as_posix())
def test_every_code_block_of_the_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files a page writes land here
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for language, block, line in _blocks(page):
        if language == "python":
            if block.lstrip().startswith(">>>"):
                _run_doctest(block, namespace, page, line)
            else:
                exec(compile(block, f"{page}:{line}", "exec"), namespace)  # noqa: S102 - our own docs
        elif language == "bash":
            for command in block.strip().splitlines():
                _run_command(command, tmp_path, f"{page.name}:{line}")
        elif language == "console":
            commands = [cmd.strip() for cmd in block.splitlines() if cmd.strip() and not cmd.startswith(" ")]
            assert all(cmd.startswith(CONSOLE) for cmd in commands), f"{page.name}:{line}: runs nowhere: {block}"
        else:
            assert language == "text" or language.startswith("{"), f"{page.name}:{line}: fence {language!r}"
