"""Moved to :mod:`torchrec_eval.pipeline.average_ties`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.average_ties import tie_statistics

__all__ = ["tie_statistics"]
