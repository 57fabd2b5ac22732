"""Moved to :mod:`torchrec_eval.pipeline`;
this path is kept for the modules that still import it (the integrator deletes it after the merge).
"""

from torchrec_eval.pipeline import (
    FORMS,
    TIES,
    Batch,
    Candidates,
    RankedTargets,
    check_flat,
    count_true,
    prepare_batch,
)

__all__ = [
    "Batch",
    "Candidates",
    "FORMS",
    "RankedTargets",
    "TIES",
    "check_flat",
    "count_true",
    "prepare_batch",
]
