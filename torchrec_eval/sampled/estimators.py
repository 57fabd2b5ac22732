r"""Estimates of a full-catalogue metric from sampled ranks: each is one value per sampled rank.

Every estimator here maps the sampled rank s = 1..m+1 of an instance to a value :math:`c_s`; the estimate
of a metric over many instances is the mean of :math:`c_{s_i}`, i.e. ``histogram @ c / count`` for the
histogram of sampled ranks, a sum that every batch and process adds exactly. With A = :math:`P(s \mid r)`
([n, m + 1], :mod:`~torchrec_eval.sampled.transitions`), b = M(r) the metric at every true rank and a prior
:math:`\pi` over true ranks (uniform, as Krichene & Rendle; D = diag(:math:`\pi`)):

* ``naive``: :math:`c_s = M(s)` over the m + 1 sampled candidates (what sampled evaluation reports);
* ``rank_estimate``: :math:`c_s = M(\hat r_s)`, :math:`\hat r_s = 1 + (n - 1)(s - 1) / m` ((s - 1)/m is
  unbiased for p);
* ``bias_variance(gamma)``: minimises :math:`\sum_r \pi_r [(A_r c - b_r)^2 + \gamma\, \mathrm{Var}_r(c)]`:
  :math:`c = ((1 - \gamma) A^T D A + \gamma\, \mathrm{diag}(A^T \pi))^{-1} A^T D b`; gamma = 0 is K&R's
  minimal bias, solved on A itself (:func:`least_bias_rows`), gamma = 1 the posterior mean
  :math:`c_s = \sum_r P(r \mid s) M(r)`.

:func:`em_rank_distribution` (Jin et al., AAAI 2021) fits :math:`\pi` itself to a histogram; every metric at
every k is then :math:`\sum_r \pi_r M(r)`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int
from torchrec_eval.sampled.banded import BandedRows
from torchrec_eval.sampled.rank_axis import RankAxis, rank_axis
from torchrec_eval.sampled.rank_metrics import rank_metric
from torchrec_eval.sampled.transitions import binomial_gram, check_sampling, sampled_rank_probabilities

__all__ = ["RankDistribution", "bias_variance", "bias_variance_rows", "checked_gamma", "correction_system",
           "em_rank_distribution", "expected_naive", "least_bias_rows", "naive", "rank_estimate", "true_value"]

Requests = list[tuple[str, int | None]]

#: EM's rank axis: its iterate sharpens with each iteration, so 40 nodes per 2 binomial widths (the corrections
#: need 24 per 3: ``tests/sampled/test_rank_axis.py``)
EM_POINTS, EM_SPAN = 40, 2.0


class RankDistribution(NamedTuple):
    """A distribution of true ranks on a :class:`~torchrec_eval.sampled.rank_axis.RankAxis`: ``mass`` [J] (or
    [R, J], R distributions) at the axis's ranks [J], each node's mass that of the ranks it stands for."""

    axis: RankAxis
    mass: Tensor


def _cutoffs(requests: Requests) -> tuple[int, ...]:
    return tuple(sorted({k for _, k in requests if k is not None}))


def _values(requests: Requests, axis: RankAxis) -> Tensor:
    """[J, P] each request's metric at each rank of the axis."""
    return torch.stack([rank_metric(family, axis.ranks, k, axis.num_items) for family, k in requests], dim=1)


def naive(family: str, k: int | None, num_negatives: int) -> Tensor:
    """[m + 1] the metric of the sampled rank itself, in a ranking of m + 1 candidates."""
    m = check_int("num_negatives", num_negatives, 1)
    s = torch.arange(1, m + 2, dtype=torch.float64)
    return rank_metric(family, s, k, m + 1)


def rank_estimate(family: str, k: int | None, num_items: int, num_negatives: int) -> Tensor:
    """[m + 1] the metric at the rank estimate :math:`1 + (n - 1)(s - 1) / m` of each sampled rank."""
    n, m = check_sampling(num_items, num_negatives)
    s = torch.arange(1, m + 2, dtype=torch.float64)
    return rank_metric(family, 1 + (n - 1) * (s - 1) / m, k, n)


def bias_variance(family: str, k: int | None, num_items: int, num_negatives: int, gamma: float,
                  replacement: bool = True) -> Tensor:
    """[m + 1] K&R's correction with weight ``gamma`` on the variance, under a uniform prior over true ranks."""
    return bias_variance_rows([(family, k)], num_items, num_negatives, gamma, replacement)[0]


def bias_variance_rows(requests: Requests, num_items: int, num_negatives: int, gamma: float,
                       replacement: bool = True) -> Tensor:
    """[P, m + 1] :func:`bias_variance` of each (family, k) of ``requests``, from one pass over the true ranks
    (gamma = 0: :func:`least_bias_rows`)."""
    if checked_gamma(gamma) == 0:
        return least_bias_rows(requests, num_items, num_negatives, replacement)
    system, targets = correction_system(requests, num_items, num_negatives, gamma, replacement)
    factor, info = torch.linalg.cholesky_ex(system)
    if int(info) == 0:  # positive definite (gamma > 0): a Cholesky solve
        return torch.cholesky_solve(targets, factor).T
    # a gamma so small that the system is singular to working precision: least squares, the least-norm solution
    return torch.linalg.lstsq(system, targets, driver="gelsd").solution.T


def least_bias_rows(requests: Requests, num_items: int, num_negatives: int,
                    replacement: bool = True) -> Tensor:
    r"""[P, m + 1] K&R's minimal-bias corrections (gamma = 0): :math:`\arg\min_c \sum_r \pi_r (A_r c - b_r)^2`
    for each request, solved on :math:`\sqrt{\pi} [A \mid B]` itself, never on the Gram matrix
    :math:`A^T D A`, whose condition number is the square of A's: a QR of its rows on the rank axis (each node's
    row weighted by the ranks it stands for) keeps the triangle R (and :math:`Q^T B`), then a truncated SVD
    solves :math:`R c = Q^T b` (singular values below (m + 1) eps of the largest dropped, as
    ``numpy.linalg.lstsq`` drops them).

    Where A is well conditioned (m <= 40 at n = 300: cond(A) about 5e11) this is the least-squares minimum
    itself. Past cond(A) = 1 / eps (m = 50 at n = 500) A's columns, the binomial probabilities of degree m, are
    dependent to float64 precision, and no float64 solve attains the exact minimum: it needs coefficients along
    directions that A shrinks below eps, which neither the solve nor ``histogram @ c`` can carry. The bias^2
    is then at most numpy.linalg.lstsq's (tests/sampled/test_sampled_estimators.py).

    Args:
        requests: (family, cut-off or None) pairs; num_items, num_negatives: n and m; replacement: the draws.

    Raises:
        ValueError: on a bad n or m, or an unknown family.

    Example:
        >>> c = least_bias_rows([("auc", None)], num_items=100, num_negatives=4)
        >>> [round(v, 9) + 0.0 for v in c[0].tolist()]  # the sampled AUC is unbiased: bias 0, c its own value
        [1.0, 0.75, 0.5, 0.25, 0.0]
    """
    n, m = check_sampling(num_items, num_negatives)
    size = m + 1
    axis = rank_axis(n, m, _cutoffs(requests), replacement)
    rows = torch.cat([sampled_rank_probabilities(axis.ranks, n, m, replacement), _values(requests, axis)], dim=1)
    rows = rows * (axis.weights / n).sqrt().unsqueeze(1)  # sqrt(pi) [A | B], a node weighing the ranks it stands for
    triangle = torch.linalg.qr(rows, mode="r").R  # [min(J, m + 1 + P), m + 1 + P]
    triangle = torch.cat([triangle, triangle.new_zeros(max(0, size - triangle.shape[0]), triangle.shape[1])])
    solved = torch.linalg.lstsq(triangle[:size, :size], triangle[:size, size:],
                                rcond=size * torch.finfo(torch.float64).eps, driver="gelsd")
    return solved.solution.T


def checked_gamma(gamma: float) -> float:
    """K&R's weight of the variance, a number in [0, 1]."""
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0 <= gamma <= 1:
        raise ValueError(f"`gamma` must be a number in [0, 1] (0: the least-squares minimum of the bias, 1: the "
                         f"posterior mean), got {gamma!r}")
    return gamma


def correction_system(requests: Requests, num_items: int, num_negatives: int, gamma: float,
                      replacement: bool = True) -> tuple[Tensor, Tensor]:
    """The quadratic objective of K&R's corrections, :math:`\frac12 c^T S c - c^T t_p` for each request p:
    S = (1 - gamma) A^T D A + gamma diag(A^T pi) [m + 1, m + 1] and the targets A^T D b [m + 1, P]."""
    gamma = checked_gamma(gamma)
    n, m = check_sampling(num_items, num_negatives)
    gram = _gram(n, m, replacement)
    weight = gram.sum(1)  # A^T pi: each row of A sums to 1
    # a metric with a cut-off is 0 past it, so only ranks up to the largest cut-off count
    cutoffs = [k for _, k in requests]
    reach = n if None in cutoffs else min(n, max(k for k in cutoffs if k is not None))
    targets = torch.zeros(m + 1, len(requests), dtype=torch.float64)
    for part in rank_axis(n, m, _cutoffs(requests), replacement).upto(reach).blocks():
        a = sampled_rank_probabilities(part.ranks, n, m, replacement)
        targets += a.T @ (_values(requests, part) * (part.weights / n).unsqueeze(1))
    system = gram * (1 - gamma)
    system.diagonal().add_(weight, alpha=gamma)
    return system, targets


@functools.lru_cache(maxsize=8)
def _gram(n: int, m: int, replacement: bool) -> Tensor:
    """A^T D A under the uniform prior, the part of every correction that depends on n and m only: built once
    per (n, m) in a process, from power sums with replacement (:func:`binomial_gram`), else over the rank axis."""
    if replacement:
        return binomial_gram(n, m)
    gram = torch.zeros(m + 1, m + 1, dtype=torch.float64)
    for part in rank_axis(n, m, (), replacement).blocks():
        a = sampled_rank_probabilities(part.ranks, n, m, replacement) * (part.weights / n).sqrt().unsqueeze(1)
        gram += a.T @ a
    return gram


def expected_naive(family: str, k: int | None, ranks: Tensor, num_items: int, num_negatives: int,
                   replacement: bool = True) -> Tensor:
    """The expected naive sampled metric of relevant items at true ``ranks``: :math:`\\sum_s P(s \\mid r) M(s)`."""
    return sampled_rank_probabilities(ranks, num_items, num_negatives, replacement) @ naive(family, k, num_negatives)


def true_value(family: str, k: int | None, distribution: RankDistribution) -> Tensor:
    """:math:`\\sum_r \\pi_r M(r)`: the metric over a distribution of true ranks (:func:`em_rank_distribution`; a
    [R, J] mass gives R values).

    Raises:
        ValueError: for a cut-off at which the distribution's axis has no panel end.
    """
    axis = distribution.axis
    if k is not None and not axis.exact and k < axis.num_items and k not in axis.cutoffs:
        raise ValueError(f"`k`: the distribution's rank axis ends panels at the cut-offs {axis.cutoffs}, so the "
                         f"metric at k={k} would be summed across its jump; fit it with cutoffs=({k},)")
    return distribution.mass @ rank_metric(family, axis.ranks, k, axis.num_items)


def _counts(histogram: Tensor, num_negatives: int) -> Tensor:
    """The float64 counts of a histogram of sampled ranks [m + 1] (or [R, m + 1]), an entry below 0 by round-off
    alone set to 0: a state of float64 sums (weights, a tie's 1 / (spread + 1)) may hold -eps * its mass where
    a rank's sum should be 0. Below 0 by more than (m + 2) * 4 eps times the row's mass (the bound of a
    cumulative sum's round-off over m + 2 edges) is refused."""
    m = num_negatives
    if not isinstance(histogram, Tensor) or histogram.shape[-1:] != (m + 1,) or histogram.ndim > 2:
        raise ValueError(f"`histogram` must hold m + 1 = {m + 1} counts (or a [R, m + 1] stack of them), got "
                         f"{histogram}")
    counts = histogram.to(torch.float64)
    slack = 4 * (m + 2) * torch.finfo(torch.float64).eps * counts.abs().sum(-1, keepdim=True)
    if not bool(counts.isfinite().all()) or bool((counts < -slack).any()) or bool((counts.sum(-1) <= 0).any()):
        raise ValueError(f"`histogram` must hold m + 1 = {m + 1} counts >= 0 (round-off of {4 * (m + 2)} eps times "
                         f"the total aside), not all 0, got {histogram}")
    return counts.clamp(min=0)


def em_rank_distribution(histogram: Tensor, num_items: int, num_negatives: int, replacement: bool = True,
                         iterations: int = 200, tolerance: float = 1e-10,
                         cutoffs: tuple[int, ...] = ()) -> RankDistribution:
    """The distribution of true ranks that best explains ``histogram`` [m + 1] of sampled ranks (maximum
    likelihood by EM, Jin et al. 2021): :math:`\\pi \\leftarrow \\frac{1}{N} \\sum_s h_s P(r \\mid s)`,
    :math:`P(r \\mid s) \\propto \\pi_r P(s \\mid r)`, from a uniform start, until no rank's density
    :math:`n \\pi_r` (1 at the start) moves more than ``tolerance`` (a test of each rank's mass itself stopped
    a catalogue of 10^10 items after one iteration: every mass is below 1e-10). A [R, m + 1] stack of
    histograms gives R fits at once (matrix products instead of vector ones), run until none moves more than
    ``tolerance``.

    The n ranks are the weighted ranks of :func:`~torchrec_eval.sampled.rank_axis.rank_axis` (its panels ending
    at ``cutoffs``, the cut-offs :func:`true_value` will be asked for): from a uniform start every iterate is
    :math:`\\pi_r = \\varphi(r) / n` for a product :math:`\\varphi` of polynomials in r, so a node of weight w
    carries w times its rank's mass, and the fit costs O(J m) an iteration for J nodes, not O(n m) (less: the
    products run over each rank's window of sampled ranks, :class:`~torchrec_eval.sampled.banded.BandedRows`).

    Raises:
        ValueError: on a bad n or m, and on a histogram of another length, not finite, all 0, or below 0 by
            more than round-off (an entry within 4 (m + 2) eps of the row's mass below 0 counts as 0).
    """
    n, m = check_sampling(num_items, num_negatives)
    counts = _counts(histogram, m)
    total = counts.sum(-1, keepdim=True)
    axis = rank_axis(n, m, tuple(sorted(set(cutoffs))), replacement, EM_POINTS, EM_SPAN)
    a = BandedRows(sampled_rank_probabilities(axis.ranks, n, m, replacement))  # [J, m + 1], by windows
    fits = counts.reshape(-1, m + 1)
    pi = (axis.weights / n).expand(fits.shape[0], -1)
    for _ in range(iterations):
        evidence = a.left(pi)  # [R, m + 1]: P(s) under pi
        ratio = torch.where(evidence > 0, fits / evidence.clamp(min=1e-300), 0.0)
        updated = pi * a.right(ratio) / total.reshape(-1, 1)
        moved = float(((updated - pi) * (n / axis.weights)).abs().max())  # each rank's density n pi_r
        pi = updated
        if moved < tolerance:
            break
    return RankDistribution(axis, pi.reshape(*counts.shape[:-1], -1))
