"""The base of the metric classes: :class:`~torchrec_eval.metrics.base.MemberMetric` over the members of the
family packages, and the rooms it is built from (its arguments, its lifecycle, its configuration guard).

The classes themselves are indexed by the root, :mod:`torchrec_eval`: the top-k ones live with their families in
:mod:`torchrec_eval.ranking.families`, the pairwise ones in :mod:`~torchrec_eval.metrics.pairwise`, the
beyond-accuracy ones in :mod:`~torchrec_eval.metrics.beyond` (and its neighbours), the overlap of two models'
lists in :mod:`~torchrec_eval.metrics.overlap`, the rating errors in :mod:`~torchrec_eval.metrics.rating`.
"""

from __future__ import annotations

from torchrec_eval.metrics.base import MemberMetric

__all__ = ["MemberMetric"]
