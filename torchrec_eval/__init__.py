"""torchrec_eval: ranking and recommender metrics for PyTorch, as torchmetrics ``Metric`` classes.

The names below are imported on first use (PEP 562), so that ``import torchrec_eval`` and the
``torchrec-eval`` command do not pay for torch until a metric is used: evaluating a TREC run with
``--convention trec`` needs only numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchrec_eval import functional, pointwise
    from torchrec_eval.comparison.models import ModelComparison
    from torchrec_eval.metrics import (
        ARHR,
        AUC,
        CG,
        CTR,
        DCG,
        ERR,
        ERRIA,
        F1,
        FCP,
        GAUC,
        MAE,
        MAP,
        MAR,
        MPR,
        MRR,
        MSE,
        NCRR,
        NDCG,
        NERRIA,
        PSP,
        RBO,
        RBP,
        RMSE,
        SDCG,
        AlphaDCG,
        AlphaNDCG,
        AveragePopularity,
        Bpref,
        CategoryEntropy,
        Coverage,
        Entropy,
        ExposureGini,
        FallOut,
        GiniIndex,
        HitRate,
        InfAP,
        InterListDiversity,
        InterpolatedAP,
        Intersection,
        IntraListDiversity,
        IPrec,
        Jaccard,
        Judged,
        LongTailCount,
        LongTailShare,
        Novelty,
        NumRel,
        NumRelRet,
        NumRet,
        PartialAUC,
        Precision,
        PrecisionRecallCurve,
        PSnDCG,
        RankBiasedEntropy,
        Recall,
        RecallAtFixedPrecision,
        RPrecision,
        SampledMetrics,
        Serendipity,
        SetF,
    )
    from torchrec_eval.pointwise import (
        NE,
        BinaryAUC,
        BinaryAUPRC,
        BinnedAUC,
        BinnedAUPRC,
        Calibration,
        LogLoss,
        PointwiseCTR,
        PointwiseMAE,
        PointwiseMetrics,
        PointwiseMSE,
        PointwiseRMSE,
        Windowed,
    )
    from torchrec_eval.suites.ranking import RankingMetrics

__version__ = "0.1.0"

_BEYOND = ("AveragePopularity", "CategoryEntropy", "Coverage", "Entropy", "ExposureGini", "GiniIndex",
           "InterListDiversity", "IntraListDiversity", "LongTailCount", "LongTailShare", "Novelty", "RankBiasedEntropy",
           "Serendipity", "PSP", "PSnDCG", "AlphaDCG", "AlphaNDCG", "ERRIA",
           "NERRIA")
_METRICS = ("ARHR", "AUC", "CG", "CTR", "DCG", "F1", "FCP", "GAUC", "MAE", "MAP", "MAR", "MPR", "MRR", "MSE",
            "NDCG", "RMSE", "HitRate", "Precision", "Recall", "RPrecision", "SampledMetrics",
            "Bpref", "ERR", "FallOut", "InfAP", "InterpolatedAP", "IPrec", "Judged", "NCRR", "NumRel", "NumRelRet",
            "NumRet", "RBP", "SDCG", "SetF", "PrecisionRecallCurve", "RecallAtFixedPrecision",
            "PartialAUC")
_OVERLAP = ("Intersection", "Jaccard", "RBO")
_POINTWISE = ("NE", "BinaryAUC", "BinaryAUPRC", "BinnedAUC", "BinnedAUPRC", "Calibration", "LogLoss", "PointwiseCTR",
              "PointwiseMAE", "PointwiseMetrics", "PointwiseMSE", "PointwiseRMSE", "Windowed")
_HOMES = {
    **dict.fromkeys(_BEYOND, "torchrec_eval.metrics"),
    **dict.fromkeys(_METRICS, "torchrec_eval.metrics"),
    **dict.fromkeys(_OVERLAP, "torchrec_eval.metrics"),
    **dict.fromkeys(_POINTWISE, "torchrec_eval.pointwise"),
    "RankingMetrics": "torchrec_eval.suites.ranking",
    "ModelComparison": "torchrec_eval.comparison.models",
}

__all__ = [
    "ARHR",
    "AUC",
    "AlphaDCG",
    "AlphaNDCG",
    "AveragePopularity",
    "CategoryEntropy",
    "Coverage",
    "Entropy",
    "ExposureGini",
    "GiniIndex",
    "InterListDiversity",
    "IntraListDiversity",
    "LongTailCount",
    "LongTailShare",
    "Novelty",
    "Serendipity",
    # the overlap of two models' lists
    "Intersection",
    "Jaccard",
    "RBO",
    "CG",
    "CTR",
    "DCG",
    "ERR",
    "ERRIA",
    "F1",
    "FallOut",
    "FCP",
    "GAUC",
    "MAE",
    "MAP",
    "MAR",
    "ModelComparison",
    "MPR",
    "MRR",
    "MSE",
    "NCRR",
    "NDCG",
    "NERRIA",
    "NumRel",
    "NumRelRet",
    "NumRet",
    "PartialAUC",
    "RankBiasedEntropy",
    "RBP",
    "RMSE",
    "SDCG",
    "SetF",
    "Bpref",
    "HitRate",
    "InfAP",
    "InterpolatedAP",
    "IPrec",
    "Judged",
    "Precision",
    "PrecisionRecallCurve",
    "PSP",
    "PSnDCG",
    "RecallAtFixedPrecision",
    "RPrecision",
    "RankingMetrics",
    "Recall",
    "SampledMetrics",
    "functional",
    # pointwise metrics of CTR / conversion models (TorchRec's set)
    "BinaryAUC",
    "BinaryAUPRC",
    "BinnedAUC",
    "BinnedAUPRC",
    "Calibration",
    "LogLoss",
    "NE",
    "PointwiseCTR",
    "PointwiseMAE",
    "PointwiseMSE",
    "PointwiseMetrics",
    "PointwiseRMSE",
    "Windowed",
    "pointwise",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:  # a submodule: torchrec_eval.functional, torchrec_eval.metrics, ...
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
