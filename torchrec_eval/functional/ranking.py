"""Functional top-k ranking metrics; the code lives in :mod:`torchrec_eval.ranking.functional`."""

from torchrec_eval.ranking.evaluate import evaluate
from torchrec_eval.ranking.functional import (
    arhr,
    cg,
    dcg,
    f1,
    hitrate,
    map,
    mar,
    mrr,
    ndcg,
    precision,
    recall,
    rprecision,
)

__all__ = [
    "arhr",
    "cg",
    "dcg",
    "evaluate",
    "f1",
    "hitrate",
    "map",
    "mar",
    "mrr",
    "ndcg",
    "precision",
    "recall",
    "rprecision",
]
