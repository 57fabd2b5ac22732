"""One family, one module (issue 52): a top-k family's formula, registry entry, class and function live in one
module of ``ranking/families/``, and outside it only the public indexes and the presets' table name it, so that
adding a family is its module and a line in each index. Read from the source (``tests/family_names.py``)."""

from __future__ import annotations

import pytest

from tests.family_names import FAMILY_MODULES, INDEXES, exported_families, files_naming
from torchrec_eval import functional

#: (family, file) pairs that name a family for another reason, each with it
EXAMPLES = {("ndcg", "torchrec_eval/suites/config.py"): "'ndcg@10' is the example of the config's error messages"}
FAMILIES = exported_families()
NAMED = files_naming(FAMILIES)


def test_every_family_has_a_class_and_a_function_in_the_indexes():
    assert len(FAMILIES) >= 26  # the registry is read after its package registered every family
    assert all(hasattr(functional, function) and function in functional.__all__ for _, function in FAMILIES.values())


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_is_named_in_its_module_and_the_indexes_only(family):
    named = NAMED[family]
    modules = [path for path in named if path.startswith(FAMILY_MODULES)]
    assert len(modules) == 1, f"{family} is defined in {modules}"
    examples = {path for name, path in EXAMPLES if name == family}
    assert set(named) - {*modules, *INDEXES, *examples} == set(), named
    assert len(set(named) - examples) <= 4


def test_the_reader_finds_a_family_named_outside_its_module(tmp_path):
    """The reader is not blind: a string, a class name and an imported function each count as naming."""
    package = tmp_path / "torchrec_eval"
    (package / "ranking" / "families").mkdir(parents=True)
    (package / "ranking" / "families" / "cascades.py").write_text('register("rbp", None)\nclass RBP: ...\n')
    (package / "a.py").write_text('SUITE = ["rbp@10"]\n')
    (package / "b.py").write_text("from x import RBP\n")
    (package / "c.py").write_text("from x import rbp\n")
    (package / "d.py").write_text('"""rbp, RBP: prose is not code."""\nrecall = 1\n')
    named = files_naming({"rbp": ("RBP", "rbp"), "recall": ("Recall", "recall")}, tmp_path)
    assert named == {"rbp": ["torchrec_eval/a.py", "torchrec_eval/b.py", "torchrec_eval/c.py",
                             "torchrec_eval/ranking/families/cascades.py"], "recall": []}
