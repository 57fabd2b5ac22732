"""The metric classes: the base :class:`~torchrec_eval.metrics.base.MemberMetric` and each family's classes.

The layer above the families (:mod:`torchrec_eval.ranking`, :mod:`torchrec_eval.pairwise`,
:mod:`torchrec_eval.beyond`): the top-k classes in :mod:`~torchrec_eval.metrics.topk`, the pairwise ones in
:mod:`~torchrec_eval.metrics.pairwise`, the beyond-accuracy ones in :mod:`~torchrec_eval.metrics.beyond`,
the overlap of two models' lists in :mod:`~torchrec_eval.metrics.overlap`, the rating errors in
:mod:`~torchrec_eval.metrics.rating`.
"""

from __future__ import annotations

from torchrec_eval.metrics.base import MemberMetric
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
from torchrec_eval.metrics.curves import PrecisionRecallCurve, RecallAtFixedPrecision
from torchrec_eval.metrics.intents import ERRIA, NERRIA, AlphaDCG, AlphaNDCG
from torchrec_eval.metrics.overlap import RBO, Intersection, Jaccard
from torchrec_eval.metrics.pairwise import AUC, CTR, FCP, GAUC, MPR, PartialAUC
from torchrec_eval.metrics.popularity_bias import ExposureGini, LongTailCount, LongTailShare
from torchrec_eval.metrics.propensity import PSP, PSnDCG
from torchrec_eval.metrics.rating import MAE, MSE, RMSE
from torchrec_eval.metrics.sampled import SampledMetrics
from torchrec_eval.metrics.topk import (
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
from torchrec_eval.metrics.topk_peers import (
    ERR,
    NCRR,
    RBP,
    SDCG,
    Bpref,
    FallOut,
    InfAP,
    InterpolatedAP,
    IPrec,
    Judged,
    NumRel,
    NumRelRet,
    NumRet,
    SetF,
)

__all__ = [
    "ARHR",
    "ERR",
    "ERRIA",
    "NCRR",
    "NERRIA",
    "RBO",
    "RBP",
    "RankBiasedEntropy",
    "SDCG",
    "NumRel",
    "NumRelRet",
    "NumRet",
    "SetF",
    "AUC",
    "Bpref",
    "CG",
    "CategoryEntropy",
    "CTR",
    "DCG",
    "F1",
    "FallOut",
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
    "AlphaDCG",
    "AlphaNDCG",
    "AveragePopularity",
    "Coverage",
    "Entropy",
    "ExposureGini",
    "GiniIndex",
    "HitRate",
    "InfAP",
    "InterpolatedAP",
    "Intersection",
    "IPrec",
    "InterListDiversity",
    "IntraListDiversity",
    "Jaccard",
    "Judged",
    "LongTailCount",
    "LongTailShare",
    "Novelty",
    "PartialAUC",
    "Precision",
    "PrecisionRecallCurve",
    "PSP",
    "PSnDCG",
    "RecallAtFixedPrecision",
    "RPrecision",
    "MemberMetric",
    "Recall",
    "SampledMetrics",
    "Serendipity",
]
