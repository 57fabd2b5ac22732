"""Validation is entered once per call of an input form, before any form reads it, and its value checks cost one
host sync (issue 52: the scored form entered ``pipeline/validation.py`` from three places and synced twice; a
metric's groups were checked in a sync of their own)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import torchrec_eval as tre
from torchrec_eval.pipeline import validation
from torchrec_eval.syncs import simulate_accelerator

FORMS_DIR = Path(validation.__file__).parent / "forms"


def _forms(rows: int = 4, items: int = 12) -> dict[str, dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    preds = torch.rand(rows, items, generator=generator)
    target = torch.rand(rows, items, generator=generator) > 0.6
    target_ids = torch.stack([torch.randperm(items, generator=generator)[:3] for _ in range(rows)])
    return {"dense": {"preds": preds, "target": target},
            "ids": {"preds": preds, "target_ids": target_ids.to(torch.int32)},
            "ranked": {"ranked_ids": preds.argsort(1, descending=True), "target_ids": target_ids}}


class _HostReads(TorchDispatchMode):
    """Counts the scalar reads of tensor data on the host (each a sync on an accelerator); ``tolist`` is counted by
    the caller (it does not dispatch)."""

    reads = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func in (torch.ops.aten._local_scalar_dense.default, torch.ops.aten.is_nonzero.default):
            self.reads += 1
        return func(*args, **(kwargs or {}))


def _traced_update(metric: Any, inputs: dict[str, torch.Tensor]) -> tuple[list[str], int]:
    """The functions of ``pipeline/validation.py`` called from another file during one update, and how many host
    reads (syncs on an accelerator) it makes on the accelerator path."""
    entries: list[str] = []
    tolist = torch.Tensor.tolist
    counter = _HostReads()

    def counted_tolist(tensor: torch.Tensor) -> Any:
        counter.reads += 1
        return tolist(tensor)

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == validation.__file__ and frame.f_back is not None \
                and frame.f_back.f_code.co_filename not in (validation.__file__, __file__):
            entries.append(frame.f_code.co_name)

    torch.Tensor.tolist = counted_tolist  # type: ignore[method-assign]
    sys.setprofile(profile)
    try:
        with simulate_accelerator(), counter:
            metric.update(**inputs)
    finally:
        sys.setprofile(None)
        torch.Tensor.tolist = tolist  # type: ignore[method-assign]
    return entries, counter.reads


@pytest.mark.parametrize("form", ["dense", "ids", "ranked"])
def test_an_update_enters_validation_once_and_syncs_its_checks_once(form: str) -> None:
    suite = tre.RankingMetrics(["ndcg@10", "recall@5", "mrr@10"])
    inputs = _forms()[form]
    suite.update(**inputs)  # warm: lazy imports
    entries, syncs = _traced_update(suite, inputs)
    assert entries == ["checked_inputs"]
    assert syncs == 1


@pytest.mark.parametrize("form", ["dense", "ids", "ranked"])
def test_the_groups_values_are_checked_in_the_same_sync(form: str) -> None:
    suite = tre.RankingMetrics(["ndcg@10", "recall@5"], num_groups=3)
    inputs = {**_forms()[form], "groups": torch.tensor([0, 2, 1, 2])}
    _, syncs = _traced_update(suite, inputs)
    assert syncs == 1
    before = suite.stats.clone()
    with pytest.raises(ValueError, match=r"`groups` must lie in \[0, 3\), got values from 0 to 3"):
        suite.update(**{**inputs, "groups": torch.tensor([0, 3, 1, 2])})
    assert torch.equal(suite.stats, before)


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
