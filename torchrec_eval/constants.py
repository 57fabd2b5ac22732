"""Moved to :mod:`torchrec_eval.pipeline.tensor_cache`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.tensor_cache import constant, filled, ranks, row

__all__ = ["constant", "filled", "ranks", "row"]
