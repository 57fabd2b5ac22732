"""Stateful metric classes.

The top-k classes (``ARHR``, ``CG``, ``DCG``, ``F1``, ``HitRate``, ``MAP``, ``MAR``, ``MRR``, ``NDCG``,
``Precision``, ``RPrecision``, ``Recall``) are imported on first use (PEP 562): their module,
:mod:`torchrec_eval.ranking.metrics`, derives them from :mod:`torchrec_eval.metrics.base`, so importing it
from here would be circular when that module is the first one imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from torchrec_eval.metrics.base import RankingMetric
from torchrec_eval.metrics.pairwise import AUC, CTR, FCP, GAUC, MAE, MPR, MSE, RMSE

if TYPE_CHECKING:
    from torchrec_eval.ranking.metrics import (
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

_RANKING = ("ARHR", "CG", "DCG", "F1", "HitRate", "MAP", "MAR", "MRR", "NDCG", "Precision", "RPrecision", "Recall")

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
    if name not in _RANKING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("torchrec_eval.ranking.metrics"), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
