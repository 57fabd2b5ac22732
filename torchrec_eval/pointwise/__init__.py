"""Pointwise metrics of CTR / conversion models (TorchRec's metric set), weighted, multi-task, windowed.

Classes: :class:`NE`, :class:`LogLoss`, :class:`Calibration`, :class:`PointwiseCTR`, :class:`PointwiseMSE`,
:class:`PointwiseRMSE`, :class:`PointwiseMAE`, :class:`BinnedAUC`, :class:`BinnedAUPRC` (fixed float64
statistics), :class:`BinaryAUC`, :class:`BinaryAUPRC` (exact, stored samples), the suite
:class:`PointwiseMetrics` and the lifetime / window wrapper :class:`Windowed`. Functions of one batch:
:mod:`torchrec_eval.pointwise.functional`.
"""

from torchrec_eval.pointwise import functional
from torchrec_eval.pointwise.collection import PointwiseMetrics
from torchrec_eval.pointwise.exact import BinaryAUC, BinaryAUPRC
from torchrec_eval.pointwise.metrics import (
    NE,
    BinnedAUC,
    BinnedAUPRC,
    Calibration,
    LogLoss,
    PointwiseCTR,
    PointwiseMAE,
    PointwiseMSE,
    PointwiseRMSE,
)
from torchrec_eval.pointwise.window import Windowed

__all__ = [
    "NE",
    "BinaryAUC",
    "BinaryAUPRC",
    "BinnedAUC",
    "BinnedAUPRC",
    "Calibration",
    "LogLoss",
    "PointwiseCTR",
    "PointwiseMAE",
    "PointwiseMSE",
    "PointwiseMetrics",
    "PointwiseRMSE",
    "Windowed",
    "functional",
]
