r"""Significance of the difference between models, from sums over queries (no per-query storage).

For models i and j scored on the same n queries, with per-query differences :math:`d_q = x_{qi} - x_{qj}`:

* **paired t-test**: :math:`t = \bar d / (s_d / \sqrt n)`, two-sided p from Student's t with n - 1 degrees
  of freedom (``scipy.stats.t``, as ``scipy.stats.ttest_rel``);
* **randomization** (Fisher; Smucker, Allan & Carterette 2007): replicate b flips the sign of every
  :math:`d_q` at random; p is the share of replicates whose :math:`|\sum_q \epsilon_{qb} d_q|` reaches the
  observed :math:`|\sum_q d_q|` (ranx's convention: no +1);
* **randomized Tukey HSD** (Carterette 2012): replicate b permutes the M models' values within each query;
  p of pair (i, j) is the share of replicates whose largest difference between two models' means reaches
  the observed :math:`|\bar x_i - \bar x_j|`: it controls the family-wise error over all pairs by itself;
* **bootstrap**: replicate b weighs query q by a Poisson(1) count; the percentile interval of the
  replicates' mean differences, and p from the studentized bootstrap: the share of replicates whose t of
  their difference from the observed one reaches the observed t; both over the replicates of at least two
  draws (a Poisson resample's size varies: one of 0 draws has no mean and one of 1 no variance, so no t;
  the bootstrap conditioned on a size >= 2, as the observed t needs n >= 2);

with the effect size :math:`\bar d / s_d` (Cohen's d of paired samples) beside each.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["TESTS", "bootstrap_interval", "effect_size", "exceedance", "percentile_interval", "student_p_value",
           "tukey_p_values"]

#: the tests a comparison runs: paired Student t, Fisher's randomization, the bootstrap, randomized Tukey HSD
TESTS = ("student", "fisher", "bootstrap", "tukey")


def student_p_value(mean: Tensor, sd: Tensor, count: Tensor) -> Tensor:
    """Two-sided p of the paired t-test of mean differences ``mean`` with standard deviations ``sd`` over
    ``count`` queries: 1 where every difference is 0, NaN below 2 queries.

    Example:
        >>> import torch
        >>> round(float(student_p_value(torch.tensor(0.5), torch.tensor(0.5774), torch.tensor(4.0))), 4)
        0.1817
    """
    from scipy import stats

    mean, sd, count = mean.to(torch.float64), sd.to(torch.float64), count.to(torch.float64)
    t = torch.where(sd > 0, mean.abs() / (sd / count.clamp(min=1).sqrt()),
                    torch.where(mean == 0, 0.0, torch.inf))
    df = (count - 1).clamp(min=1).expand_as(t)
    p = torch.as_tensor(2 * stats.t.sf(t.cpu().numpy(), df.cpu().numpy()), dtype=torch.float64, device=t.device)
    return torch.where(count < 2, torch.nan, p)


def effect_size(mean: Tensor, sd: Tensor) -> Tensor:
    """Cohen's d of paired samples, :math:`\\bar d / s_d` (0 where every difference is 0)."""
    return torch.where(sd > 0, mean / sd, torch.where(mean == 0, 0.0, torch.sign(mean) * torch.inf))


def exceedance(observed: Tensor, replicates: Tensor, where: Tensor | None = None) -> Tensor:
    """The share of ``replicates`` [R, ...] at least as large in size as ``observed`` [...] (a relative
    tolerance of 1e-9 absorbs the order of float additions: a replicate equal to the observed value counts),
    among those ``where`` [R, ...] is true (all by default; NaN where none is)."""
    tolerance = 1e-9 * observed.abs().clamp(min=1e-300)
    reached = (replicates.abs() >= observed.abs() - tolerance).to(torch.float64)
    if where is None:
        return reached.mean(0)
    return (reached * where).sum(0) / where.to(torch.float64).sum(0)


def tukey_p_values(observed: Tensor, permuted_means: Tensor, pairs: list[tuple[int, int]]) -> Tensor:
    """[..., P] the randomized Tukey HSD p of each pair from the observed means [..., M] and the replicates'
    permuted means [R, ..., M]: the share of replicates whose range of means reaches the pair's observed
    difference."""
    spread = permuted_means.amax(-1) - permuted_means.amin(-1)  # [R, ...]
    differences = torch.stack([observed[..., i] - observed[..., j] for i, j in pairs], dim=-1)  # [..., P]
    return exceedance(differences, spread.unsqueeze(-1))


def bootstrap_interval(replicates: Tensor, observed: Tensor, level: float, squares: Tensor, counts: Tensor,
                       stderr: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    r"""(low, high, p): the percentile interval at ``level`` of the replicates' mean differences [R], and the
    two-sided p of "no difference" from the studentized bootstrap: the share of replicates whose
    :math:`|t^*_b| = |\bar d^*_b - \bar d| / (s^*_b / \sqrt{n^*_b})` (from its sum of squared differences
    ``squares`` and its weight ``counts`` [R], the draws :math:`n^*_b`) reaches the observed
    :math:`|t| = |\bar d| / \text{stderr}`. The studentized p keeps its level at tens of queries, where the
    percentile's shifted distribution rejects too often (9.7% at alpha 0.05 with 60 queries in this
    package's simulation).

    Both are over the replicates of :math:`n^*_b \ge 2` draws alone: the bootstrap conditioned on a resample
    on which the statistic exists (a Poisson resample of 0 draws has no mean, one of 1 no variance). A
    replicate of equal differences (:math:`s^*_b = 0`) has :math:`|t^*_b| = \infty`, or 0 where its mean is
    the observed one. No such replicate: NaN."""
    valid = counts >= 2
    means = torch.where(valid, replicates, torch.nan)
    probabilities = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64, device=means.device)
    low, high = torch.nanquantile(means.to(torch.float64), probabilities, dim=0)  # NaN where none is valid
    variance = ((squares - counts * replicates * replicates) / (counts - 1)).clamp(min=0)
    t_replicates = torch.nan_to_num((replicates - observed) / (variance / counts).sqrt(), nan=0.0,
                                    posinf=torch.inf, neginf=-torch.inf)
    if bool(stderr == 0):  # every difference equal: no spread to studentize by
        return low, high, torch.where(observed == 0, 1.0, 0.0).to(torch.float64)
    return low, high, exceedance(observed / stderr, t_replicates, where=valid)


def percentile_interval(estimates: Tensor, level: float) -> tuple[Tensor, Tensor]:
    """(low, high): the (1 - level) / 2 and (1 + level) / 2 quantiles of ``estimates`` [R, ...] over R (linear
    interpolation, numpy's default)."""
    probabilities = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64, device=estimates.device)
    low, high = torch.quantile(estimates.to(torch.float64), probabilities, dim=0)
    return low, high
