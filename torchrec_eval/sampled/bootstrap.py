r"""A percentile bootstrap of a sampled estimate, from the histogram of sampled ranks alone.

Resampling N queries with replacement from N queries whose sampled ranks are summarised by a histogram h is
a multinomial draw of a new histogram: :math:`h^* \sim \mathrm{Multinomial}(N, h / N)`. Each replicate's
estimate is the estimator run on :math:`h^*` (for EM a whole fit: R fits run at once as matrix products);
the interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the R estimates
(:func:`~torchrec_eval.comparison.statistics.significance.percentile_interval`). It needs no
per-query storage, so it holds for EM, which has no per-query values, as for the linear estimators.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int

__all__ = ["resampled_histograms"]


def resampled_histograms(histogram: Tensor, replicates: int, generator: torch.Generator | None = None) -> Tensor:
    """[R, m + 1] histograms of N = round(sum of ``histogram``) queries drawn with replacement from it, one
    multinomial draw per replicate (a binomial per bin, conditional on the bins before it).

    Example:
        >>> import torch
        >>> draws = resampled_histograms(torch.tensor([5.0, 3.0, 2.0]), 4, torch.Generator().manual_seed(0))
        >>> draws.shape, draws.sum(1).tolist()
        (torch.Size([4, 3]), [10.0, 10.0, 10.0, 10.0])
    """
    replicates = check_int("replicates", replicates, 1)
    counts = histogram.to(torch.float64).cpu()
    left = torch.full((replicates,), float(counts.sum().round()), dtype=torch.float64)
    mass_left = float(counts.sum())
    columns = []
    for mass in counts.tolist():
        share = min(max(mass / mass_left, 0.0), 1.0) if mass_left > 0 else 0.0
        drawn = torch.binomial(left, torch.full_like(left, share), generator=generator)
        columns.append(drawn)
        left -= drawn
        mass_left -= mass
    return torch.stack(columns, dim=1).to(histogram.device)
