"""Moved to :mod:`torchrec_eval.pipeline.forms`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.forms import FORMS

__all__ = ["FORMS"]
