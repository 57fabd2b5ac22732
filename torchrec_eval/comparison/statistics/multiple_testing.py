r"""p-values adjusted for multiple comparisons: Bonferroni, Holm and Benjamini-Hochberg.

For m p-values :math:`p_{(1)} \le \dots \le p_{(m)}` (ascending),

.. math::
    \text{Bonferroni: } \min(1, m\,p_i), \qquad
    \text{Holm: } \max_{j \le i} \min\big(1, (m - j + 1)\,p_{(j)}\big), \qquad
    \text{BH: } \min_{j \ge i} \min\big(1, \tfrac{m}{j}\,p_{(j)}\big),

Bonferroni and Holm control the family-wise error rate, Benjamini-Hochberg the false discovery rate
(under independence or positive dependence). NaN p-values (comparisons without a value) are left out
of m and stay NaN.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["ADJUSTMENTS", "adjusted_p_values"]

#: the adjustments :func:`adjusted_p_values` takes
ADJUSTMENTS = ("bonferroni", "holm", "bh")


def adjusted_p_values(p_values: Tensor, method: str) -> Tensor:
    """The p-values of a family of comparisons adjusted by ``method``, in their own order.

    Args:
        p_values: [m] p-values in [0, 1] (NaN: a comparison without a value).
        method: ``"bonferroni"``, ``"holm"`` or ``"bh"`` (Benjamini-Hochberg).

    Returns:
        float64 [m] adjusted p-values (NaN where the input is NaN).

    Raises:
        ValueError: on another ``method``, or ``p_values`` that is not a 1-D tensor of values in [0, 1].

    Example:
        >>> import torch
        >>> from torchrec_eval.comparison.statistics import adjusted_p_values
        >>> p = torch.tensor([0.01, 0.04, 0.03, 0.2])
        >>> adjusted_p_values(p, "holm")
        tensor([0.0400, 0.0900, 0.0900, 0.2000], dtype=torch.float64)
        >>> adjusted_p_values(p, "bh")
        tensor([0.0400, 0.0533, 0.0533, 0.2000], dtype=torch.float64)
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"`method` must be one of {ADJUSTMENTS}, got {method!r}")
    if not isinstance(p_values, Tensor) or p_values.ndim != 1:
        shown = tuple(p_values.shape) if isinstance(p_values, Tensor) else type(p_values).__name__
        raise ValueError(f"`p_values` must be a 1-D tensor, got {shown}")
    p = p_values.to(torch.float64)
    known = ~torch.isnan(p)
    if bool(((p[known] < 0) | (p[known] > 1)).any()):
        raise ValueError(f"`p_values` must lie in [0, 1], got {p[known & ((p < 0) | (p > 1))].tolist()[:5]}")
    out = torch.full_like(p, float("nan"))
    values = p[known]
    m = values.numel()
    if m == 0:
        return out
    if method == "bonferroni":
        out[known] = (values * m).clamp(max=1.0)
        return out
    order = torch.argsort(values, stable=True)
    ranked = values[order]
    position = torch.arange(1, m + 1, dtype=torch.float64, device=p.device)
    if method == "holm":  # step-down: a running maximum from the smallest p
        adjusted = torch.cummax((ranked * (m - position + 1)).clamp(max=1.0), dim=0).values
    else:  # step-up: a running minimum from the largest p
        scaled = (ranked * m / position).clamp(max=1.0)
        adjusted = torch.flip(torch.cummin(torch.flip(scaled, [0]), dim=0).values, [0])
    unsorted = torch.empty_like(adjusted)
    unsorted[order] = adjusted
    out[known] = unsorted
    return out
