"""The top-k engine: every top-k family (Precision ... NDCG, R-Precision, the peers' families) runs through it.

Every formula maps a ranked batch (:class:`~torchrec_eval.pipeline.batch.RankedTargets`) and a list of cut-offs to
[B, len(ks)] float64 per-query values, from sums along the rank axis, so all cut-offs of a family cost one
pass and all families of a suite share one top-k.

Layout:

* the families themselves, a layer up: :mod:`torchrec_eval.ranking.families`, one module per group of families
  that compute alike, each family there as its formula, its registry entry, its class and its function;
* what the formulas are built on: the sums within cut-offs of :mod:`~torchrec_eval.ranking.rank_sums`, the safe
  divisions of :mod:`~torchrec_eval.ranking.rank_sums` and :mod:`~torchrec_eval.ranking.discount_sum`;
* the table of the families (formula, options, cut-off rule, ``higher_is_better``), filled by their modules:
  :mod:`~torchrec_eval.ranking.registry`;
* the member: :class:`~torchrec_eval.ranking.member.TopKMember` over checked
  :class:`~torchrec_eval.ranking.entries.Entry` objects, with its count columns
  (:mod:`~torchrec_eval.ranking.count_layout`), ``empty_target_action``
  (:mod:`~torchrec_eval.members.steps`) and the steps all members share
  (:mod:`~torchrec_eval.members.steps`);
* the functions' plumbing: :mod:`~torchrec_eval.ranking.named_metric` (one batch through a one-family member).
"""

from torchrec_eval.ranking.entries import Entry, make_entry
from torchrec_eval.ranking.member import TopKMember
from torchrec_eval.ranking.registry import TopKFamily

__all__ = ["Entry", "TopKFamily", "TopKMember", "make_entry"]
