"""Functional metrics: pure functions of one batch (see :mod:`torchrec_eval.metrics` for the stateful classes)."""

from torchrec_eval.pairwise.functional import auc, ctr, fcp, gauc, mpr
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
    "auc",
    "cg",
    "ctr",
    "dcg",
    "f1",
    "fcp",
    "gauc",
    "hitrate",
    "map",
    "mar",
    "mpr",
    "mrr",
    "ndcg",
    "precision",
    "recall",
    "rprecision",
]
