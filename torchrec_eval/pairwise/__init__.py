"""The pairwise family: AUC, GAUC, MPR and FCP (every candidate ranked, one sort per batch) and CTR@k.

Laid out formula -> member -> class (the public names stay :mod:`torchrec_eval.functional` and
:mod:`torchrec_eval.metrics`):

* kernels: :mod:`~torchrec_eval.pairwise.sorted_rows` (the shared sort),
  :mod:`~torchrec_eval.pairwise.tie_groups`, :mod:`~torchrec_eval.pairwise.compaction`,
  :mod:`~torchrec_eval.pairwise.ranks` (rank sums: AUC, GAUC, MPR) and
  :mod:`~torchrec_eval.pairwise.pairs` (pair counts: FCP);
* formulas, one per file: :mod:`~torchrec_eval.pairwise.auc`, :mod:`~torchrec_eval.pairwise.gauc`,
  :mod:`~torchrec_eval.pairwise.mpr`, :mod:`~torchrec_eval.pairwise.fcp`, :mod:`~torchrec_eval.pairwise.ctr`;
* the state member: :mod:`~torchrec_eval.pairwise.member`;
* functions of one batch: :mod:`~torchrec_eval.pairwise.functional`; classes:
  :mod:`~torchrec_eval.pairwise.metrics`.

Only :mod:`torchrec_eval.functional` is imported here, first: it re-exports the functions of this package
and the kernels here use its plan, so a first import of any module here must run it before the module.
:mod:`torchrec_eval.metrics` imports the classes on first use for the same reason.
"""

import torchrec_eval.functional  # noqa: F401
