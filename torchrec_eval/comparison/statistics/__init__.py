"""Statistics written once: Student-t quantiles and tails, confidence intervals of a mean, and
multiple-comparison adjustments.

:mod:`torchrec_eval.data.splits` (intervals over cross-validation folds) and
:mod:`torchrec_eval.comparison.uncertainty` (intervals from a metric's running sums) are thin over these:

* :mod:`~torchrec_eval.comparison.statistics.student_t` -- the quantile and the two-sided tail of Student's t, from
  SciPy, on tensors;
* :mod:`~torchrec_eval.comparison.statistics.multiple_testing` -- p-values adjusted for multiple comparisons
  (Bonferroni, Holm, Benjamini-Hochberg);
* :mod:`~torchrec_eval.comparison.statistics.intervals` -- the interval ``mean +- q * stderr`` from samples or
  from moments (sum, sum of squares, count).
"""

from torchrec_eval.comparison.statistics.intervals import (
    check_method,
    interval_from_moments,
    mean_confidence_interval,
    mean_interval,
)
from torchrec_eval.comparison.statistics.multiple_testing import ADJUSTMENTS, adjusted_p_values
from torchrec_eval.comparison.statistics.student_t import (
    student_t_quantile,
    student_t_two_sided_p,
    t_quantile,
)

__all__ = [
    "ADJUSTMENTS",
    "adjusted_p_values",
    "check_method",
    "interval_from_moments",
    "mean_confidence_interval",
    "mean_interval",
    "student_t_quantile",
    "student_t_two_sided_p",
    "t_quantile",
]
