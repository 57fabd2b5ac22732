"""alpha-nDCG, alpha-DCG, ERR-IA and nERR-IA in plain Python, from TREC's ``ndeval.c`` (seanmacavaney/pyndeval, commit
acde21d, ``src/ndeval.c`` version 4.5): ``computeDCG``, ``computeERR``, ``idealResult`` and ``renormalize``,
with each relevant item judged relevant to exactly its intents.

One query: ``ranked`` its list (item ids in rank order), ``relevant`` the set of its relevant candidates, and
``intents`` item -> set of intents."""

from __future__ import annotations

import math
from collections.abc import Sequence


def gains(ranked: Sequence[int], relevant: set[int], intents: dict[int, set[int]], alpha: float) -> list[float]:
    """The score of each rank: the sum over the item's intents of the intent's gain, which starts at 1 and is
    multiplied by 1 - alpha each time an item covers it (an unjudged or non-relevant item scores 0)."""
    left: dict[int, float] = {}
    out = []
    for item in ranked:
        score = 0.0
        for intent in sorted(intents[item]) if item in relevant else ():
            gain = left.get(intent, 1.0)
            score += gain
            left[intent] = gain * (1.0 - alpha)
        out.append(score)
    return out


def ideal(relevant: set[int], intents: dict[int, set[int]], alpha: float, depth: int) -> list[float]:
    """ndeval's greedy ideal: at each rank the remaining relevant item of the largest score given the ranks
    above, a tie going to the larger docno (here the larger id)."""
    left, remaining, out = {intent: 1.0 for item in relevant for intent in intents[item]}, set(relevant), []
    for _ in range(min(depth, len(relevant))):
        best = max(remaining, key=lambda item: (sum(left[s] for s in sorted(intents[item])), item))
        out.append(sum(left[s] for s in sorted(intents[best])))
        for intent in intents[best]:
            left[intent] *= 1.0 - alpha
        remaining.remove(best)
    return out


def _discounted(values: list[float], k: int, discount) -> float:
    return sum(value * discount(rank) for rank, value in enumerate(values[:k], start=1))


def _log2(rank: int) -> float:
    return math.log(2.0) / math.log(rank + 1.0)


def _reciprocal(rank: int) -> float:
    return 1.0 / rank


def alpha_ndcg(ranked, relevant, intents, k, alpha=0.5) -> float:
    found = _discounted(gains(ranked, relevant, intents, alpha), k, _log2)
    return found / _discounted(ideal(relevant, intents, alpha, k), k, _log2) if found else 0.0


def nerr_ia(ranked, relevant, intents, k, alpha=0.5) -> float:
    found = _discounted(gains(ranked, relevant, intents, alpha), k, _reciprocal)
    return found / _discounted(ideal(relevant, intents, alpha, k), k, _reciprocal) if found else 0.0


def err_ia(ranked, relevant, intents, k, alpha=0.5) -> float:
    """Over the "ideal ideal" S * sum_{i <= k} (1 - alpha)^(i - 1) / i, S the intents the relevant items cover;
    not divided at k = 1 (ndeval's loop starts at its second rank)."""
    found = _discounted(gains(ranked, relevant, intents, alpha), k, _reciprocal)
    subtopics = len({intent for item in relevant for intent in intents[item]})
    if k == 1 or not subtopics:
        return found
    return found / (subtopics * sum((1.0 - alpha) ** (rank - 1) / rank for rank in range(1, k + 1)))


def alpha_dcg(ranked, relevant, intents, k, alpha=0.5) -> float:
    """ndeval's reported alpha-DCG: computeDCG's sum over the "ideal ideal" S * sum_{i <= k} (1 - alpha)^(i - 1)
    times ndeval's discount (1 at the first rank, log 2 / log(i + 1) after); not divided at k = 1."""
    found = _discounted(gains(ranked, relevant, intents, alpha), k, _log2)
    subtopics = len({intent for item in relevant for intent in intents[item]})
    if k == 1 or not subtopics:
        return found
    return found / (subtopics * sum((1.0 - alpha) ** (rank - 1) * _log2(rank) for rank in range(1, k + 1)))


def p_ia(ranked, relevant, intents, k, alpha=0.5) -> float:
    """ndeval's P-IA@k: each intent's precision at k (over k, whatever the list's length), averaged over the S
    intents the relevant items cover; 0 where S = 0. No alpha."""
    subtopics = {intent for item in relevant for intent in intents[item]}
    if not subtopics:
        return 0.0
    return sum(sum(intent in intents[item] for item in ranked[:k] if item in relevant) / k
               for intent in subtopics) / len(subtopics)


def strec(ranked, relevant, intents, k, alpha=0.5) -> float:
    """ndeval's strec@k: the share of the S intents that some relevant item of the top k covers. No alpha."""
    subtopics = {intent for item in relevant for intent in intents[item]}
    if not subtopics:
        return 0.0
    return len({intent for item in ranked[:k] if item in relevant for intent in intents[item]}) / len(subtopics)


def ap_ia(ranked, relevant, intents, k, alpha=0.5) -> float:
    """ndeval's MAP-IA over the top k: for each intent s of the S the relevant items cover, the precision at each
    rank whose item is relevant with intent s, summed and divided by R_s (the relevant items with intent s);
    their mean over the S intents; 0 where S = 0. No alpha."""
    subtopics = {intent for item in relevant for intent in intents[item]}
    if not subtopics:
        return 0.0
    total = 0.0
    for intent in subtopics:
        hits, precision_sum = 0, 0.0
        for rank, item in enumerate(ranked[:k], start=1):
            if item in relevant and intent in intents[item]:
                hits += 1
                precision_sum += hits / rank
        total += precision_sum / sum(intent in intents[item] for item in relevant)
    return total / len(subtopics)


def nrbp(ranked, relevant, intents, k, alpha=0.5, beta=0.5) -> float:
    """ndeval's computeNRBP over the top k: sum_i G_i beta^(i - 1) times (1 - (1 - alpha) beta) / S; 0 where S = 0."""
    subtopics = len({intent for item in relevant for intent in intents[item]})
    if not subtopics:
        return 0.0
    found = sum(gain * beta ** (rank - 1) for rank, gain in enumerate(gains(ranked[:k], relevant, intents, alpha), 1))
    return found * (1 - (1 - alpha) * beta) / subtopics


def nnrbp(ranked, relevant, intents, k, alpha=0.5, beta=0.5) -> float:
    """ndeval's renormalize: NRBP over the greedy ideal list's NRBP (the factor cancels); 0 where nothing is gained."""
    found = sum(gain * beta ** (rank - 1) for rank, gain in enumerate(gains(ranked[:k], relevant, intents, alpha), 1))
    best = sum(gain * beta ** (rank - 1) for rank, gain in enumerate(ideal(relevant, intents, alpha, k), 1))
    return found / best if found else 0.0


MEASURES = {"alpha_ndcg": alpha_ndcg, "alpha_dcg": alpha_dcg, "err_ia": err_ia, "nerr_ia": nerr_ia, "p_ia": p_ia,
            "strec": strec, "ap_ia": ap_ia, "nrbp": nrbp, "nnrbp": nnrbp}


def mean(measure: str, lists, relevant, intents, k, alpha=0.5, **patience) -> float:
    """The mean over the queries with a relevant item (``empty_target_action="skip"``); ``patience``: NRBP's beta."""
    values = [MEASURES[measure](ranked, rel, intents, k, alpha, **patience)
              for ranked, rel in zip(lists, relevant, strict=True) if rel]
    return sum(values) / len(values) if values else math.nan
