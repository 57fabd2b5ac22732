"""Formulas over the gains of the top k: CG, DCG, NDCG (with its ideal DCG) and SDCG."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.ranking.discount_sum import discount_sum
from torchrec_eval.ranking.rank_sums import best_sums, summed, weight_sums
from torchrec_eval.ranking.ratios import Ratio, as_row


def cg(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return summed(rt.gains, ks)


# the rank weight (rank_sums.rank_weights) of each ``discount``
_WEIGHTS = {"log": "discount", "clipped_log": "clipped_discount"}


def dcg(rt: RankedTargets, ks: Sequence[int], gain: str = "linear", log_base: float = 2.0,
        discount: str = "log") -> Tensor:
    return summed(_gains(rt, gain), ks, _WEIGHTS[discount], log_base, finite=gain != "exp")


def ndcg(rt: RankedTargets, ks: Sequence[int], gain: str = "linear", log_base: float = 2.0, ideal: str = "cut",
         discount: str = "log") -> Ratio:
    return Ratio(dcg(rt, ks, gain, log_base, discount), _ideal_dcg(rt, ks, gain, log_base, ideal, discount))


def sdcg(rt: RankedTargets, ks: Sequence[int], max_grade: float | None = None, log_base: float = 2.0) -> Ratio:
    # DCG@k of the gains scaled to [0, 1] by the top grade, over the DCG of k items of the top grade: the
    # query's own relevant items do not bound it (cwl_eval's SDCG, ir-measures' SDCG(max_rel=max_grade));
    # without a top grade, of the binary relevance (cwl_eval's max_rel=1, where a grade >= 1 counts 1)
    best = as_row([(max_grade or 1.0) * discount_sum(k, log_base) for k in ks], rt.gains)
    return Ratio(dcg(rt, ks, "linear" if max_grade else "binary", log_base), best)


def _gains(rt: RankedTargets, gain: str) -> Tensor:
    if gain == "binary":
        return rt.hits
    return torch.exp2(rt.gains) - 1 if gain == "exp" else rt.gains


def _ideal_dcg(rt: RankedTargets, ks: Sequence[int], gain: str, log_base: float, ideal: str, discount: str) -> Tensor:
    weight = _WEIGHTS[discount]
    if gain != "binary" and rt.ideal_gains is not None:  # graded: the query's own gains, sorted ("cut" only)
        ideal_gains = torch.exp2(rt.ideal_gains) - 1 if gain == "exp" else rt.ideal_gains
        # the ideal list has its own length (min(k, number of targets)): a ranked list shorter than k
        # must not cut the ideal at its own length
        return summed(ideal_gains, ks, weight, log_base, finite=gain != "exp")
    # binary gains (or a binary target, whose every gain is 0 or 1): the ideal list holds min(R, k)
    # relevant items (R <= max_relevant): tabulated by length, never longer than the batch can fill,
    # whatever k is
    if ideal == "k":  # RecTools: k relevant slots, whatever R is
        return as_row([_k_slots(k, log_base, discount) for k in ks], rt.gains).expand(rt.gains.shape[0], -1)
    if ideal == "full":  # Jurity: every relevant item, not cut at k
        bound = max(rt.max_relevant, 1)
        table = weight_sums(bound, weight, log_base, rt.gains.device)
        return table[rt.num_relevant.long().clamp(max=bound)].unsqueeze(1).expand(-1, len(ks))
    return best_sums(rt, ks, weight, log_base, within_list=False)


def _k_slots(k: int, log_base: float, discount: str) -> float:
    """The DCG of k relevant items at ranks 1..k, for any k (no [k] tensor)."""
    if discount == "log":
        return discount_sum(k, log_base)
    # clipped: rank 1 weighs 1 / log_b(2), rank i >= 2 as the unclipped rank i - 1
    return math.log(log_base) / math.log(2) + (discount_sum(k - 1, log_base) if k > 1 else 0.0)
