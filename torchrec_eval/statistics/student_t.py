r"""The quantile and the two-sided tail of Student's t distribution, exact and vectorized, without SciPy.

For integer :math:`\nu \le` :data:`SERIES_LIMIT` the distribution function has the finite closed form
of Abramowitz & Stegun (1964), 26.7.3 (odd :math:`\nu`) and 26.7.4 (even :math:`\nu`), in
:math:`\theta = \arctan(t / \sqrt{\nu})`,

.. math::
    P(|T| \le t) = \frac{2}{\pi}\Big(\theta + \sin\theta \sum_{j=0}^{(\nu-3)/2}
        \frac{(2j)!!}{(2j+1)!!}\cos^{2j+1}\theta\Big) \ (\nu \text{ odd}), \qquad
    \sin\theta \sum_{j=0}^{(\nu-2)/2} \frac{(2j-1)!!}{(2j)!!}\cos^{2j}\theta \ (\nu \text{ even}),

increasing in :math:`\theta \in [0, \pi/2)` and inverted by Newton's method on :math:`\theta`
(safeguarded by bisection) to double precision. Above the limit the
Cornish-Fisher expansion of A&S 26.7.5 in powers of :math:`1/\nu` (four terms) is used: there its
relative error is below 1e-13 up to the 0.9995 quantile and below 1e-11 up to the :math:`1 - 10^{-9}`
quantile, so the quantile is exact to about 1e-12 at the usual levels for every :math:`\nu \ge 1`.
The two-sided tail :math:`P(|T| > t)` reads the same closed form up to the limit and inverts the same
expansion above it (:func:`student_t_two_sided_p`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int, check_probability

__all__ = ["SERIES_LIMIT", "student_t_quantile", "student_t_two_sided_p", "t_quantile"]

#: the largest degrees of freedom inverted through the closed form (at most 500 series terms)
SERIES_LIMIT = 1000
_SOLVER_STEPS = 100  # a cap: Newton stops when theta no longer moves (about 5 steps)


def _two_sided_probability(theta: Tensor, df: Tensor) -> Tensor:
    """P(|T| <= sqrt(df) tan(theta)) for integer ``df`` ([U] each), A&S 26.7.3-26.7.4, vectorized."""
    odd = df.remainder(2) == 1
    num_terms = torch.where(odd, (df - 1) / 2, df / 2)  # terms of the sum, per row
    width = max(int(num_terms.max()), 1)
    cos2 = torch.cos(theta).square().unsqueeze(1)
    j = torch.arange(1, width, dtype=torch.float64, device=df.device)
    ratio = torch.where(odd.unsqueeze(1), cos2 * (2 * j) / (2 * j + 1), cos2 * (2 * j - 1) / (2 * j))
    first = torch.where(odd, torch.cos(theta), torch.ones_like(theta)).unsqueeze(1)
    terms = torch.cumprod(torch.cat([first, ratio], dim=1), dim=1)
    kept = torch.arange(width, device=df.device) < num_terms.unsqueeze(1)
    total = torch.where(kept, terms, torch.zeros_like(terms)).sum(dim=1)
    sin = torch.sin(theta)
    return torch.where(odd, 2.0 / math.pi * (theta + sin * total), sin * total)


def _series_quantile(target: float, df: Tensor) -> Tensor:
    r"""The t >= 0 with P(|T| <= t) = ``target`` for each integer ``df`` ([U]): safeguarded Newton on theta.

    Newton steps on :math:`\theta` use the density :math:`dP/d\theta = 2\,\Gamma(\frac{\nu+1}{2}) /
    (\sqrt\pi\,\Gamma(\frac{\nu}{2}))\cos^{\nu-1}\theta`, start from the Cornish-Fisher value and
    fall back to bisection of the bracket whenever a step would leave it.
    """
    lo, hi = torch.zeros_like(df), torch.full_like(df, math.pi / 2)
    start = _cornish_fisher_quantile((1.0 + target) / 2.0, df)
    theta = torch.atan(start / torch.sqrt(df)).clamp(min=0.0, max=math.pi / 2)
    scale = 2.0 * torch.exp(torch.lgamma((df + 1) / 2) - torch.lgamma(df / 2)) / math.sqrt(math.pi)
    for _ in range(_SOLVER_STEPS):
        gap = _two_sided_probability(theta, df) - target
        lo, hi = torch.where(gap < 0, theta, lo), torch.where(gap > 0, theta, hi)
        newton = theta - gap / (scale * torch.cos(theta) ** (df - 1))
        inside = (newton >= lo) & (newton <= hi) & (gap != 0)
        step = torch.where(inside, newton, torch.where(gap == 0, theta, 0.5 * (lo + hi)))
        moved = (step - theta).abs() > 4 * torch.finfo(torch.float64).eps * theta
        theta = step
        if not bool(moved.any()):
            break
    return torch.sqrt(df) * torch.tan(theta)


def _cornish_fisher_quantile(probability: float, df: Tensor) -> Tensor:
    """The upper ``probability`` quantile for large ``df``: A&S 26.7.5, four terms in 1/df."""
    z: Tensor = torch.special.ndtri(torch.full_like(df, probability))  # torch types ndtri as Any
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


def _cornish_fisher_z(t: Tensor, df: Tensor) -> Tensor:
    """The normal z >= 0 whose Cornish-Fisher t (A&S 26.7.5) is ``t`` >= 0, for large ``df``: Newton's
    method on the expansion, increasing in z (its derivative is 1 + O(1/df))."""
    z = t.clone()
    for _ in range(_SOLVER_STEPS):
        z2 = z * z
        value = z + ((z2 + 1) * z / 4 + (((5 * z2 + 16) * z2 + 3) * z / 96
                     + ((((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
                        + (((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160) / df) / df) / df) / df
        slope = 1 + ((3 * z2 + 1) / 4 + (((25 * z2 + 48) * z2 + 3) / 96) / df) / df
        step = (value - t) / slope
        z = (z - step).clamp(min=0.0)
        if not bool((step.abs() > 4 * torch.finfo(torch.float64).eps * (1 + z)).any()):
            break
    return z


def student_t_two_sided_p(t: Tensor, df: Tensor) -> Tensor:
    r"""The two-sided p-value :math:`P(|T| \ge |t|)` of Student's t with ``df`` degrees of freedom, elementwise.

    Up to :data:`SERIES_LIMIT` degrees of freedom from the closed form of A&S 26.7.3-26.7.4 (exact to
    rounding); above, through the normal z whose Cornish-Fisher quantile is ``t`` (relative error about
    1e-12 for p-values down to 1e-9). The p-value of a paired t-test is this at ``t = mean / stderr``,
    ``df = n - 1``.

    Args:
        t: the statistic, a float64 tensor (an infinite ``t`` gives 0).
        df: the degrees of freedom, broadcastable with ``t``, whole numbers; an entry ``<= 0`` (or NaN)
            gives NaN.

    Returns:
        float64 tensor of the broadcast shape, in ``[0, 1]``.

    Example:
        >>> import torch
        >>> from torchrec_eval.statistics import student_t_two_sided_p
        >>> student_t_two_sided_p(torch.tensor([2.7764, 2.0423, 1.96]), torch.tensor([4.0, 30.0, 1e9]))
        tensor([0.0500, 0.0500, 0.0500], dtype=torch.float64)
    """
    t, df = torch.broadcast_tensors(  # type: ignore[no-untyped-call]  # torch leaves it unannotated
        torch.as_tensor(t, dtype=torch.float64), torch.as_tensor(df, dtype=torch.float64))
    magnitude = t.abs()
    p = torch.full_like(t, float("nan"))
    valid = (df > 0) & ~torch.isnan(magnitude)
    small, large = valid & (df <= SERIES_LIMIT), valid & (df > SERIES_LIMIT)
    if bool(small.any()):
        theta = torch.atan(magnitude[small] / torch.sqrt(df[small]))
        p[small] = (1.0 - _two_sided_probability(theta, df[small])).clamp(min=0.0, max=1.0)
    if bool(large.any()):
        p[large] = torch.special.erfc(_cornish_fisher_z(magnitude[large], df[large]) / math.sqrt(2.0))
    return p


def student_t_quantile(p: float, df: Tensor) -> Tensor:
    r"""The ``p`` quantile :math:`t_{p,\nu}` of Student's t with ``df`` degrees of freedom, elementwise.

    Exact to about 1e-12 (see :mod:`torchrec_eval.statistics.student_t` for the method); each distinct
    ``df`` up to :data:`SERIES_LIMIT` is inverted once. For example :math:`t_{0.975,1} = 12.7062`,
    :math:`t_{0.975,4} = 2.7764`, :math:`t_{0.975,30} = 2.0423`.

    Args:
        p: the probability, a float in ``(0, 1)`` (checked by the callers).
        df: the degrees of freedom, a tensor of any shape and device holding whole numbers; an entry
            ``<= 0`` (or NaN) gives NaN.

    Returns:
        float64 tensor of ``df``'s shape and device (negative for ``p < 0.5``).

    Raises:
        ValueError: if a positive entry of ``df`` is not a whole number.

    Example:
        >>> import torch
        >>> from torchrec_eval.statistics import student_t_quantile
        >>> student_t_quantile(0.975, torch.tensor([1.0, 4.0, 30.0, 1e9]))
        tensor([12.7062,  2.7764,  2.0423,  1.9600], dtype=torch.float64)
    """
    df = torch.as_tensor(df, dtype=torch.float64)
    valid = df > 0
    fractional = valid & (df != torch.floor(df)) & torch.isfinite(df)
    if bool(fractional.any()):
        raise ValueError(f"`df` must hold whole numbers of degrees of freedom, got {df[fractional][:5].tolist()}")
    quantile = torch.full_like(df, float("nan"))
    if p == 0.5:
        return torch.where(valid, torch.zeros_like(df), quantile)
    target = abs(2.0 * p - 1.0)  # P(|T| <= t)
    small, large = valid & (df <= SERIES_LIMIT), valid & (df > SERIES_LIMIT)
    if bool(small.any()):
        distinct, inverse = torch.unique(df[small], return_inverse=True)
        quantile[small] = _series_quantile(target, distinct)[inverse]
    if bool(large.any()):
        quantile[large] = _cornish_fisher_quantile((1.0 + target) / 2.0, df[large])
    return quantile if p > 0.5 else -quantile


def t_quantile(p: float, df: int) -> float:
    r"""The ``p`` quantile :math:`t_{p,\nu}` of Student's t distribution with ``df`` degrees of freedom.

    Computed without SciPy and exact to about 1e-12 by
    :func:`~torchrec_eval.statistics.student_t_quantile`: for integer :math:`\nu` the t distribution
    function has the finite closed form of Abramowitz & Stegun (1964), 26.7.3-26.7.4, inverted to
    double precision (see :mod:`torchrec_eval.statistics.student_t`).
    For example :math:`t_{0.975,1} = 12.7062`, :math:`t_{0.975,4} = 2.7764`,
    :math:`t_{0.975,30} = 2.0423`.

    Args:
        p: the probability, in ``(0, 1)``.
        df: the degrees of freedom, an int ``>= 1``.

    Returns:
        the quantile, a float (negative for ``p < 0.5``).

    Raises:
        ValueError: if ``p`` is not in ``(0, 1)`` or ``df`` is not an int >= 1.

    Example:
        >>> from torchrec_eval.splits import t_quantile
        >>> round(t_quantile(0.975, 4), 6)
        2.776445
        >>> round(t_quantile(0.025, 9), 6)
        -2.262157
    """
    p = check_probability("p", p)
    df = check_int("df", df, 1)
    return float(student_t_quantile(p, torch.tensor(float(df), dtype=torch.float64)))
