"""Stateful metric classes."""

from torchrec_eval.metrics.base import RankingMetric
from torchrec_eval.metrics.pairwise import AUC, CTR, FCP, GAUC, MAE, MPR, MSE, RMSE
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
