"""Moved to :mod:`torchrec_eval.pipeline.forms.common`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.forms.common import count_candidates, is_relevant, ranking_depth

__all__ = ["count_candidates", "is_relevant", "ranking_depth"]
