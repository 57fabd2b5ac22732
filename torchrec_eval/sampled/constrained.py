r"""Krichene & Rendle's constrained correction: the bias-variance objective, with a correction that behaves as
a metric of the rank must.

The metrics here are non-negative and never grow with the rank, so the corrected value of each sampled rank
should not either: :math:`c_1 \ge c_2 \ge \dots \ge c_{m+1} \ge 0`. K&R name constrained least squares
without settling its constraints; these are the ones this package uses. With the objective
:math:`\frac12 c^T S c - c^T t` of :func:`~torchrec_eval.sampled.estimators.correction_system` and D the
differences (:math:`(Dc)_s = c_s - c_{s+1}`, :math:`c_{m+2} = 0`), the constraints are :math:`Dc \ge 0`, and the
problem has two non-negative forms that :mod:`~torchrec_eval.sampled.active_set` solves:

- the primal, in the differences :math:`d = Dc \ge 0` (:math:`c = U d`, U the upper triangle of ones), on
  :math:`U^T S U` and :math:`U^T t`: its active set takes a step per difference that is not 0 at the optimum;
- the dual, in the constraints' multipliers :math:`\lambda \ge 0`, on :math:`D S^{-1} D^T` and
  :math:`-D S^{-1} t` (where S is positive definite, gamma > 0), with :math:`c = S^{-1}(t + D^T \lambda)`: a
  step per constraint that binds.

A correction with a cut-off is a step function (a few differences, nearly every constraint binding); one
without (MRR, NDCG, AUC) is nearly free (most differences > 0): the primal took 1,000 steps for AUC at
m = 1000, the dual none. The two run side by side, a step each, and the first to finish decides. Each ends
at the optimum's conditions to its tolerance; the dual's are read on S, whose condition number is that of
:math:`U^T S U` over up to cond(U)^2, about :math:`(2m/\pi)^2`, so where both finish they agree, the dual's objective no higher.
"""

from __future__ import annotations

from collections.abc import Generator

import torch
from torch import Tensor

from torchrec_eval.sampled.active_set import ExplicitQuadratic, active_set_steps, finish, first_finished
from torchrec_eval.sampled.estimators import correction_system

__all__ = ["constrained_rows"]


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
    factor, info = torch.linalg.cholesky_ex(system)
    reduced = system.cumsum_(1).cumsum_(0)  # U^T S U, in S's buffer (S is read through its factor from here)
    del system
    rows = []
    for target in targets.T:
        primal = active_set_steps(ExplicitQuadratic(reduced, target.cumsum(0)))
        differences = first_finished(primal, _dual_differences(factor, target)) if int(info) == 0 else finish(primal)
        rows.append(differences.flip(0).cumsum(0).flip(0))  # c = U d
    return torch.stack(rows)


class _Dual:
    """The dual's quadratic, :math:`H = D S^{-1} D^T` and :math:`h = -D S^{-1} t`, from the Cholesky factor of S:
    a column of H is one solve, made when its constraint first binds (the few that bind, not all m + 1)."""

    def __init__(self, factor: Tensor, target: Tensor) -> None:
        self.factor, self.size = factor, target.shape[0]
        self.free_solution = torch.cholesky_solve(target.unsqueeze(1), factor).squeeze(1)  # S^{-1} t
        self.vector = -_differences(self.free_solution)
        self.tolerance = 1e-12 * float(self.free_solution.abs().max() + 1)
        self.columns = torch.zeros(self.size, 0, dtype=torch.float64)  # S^{-1} D^T e_j, as solved
        self.slot = torch.full((self.size,), -1, dtype=torch.long)  # j's column in self.columns

    def _solved(self, constraints: list[int]) -> Tensor:
        """S^{-1} D^T e_j [m + 1, len(constraints)], solving those not solved before."""
        index = torch.tensor(constraints, dtype=torch.long)
        new = index[self.slot[index] < 0]
        if len(new):
            rhs = torch.zeros(self.size, len(new), dtype=torch.float64)
            count = torch.arange(len(new))
            rhs[new, count] = 1.0  # D^T e_j = e_j - e_{j+1}
            after = new + 1 < self.size
            rhs[new[after] + 1, count[after]] = -1.0
            self.slot[new] = self.columns.shape[1] + count
            self.columns = torch.cat([self.columns, torch.cholesky_solve(rhs, self.factor)], dim=1)
        return self.columns[:, self.slot[index]]

    def correction(self, solution: Tensor, free: list[int]) -> Tensor:
        """c = S^{-1}(t + D^T lambda) for multipliers that are 0 outside ``free``."""
        return self.free_solution + self._solved(free) @ solution[free]

    def block(self, rows: list[int], columns: list[int]) -> Tensor:
        return _differences(self._solved(columns))[rows]

    def target(self, rows: list[int]) -> Tensor:
        return self.vector[rows]

    def pull(self, solution: Tensor, free: list[int]) -> Tensor:
        return -_differences(self.correction(solution, free))


def _dual_differences(factor: Tensor, target: Tensor) -> Generator[None, None, Tensor]:
    """The dual's steps; returns the differences Dc of its correction, those within round-off below 0 set to 0
    (the dual ends where every constraint holds to its tolerance, 1e-12 of the correction's scale)."""
    dual = _Dual(factor, target)
    multipliers = yield from active_set_steps(dual)
    correction = dual.correction(multipliers, (multipliers > 0).nonzero().squeeze(1).tolist())
    return _differences(correction).clamp(min=0)


def _differences(values: Tensor) -> Tensor:
    """D values along dim 0: :math:`v_s - v_{s+1}`, the last kept (:math:`v_{m+2} = 0`)."""
    out = values.clone()
    out[:-1] -= values[1:]
    return out
