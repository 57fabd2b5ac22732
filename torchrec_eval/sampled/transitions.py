r"""How a true rank becomes a sampled rank: :math:`P(s \mid r)` for m sampled negatives.

One relevant item ranks r-th among the n candidates of the full ranking (r in 1..n). Against m sampled
negatives its sampled rank is s = 1 + the number of sampled negatives scored above it. Each negative is
above it with probability p = (r - 1) / (n - 1), so

* with replacement (each negative drawn uniformly from the n - 1): s - 1 ~ Binomial(m, p);
* without replacement (m distinct negatives): s - 1 ~ Hypergeometric(n - 1 items, r - 1 above, m drawn)

(Krichene & Rendle, KDD 2020; ``../shared/sampled-metrics.md`` of the project). The [n, m + 1] matrix is
built a block of ranks at a time: n can be a catalogue (10^5 items and more) while m is about 100.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int

__all__ = ["check_sampling", "rank_blocks", "sampled_rank_probabilities"]

#: ranks per block of the [n, m + 1] matrix (a block of [4096, 1001] float64 is 32 MiB)
BLOCK = 4096


def check_sampling(num_items: int, num_negatives: int) -> tuple[int, int]:
    """``num_items`` n and ``num_negatives`` m, checked: integers with 1 <= m <= n - 1."""
    n = check_int("num_items", num_items, 2)
    m = check_int("num_negatives", num_negatives, 1)
    if m > n - 1:
        raise ValueError(f"`num_negatives` must be at most num_items - 1 = {n - 1} (the negatives are other "
                         f"items of the catalogue), got {m}")
    return n, m


def _log_choose(total: Tensor, part: Tensor) -> Tensor:
    return torch.lgamma(total + 1) - torch.lgamma(part + 1) - torch.lgamma(total - part + 1)


def sampled_rank_probabilities(ranks: Tensor, num_items: int, num_negatives: int, replacement: bool = True) -> Tensor:
    """:math:`P(s \\mid r)`: [len(ranks), m + 1] float64, row i the distribution of the sampled rank s = 1..m+1
    of a relevant item at true rank ``ranks[i]`` (1..n).

    Example:
        >>> import torch
        >>> sampled_rank_probabilities(torch.tensor([1, 2, 3]), num_items=3, num_negatives=2)
        tensor([[1.0000, 0.0000, 0.0000],
                [0.2500, 0.5000, 0.2500],
                [0.0000, 0.0000, 1.0000]], dtype=torch.float64)
        >>> sampled_rank_probabilities(torch.tensor([2]), num_items=3, num_negatives=1, replacement=False)
        tensor([[0.5000, 0.5000]], dtype=torch.float64)
    """
    n, m = check_sampling(num_items, num_negatives)
    above = (ranks.to(torch.float64) - 1).unsqueeze(1)  # r - 1 items of the n - 1 score above it
    j = torch.arange(m + 1, dtype=torch.float64, device=ranks.device)  # negatives above: s - 1
    if replacement:
        p = above / (n - 1)
        log = _log_choose(torch.tensor(float(m), dtype=torch.float64), j) + torch.xlogy(j, p) + torch.xlogy(m - j, 1 - p)
        return torch.exp(log)
    below = (n - 1) - above
    possible = (j <= above) & (m - j <= below)
    everything = torch.tensor(float(n - 1), dtype=torch.float64)
    log = _log_choose(above, j) + _log_choose(below, m - j) - _log_choose(everything, torch.tensor(float(m)).double())
    return torch.where(possible, torch.exp(torch.where(possible, log, 0.0)), 0.0)  # lgamma is inf off the support


def rank_blocks(num_items: int, device: torch.device | None = None) -> Iterator[Tensor]:
    """The true ranks 1..n in blocks of :data:`BLOCK` (int64), for sums over every rank in bounded memory."""
    for start in range(1, num_items + 1, BLOCK):
        yield torch.arange(start, min(start + BLOCK, num_items + 1), device=device)
