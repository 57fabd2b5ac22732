"""The pairwise family: AUC, GAUC, MPR, FCP and pAUC@k (every candidate ranked, one sort per batch) and CTR@k.

Laid out formula -> member -> function (the public names are :mod:`torchrec_eval.functional` and
:mod:`torchrec_eval.metrics`):

* kernels: :mod:`~torchrec_eval.pairwise.sorted_rows` (the shared sort),
  :mod:`~torchrec_eval.pairwise.tie_groups`, :mod:`~torchrec_eval.pairwise.compaction`,
  :mod:`~torchrec_eval.pairwise.ranks` (rank sums: AUC, GAUC, MPR),
  :mod:`~torchrec_eval.pairwise.pairs` (pair counts: FCP) and
  :mod:`~torchrec_eval.pairwise.negatives_above` (non-relevant candidates above each relevant item: pAUC@k);
* formulas, one per file: :mod:`~torchrec_eval.pairwise.auc`, :mod:`~torchrec_eval.pairwise.gauc`,
  :mod:`~torchrec_eval.pairwise.mpr`, :mod:`~torchrec_eval.pairwise.fcp`, :mod:`~torchrec_eval.pairwise.ctr`,
  :mod:`~torchrec_eval.pairwise.pauc`;
* the state member: :mod:`~torchrec_eval.pairwise.member`;
* functions of one batch: :mod:`~torchrec_eval.pairwise.functional`.

The classes live a layer up, in :mod:`torchrec_eval.metrics.pairwise`: a family imports nothing above it.
"""
