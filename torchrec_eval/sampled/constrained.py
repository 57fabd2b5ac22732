r"""Krichene & Rendle's constrained correction: the bias-variance objective, with a correction that behaves as
a metric of the rank must.

The metrics here are non-negative and never grow with the rank, so the corrected value of each sampled rank
should not either: :math:`c_1 \ge c_2 \ge \dots \ge c_{m+1} \ge 0`. K&R name constrained least squares
without settling its constraints; these are the ones this package uses. Written as :math:`c = U d` with U
the upper-triangular matrix of ones (:math:`c_s = \sum_{u \ge s} d_u`), the constraints are :math:`d \ge 0`
and the problem is a non-negative least squares in d, solved here by Lawson & Hanson's active set on the
[m + 1, m + 1] normal equations :math:`U^T S U`, :math:`U^T t` of
:func:`~torchrec_eval.sampled.estimators.correction_system`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.sampled.estimators import correction_system

__all__ = ["constrained_rows", "nonnegative_quadratic"]


def constrained_rows(requests: list[tuple[str, int | None]], num_items: int, num_negatives: int, gamma: float,
                     replacement: bool = True) -> Tensor:
    """[P, m + 1] the correction of each (family, k) minimising K&R's objective with weight ``gamma`` on the
    variance (0: minimal bias, their CLS) under :math:`c_1 \\ge \\dots \\ge c_{m+1} \\ge 0`.

    Example:
        >>> c = constrained_rows([("recall", 10)], num_items=1000, num_negatives=20, gamma=0.01)[0]
        >>> bool((c[:-1] >= c[1:]).all() and (c >= 0).all())
        True
    """
    system, targets = correction_system(requests, num_items, num_negatives, gamma, replacement)
    upper = torch.triu(torch.ones_like(system))
    reduced = upper.T @ system @ upper
    rows = [upper @ nonnegative_quadratic(reduced, column) for column in (upper.T @ targets).T]
    return torch.stack(rows)


def nonnegative_quadratic(matrix: Tensor, vector: Tensor, max_steps: int | None = None) -> Tensor:
    """argmin over d >= 0 of :math:`\\frac12 d^T Q d - d^T q` for a positive semi-definite Q [N, N] and q [N]:
    Lawson & Hanson's active set (a variable joins where the gradient pulls it above 0; the free variables
    solve their equations; a step back keeps them >= 0).

    Raises:
        ValueError: if the active set has not converged in ``max_steps`` (default 3N) steps.

    Example:
        >>> import torch
        >>> q_matrix = torch.tensor([[2.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
        >>> nonnegative_quadratic(q_matrix, torch.tensor([2.0, -4.0], dtype=torch.float64))
        tensor([1., 0.], dtype=torch.float64)
    """
    size = vector.shape[0]
    scale = float(matrix.diagonal().abs().max()) * float(vector.abs().max() + 1)
    tolerance = 1e-12 * max(scale, 1e-300)
    solution = torch.zeros_like(vector)
    free = torch.zeros(size, dtype=torch.bool)
    for _ in range(max_steps if max_steps is not None else 3 * size):
        pull = torch.where(free, -torch.inf, vector - matrix @ solution)
        if float(pull.max()) <= tolerance:
            return solution
        free[int(pull.argmax())] = True
        while True:
            trial = _solve_free(matrix, vector, free)
            blocked = free & (trial <= 0)
            if not bool(blocked.any()):
                solution = trial
                break
            ratio = solution[blocked] / (solution[blocked] - trial[blocked])
            solution = solution + float(ratio.min()) * (trial - solution)
            free &= solution > 0
            solution = torch.where(free, solution, 0.0)
    raise ValueError(f"`max_steps`: the constrained correction did not converge in {max_steps or 3 * size} steps")


def _solve_free(matrix: Tensor, vector: Tensor, free: Tensor) -> Tensor:
    """The minimiser over the free variables with the others at 0 (least norm if their block is singular)."""
    index = free.nonzero().squeeze(1)
    block = matrix[index][:, index]
    trial = torch.zeros_like(vector)
    trial[index] = torch.linalg.lstsq(block, vector[index].unsqueeze(1), driver="gelsd").solution.squeeze(1)
    return trial
