"""Functional top-k ranking metrics; the code lives in :mod:`torchrec_eval.ranking.functional`."""

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
from torchrec_eval.ranking.named_metric import compute_named_metric as evaluate  # the old name, in __all__

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
