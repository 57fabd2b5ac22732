"""The shared checks of the top-k family; the code lives in :mod:`torchrec_eval.ranking`
(:mod:`~torchrec_eval.ranking.entries`, :mod:`~torchrec_eval.ranking.empty_targets`).

Kept for the modules of other families that import these names from here.
"""

from torchrec_eval.ranking.empty_targets import (
    EMPTY_TARGET_ACTIONS,
    apply_empty_target_action,
    counted_values,
)
from torchrec_eval.ranking.entries import check_k

__all__ = ["EMPTY_TARGET_ACTIONS", "apply_empty_target_action", "check_k", "counted_values"]
