"""The README's ``python`` snippets run as written, in order, in one namespace (``py`` blocks are sketches),
and the snippets that moved from the README to the docs still say what they claim there."""

import re
from pathlib import Path

import pytest
import torch
from test_docs import _blocks as _page_blocks
from test_docs import _run_doctest

README = Path(__file__).resolve().parents[2] / "README.md"
INPUTS = README.parent / "docs" / "inputs.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_snippets_run_and_say_what_they_claim():
    blocks = _blocks()
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own README
    results = namespace["results"]
    assert list(results) == ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@10"]
    assert all(0 <= float(value) <= 1 for value in results.values())
    tre = namespace["tre"]
    scores, target = torch.zeros(1, 10), torch.tensor([[1, 1, 0, 0, 0, 0, 0, 0, 0, 0]])
    assert tre.functional.ndcg(scores, target, k=2).item() == pytest.approx(1.0)
    assert tre.functional.ndcg(scores, target, k=2, ties="pessimistic").item() == 0.0
    assert tre.functional.ndcg(scores, target, k=2, ties="average").item() == pytest.approx(0.2)


def _page_namespace(page: Path) -> dict:
    """The namespace after a docs page's ``python`` blocks, run in order as tests/integration/test_docs.py runs them."""
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for language, block, line in _page_blocks(page):
        if language == "python" and block.lstrip().startswith(">>>"):
            _run_doctest(block, namespace, page, line)
        elif language == "python":
            exec(compile(block, f"{page}:{line}", "exec"), namespace)  # noqa: S102 - our own docs
    return namespace


def test_the_docs_renumbering_of_a_grouped_unsorted_flat_loader_equals_torchmetrics():
    """docs/inputs.md, "The flat form across calls" (moved there from the README)."""
    from torchmetrics.retrieval import RetrievalNormalizedDCG

    namespace = _page_namespace(INPUTS)
    qids, scores, labels = (namespace[name] for name in ("file_qids", "file_scores", "file_labels"))
    assert not bool((qids[1:] >= qids[:-1]).all())  # the loader is not sorted: as is, it is refused
    raw = namespace["tre"].NDCG(k=3)
    raw.update(scores[:7], labels[:7], indexes=qids[:7])
    with pytest.raises(ValueError, match="indexes"):
        raw.update(scores[7:], labels[7:], indexes=qids[7:])
    oracle = RetrievalNormalizedDCG(top_k=3)(scores, labels, indexes=qids)  # groups by id: order-free
    torch.testing.assert_close(namespace["flat_ndcg"].compute().double(), oracle.double())


def test_ci_runs_the_readme_test_command_in_a_fresh_venv():
    ci = (README.parent / ".ci" / "run").read_text()
    readme = README.read_text()
    assert 'pip install torch==2.13.0 && pip install -e ".[test]" && python -m pytest -q -n auto --dist loadgroup' in readme
    lines = [line.strip() for line in ci.splitlines()]
    assert lines.index("rm -rf .venv") < lines.index("python3 -m venv .venv") < lines.index(". .venv/bin/activate")
    assert 'pip install --quiet torch==2.13.0 && pip install --quiet -U -e ".[test]"' in lines
    assert "python -m pytest -q -n auto --dist loadgroup" in lines  # the README's command, as it is: no deselection
    assert lines.index(". .venv/bin/activate") < lines.index("python -m pytest -q -n auto --dist loadgroup")
