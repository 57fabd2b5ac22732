"""Moved to :mod:`torchrec_eval.pipeline.exclusion`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.exclusion import Exclusions

__all__ = ["Exclusions"]
