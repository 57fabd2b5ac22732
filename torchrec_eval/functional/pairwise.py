"""AUC, GAUC, MPR, FCP and CTR@k of one batch, re-exported: the code lives in :mod:`torchrec_eval.pairwise`.

The functions are in :mod:`torchrec_eval.pairwise.functional`; the sort and pair-counting kernels, the
formulas and the state member in the other modules of :mod:`torchrec_eval.pairwise`.
"""

from torchrec_eval.pairwise.functional import auc, ctr, fcp, gauc, mpr

__all__ = ["auc", "ctr", "fcp", "gauc", "mpr"]
