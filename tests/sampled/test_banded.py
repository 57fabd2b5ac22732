"""EM's products over each rank block's window of sampled ranks (:mod:`torchrec_eval.sampled.banded`) against the
dense products of the same transition rows."""

from __future__ import annotations

import pytest
import torch

from torchrec_eval.sampled import estimators as E
from torchrec_eval.sampled.banded import BandedRows
from torchrec_eval.sampled.rank_axis import rank_axis
from torchrec_eval.sampled.transitions import sampled_rank_probabilities


def _rows(n: int, m: int) -> torch.Tensor:
    return sampled_rank_probabilities(rank_axis(n, m, (10,), True, E.EM_POINTS, E.EM_SPAN).ranks, n, m, True)


@pytest.mark.parametrize(("n", "m"), [(10**4, 1000), (10**10, 1000), (10**6, 100)])
def test_the_products_are_the_dense_ones(n, m):
    """Positive weights and ratios spread over 60 orders of magnitude (a fit's iterates are that uneven): each
    entry of both products within 1e-13 of the dense one's, relative to that entry."""
    a = _rows(n, m)
    banded = BandedRows(a)
    gen = torch.Generator().manual_seed(0)
    weights = torch.exp(torch.empty(3, a.shape[0], dtype=torch.float64).uniform_(-70, 0, generator=gen))
    ratios = torch.exp(torch.empty(3, m + 1, dtype=torch.float64).uniform_(-70, 0, generator=gen))
    for got, want in ((banded.left(weights), weights @ a), (banded.right(ratios), ratios @ a.T)):
        assert float(((got - want).abs() / want.abs()).max()) < 1e-13


def test_at_m_1000_the_windows_are_a_third_of_the_matrix_or_less():
    for n in (10**4, 10**6, 10**10):
        a = _rows(n, 1000)
        blocks = BandedRows(a).blocks
        assert len(blocks) > 1
        assert sum((stop - start) * (high - low) for start, stop, low, high, _ in blocks) <= a.numel() / 3


def test_windows_over_half_the_matrix_stay_one_product():
    a = _rows(10**4, 100)
    assert [(start, stop, low, high) for start, stop, low, high, _ in BandedRows(a).blocks] == [
        (0, a.shape[0], 0, 101)]
