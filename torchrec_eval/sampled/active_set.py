r"""Lawson & Hanson's active set for :math:`\min_{x \ge 0} \frac12 x^T Q x - x^T q` (Q positive semi-definite),
written once for a Q held as a matrix and for one whose entries are computed as they are asked for.

A variable joins the free set where the gradient pulls it above 0; the free variables solve their equations;
a step back keeps them >= 0. The free variables' block of Q is kept as a Cholesky factor that grows by one row
as a variable joins (O(k^2), where a fresh solve is O(k^3)), refactored when one leaves, and solved by least
squares where it is singular. The steps are a generator, so that two formulations of one problem can run side
by side and the first to finish decides (:func:`~torchrec_eval.sampled.constrained.constrained_rows`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Protocol, TypeVar

import torch
from torch import Tensor

__all__ = ["ExplicitQuadratic", "Quadratic", "active_set_steps", "finish", "first_finished"]

_Value = TypeVar("_Value")


class Quadratic(Protocol):
    """What the active set reads of a problem: its size, the entries of Q it needs, and the pull
    :math:`q - Q x` of a solution that is 0 outside ``free``."""

    size: int
    tolerance: float  # a pull at most this is no pull

    def block(self, rows: list[int], columns: list[int]) -> Tensor: ...

    def target(self, rows: list[int]) -> Tensor: ...

    def pull(self, solution: Tensor, free: list[int]) -> Tensor: ...


class ExplicitQuadratic:
    """A Q [N, N] and q [N] held as tensors."""

    def __init__(self, matrix: Tensor, vector: Tensor) -> None:
        self.matrix, self.vector, self.size = matrix, vector, vector.shape[0]
        scale = float(matrix.diagonal().abs().max()) * float(vector.abs().max() + 1)
        self.tolerance = 1e-12 * max(scale, 1e-300)

    def block(self, rows: list[int], columns: list[int]) -> Tensor:
        return self.matrix[rows][:, columns]

    def target(self, rows: list[int]) -> Tensor:
        return self.vector[rows]

    def pull(self, solution: Tensor, free: list[int]) -> Tensor:
        return self.vector - self.matrix @ solution


def finish(steps: Generator[None, None, Tensor]) -> Tensor:
    """The value of a run of steps taken to its end."""
    return first_finished(steps)


def first_finished(*runners: Generator[None, None, _Value]) -> _Value:
    """Step each runner in turn: the value of the first to finish."""
    while True:
        for runner in runners:
            try:
                next(runner)
            except StopIteration as finished:
                value: _Value = finished.value
                return value


def active_set_steps(problem: Quadratic, max_steps: int | None = None) -> Generator[None, None, Tensor]:
    """The active set's steps from x = 0, one ``yield`` per variable that joins; returns the solution.

    Raises:
        ValueError: if it has not converged in ``max_steps`` (default 3N) steps.

    Example:
        >>> import torch
        >>> q_matrix = torch.tensor([[4.0, 0.0], [0.0, 4.0]], dtype=torch.float64)
        >>> finish(active_set_steps(ExplicitQuadratic(q_matrix, torch.tensor([4.0, -4.0], dtype=torch.float64))))
        tensor([1., 0.], dtype=torch.float64)
    """
    limit = max_steps if max_steps is not None else 3 * problem.size
    factor = _Factor(problem)
    solution, free = torch.zeros(problem.size, dtype=torch.float64), list[int]()
    for _ in range(limit):
        pull = problem.pull(solution, free)
        pull[free] = -torch.inf
        if float(pull.max()) <= problem.tolerance:
            return solution
        free.append(int(pull.argmax()))
        factor.grow(free)
        solution, free = _settle(problem, factor, solution, free)
        yield
    raise ValueError(f"`max_steps`: the constrained correction did not converge in {limit} steps")


def _settle(problem: Quadratic, factor: _Factor, solution: Tensor,
            free: list[int]) -> tuple[Tensor, list[int]]:
    """The inner loop: the minimiser over the free variables, stepping back (and fixing at 0 the variables that
    reach it) until that minimiser is > 0 on all of them."""
    while free:
        trial = _solve_free(problem, free, factor.lower(len(free)))
        index = torch.tensor(free)
        blocked = index[trial[index] <= 0]
        if len(blocked) == 0:
            return trial, free
        ratio = solution[blocked] / (solution[blocked] - trial[blocked])
        solution = solution + float(ratio.min()) * (trial - solution)
        free = [i for i in free if float(solution[i]) > 0]
        kept = torch.zeros(problem.size, dtype=torch.bool)
        kept[free] = True
        solution = torch.where(kept, solution, 0.0)
        factor.rebuild(free)
    return solution, free


class _Factor:
    """The lower Cholesky factor of Q over the free variables, in the order they were freed, in one buffer that
    doubles as the free set grows: a variable freed appends a row (its earlier rows stay), one fixed again
    rebuilds it; singular (the block not positive definite) until the next rebuild."""

    def __init__(self, problem: Quadratic) -> None:
        self.problem, self.singular = problem, False
        self.buffer = torch.zeros(0, 0, dtype=torch.float64)

    def lower(self, size: int) -> Tensor | None:
        return None if self.singular else self.buffer[:size, :size]

    def _reserve(self, size: int) -> None:
        if size > self.buffer.shape[0]:
            larger = torch.zeros(*(2 * [min(self.problem.size, max(2 * size, 64))]), dtype=torch.float64)
            kept = self.buffer.shape[0]
            larger[:kept, :kept] = self.buffer
            self.buffer = larger

    def grow(self, free: list[int]) -> None:
        if self.singular:
            return
        size, new = len(free), free[-1]
        self._reserve(size)
        before = self.buffer[: size - 1, : size - 1]
        column = self.problem.block(free, [new]).squeeze(1)
        row = torch.linalg.solve_triangular(before, column[:-1].unsqueeze(1), upper=False).squeeze(1)
        pivot = float(column[-1]) - float(row @ row)
        self.singular = not pivot > 1e-14 * float(column[-1])
        self.buffer[size - 1, : size - 1], self.buffer[size - 1, size - 1] = row, max(pivot, 0.0) ** 0.5

    def rebuild(self, free: list[int]) -> None:
        lower, info = torch.linalg.cholesky_ex(self.problem.block(free, free))
        self.singular = int(info) != 0
        self._reserve(len(free))
        self.buffer.zero_()
        self.buffer[: len(free), : len(free)] = lower


def _solve_free(problem: Quadratic, free: list[int], factor: Tensor | None) -> Tensor:
    """The minimiser over the free variables with the others at 0: two triangular solves with their factor, or
    least squares (the least-norm solution) where their block is singular."""
    trial = torch.zeros(problem.size, dtype=torch.float64)
    target = problem.target(free).unsqueeze(1)
    if factor is not None:
        trial[free] = torch.cholesky_solve(target, factor).squeeze(1)
    else:
        trial[free] = torch.linalg.lstsq(problem.block(free, free), target, driver="gelsd").solution.squeeze(1)
    return trial
