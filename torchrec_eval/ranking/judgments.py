"""Formulas over the judgments of the ranked items (incomplete judgments: an item outside the target ids is
unjudged): bpref (trec_eval's ``bpref``) and Judged@k (ir-measures' ``Judged@k``).

A target id is a judgment: of a relevant item where its gain is relevant, else of a judged non-relevant one
(a qrels line of relevance 0); the dense form judges every candidate (:attr:`RankedTargets.judged`).
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
