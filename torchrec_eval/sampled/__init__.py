"""Sampled-candidate evaluation: a relevant item ranked against m sampled negatives instead of the whole
catalogue, and the estimates of the full-catalogue metric from the sampled ranks.

* :mod:`~torchrec_eval.sampled.transitions`: :math:`P(s \\mid r)`, how a true rank becomes a sampled rank
  (with or without replacement);
* :mod:`~torchrec_eval.sampled.rank_axis`: sums over the n true ranks from a few thousand weighted ranks
  (a discrete Gauss quadrature), so no estimator's cost grows with n;
* :mod:`~torchrec_eval.sampled.rank_metrics`: each top-k family as a function of the rank of one
  relevant item;
* :mod:`~torchrec_eval.sampled.estimators`: the naive sampled metric, Krichene & Rendle's corrections
  (rank estimate, minimal bias, bias-variance with ``gamma``) and Jin et al.'s EM estimate of the
  distribution of true ranks;
* :mod:`~torchrec_eval.sampled.sampler`: RecBole's negatives (``uniNNN``, ``popNNN``) on the device;
* :mod:`~torchrec_eval.sampled.constrained`: the corrections under c_1 >= ... >= c_{m+1} >= 0;
* :mod:`~torchrec_eval.sampled.audit`: the exact audit of an estimate on chosen batches
  (:class:`AuditBatch`);
* :mod:`~torchrec_eval.sampled.bootstrap`: percentile bootstrap intervals from the histogram;
* :mod:`~torchrec_eval.sampled.member`: the histogram of sampled ranks, the member of
  :class:`~torchrec_eval.SampledMetrics`.

The definitions, sources and published numbers: the project's ``shared/sampled-metrics.md``.
"""

from torchrec_eval.sampled.audit import AuditBatch
from torchrec_eval.sampled.sampler import pooled_candidates, sample_negatives

__all__ = ["AuditBatch", "pooled_candidates", "sample_negatives"]
