"""torchrec_eval.pipeline.topk against a brute-force reference: a full stable sort by (score desc, tie key).

The boundary repair scans column blocks; small blocks are forced here so that a tie group spans many
of them, in both directions, with -inf (non-candidates), constant rows, bf16-rounded scores.
"""

from __future__ import annotations

import pytest
import torch

from torchrec_eval.pipeline import boundary_scan, topk


def reference(scores: torch.Tensor, k: int, ties: str) -> torch.Tensor:
    """Stable sort of the index order by score descending (plain, O(N log N) per row)."""
    order = torch.arange(scores.shape[1])
    if ties == "reverse_index":
        order = order.flip(0)
    order = order.expand_as(scores)
    perm = torch.sort(scores.gather(1, order), dim=1, descending=True, stable=True).indices[:, :k]
    return order.gather(1, perm)


def tied_scores(kind: str, rows: int, items: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if kind == "constant":
        return torch.zeros(rows, items)
    if kind == "bf16":
        return torch.randn(rows, items, generator=gen).to(torch.bfloat16).float()
    if kind == "few_levels":
        return torch.randint(0, 4, (rows, items), generator=gen).float()
    scores = torch.randint(0, 3, (rows, items), generator=gen).float()  # with non-candidates
    return scores.masked_fill(torch.rand(rows, items, generator=gen) < 0.3, float("-inf"))


@pytest.mark.parametrize("kind", ["constant", "bf16", "few_levels", "neg_inf"])
@pytest.mark.parametrize("ties", ["index", "reverse_index"])
@pytest.mark.parametrize("k", [1, 7, 64])
@pytest.mark.parametrize("blocks", [(4, 16), (1 << 10, 1 << 14)])
def test_top_indices_equals_a_full_stable_sort(kind, ties, k, blocks, monkeypatch):
    monkeypatch.setattr(boundary_scan, "_FIRST_BLOCK", blocks[0])
    monkeypatch.setattr(boundary_scan, "_MAX_BLOCK", blocks[1])
    scores = tied_scores(kind, 9, 300, seed=k)
    got = topk.top_indices(scores, k, ties).indices
    expected = reference(scores, k, ties)
    finite = scores.gather(1, expected) > float("-inf")  # past the candidates any order is fine
    assert torch.equal(got[finite], expected[finite])


def test_bf16_scores_themselves():
    scores = torch.randn(6, 5000, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    for ties in ("index", "reverse_index"):
        assert torch.equal(topk.top_indices(scores, 100, ties).indices, reference(scores.float(), 100, ties))


def reference_by_gain(scores, gains, k, ties):
    """Stable sorts: index ascending, then gain (ascending for pessimistic), then score descending."""
    order = torch.arange(scores.shape[1]).expand_as(scores)
    by_gain = torch.sort(gains.gather(1, order).double(), dim=1, descending=ties == "optimistic", stable=True)
    order = order.gather(1, by_gain.indices)
    perm = torch.sort(scores.gather(1, order), dim=1, descending=True, stable=True).indices[:, :k]
    return order.gather(1, perm)


@pytest.mark.parametrize("kind", ["constant", "bf16", "few_levels", "neg_inf"])
@pytest.mark.parametrize("ties", ["pessimistic", "optimistic"])
@pytest.mark.parametrize("gain_kind", ["bool", "int", "float"])
@pytest.mark.parametrize("k", [1, 7, 64])
def test_gain_aware_ties_equal_a_full_stable_sort(kind, ties, gain_kind, k, monkeypatch):
    monkeypatch.setattr(boundary_scan, "_FIRST_BLOCK", 4)
    monkeypatch.setattr(boundary_scan, "_MAX_BLOCK", 16)
    scores = tied_scores(kind, 9, 300, seed=k + 1)
    gen = torch.Generator().manual_seed(k)
    gains = {
        "bool": torch.rand(9, 300, generator=gen) < 0.3,
        "int": torch.randint(0, 4, (9, 300), generator=gen) * (torch.rand(9, 300, generator=gen) < 0.5),
        "float": torch.rand(9, 300, generator=gen).round(decimals=1),
    }[gain_kind]
    got = topk.top_indices(scores, k, ties, gains).indices
    expected = reference_by_gain(scores, gains, k, ties)
    finite = scores.gather(1, expected) > float("-inf")
    assert torch.equal(got[finite], expected[finite])


@pytest.mark.parametrize("kind", ["constant", "bf16", "few_levels", "neg_inf"])
@pytest.mark.parametrize("ties", ["index", "reverse_index", "pessimistic", "optimistic"])
@pytest.mark.parametrize("margin", [1, 5, 40])
def test_coarse_scores_read_past_the_cut(kind, ties, margin, monkeypatch):
    """Coarse scores read ``margin`` more columns: a tie group whole inside the list is ordered there,
    one that runs past it is scanned; both equal the full stable sort."""
    monkeypatch.setattr(topk, "_DEEP_FROM", 0)
    monkeypatch.setattr(topk, "_TIE_MARGIN", margin)
    monkeypatch.setattr(boundary_scan, "_FIRST_BLOCK", 4)
    monkeypatch.setattr(boundary_scan, "_MAX_BLOCK", 16)
    scores = tied_scores(kind, 9, 300, seed=margin)
    gains = torch.randint(0, 3, (9, 300), generator=torch.Generator().manual_seed(margin))
    for k in (1, 7, 64, 299, 300):
        got = topk.top_indices(scores, k, ties, gains if ties in ("pessimistic", "optimistic") else None)
        expected = (reference_by_gain(scores, gains, k, ties) if ties in ("pessimistic", "optimistic")
                    else reference(scores, k, ties))
        finite = scores.gather(1, expected) > float("-inf")
        assert torch.equal(got.indices[finite], expected[finite])
        following = scores.sort(dim=1, descending=True).values[:, k] if k < 300 else None
        if following is not None:
            assert torch.equal(got.following, following)


def test_only_coarse_scores_read_past_the_cut(monkeypatch):
    monkeypatch.setattr(topk, "_DEEP_FROM", 0)
    gen = torch.Generator().manual_seed(0)
    fine = torch.randn(4, 2000, generator=gen)
    assert topk._tie_margin(fine) == 0
    assert topk._tie_margin(fine.to(torch.bfloat16).float()) == topk._TIE_MARGIN
    assert topk._tie_margin(fine.to(torch.float16).double()) == topk._TIE_MARGIN
    assert topk._tie_margin(fine.double()) == 0
    assert topk._tie_margin(fine.to(torch.bfloat16)) == topk._TIE_MARGIN
    monkeypatch.setattr(topk, "_DEEP_FROM", 4096)
    assert topk._tie_margin(fine.to(torch.bfloat16).float()) == 0  # short rows scan cheaply


@pytest.mark.parametrize("kind", ["constant", "bf16", "few_levels", "neg_inf"])
@pytest.mark.parametrize("ties", ["index", "reverse_index"])
def test_coarse_scores_with_exclusions(kind, ties, monkeypatch):
    """The deeper read of coarse scores with excluded ids: equal to the full stable sort of the
    scores with the excluded items at -inf (past the candidates any order is fine)."""
    from torchrec_eval.pipeline.exclusion import Exclusions

    monkeypatch.setattr(topk, "_DEEP_FROM", 0)
    monkeypatch.setattr(topk, "_TIE_MARGIN", 5)
    monkeypatch.setattr(boundary_scan, "_FIRST_BLOCK", 4)
    monkeypatch.setattr(boundary_scan, "_MAX_BLOCK", 16)
    scores = tied_scores(kind, 9, 300, seed=7)
    gen = torch.Generator().manual_seed(8)
    exclude = torch.randint(-1, 300, (9, 40), generator=gen)
    exclude[0] = torch.topk(scores[0], 40).indices  # the best items of a row, excluded
    keep = torch.ones(9, 300, dtype=torch.bool).scatter_(1, torch.where(exclude < 0, 0, exclude), False)
    keep[:, 0] |= ~(exclude == 0).any(1)  # column 0 stood in for padding above
    masked = scores.masked_fill(~keep, float("-inf"))
    for k in (1, 7, 64):
        got = topk.top_indices(scores, k, ties, exclusions=Exclusions.from_ids(exclude)).indices
        expected = reference(masked, k, ties)
        finite = masked.gather(1, expected) > float("-inf")
        assert torch.equal(got[finite], expected[finite])
