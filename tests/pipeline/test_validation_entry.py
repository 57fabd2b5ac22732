"""Validation is entered once per call of an input form, before any form reads it, and its value checks cost one
host sync (issue 52: the scored form entered ``pipeline/validation.py`` from three places and synced twice)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.pipeline import validation
from torchrec_eval.pipeline.validation import Checks

FORMS_DIR = Path(validation.__file__).parent / "forms"


def _forms(rows: int = 4, items: int = 12) -> dict[str, dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    preds = torch.rand(rows, items, generator=generator)
    target = torch.rand(rows, items, generator=generator) > 0.6
    target_ids = torch.stack([torch.randperm(items, generator=generator)[:3] for _ in range(rows)])
    return {"dense": {"preds": preds, "target": target},
            "ids": {"preds": preds, "target_ids": target_ids.to(torch.int32)},
            "ranked": {"ranked_ids": preds.argsort(1, descending=True), "target_ids": target_ids}}


def _traced_update(metric: Any, inputs: dict[str, torch.Tensor]) -> tuple[list[str], int]:
    """The functions of ``pipeline/validation.py`` called from another file during one update, and how many runs of
    the value checks read flags on the host."""
    entries: list[str] = []
    syncs = 0
    run = Checks.run

    def counted_run(checks: Checks) -> None:
        nonlocal syncs
        syncs += bool(checks._flags)
        run(checks)

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == validation.__file__ and frame.f_back is not None \
                and frame.f_back.f_code.co_filename not in (validation.__file__, __file__):
            entries.append(frame.f_code.co_name)

    Checks.run = counted_run  # type: ignore[method-assign]
    sys.setprofile(profile)
    try:
        metric.update(**inputs)
    finally:
        sys.setprofile(None)
        Checks.run = run  # type: ignore[method-assign]
    return entries, syncs


@pytest.mark.parametrize("form", ["dense", "ids", "ranked"])
def test_an_update_enters_validation_once_and_syncs_its_checks_once(form: str) -> None:
    suite = tre.RankingMetrics(["ndcg@10", "recall@5", "mrr@10"])
    inputs = _forms()[form]
    suite.update(**inputs)  # warm: lazy imports
    entries, syncs = _traced_update(suite, inputs)
    assert entries == ["checked_inputs"]
    assert syncs == 1


@pytest.mark.parametrize("form", ["dense", "ids", "ranked"])
def test_no_value_check_runs_without_validate_args(form: str) -> None:
    suite = tre.RankingMetrics(["ndcg@10", "recall@5"], validate_args=False)
    entries, syncs = _traced_update(suite, _forms()[form])
    assert entries == ["checked_inputs"]
    assert syncs == 0


def test_every_check_runs_before_any_id_is_read() -> None:
    """An id past the catalogue raises its named ValueError (not an index error), with the scores' checks in the
    same sync: a NaN score and a bad id in one call name the first check that failed."""
    suite = tre.RankingMetrics(["ndcg@10"])
    preds = torch.rand(2, 5)
    with pytest.raises(ValueError, match=r"`target_ids` must be item ids < 5"):
        suite.update(preds, target_ids=torch.tensor([[0, 7], [1, -1]]))
    preds[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"`preds` must be real scores"):
        suite.update(preds, target_ids=torch.tensor([[0, 7], [1, -1]]))
    assert suite._update_count == 0


def test_the_forms_compute_only() -> None:
    """The modules of the input forms take nothing from validation but the type of its notes and the gain that marks
    an unjudged item: their checks are ``checked_inputs``'."""
    for path in FORMS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "torchrec_eval.pipeline.validation":
                assert {alias.name for alias in node.names} <= {"Notes", "UNJUDGED_GAIN"}, path.name
