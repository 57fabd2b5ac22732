"""AUC, GAUC, MPR, FCP and CTR@k of one batch, re-exported: the code lives in :mod:`torchrec_eval.pairwise`.

The functions are in :mod:`torchrec_eval.pairwise.functional`; the sort and pair-counting kernels, the
formulas and the state member in the other modules of :mod:`torchrec_eval.pairwise`.
"""

# kept for modules other engineers are moving now (catalogue/counts.py, metrics/per_query.py); their new
# paths: torchrec_eval.pairwise.compaction.compact, .pairs.graded_pairs, .member.PairwiseMember
from torchrec_eval.pairwise.compaction import compact as _compact  # noqa: F401
from torchrec_eval.pairwise.functional import auc, ctr, fcp, gauc, mpr
from torchrec_eval.pairwise.member import PairwiseMember  # noqa: F401
from torchrec_eval.pairwise.pairs import graded_pairs as _graded_pairs  # noqa: F401

__all__ = ["auc", "ctr", "fcp", "gauc", "mpr"]
