"""Stateful metric classes.

The pairwise classes (``AUC``, ``CTR``, ``FCP``, ``GAUC``, ``MPR``) and the top-k classes (``ARHR``, ``CG``,
``DCG``, ``F1``, ``HitRate``, ``MAP``, ``MAR``, ``MRR``, ``NDCG``, ``Precision``, ``RPrecision``, ``Recall``)
are imported on first use (PEP 562): their modules, :mod:`torchrec_eval.pairwise.metrics` and
:mod:`torchrec_eval.ranking.metrics`, derive them from :mod:`torchrec_eval.metrics.base`, so importing them
from here would be circular when one of those modules is the first one imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from torchrec_eval.metrics.base import RankingMetric
from torchrec_eval.metrics.rating import MAE, MSE, RMSE

if TYPE_CHECKING:
    from torchrec_eval.pairwise.metrics import AUC, CTR, FCP, GAUC, MPR
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

_PAIRWISE = ("AUC", "CTR", "FCP", "GAUC", "MPR")
_RANKING = ("ARHR", "CG", "DCG", "F1", "HitRate", "MAP", "MAR", "MRR", "NDCG", "Precision", "RPrecision", "Recall")
_LAZY = {**dict.fromkeys(_PAIRWISE, "torchrec_eval.pairwise.metrics"),
         **dict.fromkeys(_RANKING, "torchrec_eval.ranking.metrics")}

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
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
