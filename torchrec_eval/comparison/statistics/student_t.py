r"""The quantile and the two-sided tail of Student's t distribution, from SciPy (``scipy.stats.t``), on tensors.

The library wrote them by hand once (Abramowitz & Stegun's closed forms, inverted by Newton's method); a
well-kept library's are preferred (issue 36), and SciPy is a dependency anyway for the comparisons'
tests. The values are read on the host: they are computed in ``compute()``, which reads the states there.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int, check_probability

__all__ = ["student_t_quantile", "student_t_two_sided_p", "t_quantile"]


def student_t_two_sided_p(t: Tensor, df: Tensor) -> Tensor:
    r"""The two-sided p-value :math:`P(|T| \ge |t|)` of Student's t with ``df`` degrees of freedom, elementwise.

    :math:`I_{\nu / (\nu + t^2)}(\nu / 2, 1 / 2)` by SciPy's regularized incomplete beta, or
    :math:`1 - I_{t^2 / (\nu + t^2)}(1 / 2, \nu / 2)` where :math:`t^2 < \nu` (near 1: ``2 * scipy.stats.t.sf``
    loses 3e-9 there, at :math:`t = 10^{-8}, \nu = 1`). The p-value of a paired t-test is this at
    ``t = mean / stderr``, ``df = n - 1``.

    Args:
        t: the statistic, a float64 tensor (an infinite ``t`` gives 0).
        df: the degrees of freedom, broadcastable with ``t``; an entry ``<= 0`` (or NaN) gives NaN.

    Returns:
        float64 tensor of the broadcast shape and ``t``'s device, in ``[0, 1]``.

    Example:
        >>> import torch
        >>> from torchrec_eval.comparison.statistics import student_t_two_sided_p
        >>> student_t_two_sided_p(torch.tensor([2.7764, 2.0423, 1.96]), torch.tensor([4.0, 30.0, 1e9]))
        tensor([0.0500, 0.0500, 0.0500], dtype=torch.float64)
    """
    import numpy as np
    from scipy.special import betainc

    t, df = torch.broadcast_tensors(  # type: ignore[no-untyped-call]  # torch leaves it unannotated
        torch.as_tensor(t, dtype=torch.float64), torch.as_tensor(df, dtype=torch.float64))
    square, nu = (t * t).cpu().numpy(), df.cpu().numpy()
    with np.errstate(invalid="ignore", divide="ignore"):  # df <= 0: NaN below
        p = np.where(square < nu, 1 - betainc(0.5, nu / 2, square / (nu + square)),
                     betainc(nu / 2, 0.5, nu / (nu + square)))
    return torch.where(df > 0, torch.as_tensor(p, dtype=torch.float64, device=t.device), torch.nan)


def student_t_quantile(p: float, df: Tensor) -> Tensor:
    r"""The ``p`` quantile :math:`t_{p,\nu}` of Student's t with ``df`` degrees of freedom, elementwise
    (``scipy.stats.t.ppf``). For example :math:`t_{0.975,1} = 12.7062`, :math:`t_{0.975,4} = 2.7764`,
    :math:`t_{0.975,30} = 2.0423`.

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
        >>> from torchrec_eval.comparison.statistics import student_t_quantile
        >>> student_t_quantile(0.975, torch.tensor([1.0, 4.0, 30.0, 1e9]))
        tensor([12.7062,  2.7764,  2.0423,  1.9600], dtype=torch.float64)
    """
    from scipy import stats

    df = torch.as_tensor(df, dtype=torch.float64)
    fractional = (df > 0) & (df != torch.floor(df)) & torch.isfinite(df)
    if bool(fractional.any()):
        raise ValueError(f"`df` must hold whole numbers of degrees of freedom, got {df[fractional][:5].tolist()}")
    quantile = torch.as_tensor(stats.t.ppf(p, df.cpu().numpy()), dtype=torch.float64, device=df.device)
    return torch.where(df > 0, quantile, torch.nan)


def t_quantile(p: float, df: int) -> float:
    r"""The ``p`` quantile :math:`t_{p,\nu}` of Student's t distribution with ``df`` degrees of freedom
    (``scipy.stats.t.ppf``). For example :math:`t_{0.975,1} = 12.7062`, :math:`t_{0.975,4} = 2.7764`,
    :math:`t_{0.975,30} = 2.0423`.

    Args:
        p: the probability, in ``(0, 1)``.
        df: the degrees of freedom, an int ``>= 1``.

    Returns:
        the quantile, a float (negative for ``p < 0.5``).

    Raises:
        ValueError: if ``p`` is not in ``(0, 1)`` or ``df`` is not an int >= 1.

    Example:
        >>> from torchrec_eval.data.splits import t_quantile
        >>> round(t_quantile(0.975, 4), 6)
        2.776445
        >>> round(t_quantile(0.025, 9), 6)
        -2.262157
    """
    p = check_probability("p", p)
    df = check_int("df", df, 1)
    return float(student_t_quantile(p, torch.tensor(float(df), dtype=torch.float64)))
