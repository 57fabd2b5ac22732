"""``tests/scripts/topk_tie_order.py``, which asks whether a device's ``torch.topk`` keeps the lowest
indices among items tied at the cut-off: its check must fail where that does not hold (a top-k with
another tie order) and pass where it does (a top-k read from a stable sort).

On an H200 (torch 2.11) it does not hold for any size, dtype or batch (docs/host-syncs.md), so the
library repairs ties at the cut-off on every device; ``tests/pipeline/test_devices.py`` checks the
repaired values against the CPU's with ``validate_args=False``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import topk_tie_order  # noqa: E402


def _stable_topk(scores, k, dim=1):
    """Descending scores, equal scores by ascending index: what the bet says CUDA's topk returns."""
    order = torch.sort(scores.float(), dim=dim, descending=True, stable=True).indices[:, :k]
    return scores.gather(1, order), order


def _reversed_ties_topk(scores, k, dim=1):
    """Equal scores by descending index: the lowest indices are left out at the cut."""
    flipped = scores.flip(1)
    values, order = _stable_topk(flipped, k)
    return values, scores.shape[1] - 1 - order


@pytest.mark.parametrize("kind", ["levels", "constant", "across"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_check_passes_a_topk_that_keeps_the_lowest_indices(monkeypatch, kind, dtype):
    monkeypatch.setattr(topk_tie_order.torch, "topk", _stable_topk)
    gen = torch.Generator().manual_seed(0)
    scores = topk_tie_order.scores_with_ties(32, 300, topk_tie_order.DTYPES[dtype], kind, 10,
                                             torch.device("cpu"), gen)
    assert topk_tie_order.failures(scores, 10) == (0, 0)


@pytest.mark.parametrize("kind", ["levels", "constant", "across"])
def test_the_check_fails_a_topk_that_keeps_other_tied_items(monkeypatch, kind):
    monkeypatch.setattr(topk_tie_order.torch, "topk", _reversed_ties_topk)
    gen = torch.Generator().manual_seed(0)
    scores = topk_tie_order.scores_with_ties(32, 300, torch.float32, kind, 10, torch.device("cpu"), gen)
    boundary_bad, order_bad = topk_tie_order.failures(scores, 10)
    assert boundary_bad > 0 and order_bad > 0


def test_the_check_sees_a_wrong_order_inside_the_list(monkeypatch):
    def shuffled_inside(scores, k, dim=1):  # the right items, the first k - 1 listed highest index first
        values, order = _stable_topk(scores, k)
        return values, torch.cat([order[:, : k - 2].flip(1), order[:, k - 2 :]], dim=1)

    monkeypatch.setattr(topk_tie_order.torch, "topk", shuffled_inside)
    scores = torch.zeros(4, 50)
    assert topk_tie_order.failures(scores, 10) == (0, 4)
