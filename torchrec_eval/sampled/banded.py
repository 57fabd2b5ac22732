r"""The transition rows :math:`P(s \mid r)` [J, m + 1] of a rank axis, kept in blocks of consecutive ranks with the
window of sampled ranks each block reaches.

A rank r's row is a binomial (or hypergeometric) distribution over s, centred at :math:`m (r - 1) / (n - 1)` and
a few :math:`\sqrt{m}` wide: at m = 1000 a fifth of the [J, m + 1] entries are above :math:`10^{-30}` of their
row's largest and the rest add nothing a float64 sum can keep. EM's two products an iteration
(:func:`~torchrec_eval.sampled.estimators.em_rank_distribution`), the evidence :math:`\pi A` and the update
:math:`\rho A^T`, run over the blocks' windows only: 2 to 3 times fewer operations at m = 1000. Where the
windows cover more than half the matrix (m = 100: the rows are wider for their length) it stays one block.

An entry is dropped where it is below ``1e-30`` of its row's largest. EM's evidence of a sampled rank,
:math:`e_s = \sum_r \pi_r A_{rs}`, then loses at most 1e-30 of :math:`\sum_r \pi_r \max_s A_{rs} \le 1`, far below
the round-off of a rank the histogram reached (:math:`e_s` stays near its share of the queries); its update of a
rank loses at most 1e-30 of the rank's largest term times the histogram's mass.
"""

from __future__ import annotations

from torch import Tensor

__all__ = ["BandedRows"]

_BLOCK = 128  # ranks a block
_NEGLIGIBLE = 1e-30  # of a row's largest entry


class BandedRows:
    """A [J, m + 1] non-negative matrix as row blocks and their column windows.

    Example:
        >>> import torch
        >>> a = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], dtype=torch.float64)
        >>> banded = BandedRows(a)
        >>> banded.left(torch.tensor([[1.0, 1.0]], dtype=torch.float64))
        tensor([[0.5000, 1.0000, 0.5000]], dtype=torch.float64)
        >>> banded.right(torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64))
        tensor([[1.5000, 2.5000]], dtype=torch.float64)
    """

    def __init__(self, matrix: Tensor) -> None:
        self.shape = tuple(matrix.shape)
        self.blocks: list[tuple[int, int, int, int, Tensor]] = []
        for start in range(0, matrix.shape[0], _BLOCK):
            rows = matrix[start:start + _BLOCK]
            reached = (rows > _NEGLIGIBLE * rows.max(1, keepdim=True).values).any(0).nonzero().squeeze(1)
            if len(reached):
                low, high = int(reached[0]), int(reached[-1]) + 1
                self.blocks.append((start, start + rows.shape[0], low, high, rows[:, low:high].contiguous()))
        if sum((stop - start) * (high - low) for start, stop, low, high, _ in self.blocks) > matrix.numel() / 2:
            self.blocks = [(0, matrix.shape[0], 0, matrix.shape[1], matrix)]  # one product: fewer calls, as fast

    def left(self, weights: Tensor) -> Tensor:
        """``weights @ matrix``: [R, J] to [R, m + 1]."""
        out = weights.new_zeros(weights.shape[0], self.shape[1])
        for start, stop, low, high, block in self.blocks:
            out[:, low:high] += weights[:, start:stop] @ block
        return out

    def right(self, values: Tensor) -> Tensor:
        """``values @ matrix.T``: [R, m + 1] to [R, J]."""
        out = values.new_zeros(values.shape[0], self.shape[0])
        for start, stop, low, high, block in self.blocks:
            out[:, start:stop] = values[:, low:high] @ block.T
        return out
