"""Moved to :mod:`torchrec_eval.pipeline.topk`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline.tie_order import tie_keys
from torchrec_eval.pipeline.topk import TopK, top_indices

__all__ = ["TopK", "tie_keys", "top_indices"]
