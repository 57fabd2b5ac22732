"""Top-k ranking metric classes; the code lives in :mod:`torchrec_eval.ranking.metrics`."""

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
    IntOrSeq,
    Precision,
    Recall,
    RPrecision,
)

__all__ = [
    "ARHR",
    "CG",
    "DCG",
    "F1",
    "HitRate",
    "IntOrSeq",
    "MAP",
    "MAR",
    "MRR",
    "NDCG",
    "Precision",
    "RPrecision",
    "Recall",
]
