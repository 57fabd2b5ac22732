"""Top-k ranking metric classes; the code lives in :mod:`torchrec_eval.ranking.metrics`."""

from torchrec_eval.ranking import metrics as _home
from torchrec_eval.ranking.metrics import *  # noqa: F403  (the names of its __all__)

__all__ = list(_home.__all__)
