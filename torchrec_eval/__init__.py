"""torchrec_eval: ranking and recommender metrics for PyTorch, as torchmetrics ``Metric`` classes."""

from torchrec_eval import functional
from torchrec_eval.collection import RankingMetrics
from torchrec_eval.metrics import (
    ARHR,
    AUC,
    CG,
    CTR,
    DCG,
    F1,
    FCP,
    GAUC,
    MAE,
    MAP,
    MAR,
    MPR,
    MRR,
    MSE,
    NDCG,
    RMSE,
    HitRate,
    Precision,
    Recall,
    RPrecision,
)

__version__ = "0.1.0"

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
    "RankingMetrics",
    "Recall",
    "functional",
]
