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
    from torchrec_eval.metrics.beyond import (
        AveragePopularity,
        Coverage,
        Entropy,
        GiniIndex,
        InterListDiversity,
        IntraListDiversity,
        Novelty,
        Serendipity,
    )
    from torchrec_eval.metrics.categories import CategoryEntropy, RankBiasedEntropy
    from torchrec_eval.metrics.intents import (
        ERRIA,
        NERRIA,
        NNRBP,
        NRBP,
        AlphaDCG,
        AlphaNDCG,
        AveragePrecisionIA,
        PrecisionIA,
        SubtopicRecall,
    )
    from torchrec_eval.metrics.list_weights import WeightedRBP
    from torchrec_eval.metrics.off_policy import OffPolicyCTR
    from torchrec_eval.metrics.overlap import RBO, Intersection, Jaccard
    from torchrec_eval.metrics.pairwise import AUC, CTR, FCP, GAUC, MPR, PartialAUC
    from torchrec_eval.metrics.popularity_bias import ExposureGini, LongTailCount, LongTailShare
    from torchrec_eval.metrics.propensity import PSP, PSnDCG
    from torchrec_eval.metrics.rating import MAE, MSE, RMSE
    from torchrec_eval.metrics.sampled import SampledMetrics
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
    from torchrec_eval.ranking.families.cascades import BPM, ERR, INSQ, INST, NERR, RBP
    from torchrec_eval.ranking.families.compatibility import Compat
    from torchrec_eval.ranking.families.curves import PrecisionRecallCurve, RecallAtFixedPrecision
    from torchrec_eval.ranking.families.gains import CG, DCG, NDCG, SDCG
    from torchrec_eval.ranking.families.hit_counts import F1, FallOut, HitRate, Precision, Recall
    from torchrec_eval.ranking.families.interpolated import InterpolatedAP, IPrec
    from torchrec_eval.ranking.families.judgments import Bpref, InfAP, Judged
    from torchrec_eval.ranking.families.reciprocal_ranks import ARHR, MAP, MAR, MRR, NCRR
    from torchrec_eval.ranking.families.rprecision import RPrecision
    from torchrec_eval.ranking.families.set_measures import NumQ, NumRel, NumRelRet, NumRet, SetF, SetMAP
    from torchrec_eval.suites.ranking import RankingMetrics

__version__ = "0.1.0"

#: where each name lives: it is imported on first use
_POINTWISE = ("NE", "BinaryAUC", "BinaryAUPRC", "BinnedAUC", "BinnedAUPRC", "Calibration", "LogLoss", "PointwiseCTR",
              "PointwiseMAE", "PointwiseMetrics", "PointwiseMSE", "PointwiseRMSE", "Windowed")
_HOMES = {
    **dict.fromkeys((
        "AveragePopularity", "Coverage", "Entropy", "GiniIndex", "InterListDiversity",
        "IntraListDiversity", "Novelty", "Serendipity"
    ), "torchrec_eval.metrics.beyond"),
    **dict.fromkeys(("CategoryEntropy", "RankBiasedEntropy"), "torchrec_eval.metrics.categories"),
    **dict.fromkeys(("AlphaDCG", "AlphaNDCG", "AveragePrecisionIA", "ERRIA", "NERRIA", "NNRBP", "NRBP",
                     "PrecisionIA", "SubtopicRecall"),
                    "torchrec_eval.metrics.intents"),
    **dict.fromkeys(("Intersection", "Jaccard", "RBO"), "torchrec_eval.metrics.overlap"),
    "OffPolicyCTR": "torchrec_eval.metrics.off_policy",
    "WeightedRBP": "torchrec_eval.metrics.list_weights",
    **dict.fromkeys(("AUC", "CTR", "FCP", "GAUC", "MPR", "PartialAUC"), "torchrec_eval.metrics.pairwise"),
    **dict.fromkeys((
        "ExposureGini", "LongTailCount", "LongTailShare"
    ), "torchrec_eval.metrics.popularity_bias"),
    **dict.fromkeys(("PSP", "PSnDCG"), "torchrec_eval.metrics.propensity"),
    **dict.fromkeys(("MAE", "MSE", "RMSE"), "torchrec_eval.metrics.rating"),
    **dict.fromkeys(("SampledMetrics",), "torchrec_eval.metrics.sampled"),
    **dict.fromkeys(("BPM", "ERR", "INSQ", "INST", "NERR", "RBP"), "torchrec_eval.ranking.families.cascades"),
    **dict.fromkeys((
        "PrecisionRecallCurve", "RecallAtFixedPrecision"
    ), "torchrec_eval.ranking.families.curves"),
    **dict.fromkeys(("CG", "DCG", "NDCG", "SDCG"), "torchrec_eval.ranking.families.gains"),
    "Compat": "torchrec_eval.ranking.families.compatibility",
    **dict.fromkeys((
        "F1", "FallOut", "HitRate", "Precision", "Recall"
    ), "torchrec_eval.ranking.families.hit_counts"),
    **dict.fromkeys(("IPrec", "InterpolatedAP"), "torchrec_eval.ranking.families.interpolated"),
    **dict.fromkeys(("Bpref", "InfAP", "Judged"), "torchrec_eval.ranking.families.judgments"),
    **dict.fromkeys(("ARHR", "MAP", "MAR", "MRR", "NCRR"), "torchrec_eval.ranking.families.reciprocal_ranks"),
    **dict.fromkeys(("RPrecision",), "torchrec_eval.ranking.families.rprecision"),
    **dict.fromkeys(("NumQ", "NumRel", "NumRelRet", "NumRet", "SetF", "SetMAP"), "torchrec_eval.ranking.families.set_measures"),
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
    "AveragePrecisionIA",
    "CategoryEntropy",
    "Compat",
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
    "SubtopicRecall",
    "WeightedRBP",
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
    "NERR",
    "NERRIA",
    "NNRBP",
    "NRBP",
    "NumQ",
    "NumRel",
    "NumRelRet",
    "NumRet",
    "OffPolicyCTR",
    "PartialAUC",
    "RankBiasedEntropy",
    "RBP",
    "RMSE",
    "SDCG",
    "SetF",
    "SetMAP",
    "Bpref",
    "HitRate",
    "InfAP",
    "BPM",
    "INSQ",
    "INST",
    "InterpolatedAP",
    "IPrec",
    "Judged",
    "Precision",
    "PrecisionIA",
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
