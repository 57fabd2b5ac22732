"""What a validated batch is: the ranked (top-k) view, the full candidate view, the groups.

Every top-k metric is a pure function of :class:`RankedTargets`; AUC, GAUC, MPR, FCP and pAUC@k read
:class:`Candidates`. :mod:`torchrec_eval.pipeline.prepare` builds both from any input form.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol, TypeVar, cast

import torch
from torch import Tensor

T = TypeVar("T")


class TieGroups(NamedTuple):
    """Per ranked position [B, K] under averaged ties: its tie group's size n, the relevant items in it m,
    and the position's offset o inside the group."""

    size: Tensor
    hits: Tensor
    offset: Tensor


def once_per_view(view: RankedTargets, slot: str, compute: Callable[[], T]) -> T:
    """``compute()``, worked out once per ranked view and kept in it under ``slot`` (a family that reads it
    reads the same tensor as the others). Get and set, not ``setdefault`` nor ``functools.cached_property``'s
    lock, which ``torch.compile`` (torch 2.11's dynamo) cannot trace."""
    value = view.__dict__.get(slot)
    if value is None:
        value = view.__dict__[slot] = compute()
    return cast(T, value)


def cached(compute: Callable[[RankedTargets], Tensor]) -> property:
    """A property of :class:`RankedTargets` worked out once (:func:`once_per_view`)."""
    slot = "_cached_" + compute.__name__

    @functools.wraps(compute)
    def read(self: RankedTargets) -> Tensor:
        return once_per_view(self, slot, lambda: compute(self))

    return property(read)


@dataclass
class RankedTargets:
    """What every top-k metric needs of a batch of ``B`` queries, ranked to depth ``K``.

    Attributes:
        gains: [B, K] float64 gain (target value) of the item at each rank; 0 past the list.
        relevance: [B, K] bool, whether the item at each rank is relevant; None in a binary view, whose
            :attr:`relevant` is read off its gains where a family asks (most read the gains only).
        num_relevant: [B] float64, ``R``: relevant items of the query among its candidates.
        num_candidates: [B] float64, valid candidates of the query (the list length for ``ranked``;
            the ids form without a mask counts them within the list: min(K, candidates), as every
            reader takes min(k, num_candidates) for k <= K).
        ideal_gains: [B, K] float64 gains of the query sorted descending (for IDCG), if requested.
        item_ids: [B, K] long ids of the ranked items, -1 past the list (for beyond-accuracy metrics).
        max_relevant: a bound on R known without a host sync (the number of items or target ids).
        tie_groups: the tie-group statistics (:class:`TieGroups`), with ``ties="average"`` only.
        averaged: the view averaged over tie orders (itself under ``ties="average"``), when a metric
            asks for it (``average_ties=True``).
        binary: the gains are the relevance itself, 1.0 or 0.0 (no graded target, no threshold above 1):
            :attr:`hits` is then ``gains``, not a copy.
        relevant_items: (ids [B, W] long, relevant [B, W] bool): every relevant candidate of each query, ranked
            or not, where a family asks (``Needs.relevant_items``); the dense form's W is its N items.
        relevant_gains: [B, W] float64 the gains of those W items, beside ``relevant_items`` (Compat's ideal
            positions read the grades of the query's relevant items).
        judged: [B, K] bool, whether the item at each rank is judged: found among the target ids (whatever
            its gain: a gain that is not relevant is a judged non-relevant item), every listed candidate in the
            dense form; False past the list. Kept only where a family reads it (``Needs.judged``).
        num_judged: [B] float64, the query's judged items among its candidates (R and the judged
            non-relevant ones: its target ids; every candidate in the dense form), with ``judged``.
        pooled: [B, K] bool, whether the item at each rank is pooled: found among the target ids, judged or not
            (a gain of -1: pooled, not judged), every listed candidate in the dense form; False past the list.
            Kept only where a family reads it (``Needs.pooled``: infAP).
    """

    gains: Tensor
    relevance: Tensor | None
    num_relevant: Tensor
    num_candidates: Tensor
    ideal_gains: Tensor | None = None
    item_ids: Tensor | None = None

    max_relevant: int = 0
    tie_groups: TieGroups | None = None
    averaged: RankedTargets | None = None
    binary: bool = False
    relevant_items: tuple[Tensor, Tensor] | None = None
    relevant_gains: Tensor | None = None
    judged: Tensor | None = None
    num_judged: Tensor | None = None
    pooled: Tensor | None = None

    def with_tie_statistics(
        self, size: Tensor, hits: Tensor, gain_sum: Tensor, offset: Tensor
    ) -> RankedTargets:
        """The expected view over all orderings of tied items (``ties="average"``, McSherry & Najork 2008).

        Each position then holds the mean gain and the mean relevance of its tie group; metrics that
        are not linear in the relevance (HitRate, MRR, MAP, MAR) also read the group statistics.
        """
        return replace(self, gains=gain_sum / size, relevance=self.relevant, tie_groups=TieGroups(size, hits, offset))

    @property
    def depth(self) -> int:
        return self.gains.shape[1]

    def listed_ids(self) -> Tensor:
        """[B, K] the ids of the ranked items, -1 past the list (the beyond-accuracy metrics read them)."""
        if self.item_ids is None:
            raise ValueError(f"this ranked view keeps no item ids, got item_ids={self.item_ids}")
        return self.item_ids

    def relevant_item_table(self) -> tuple[Tensor, Tensor]:
        """(ids [B, W], relevant [B, W]): every relevant candidate of each query (PSP's ideal reads them)."""
        if self.relevant_items is None:
            raise ValueError("this ranked view keeps no relevant items: its metric did not ask for them "
                             f"(Needs.relevant_items), got relevant_items={self.relevant_items}")
        return self.relevant_items

    def relevant_item_gains(self) -> Tensor:
        """[B, W] the gains of :meth:`relevant_item_table`'s items (``Needs.relevant_items``)."""
        if self.relevant_gains is None:
            raise ValueError("this ranked view keeps no gains of the relevant items: its metric did not ask for them "
                             f"(Needs.relevant_items), got relevant_gains={self.relevant_gains}")
        return self.relevant_gains

    def judged_items(self) -> Tensor:
        """[B, K] :attr:`judged`, which a family that reads the judgments asked for (``Needs.judged``)."""
        if self.judged is None:
            raise ValueError(f"this ranked view keeps no judgments (Needs.judged), got judged={self.judged}")
        return self.judged

    def pooled_items(self) -> Tensor:
        """[B, K] :attr:`pooled`, which a family that reads the pool asked for (``Needs.pooled``: infAP)."""
        if self.pooled is None:
            raise ValueError(f"this ranked view keeps no pool (Needs.pooled), got pooled={self.pooled}")
        return self.pooled

    @cached
    def relevant(self) -> Tensor:
        """[B, K] bool, whether the item at each rank is relevant (:attr:`relevance`, or a binary view's gains > 0)."""
        return self.gains > 0 if self.relevance is None else self.relevance

    @cached
    def judged_non_relevant(self) -> Tensor:
        """[B, K] float64 1 where the item at each rank is judged and not relevant (bpref's ``n``)."""
        return (self.judged_items() & ~self.relevant).to(torch.float64)

    @cached
    def num_judged_non_relevant(self) -> Tensor:
        """[B, 1] float64 the query's judged non-relevant items (bpref's ``N``), as a column."""
        if self.num_judged is None:
            raise ValueError(f"this ranked view keeps no judgments (Needs.judged), got num_judged={self.num_judged}")
        return (self.num_judged - self.num_relevant).unsqueeze(1)

    @cached
    def relevant_column(self) -> Tensor:
        """[B, 1] float64 ``num_relevant``, as the column that divides per-query values."""
        return self.num_relevant.unsqueeze(1)

    @cached
    def hits(self) -> Tensor:
        """[B, K] float64 relevance of each rank (its expectation under ``ties="average"``)."""
        if self.tie_groups is not None:
            return self.tie_groups.hits / self.tie_groups.size
        return self.gains if self.binary else self.relevant.to(torch.float64)

    @cached
    def hits_before_and_at(self) -> Tensor:
        """[B, K] E[h_i r_i]: relevant items within the first i ranks, times r_i (AP and AR numerators)."""
        if self.tie_groups is None:
            return self.cum_hits * self.hits
        # h_i = r_i + (earlier ranks). Other tie groups are independent of rank i; the o earlier ranks
        # of its own group are relevant together with it with probability m(m-1) / (n(n-1)).
        p, (n, m, o) = self.hits, self.tie_groups
        other_groups = p.cumsum(1) - p - o * p
        pair = torch.where(n > 1, m * (m - 1) / (n * (n - 1)).clamp(min=1), torch.zeros_like(n))
        return p + p * other_groups + o * pair

    @cached
    def first_hit(self) -> Tensor:
        """[B, K] probability that rank i holds the first relevant item (0/1 without averaged ties)."""
        if self.tie_groups is None:
            return self.hits * (self.cum_hits == 1)
        n, m, o = self.tie_groups
        remaining = (n - o).clamp(min=1)
        # P(no relevant item before rank i) is a product over earlier ranks of P(not relevant | none yet)
        miss = ((remaining - m) / remaining).clamp(min=0)
        survival = torch.cumprod(torch.cat([torch.ones_like(miss[:, :1]), miss[:, :-1]], dim=1), dim=1)
        return survival * m / remaining

    @cached
    def cum_hits(self) -> Tensor:
        """[B, K] number of relevant items within the first i ranks."""
        return self.hits.cumsum(1)


@dataclass
class Candidates:
    """Every candidate of each query, for metrics over the whole ranking (AUC, GAUC, MPR, FCP, pAUC@k).

    The dense form holds the target of every item; the ids form keeps its target items only
    (``target_ids``), so that no [B, N] target is built: ``gains`` and ``relevant`` are then [B, T],
    one column per target id.

    Attributes:
        scores: [B, N] scores, ``-inf`` where an item is not a candidate.
        gains: [B, N] target values (the caller's dtype), 0 where an item is not a candidate; in the ids
            form [B, T] float64 gains of the target ids, 0 for padding and for non-candidates.
        relevant: [B, N] bool relevance, False where an item is not a candidate; in the ids form [B, T].
        valid: [B, N] bool candidate mask, or None when every item is a candidate.
        target_ids: [B, T] long ids of the target items (-1 = padding) in the ids form, else None.
    """

    scores: Tensor
    gains: Tensor
    relevant: Tensor
    valid: Tensor | None
    target_ids: Tensor | None = None

    @classmethod
    def from_ids(
        cls, preds: Tensor, valid: Tensor | None, target_ids: Tensor, gains: Tensor, relevant: Tensor
    ) -> Candidates:
        """The ids form's view: ``gains`` and ``relevant`` [B, T] must already be 0 / False for padding
        and for target ids that are not candidates."""
        scores = preds if valid is None else preds.masked_fill(~valid, float("-inf"))
        return cls(scores, gains, relevant, valid, target_ids)

    @property
    def target_scores(self) -> Tensor:
        """[B, T] scores of the target ids (ids form only; padding reads item 0: mask it)."""
        if self.target_ids is None:
            raise ValueError(f"`target_scores` are read from the ids form's candidates, got target_ids={self.target_ids}")
        return self.scores.gather(1, self.target_ids.clamp(min=0))


class CountedCandidates(Protocol):
    """Candidates already counted against the targets (a catalogue stream's ``TargetRanks``): what the
    pairwise family reads instead of sorting every candidate."""

    num_valid: Tensor

    def rank_sums(self) -> tuple[Tensor, Tensor]: ...

    def strict_wins(self) -> Tensor: ...

    def partial_credits(self, ks: Sequence[int]) -> tuple[Tensor, Tensor]: ...

    def pair_counts(self) -> tuple[Tensor, Tensor]: ...


@dataclass
class Batch:
    """A validated batch: its top-k view, its full candidate view (each if requested), its groups, the
    float64 [B] weight of each query when the metric is ``weighted``, and the per-query inputs a member
    takes beyond the input forms (``extras``: sampled evaluation's per-query catalogue sizes, say)."""

    ranked: RankedTargets | None
    candidates: Candidates | CountedCandidates | None
    groups: Tensor | None
    weights: Tensor | None = None
    extras: dict[str, Tensor] | None = None

    @property
    def num_queries(self) -> int:
        """B, the number of queries (rows) of the batch."""
        if self.ranked is not None:
            return self.ranked.num_relevant.shape[0]
        candidates = self.every_candidate()
        return (candidates.scores if isinstance(candidates, Candidates) else candidates.num_valid).shape[0]

    def top_k(self) -> RankedTargets:
        """The top-k view, which a member that reads it asked for (``Member.depth`` > 0)."""
        if self.ranked is None:
            raise ValueError(f"this batch was prepared without a top-k view, got ranked={self.ranked}")
        return self.ranked

    def every_candidate(self) -> Candidates | CountedCandidates:
        """The full candidate view, which a member that reads it asked for (``Member.needs_candidates``)."""
        if self.candidates is None:
            raise ValueError(f"this batch was prepared without its candidates, got candidates={self.candidates}")
        return self.candidates
