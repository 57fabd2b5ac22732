"""The top-k ranking family: Precision, Recall, F1, HitRate, MRR, ARHR, MAP, MAR, DCG, NDCG, CG, R-Precision.

Every formula maps a ranked batch (:class:`~torchrec_eval.pipeline.batch.RankedTargets`) and a list of cut-offs to
[B, len(ks)] float64 per-query values, from sums along the rank axis, so all cut-offs of a family cost one
pass and all families of a suite share one top-k.

Layout, formula -> member -> function:

* the formulas: :mod:`~torchrec_eval.ranking.hit_counts` (precision, recall, f1, hitrate),
  :mod:`~torchrec_eval.ranking.gains` (cg, dcg, ndcg), :mod:`~torchrec_eval.ranking.reciprocal_ranks`
  (mrr, arhr, map, mar), :mod:`~torchrec_eval.ranking.rprecision`, over the sums within cut-offs of
  :mod:`~torchrec_eval.ranking.rank_sums`, the safe divisions of :mod:`~torchrec_eval.ranking.ratios` and
  :mod:`~torchrec_eval.ranking.discount_sum`;
* one table of the families (formula, options, cut-off rule, ``higher_is_better``):
  :mod:`~torchrec_eval.ranking.registry`;
* the member: :class:`~torchrec_eval.ranking.member.TopKMember` over checked
  :class:`~torchrec_eval.ranking.entries.Entry` objects, with its count columns
  (:mod:`~torchrec_eval.ranking.count_layout`), ``empty_target_action``
  (:mod:`~torchrec_eval.members.empty_targets`) and the steps all members share
  (:mod:`~torchrec_eval.members.steps`);
* the public functional API: :mod:`~torchrec_eval.ranking.functional` (re-exported by
  :mod:`torchrec_eval.functional`).

The classes live a layer up, in :mod:`torchrec_eval.metrics.topk`: a family imports nothing above it.
"""

from torchrec_eval.ranking.entries import Entry, make_entry
from torchrec_eval.ranking.member import TopKMember
from torchrec_eval.ranking.registry import REGISTRY, TopKFamily

__all__ = ["REGISTRY", "Entry", "TopKFamily", "TopKMember", "make_entry"]
