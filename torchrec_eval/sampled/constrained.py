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
    solve their equations; a step back keeps them >= 0). The free variables' block of Q is kept as a Cholesky
    factor that grows by one row as a variable joins (O(k^2), where a fresh solve is O(k^3): the corrections
    of m = 1000 took 30 s), refactored when one leaves, and solved by least squares where it is singular.

    Raises:
        ValueError: if the active set has not converged in ``max_steps`` (default 3N) steps.

    Example:
        >>> import torch
        >>> q_matrix = torch.tensor([[4.0, 0.0], [0.0, 4.0]], dtype=torch.float64)
        >>> nonnegative_quadratic(q_matrix, torch.tensor([4.0, -4.0], dtype=torch.float64))
        tensor([1., 0.], dtype=torch.float64)
    """
    size = vector.shape[0]
    scale = float(matrix.diagonal().abs().max()) * float(vector.abs().max() + 1)
    tolerance = 1e-12 * max(scale, 1e-300)
    solution = torch.zeros_like(vector)
    free: list[int] = []
    factor = _Factor(matrix)
    for _ in range(max_steps if max_steps is not None else 3 * size):
        pull = vector - matrix @ solution
        pull[free] = -torch.inf
        if float(pull.max()) <= tolerance:
            return solution
        free.append(int(pull.argmax()))
        factor.grow(free)
        while True:
            trial = _solve_free(matrix, vector, free, factor.lower(len(free)))
            index = torch.tensor(free)
            blocked = index[trial[index] <= 0]
            if len(blocked) == 0:
                solution = trial
                break
            ratio = solution[blocked] / (solution[blocked] - trial[blocked])
            solution = solution + float(ratio.min()) * (trial - solution)
            free = [i for i in free if float(solution[i]) > 0]
            kept = torch.zeros(size, dtype=torch.bool)
            kept[free] = True
            solution = torch.where(kept, solution, 0.0)
            factor.rebuild(free)
    raise ValueError(f"`max_steps`: the constrained correction did not converge in {max_steps or 3 * size} steps")


class _Factor:
    """The lower Cholesky factor of Q over the free variables, in the order they were freed, in one [N, N]
    buffer: a variable freed appends a row (its earlier rows stay), one fixed again rebuilds it; singular (the
    block not positive definite) until the next rebuild."""

    def __init__(self, matrix: Tensor) -> None:
        self.matrix, self.buffer, self.singular = matrix, torch.zeros_like(matrix), False

    def lower(self, size: int) -> Tensor | None:
        return None if self.singular else self.buffer[:size, :size]

    def grow(self, free: list[int]) -> None:
        if self.singular:
            return
        size, new = len(free), free[-1]
        before = self.buffer[: size - 1, : size - 1]
        row = torch.linalg.solve_triangular(before, self.matrix[free[:-1], new].unsqueeze(1), upper=False).squeeze(1)
        pivot = float(self.matrix[new, new]) - float(row @ row)
        self.singular = not pivot > 1e-14 * float(self.matrix[new, new])
        self.buffer[size - 1, : size - 1], self.buffer[size - 1, size - 1] = row, max(pivot, 0.0) ** 0.5

    def rebuild(self, free: list[int]) -> None:
        lower, info = torch.linalg.cholesky_ex(self.matrix[free][:, free])
        self.singular = int(info) != 0
        self.buffer.zero_()
        self.buffer[: len(free), : len(free)] = lower


def _solve_free(matrix: Tensor, vector: Tensor, free: list[int], factor: Tensor | None) -> Tensor:
    """The minimiser over the free variables with the others at 0: two triangular solves with their factor, or
    least squares (the least-norm solution) where their block is singular."""
    trial = torch.zeros_like(vector)
    target = vector[free].unsqueeze(1)
    if factor is not None:
        trial[free] = torch.cholesky_solve(target, factor).squeeze(1)
    else:
        trial[free] = torch.linalg.lstsq(matrix[free][:, free], target, driver="gelsd").solution.squeeze(1)
    return trial
