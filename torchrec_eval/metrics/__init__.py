"""Stateful metric classes.

The pairwise classes (``AUC``, ``CTR``, ``FCP``, ``GAUC``, ``MPR``) are imported on first use (PEP 562):
their module, :mod:`torchrec_eval.pairwise.metrics`, derives them from :mod:`torchrec_eval.metrics.base`,
so importing it from here would be circular when that module is the first one imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from torchrec_eval.metrics.base import RankingMetric
from torchrec_eval.metrics.ranking import (
    ARHR,
    CG,
    DCG,
    F1,
    MAP,
    MAR,
    MRR,
    NDCG,
    HitRate,
    Precision,
    Recall,
    RPrecision,
)
from torchrec_eval.metrics.rating import MAE, MSE, RMSE

if TYPE_CHECKING:
    from torchrec_eval.pairwise.metrics import AUC, CTR, FCP, GAUC, MPR

_PAIRWISE = ("AUC", "CTR", "FCP", "GAUC", "MPR")

__all__ = [
    "ARHR",
    "AUC",
    "CG",
    "CTR",
    "DCG",
    "F1",
    "FCP",
    "GAUC",
    "MAE",
    "MAP",
    "MAR",
    "MPR",
    "MRR",
    "MSE",
    "NDCG",
    "RMSE",
    "HitRate",
    "Precision",
    "RPrecision",
    "RankingMetric",
    "Recall",
]


def __getattr__(name: str) -> Any:
    if name not in _PAIRWISE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("torchrec_eval.pairwise.metrics"), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
