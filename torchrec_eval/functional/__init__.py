"""Functional metrics: pure functions of one batch (see :mod:`torchrec_eval.metrics` for the stateful classes)."""

from torchrec_eval.beyond.functional import intersection, jaccard, rbo
from torchrec_eval.functional.intents import (
    alpha_dcg,
    alpha_ndcg,
    ap_ia,
    err_ia,
    nerr_ia,
    nnrbp,
    nrbp,
    p_ia,
    strec,
)
from torchrec_eval.pairwise.functional import auc, ctr, fcp, gauc, mpr, partial_auc
from torchrec_eval.pairwise.off_policy import off_policy_ctr
from torchrec_eval.ranking.families.cascades import bpm, err, insq, inst, nerr, rbp
from torchrec_eval.ranking.families.compatibility import compat
from torchrec_eval.ranking.families.curves import precision_recall_curve
from torchrec_eval.ranking.families.gains import cg, dcg, ndcg, sdcg
from torchrec_eval.ranking.families.hit_counts import f1, fallout, hitrate, precision, recall
from torchrec_eval.ranking.families.interpolated import interpolated_ap, iprec
from torchrec_eval.ranking.families.judgments import bpref, infap, judged
from torchrec_eval.ranking.families.reciprocal_ranks import arhr, map, mar, mrr, ncrr
from torchrec_eval.ranking.families.rprecision import rprecision
from torchrec_eval.ranking.families.set_measures import num_q, num_rel, num_rel_ret, num_ret, set_map, setf
from torchrec_eval.ranking.list_weights import weighted_rbp

__all__ = [
    "alpha_dcg",
    "alpha_ndcg",
    "ap_ia",
    "arhr",
    "auc",
    "bpm",
    "bpref",
    "cg",
    "compat",
    "ctr",
    "dcg",
    "err",
    "err_ia",
    "f1",
    "fallout",
    "fcp",
    "gauc",
    "hitrate",
    "infap",
    "insq",
    "inst",
    "interpolated_ap",
    "intersection",
    "iprec",
    "jaccard",
    "judged",
    "map",
    "mar",
    "mpr",
    "mrr",
    "ncrr",
    "ndcg",
    "nerr",
    "nerr_ia",
    "nnrbp",
    "nrbp",
    "num_q",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "off_policy_ctr",
    "p_ia",
    "partial_auc",
    "precision",
    "precision_recall_curve",
    "rbo",
    "rbp",
    "recall",
    "rprecision",
    "sdcg",
    "set_map",
    "setf",
    "strec",
    "weighted_rbp",
]
