"""Moved to :mod:`torchrec_eval.pipeline.batch`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.batch import Batch, Candidates, RankedTargets, cached

__all__ = ["Batch", "Candidates", "RankedTargets", "cached"]
