r"""The rank axis summarised: sums over the n true ranks from a few thousand weighted ranks, whatever n is.

Every estimator of sampled evaluation is a sum over the true ranks r = 1..n of a product of
:math:`P(s \mid r)` rows and a metric's value :math:`M(r)` (the Gram matrix :math:`A^T D A`, the targets
:math:`A^T D b`, K&R's least squares, EM's evidence :math:`\sum_r \pi_r P(s \mid r)`). Summed rank by rank
they cost O(n m), which is minutes at n = 10^9. Here the sum is a quadrature over the integers:

:math:`\sum_{r=a}^{b-1} f(r) \approx \sum_j w_j f(x_j)` on each panel [a, b) of the axis, with the Gauss rule
of the *discrete* uniform measure on those b - a integers (the zeros of the discrete Chebyshev polynomials,
Gautschi 2004, §1.5.2, by Golub & Welsch): ``points`` nodes give the sum exactly for every polynomial in r of
degree below 2 ``points``, and to float64 round-off for a function that is smooth on the panel. The panels
make every summand smooth on its panel:

* a panel of b - a <= ``points`` ranks is summed rank by rank, exactly, and so is a catalogue of at most
  ``EXACT_ITEMS`` ranks;
* panels double in length away from r = 1 (a metric's value, 1/r or 1/log2(r + 1), is analytic on
  [a, 2a]: its nearest singularity is a panel's length away) up to the end of the first panel in u (below);
  past it, the panels in u grow by a factor of at most 4 from one to the next;
* a cut-off k ends a panel at k + 1 (a metric with a cut-off jumps there);
* in :math:`u = \arcsin\sqrt{p}`, p = (r - 1)/(n - 1), the binomial :math:`P(s \mid r)` has the same width
  :math:`1/(2\sqrt{m})` at every p, so panels no wider than ``span`` such widths in u keep each
  :math:`P(s \mid r)` (and the products of them the estimators sum) a low-degree function on its panel;
* without replacement, the ranks within m + 1 of either end are summed exactly (the hypergeometric support
  ends there; between them :math:`P(s \mid r)` is a polynomial of degree m in r).

The axis has about :math:`\pi\sqrt{m}/span + \log_2 (n / m) + P` panels (P cut-offs) of ``points`` nodes
each: its cost grows with :math:`\sqrt{m}` and :math:`\log n`, not n. The error bound, tested against the rank-by-rank sums
for n <= 10^5 and m up to 1000 (``tests/sampled/test_rank_axis.py``): the binomial power sums and the
corrections within 1e-12 relative of the exact sums with the defaults (``points`` 24, ``span`` 3); EM's
iterate is a product of one polynomial factor per iteration and sharpens to about :math:`1/\sqrt{t}` of a
binomial width after t iterations, so EM takes a finer axis (40 nodes per 2 widths), within 1e-9 relative of
200 iterations rank by rank even where n is only 8 m.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["BLOCK", "EXACT_ITEMS", "POINTS", "SPAN", "RankAxis", "discrete_gauss", "rank_axis"]

#: Gauss nodes of one panel
POINTS = 24
#: a panel's width in binomial standard deviations of u = arcsin(sqrt(p))
SPAN = 3.0
#: nodes per block of a sum over the axis: [256, m + 1] float64 terms (2 MiB at m = 1000) at a time
BLOCK = 256
#: catalogues up to this size are summed rank by rank (no slower than the quadrature's nodes at m = 1000)
EXACT_ITEMS = 2048


@dataclass(frozen=True)
class RankAxis:
    r"""Weighted true ranks standing for all n: :math:`\sum_{r=1}^n f(r) \approx \sum_j` ``weights[j]``
    :math:`f(` ``ranks[j]`` :math:`)` for every f smooth between the axis's panel ends.

    Attributes:
        ranks: [J] float64 real ranks in [1, n]; an integer rank wherever the axis is summed rank by rank.
        weights: [J] float64 > 0, summing to n (up to round-off).
        num_items: n.
        exact: whether ``ranks`` is 1..n itself with weights 1.
        cutoffs: the cut-offs k < n after which a panel ends.
    """

    ranks: Tensor
    weights: Tensor
    num_items: int
    exact: bool
    cutoffs: tuple[int, ...]

    def __len__(self) -> int:
        return int(self.ranks.shape[0])

    def upto(self, reach: int) -> RankAxis:
        """The part of the axis at ranks <= ``reach`` (a panel end, as every cut-off is)."""
        keep = self.ranks <= reach + 0.5
        return RankAxis(self.ranks[keep], self.weights[keep], self.num_items, self.exact, self.cutoffs)

    def blocks(self, size: int = BLOCK) -> Iterator[RankAxis]:
        """The axis in parts of ``size`` nodes: a sum of [J, m + 1] terms in [size, m + 1] pieces."""
        for start in range(0, len(self), size):
            yield RankAxis(self.ranks[start:start + size], self.weights[start:start + size], self.num_items,
                           self.exact, self.cutoffs)


def discrete_gauss(lengths: Tensor, points: int) -> tuple[Tensor, Tensor]:
    r"""The ``points``-node Gauss rule of the uniform measure on L consecutive integers 0..L-1, for each L of
    ``lengths`` [P] (each L > ``points``): nodes [P, points] in (0, L - 1) and weights [P, points] summing to L,
    exact for polynomials of degree below 2 ``points``. The Jacobi matrix of the discrete Chebyshev
    polynomials (off-diagonal :math:`\sqrt{\beta_k}`, :math:`\beta_k = k^2 (L^2 - k^2) / (4 (4k^2 - 1))`)
    is scaled by 1/L, so L up to 10^15 keeps full precision.

    Example:
        >>> import torch
        >>> nodes, weights = discrete_gauss(torch.tensor([100]), 4)
        >>> x = torch.arange(100, dtype=torch.float64)
        >>> bool(torch.isclose((weights * nodes ** 7).sum(), (x ** 7).sum(), rtol=1e-13))
        True
    """
    size = lengths.to(torch.float64).unsqueeze(1)  # [P, 1]
    k = torch.arange(1, points, dtype=torch.float64)
    beta = k * k * (1 - (k / size) ** 2) / (4 * (4 * k * k - 1))
    jacobi = torch.diag_embed(beta.sqrt(), 1) + torch.diag_embed(beta.sqrt(), -1)
    eigenvalues, vectors = torch.linalg.eigh(jacobi)
    return (size - 1) / 2 + size * eigenvalues, size * vectors[:, 0, :] ** 2


def _panel_ends(n: int, m: int, cutoffs: tuple[int, ...], replacement: bool, span: float) -> list[int]:
    """The sorted starts of the panels in 1..n, and n + 1."""
    steps = math.ceil((math.pi / 2) / (span / (2 * math.sqrt(m))))
    arcs = [1 + round(math.sin(i * (math.pi / 2) / steps) ** 2 * (n - 1)) for i in range(1, steps)]
    ends = {1, n + 1, *arcs}
    power = 1
    while power < min(arcs, default=n):  # doubling from r = 1 to the first arc's end
        ends.add(1 + power)
        power *= 2
    ends.update(k + 1 for k in cutoffs if k < n)
    if not replacement:
        ends.update(range(1, min(m + 2, n + 1)))
        ends.update(range(max(n - m, 1), n + 1))
    return sorted(e for e in ends if 1 <= e <= n + 1)


@functools.lru_cache(maxsize=32)
def rank_axis(num_items: int, num_negatives: int, cutoffs: tuple[int, ...] = (), replacement: bool = True,
              points: int = POINTS, span: float = SPAN) -> RankAxis:
    """The axis of n = ``num_items`` true ranks for m = ``num_negatives`` sampled negatives, its panels ending at
    every cut-off of ``cutoffs`` (see the module's docstring); rank by rank (``exact``) where that is no more
    ranks than the quadrature would take, or at most ``EXACT_ITEMS``. Built once per argument tuple in a process.

    Example:
        >>> axis = rank_axis(10**9, 100, cutoffs=(10,))
        >>> len(axis), round(float(axis.weights.sum()))
        (752, 1000000000)
        >>> rank_axis(50, 4).exact
        True
    """
    cutoffs = tuple(sorted({k for k in cutoffs if k < num_items}))
    ends = _panel_ends(num_items, num_negatives, cutoffs, replacement, span)
    starts = torch.tensor(ends[:-1], dtype=torch.float64)
    lengths = torch.tensor(ends, dtype=torch.float64).diff()
    quadrature = lengths > points
    if num_items <= EXACT_ITEMS or int(torch.where(quadrature, points, lengths).sum()) >= num_items:
        ranks = torch.arange(1, num_items + 1, dtype=torch.float64)
        return RankAxis(ranks, torch.ones_like(ranks), num_items, True, cutoffs)
    nodes, weights = discrete_gauss(lengths[quadrature], points)
    single = [torch.arange(int(a), int(a + length), dtype=torch.float64)
              for a, length in zip(starts[~quadrature].tolist(), lengths[~quadrature].tolist(), strict=True)]
    ranks = torch.cat([*single, (starts[quadrature].unsqueeze(1) + nodes).flatten()])
    weights = torch.cat([torch.ones(sum(len(s) for s in single), dtype=torch.float64), weights.flatten()])
    order = ranks.argsort()
    return RankAxis(ranks[order], weights[order], num_items, False, cutoffs)
