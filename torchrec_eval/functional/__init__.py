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
from torchrec_eval.ranking.functional_peers import err, ncrr, num_rel_ret, num_ret, rbp, sdcg, setf

__all__ = [
    "arhr",
    "auc",
    "cg",
    "ctr",
    "dcg",
    "err",
    "f1",
    "fcp",
    "gauc",
    "hitrate",
    "map",
    "mar",
    "mpr",
    "mrr",
    "ncrr",
    "ndcg",
    "num_rel_ret",
    "num_ret",
    "precision",
    "rbp",
    "recall",
    "rprecision",
    "sdcg",
    "setf",
]
