r"""Intent-aware diversity: alpha-nDCG@k and alpha-DCG@k (Clarke et al., SIGIR 2008), ERR-IA@k and nERR-IA@k
(Chapelle et al., CIKM 2009), as TREC's ``ndeval`` computes them (``src/ndeval.c``, version 4.5; ir-measures'
``alpha_nDCG``, ``alpha_DCG``, ``ERR_IA`` and ``nERR_IA`` through ``pyndeval``).

Each item carries intents (``item_intents`` T [num_items, I], 0/1: one- or multi-hot), and the item d at rank
i *covers* intent s for query q, :math:`J_{i s} = 1`, when it is relevant to q and :math:`T_{d s} = 1` (the
intent-aware setting of RankSys; ndeval's subtopic judgments, each relevant document judged relevant to exactly
its intents). With :math:`c_s(i)` the items among the first i that cover s, the gain of rank i is

.. math:: G_i = \sum_s J_{i s} (1 - \alpha)^{c_s(i - 1)}

(``alpha`` 0.5 by default: each further item on an intent already seen counts less), and

.. math::
    \alpha\text{-nDCG@k} = \frac{\sum_{i \le k} G_i / \log_2(i + 1)}{\sum_{i \le k} G^*_i / \log_2(i + 1)},
    \quad \text{nERR-IA@k} = \frac{\sum_{i \le k} G_i / i}{\sum_{i \le k} G^*_i / i}, \quad
    \text{ERR-IA@k} = \frac{\sum_{i \le k} G_i / i}{S \sum_{i \le k} (1 - \alpha)^{i - 1} / i}, \quad
    \alpha\text{-DCG@k} = \frac{\sum_{i \le k} G_i / \log_2(i + 1)}{S \sum_{i \le k} (1 - \alpha)^{i - 1} / \log_2(i + 1)}

with :math:`G^*` the gains of ndeval's ideal list, built greedily over the query's relevant candidates: each
rank takes the item of the largest marginal gain given the ranks above (ties: the larger item id, as
ndeval's larger docno), and S the intents that some relevant candidate covers (ndeval's
``actualSubtopics``: the intents are uniform, and the normalised measures do not depend on S). ERR-IA and
alpha-DCG are ndeval's "collection-independent" normalisation, an *ideal ideal* whose every item covers all S
intents (no greedy ideal: the DCG of ndeval's ``computeDCG`` before its ``renormalize``); as ndeval, which starts
that division at the second rank, ERR-IA@1 and alpha-DCG@1 are not divided: they are :math:`G_1`, the number of
intents the first item covers. A value is 0 where the list gains nothing (ndeval's guard), and
so for a query whose relevant items cover no intent (S = 0); a query without a relevant item follows
``empty_target_action``.
"""

from __future__ import annotations

import hashlib
import math

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import RankedTargets, once_per_view
from torchrec_eval.pipeline.tensor_cache import constant, filled, geometric

#: the measures of :func:`intent_aware`
MEASURES = ("alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia", "p_ia", "strec", "ap_ia", "nrbp", "nnrbp")
#: the measures over ndeval's "ideal ideal" (S intents at every rank), not over its greedy ideal list
IDEAL_IDEAL = ("alpha_dcg", "err_ia")
#: the measures that count what the top k covers, over the S intents, without a gain or an ideal list
COUNTED = ("p_ia", "strec", "ap_ia")
#: the measures that discount rank i by beta^(i - 1) (novelty- and rank-biased precision, Clarke et al. 2009)
PATIENT = ("nrbp", "nnrbp")


def intent_gains(cover: Tensor, alpha: float) -> Tensor:
    """The gain of each rank, [B, K] float64, from what each ranked item covers, ``cover`` [B, K, I] (1.0 where the
    item at that rank is relevant and has the intent): the sum over its intents of (1 - alpha)^(times seen above).

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.intents import intent_gains
        >>> cover = torch.tensor([[[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]]])  # intents {0, 1}, {0}, {0, 1}
        >>> intent_gains(cover, 0.5)  # 1 + 1, 0.5, 0.25 + 0.5
        tensor([[2.0000, 0.5000, 0.7500]], dtype=torch.float64)
    """
    cover = cover.to(torch.float64)
    factor = 1.0 - alpha * (cover > 0).to(torch.float64)  # 1 - alpha where covered, as ndeval's double
    before = torch.cumprod(torch.cat([torch.ones_like(factor[:, :1]), factor[:, :-1]], dim=1), dim=1)
    return (cover * before).sum(2)


class GreedyIdeal:
    """ndeval's greedy ideal list over each query's relevant candidates, built for every query at once and rank by
    rank, as far as the deepest cut-off asks (:meth:`gains`); and the intents the relevant candidates cover.

    Each step takes, for every query, the available relevant item of the largest marginal gain (ties: the largest
    item id) and discounts its intents by (1 - alpha).

    Args:
        items: [B, W] long item ids, -1 = padding.
        relevant: [B, W] bool, whether each is a relevant candidate.
        table: [num_items, I] intents (0/1).
        alpha: the redundancy penalty in [0, 1].
        via_table: read the marginal gains off ``g @ table.T`` [B, num_items] (fits a row that lists every item,
            the dense form's) rather than off the relevant items' intents [B, W, I]; None: the smaller.

    Attributes:
        subtopics: S [B] float64, the intents some relevant candidate covers (ndeval's ``actualSubtopics``).
        relevant_per_intent: [B, I] float64, the relevant candidates that cover each intent (ndeval's
            ``nrelSub``).
    """

    def __init__(self, items: Tensor, relevant: Tensor, table: Tensor, alpha: float,
                 via_table: bool | None = None) -> None:
        self.table = table = table.to(torch.float64)  # (the family's table is float64 already: no copy)
        rows, width = items.shape
        num_items, num_intents = table.shape
        self.items, self.alpha, self.width = items, alpha, width
        self.available = relevant & (items >= 0)
        self.ids = items.clamp(min=0)
        if via_table is None:
            via_table = width * num_intents >= num_items
        self.cover = None if via_table else table[self.ids] * self.available.unsqueeze(2).to(table.dtype)  # [B, W, I]
        if self.cover is None:
            members = torch.zeros(rows, num_items, dtype=table.dtype, device=table.device)
            seen = members.scatter_add_(1, self.ids, self.available.to(table.dtype)) @ table
        else:
            seen = self.cover.sum(1)
        self.subtopics = (seen > 0).sum(1, dtype=torch.float64)
        self.relevant_per_intent = seen
        self.remaining = torch.ones(rows, num_intents, dtype=torch.float64, device=table.device)  # (1 - alpha)^seen
        self.steps: list[Tensor] = []

    def gains(self, depth: int) -> Tensor:
        """The gains of the first ``depth`` ranks, [B, min(depth, W)] float64 (0 past the relevant items)."""
        while len(self.steps) < min(depth, self.width):
            self._step()
        if not self.steps:
            return torch.zeros(len(self.items), 0, dtype=torch.float64, device=self.table.device)
        return torch.stack(self.steps[:depth], dim=1)

    def _step(self) -> None:
        table, cover, available = self.table, self.cover, self.available
        if cover is None:
            marginal = (self.remaining @ table.T).gather(1, self.ids)
        else:
            marginal = torch.bmm(cover, self.remaining.unsqueeze(2)).squeeze(2)
        marginal = torch.where(available, marginal, filled((), -1.0, table.device))
        best = marginal.max(1, keepdim=True).values
        pick = torch.where(available & (marginal == best), self.items, -1).argmax(1, keepdim=True)
        if cover is None:  # (taken: False where no relevant item is left)
            taken = available.gather(1, pick)
            intents = table[self.items.gather(1, pick).clamp(min=0).squeeze(1)] * taken.to(table.dtype)
        else:
            intents = cover.gather(1, pick.unsqueeze(2).expand(-1, 1, cover.shape[2])).squeeze(1)
        self.remaining = self.remaining * (1.0 - self.alpha * (intents > 0).to(torch.float64))
        self.available = available.scatter(1, pick, False)
        self.steps.append(best.squeeze(1).clamp(min=0.0))


def greedy_ideal_gains(items: Tensor, relevant: Tensor, table: Tensor, alpha: float, depth: int,
                       via_table: bool | None = None) -> tuple[Tensor, Tensor]:
    """The gains of the first ``depth`` ranks of :class:`GreedyIdeal` [B, min(depth, W)] and S [B].

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.intents import greedy_ideal_gains
        >>> intents = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
        >>> greedy_ideal_gains(torch.tensor([[0, 1, 2, 3]]), torch.tensor([[True, True, True, False]]), intents, 0.5, 3)
        (tensor([[2.0000, 1.0000, 0.5000]], dtype=torch.float64), tensor([3.], dtype=torch.float64))
    """
    ideal = GreedyIdeal(items, relevant, table, alpha, via_table)
    return ideal.gains(depth), ideal.subtopics


def shared_ideal(ranked: RankedTargets, table: Tensor, alpha: float, digest: str) -> GreedyIdeal:
    """The batch's :class:`GreedyIdeal` for an intents table (``digest``: its content's) and ``alpha``, built once
    for every family and cut-off that reads it (deepened as they ask)."""
    memo: dict[tuple[str, float], GreedyIdeal] = once_per_view(ranked, "_intent_ideals", dict)
    ideal = memo.get((digest, alpha))
    if ideal is None:
        ideal = memo[(digest, alpha)] = GreedyIdeal(*ranked.relevant_item_table(), table, alpha)
    return ideal


def table_digest(table: Tensor) -> str:
    """A short digest of an intents table's shape and content (families given equal tables share one ideal)."""
    data = table.detach().to("cpu", torch.float64).contiguous()
    return hashlib.sha256(repr(tuple(data.shape)).encode() + data.numpy().tobytes()).hexdigest()[:16]


def intent_aware(measure: str, ids: Tensor, relevant: Tensor, ideal: GreedyIdeal, k: int, beta: float = 0.5) -> Tensor:
    """One of :data:`MEASURES` at cut-off ``k`` per query, float64 [B], as ndeval: from the top-k ``ids`` [B, K]
    (-1 past a short list), whether each is ``relevant`` [B, K], and the query's :class:`GreedyIdeal` (its table
    and alpha); ``beta`` the patience of NRBP and nNRBP.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.intents import GreedyIdeal, intent_aware
        >>> intents = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        >>> ids, relevant = torch.tensor([[0, 1, 2]]), torch.tensor([[True, True, True]])
        >>> ideal = GreedyIdeal(ids, relevant, intents, 0.5)
        >>> intent_aware("alpha_ndcg", ids, relevant, ideal, 3)  # gains 1, 0.5, 1
        tensor([0.9652], dtype=torch.float64)
        >>> ideal.gains(3)  # items 2, 1 (the larger id of a tie), 0
        tensor([[1.0000, 1.0000, 0.5000]], dtype=torch.float64)
    """
    table, alpha = ideal.table, ideal.alpha
    ids, relevant = ids[:, :k], relevant[:, :k]
    cover = table[ids.clamp(min=0)] * relevant.unsqueeze(2).to(table.dtype)
    if measure in COUNTED:  # ndeval's P-IA@k: each intent's P@k (over k, a short list too), averaged over the S
        # intents; strec@k: the share of the S intents that the top k covers; MAP-IA: each intent's AP (over its
        # relevant items), averaged over the S intents. 0 where S = 0 (nothing is covered)
        if measure == "p_ia":
            found = cover.sum((1, 2)) / k
        elif measure == "strec":
            found = (cover.amax(1) > 0).sum(1, dtype=torch.float64)
        else:
            ranks = torch.arange(1, cover.shape[1] + 1, dtype=cover.dtype, device=cover.device).view(1, -1, 1)
            precision_sums = (cover * cover.cumsum(1) / ranks).sum(1)  # [B, I]: each intent's precision at its hits
            per_intent = ideal.relevant_per_intent
            found = torch.where(per_intent > 0, precision_sums / per_intent.clamp(min=1), 0.0).sum(1)
        return found / ideal.subtopics.clamp(min=1)
    gains = intent_gains(cover, alpha)
    if measure in PATIENT:  # ndeval's computeNRBP: sum_i G_i beta^(i - 1), scaled by (1 - (1 - alpha) beta) / S
        decay = geometric(k, beta, gains.device)
        found = (gains * decay[: gains.shape[1]]).sum(1)
        if measure == "nrbp":
            return found * (1 - (1 - alpha) * beta) / ideal.subtopics.clamp(min=1)
        best = ideal.gains(k)
        best = (best * decay[: best.shape[1]]).sum(1)  # nNRBP: over the greedy ideal's (ndeval's renormalize)
        return torch.where(found > 0, found / best.clamp(min=1e-300), 0.0)
    discount = _discounts(measure, k, gains.device)
    found = (gains * discount[: gains.shape[1]]).sum(1)
    if measure in IDEAL_IDEAL:  # (found > 0 only where S > 0: the list's items are relevant candidates)
        # ndeval's normalising loop starts at the second rank: ERR-IA@1 and alpha-DCG@1 are G_1 itself
        ideal_ideal = _ideal_ideal(alpha, k, logarithmic=measure == "alpha_dcg")
        return found if k == 1 else found / (ideal.subtopics.clamp(min=1) * ideal_ideal)
    best = ideal.gains(k)
    best = (best * discount[: best.shape[1]]).sum(1)
    return torch.where(found > 0, found / best.clamp(min=1e-300), 0.0)


def _discounts(measure: str, k: int, device: torch.device) -> Tensor:
    """[k] float64 discounts of ranks 1..k: 1 / log2(i + 1) (alpha-nDCG, alpha-DCG) or 1 / i (ERR-IA, nERR-IA)."""
    if measure not in MEASURES or measure in COUNTED or measure in PATIENT:
        raise ValueError(f"`measure` must be one of {MEASURES}, got {measure!r}")
    logarithmic = measure in ("alpha_ndcg", "alpha_dcg")
    return constant(("intent_discounts", logarithmic, k, device), lambda: 1.0 / (
        torch.log2(torch.arange(2, k + 2, dtype=torch.float64, device=device)) if logarithmic
        else torch.arange(1, k + 1, dtype=torch.float64, device=device)))


def _ideal_ideal(alpha: float, k: int, logarithmic: bool = False) -> float:
    """The "ideal ideal" per intent: sum_{i <= k} (1 - alpha)^(i - 1) d_i, summed as ndeval does, with d_i = 1 / i
    (ERR-IA) or ndeval's ``discount``, log(2) / log(i + 1) past the first rank (alpha-DCG)."""
    total, gain = 0.0, 1.0
    for rank in range(1, k + 1):
        if logarithmic:
            total += gain * (math.log(2.0) / math.log(rank + 1.0) if rank > 1 else 1.0)
        else:
            total += gain / rank
        gain *= 1.0 - alpha
    return total
