r"""How a true rank becomes a sampled rank: :math:`P(s \mid r)` for m sampled negatives.

One relevant item ranks r-th among the n candidates of the full ranking (r in 1..n). Against m sampled
negatives its sampled rank is s = 1 + the number of sampled negatives scored above it. Each negative is
above it with probability p = (r - 1) / (n - 1), so

* with replacement (each negative drawn uniformly from the n - 1): s - 1 ~ Binomial(m, p);
* without replacement (m distinct negatives): s - 1 ~ Hypergeometric(n - 1 items, r - 1 above, m drawn)

(Krichene & Rendle, KDD 2020; ``../shared/sampled-metrics.md`` of the project). The [n, m + 1] matrix is never
built: its rows are taken at the weighted ranks of the rank axis (:mod:`~torchrec_eval.sampled.rank_axis`), a few
thousand whatever n is.

With replacement, the binomial makes the second moments cheap: :math:`\sum_r P(s \mid r) P(s' \mid r)
= \binom{m}{s-1}\binom{m}{s'-1} \sum_r p_r^{t} (1 - p_r)^{2m - t}` with t = s + s' - 2, so the
[m + 1, m + 1] Gram matrix of the corrections needs 2m + 1 power sums over the ranks
(:func:`binomial_gram`), not an [n, m + 1] x [n, m + 1] product; the sums over the ranks are taken on the
rank axis (:mod:`~torchrec_eval.sampled.rank_axis`), whose cost does not grow with n.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int
from torchrec_eval.sampled.rank_axis import rank_axis

__all__ = ["MAX_ITEMS", "binomial_gram", "check_sampling", "sampled_rank_probabilities"]

#: the largest catalogue: every rank 1..n + 1 a float64 integer, exactly
MAX_ITEMS = 2**53 - 1


def check_sampling(num_items: int, num_negatives: int) -> tuple[int, int]:
    """``num_items`` n and ``num_negatives`` m, checked: integers with 1 <= m <= n - 1."""
    n = check_int("num_items", num_items, 2)
    m = check_int("num_negatives", num_negatives, 1)
    if n > MAX_ITEMS:
        raise ValueError(f"`num_items` must be at most 2**53 - 1 = {MAX_ITEMS} (each rank a float64 integer), "
                         f"got {n}")
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
        log_choose_m = _log_choose(torch.tensor(float(m), dtype=torch.float64, device=ranks.device), j)
        return torch.exp(_log_terms(above.squeeze(1) / (n - 1), m, j, log_choose_m))
    below = (n - 1) - above
    possible = (j <= above) & (m - j <= below)
    everything = torch.tensor(float(n - 1), dtype=torch.float64)
    log = _log_choose(above, j) + _log_choose(below, m - j) - _log_choose(everything, torch.tensor(float(m)).double())
    return torch.where(possible, torch.exp(torch.where(possible, log, 0.0)), 0.0)  # lgamma is inf off the support


def _log_terms(p: Tensor, total: int, t: Tensor, offset: Tensor) -> Tensor:
    r"""[len(p), len(t)] :math:`\log(p^t (1 - p)^{total - t}) + offset_t`, as one [len(p), 3] x [3, len(t)]
    product (total log(1 - p) + t logit(p) + offset) instead of a pass per term; p = 0 and p = 1 are exact."""
    interior = (p > 0) & (p < 1)
    q = torch.where(interior, p, 0.5)
    left = torch.stack([total * torch.log1p(-q), torch.log(q) - torch.log1p(-q), torch.ones_like(q)], dim=1)
    log = left @ torch.stack([torch.ones_like(t), t, offset])
    at_zero = torch.where(t == 0, 0.0, -math.inf) + offset  # p = 0: all the mass at t = 0
    at_one = torch.where(t == total, 0.0, -math.inf) + offset
    return torch.where(interior.unsqueeze(1), log, torch.where((p == 0).unsqueeze(1), at_zero, at_one))


def binomial_gram(num_items: int, num_negatives: int) -> Tensor:
    r"""[m + 1, m + 1] :math:`A^T D A` for A = :math:`P(s \mid r)` with replacement and D = diag(1 / n): the
    mean over the n true ranks of :math:`P(s \mid r) P(s' \mid r)`, from the power sums
    :math:`g_t = \frac{1}{n} \sum_r p_r^t (1 - p_r)^{2m - t}` (t = 0..m; :math:`g_{2m - t} = g_t` as
    :math:`p_{n + 1 - r} = 1 - p_r`), summed in log space around each term's largest value.

    Example:
        >>> import torch
        >>> from torchrec_eval.sampled.transitions import sampled_rank_probabilities
        >>> a = sampled_rank_probabilities(torch.arange(1, 51), 50, 4)
        >>> bool(torch.allclose(binomial_gram(50, 4), a.T @ a / 50, rtol=1e-12, atol=0))
        True
    """
    n, m = check_sampling(num_items, num_negatives)
    t = torch.arange(m + 1, dtype=torch.float64)
    q = t / (2 * m)
    peak = torch.xlogy(t, q) + torch.xlogy(2 * m - t, 1 - q)  # the largest term of each sum (continuous p)
    axis = rank_axis(n, m)
    sums = torch.zeros(m + 1, dtype=torch.float64)
    for part in axis.blocks():
        sums += part.weights @ torch.exp(_log_terms((part.ranks - 1) / (n - 1), 2 * m, t, -peak))
    half = peak + torch.log(sums) - math.log(n)
    log_g = torch.cat([half, half[:-1].flip(0)])  # t = 0..2m
    log_choose_m = _log_choose(torch.tensor(float(m), dtype=torch.float64), t)
    index = torch.arange(m + 1).unsqueeze(1) + torch.arange(m + 1).unsqueeze(0)
    return torch.exp(log_choose_m.unsqueeze(1) + log_choose_m.unsqueeze(0) + log_g[index])
