"""Stateful metric classes."""

from torchrec_eval.metrics.base import RankingMetric
from torchrec_eval.metrics.ranking import ARHR, CG, DCG, F1, MAP, MAR, MRR, NDCG, HitRate, Precision, Recall, RPrecision

__all__ = ["ARHR", "CG", "DCG", "F1", "MAP", "MAR", "MRR", "NDCG", "HitRate", "Precision", "RPrecision", "Recall",
           "RankingMetric"]
