"""Functional top-k ranking metrics; the code lives in :mod:`torchrec_eval.ranking.functional`."""

from torchrec_eval.ranking import functional as _home
from torchrec_eval.ranking.functional import *  # noqa: F403  (the names of its __all__)
from torchrec_eval.ranking.named_metric import compute_named_metric as evaluate  # the old name, in __all__

__all__ = [*_home.__all__, "evaluate"]
