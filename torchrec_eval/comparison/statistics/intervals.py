r"""Confidence intervals of a mean: one formula, from samples or from running sums.

For :math:`n` values with mean :math:`\bar x` and sample standard deviation :math:`s`, the two-sided
interval at level :math:`c` is

.. math::
    \bar x \pm q \, \frac{s}{\sqrt{n}}

with :math:`q` the :math:`(1 + c)/2` quantile of Student's t with :math:`n - 1` degrees of freedom
(:func:`~torchrec_eval.comparison.statistics.student_t_quantile`) or of the standard normal. :func:`mean_interval`
is that formula; :func:`mean_confidence_interval` takes the values, :func:`interval_from_moments` the
sums :math:`S_1 = \sum x`, :math:`S_2 = \sum x^2` and :math:`n`, with
:math:`s^2 = (S_2 - S_1^2 / n) / (n - 1)`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from torchrec_eval.comparison.statistics.student_t import student_t_quantile
from torchrec_eval.pipeline.arguments import check_probability

__all__ = ["METHODS", "check_method", "interval_from_moments", "mean_confidence_interval", "mean_interval"]

METHODS = ("t", "normal")


def check_method(method: object) -> str:
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}")
    return str(method)


def mean_interval(mean: Tensor, stderr: Tensor, count: Tensor, level: float, method: str = "t"
                  ) -> tuple[Tensor, Tensor]:
    """``(low, high) = mean -+ q * stderr``, ``q`` the ``(1 + level) / 2`` quantile of Student's t with
    ``count - 1`` degrees of freedom (``method="t"``) or of the standard normal (``"normal"``).

    ``mean``, ``stderr`` and ``count`` are float64 tensors that broadcast; ``count < 2`` gives NaN with
    ``"t"``. ``level`` and ``method`` are checked by the public callers.
    """
    probability = (1.0 + level) / 2.0
    if method == "t":
        q = student_t_quantile(probability, count - 1)
    else:
        q = torch.special.ndtri(torch.full_like(stderr, probability))
    return mean - q * stderr, mean + q * stderr


def interval_from_moments(
    total: Tensor, total_sq: Tensor, count: Tensor, level: float = 0.95, method: str = "t"
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(mean, low, high, standard error) of the mean from a sum, a sum of squares and a count.

    ``count < 2`` gives a NaN interval (and standard error); a negative variance from rounding is 0.

    Example:
        >>> import torch
        >>> from torchrec_eval.comparison.uncertainty import interval_from_moments
        >>> x = torch.tensor([0.2, 0.9, 0.4, 0.4, 1.0, 0.0, 0.7], dtype=torch.float64)
        >>> mean, low, high, stderr = interval_from_moments(x.sum(), (x * x).sum(), torch.tensor(7.0))
        >>> [round(float(v), 4) for v in (mean, low, high, stderr)]
        [0.5143, 0.1748, 0.8538, 0.1388]
    """
    level, method = check_probability("level", level), check_method(method)
    total, total_sq, count = (torch.as_tensor(x, dtype=torch.float64) for x in (total, total_sq, count))
    mean = total / count
    variance = ((total_sq - total * mean) / (count - 1)).clamp(min=0)
    variance = torch.where(count >= 2, variance, torch.full_like(variance, float("nan")))
    stderr = torch.sqrt(variance / count)
    low, high = mean_interval(mean, stderr, count, level, method)
    return mean, low, high, stderr


def mean_confidence_interval(
    values: Tensor, confidence: float = 0.95
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    r"""Mean, sample standard deviation and two-sided Student-t confidence interval along dim 0.

    For :math:`n` values :math:`x_1, \dots, x_n` with mean :math:`\bar x` and sample standard deviation
    :math:`s = \sqrt{\sum_i (x_i - \bar x)^2 / (n - 1)}`, the interval at confidence :math:`c` is

    .. math::
        \bar x \pm t_{(1 + c)/2,\, n - 1} \, \frac{s}{\sqrt{n}}

    with :func:`~torchrec_eval.data.splits.t_quantile`. Over cross-validation folds this is the usual
    reporting, but it is optimistic: the folds share training data, so their values are not
    independent and no unbiased estimate of the variance of a k-fold mean exists (Bengio & Grandvalet,
    2004). NaN values propagate.

    Args:
        values: ``[n, ...]`` tensor, ``n >= 2``; the statistics are taken over dim 0.
        confidence: :math:`c`, in ``(0, 1)``.

    Returns:
        ``(mean, std, low, high)``, float64 tensors of shape ``values.shape[1:]``.

    Raises:
        ValueError: if ``values`` is not a tensor with at least 2 rows, or ``confidence`` is not in
            ``(0, 1)``.

    Example:
        >>> import torch
        >>> from torchrec_eval.data.splits import mean_confidence_interval
        >>> mean, std, low, high = mean_confidence_interval(torch.tensor([0.30, 0.32, 0.31, 0.29, 0.33]))
        >>> [round(float(v), 4) for v in (mean, std, low, high)]
        [0.31, 0.0158, 0.2904, 0.3296]
    """
    if not isinstance(values, Tensor) or values.ndim < 1 or values.shape[0] < 2:
        got = tuple(values.shape) if isinstance(values, Tensor) else type(values).__name__
        raise ValueError(f"`values` must be a tensor with at least 2 rows, got {got}")
    confidence = check_probability("confidence", confidence)
    values = values.double()
    n = values.shape[0]
    mean = values.mean(dim=0)
    std = values.std(dim=0, correction=1)
    count = torch.tensor(float(n), dtype=torch.float64, device=values.device)
    low, high = mean_interval(mean, std / math.sqrt(n), count, confidence)
    return mean, std, low, high
