"""Formulas over the judgments of the ranked items (incomplete judgments: an item outside the target ids is
unjudged): bpref (trec_eval's ``bpref``), Judged@k (ir-measures' ``Judged@k``) and infAP (trec_eval's ``infAP``).

A target id is a judgment: of a relevant item where its gain is relevant, else of a judged non-relevant one
(a qrels line of relevance 0); the dense form judges every candidate (:attr:`RankedTargets.judged`). A target
gain of -1 is a pooled item that is not judged (a qrels line of -1): unjudged to bpref and Judged, pooled to
infAP (:attr:`RankedTargets.pooled`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.ranking.hit_counts import listed_within
from torchrec_eval.ranking.rank_sums import summed
from torchrec_eval.ranking.ratios import divide, per_count


def bpref(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # trec_eval's m_bpref.c on the list cut at k: each relevant item r of the top k scores
    # 1 - min(n_r, R) / min(N, R), n_r the judged non-relevant items ranked above it, N the query's judged
    # non-relevant items (1 where n_r = 0, so also where N = 0); their sum over R (0 where R = 0)
    above = rt.judged_non_relevant.cumsum(1)  # at a relevant rank: those above it (it is not one itself)
    relevant = rt.relevant_column
    cap = torch.minimum(rt.num_judged_non_relevant, relevant).clamp(min=1)  # n_r > 0 only where N, R >= 1
    terms = rt.hits * (1 - torch.minimum(above, relevant) / cap)
    return per_count(summed(terms, ks), relevant)


def judged(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # ir-measures' Judged@k: the judged items of the top k over the list's length within k, min(k, n)
    # (0 for an empty list)
    return divide(summed(rt.judged_items().to(torch.float64), ks), listed_within(rt, ks))


#: trec_eval's ``INFAP_EPSILON``: infAP's smoothing of the precision among the judged items above a relevant one
INFAP_EPSILON = 1e-5


def infap(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    # trec_eval's m_infAP.c on the list cut at k: each relevant item at rank i scores
    # (1 + a (h + e) / (h + m + 2e)) / i, with a the pooled items above it (judged or not), h and m the judged
    # relevant and non-relevant ones above, e = 1e-5 (1 at rank 1, where a = 0); their sum over R
    hits = rt.hits
    judged, pooled = rt.judged_items().to(torch.float64), rt.pooled_items().to(torch.float64)
    relevant_above = rt.cum_hits - hits
    judged_above, pooled_above = judged.cumsum(1) - judged, pooled.cumsum(1) - pooled
    estimate = (relevant_above + INFAP_EPSILON) / (judged_above + 2 * INFAP_EPSILON)
    return per_count(summed(hits * (1 + pooled_above * estimate), ks, "reciprocal"), rt.relevant_column)
