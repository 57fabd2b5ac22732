"""Multiple-comparison adjustments against scipy (Benjamini-Hochberg) and, for Holm and Bonferroni, the
textbook procedures written out one hypothesis at a time (reject in order, as Holm 1979 states it)."""

from __future__ import annotations

import math

import pytest
import torch

from torchrec_eval.comparison.statistics import adjusted_p_values


def _holm(p: list[float]) -> list[float]:
    """Holm's step-down: the i-th smallest p-value times (m - i + 1), never below an earlier one."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


@pytest.mark.parametrize("seed", range(5))
def test_against_scipy_and_the_textbook(seed):
    scipy_stats = pytest.importorskip("scipy.stats")
    gen = torch.Generator().manual_seed(seed)
    p = torch.rand(17, generator=gen) ** 3  # many small p-values
    p[3] = p[5]  # a tie
    bh = scipy_stats.false_discovery_control(p.numpy().astype("float64"), method="bh")
    torch.testing.assert_close(adjusted_p_values(p, "bh"), torch.tensor(bh, dtype=torch.float64), rtol=1e-12, atol=0)
    torch.testing.assert_close(adjusted_p_values(p, "holm"), torch.tensor(_holm(p.double().tolist()), dtype=torch.float64),
                               rtol=1e-12, atol=0)
    bonferroni = [min(1.0, 17 * v) for v in p.double().tolist()]
    torch.testing.assert_close(adjusted_p_values(p, "bonferroni"), torch.tensor(bonferroni, dtype=torch.float64),
                               rtol=1e-12, atol=0)


def test_nan_p_values_are_left_out_of_the_family():
    p = torch.tensor([0.01, math.nan, 0.02])
    got = adjusted_p_values(p, "bonferroni")
    assert math.isnan(got[1]) and got[0] == pytest.approx(0.02) and got[2] == pytest.approx(0.04)
    assert torch.isnan(adjusted_p_values(torch.tensor([math.nan]), "bh")).all()
    assert adjusted_p_values(torch.zeros(0), "holm").numel() == 0


@pytest.mark.parametrize(("p", "method", "message"), [
    (torch.tensor([0.1]), "fdr", r"`method` must be one of .*got 'fdr'"),
    (torch.tensor([[0.1]]), "bh", r"`p_values` must be a 1-D tensor, got \(1, 1\)"),
    ([0.1], "bh", r"`p_values` must be a 1-D tensor, got list"),
    (torch.tensor([0.1, 1.5]), "holm", r"`p_values` must lie in \[0, 1\], got \[1.5\]"),
])
def test_bad_arguments_are_named(p, method, message):
    with pytest.raises(ValueError, match=message):
        adjusted_p_values(p, method)
