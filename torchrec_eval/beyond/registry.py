"""The registry of beyond-accuracy families: what :class:`~torchrec_eval.beyond.member.BeyondMember` needs
of each.

:data:`REGISTRY` maps a family name to a :class:`BeyondFamily`: its options, how they are checked, its state
layout (rows of item counts for a *catalogue* family, a sum/sum of squares/count column per cut-off for a
*per-query* family), its formula, and which way is better. The member reads this table and never the
family's name; a new family is one entry here and a formula beside the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.beyond import options as opts
from torchrec_eval.beyond.categories import category_entropy
from torchrec_eval.beyond.concentration import coverage_from_counts, entropy_from_counts, gini_from_counts
from torchrec_eval.beyond.diversity import inter_list_diversity_from_counts, intra_list_diversity
from torchrec_eval.beyond.intents import intent_aware, shared_ideal
from torchrec_eval.beyond.long_tail import tail_items_in_list
from torchrec_eval.beyond.popularity import mean_over_list, unexpected_hit_share
from torchrec_eval.beyond.propensity import propensity_scored
from torchrec_eval.members.steps import apply_empty_target_action
from torchrec_eval.pipeline.batch import RankedTargets

#: per query: (ranked batch, k, the family's table, its settings, empty_target_action)
#: -> (values [B], counted [B] bool), or (numerators [B], denominators [B]) for a pooled family
PerQuery = Callable[[RankedTargets, int, Tensor, dict[str, Any], str], tuple[Tensor, Tensor]]
#: per group: (item-count rows {channel: [G, N]}, plus {"lists": [G]} with counts_lists; settings)
#: -> values [G]
FromCounts = Callable[[dict[str, Tensor], dict[str, Any]], Tensor]


@dataclass(frozen=True)
class BeyondFamily:
    """One beyond-accuracy family.

    Attributes:
        options: option name -> whether it is required.
        configure: ``(family, options) -> Configured``: the checked settings, per-item table and id limit.
        higher_is_better: for tools that read it (None: neither).
        per_query: the per-query formula (per-query families).
        from_counts: the formula over item counts (catalogue families).
        item_rows: the channels of item counts it keeps per cut-off (catalogue families): ``"count"``
            (lists containing the item), ``"weight"`` and ``"weight2"`` (the same weighted by
            ``1 / sqrt(m_u)`` and ``1 / m_u``).
        counts_lists: whether it also keeps the number of non-empty lists per cut-off (``rows["lists"]``).
        upper_bound: the largest value it can take, or None when unbounded or data-dependent.
        pooled: its per-query formula returns a numerator and a denominator, and its value is the ratio of
            their sums over queries (PSP, PSnDCG as pyxclib); a query's own value is its ratio, and no
            interval is formed (the value is not a mean over queries).
        reads_relevant_items: it reads every relevant candidate of each query, ranked or not
            (``Needs.relevant_items``: PSP's best sum).
    """

    options: dict[str, bool]
    configure: Callable[[str, dict[str, Any]], opts.Configured]
    higher_is_better: bool | None = True
    per_query: PerQuery | None = None
    from_counts: FromCounts | None = None
    item_rows: tuple[str, ...] = ()
    counts_lists: bool = False
    upper_bound: float | None = None
    pooled: bool = False
    reads_relevant_items: bool = False

    @property
    def catalogue(self) -> bool:
        """Whether the family is a property of all lists (item counts) rather than a mean over queries."""
        return bool(self.item_rows)


def _counted(value: Tensor, counted: Tensor) -> tuple[Tensor, Tensor]:
    return torch.where(counted, value, torch.zeros((), dtype=torch.float64, device=value.device)), counted


def _mean_of_table(
    ranked: RankedTargets, k: int, table: Tensor, settings: dict[str, Any], action: str
) -> tuple[Tensor, Tensor]:
    """Novelty (table: self-information) and average popularity (table: popularity)."""
    return _counted(*mean_over_list(table, ranked.listed_ids()[:, :k]))


def _long_tail_share(
    ranked: RankedTargets, k: int, table: Tensor, settings: dict[str, Any], action: str
) -> tuple[Tensor, Tensor]:
    """APLT, RecBole's TailPercentage (table: 1.0 for a long-tail item)."""
    tail, length, listed = tail_items_in_list(table, ranked.listed_ids()[:, :k])
    return _counted(tail / length.clamp(min=1), listed)


def _long_tail_count(
    ranked: RankedTargets, k: int, table: Tensor, settings: dict[str, Any], action: str
) -> tuple[Tensor, Tensor]:
    """ACLT (table: 1.0 for a long-tail item)."""
    tail, _, listed = tail_items_in_list(table, ranked.listed_ids()[:, :k])
    return _counted(tail, listed)


def _category_entropy(
    ranked: RankedTargets, k: int, table: Tensor, settings: dict[str, Any], action: str
) -> tuple[Tensor, Tensor]:
    """LensKit's entropy and rank-biased entropy (table: item x category)."""
    return _counted(*category_entropy(table, ranked.listed_ids()[:, :k], settings["patience"], settings["smoothing"]))


def _intra_list(
    ranked: RankedTargets, k: int, table: Tensor, settings: dict[str, Any], action: str
) -> tuple[Tensor, Tensor]:
    ids = ranked.listed_ids()[:, :k]
    value, pairs = intra_list_diversity(table, ids, settings["mode"], skip_unknown="featureless" in settings)
    if settings["single_item"] == "zero":  # RecTools: a one-item list scores 0
        length = (ids >= 0).sum(1)
        return _counted(torch.where(length >= 2, value, torch.zeros_like(value)), (length == 1) | (pairs > 0))
    return _counted(value, pairs > 0)


def _serendipity(
    ranked: RankedTargets, k: int, rank: Tensor, settings: dict[str, Any], action: str
) -> tuple[Tensor, Tensor]:
    baseline = k if settings["baseline_size"] is None else settings["baseline_size"]
    hits = unexpected_hit_share(rank, ranked.listed_ids()[:, :k], ranked.relevant[:, :k], k, baseline)
    value, counted = apply_empty_target_action(hits.unsqueeze(1), ranked.num_relevant, action)
    return value.squeeze(1), counted


def _psp(
    ranked: RankedTargets, k: int, weights: Tensor, settings: dict[str, Any], action: str
) -> tuple[Tensor, Tensor]:
    """Pooled: (the top k's propensity-scored sum, the best sum); table: the inverse propensities."""
    return propensity_scored(ranked, k, weights, discounted=False)


def _psndcg(
    ranked: RankedTargets, k: int, weights: Tensor, settings: dict[str, Any], action: str
) -> tuple[Tensor, Tensor]:
    return propensity_scored(ranked, k, weights, discounted=True)


def _intent_aware(measure: str) -> PerQuery:
    """One of ndeval's intent-aware measures (:data:`~torchrec_eval.beyond.intents.MEASURES`; table: item x
    intent); a query without a relevant item follows ``empty_target_action``."""

    def per_query(
        ranked: RankedTargets, k: int, table: Tensor, settings: dict[str, Any], action: str
    ) -> tuple[Tensor, Tensor]:
        ideal = shared_ideal(ranked, table, settings["alpha"], settings["intents_digest"])
        value = intent_aware(measure, ranked.listed_ids(), ranked.relevant, ideal, k, settings.get("beta", 0.5))
        values, counted = apply_empty_target_action(value.unsqueeze(1), ranked.num_relevant, action)
        return values.squeeze(1), counted

    per_query.__name__ = f"_{measure}"
    return per_query


def _coverage(rows: dict[str, Tensor], settings: dict[str, Any]) -> Tensor:
    return coverage_from_counts(rows["count"])


def _gini(rows: dict[str, Tensor], settings: dict[str, Any]) -> Tensor:
    return gini_from_counts(rows["count"])


def _exposure_gini(rows: dict[str, Tensor], settings: dict[str, Any]) -> Tensor:
    return gini_from_counts(rows["exposure"])


def _entropy(rows: dict[str, Tensor], settings: dict[str, Any]) -> Tensor:
    return entropy_from_counts(rows["count"], settings["base"], settings["normalization"])


def _inter_list(rows: dict[str, Tensor], settings: dict[str, Any]) -> Tensor:
    return inter_list_diversity_from_counts(rows["weight"], rows["weight2"], rows["lists"])


_CATALOGUE_SIZE = {"num_items": True}
_POPULARITY = "item_popularity"
_LONG_TAIL = {_POPULARITY: True, "head_share": False, "tail_ratio": False}
_INTENTS = {"item_intents": True, "alpha": False}
_PATIENT_INTENTS = {"item_intents": True, "alpha": False, "beta": False}

REGISTRY: dict[str, BeyondFamily] = {
    "coverage": BeyondFamily(_CATALOGUE_SIZE, opts.configure_catalogue, from_counts=_coverage,
                           item_rows=("count",), upper_bound=1.0),
    "gini": BeyondFamily(_CATALOGUE_SIZE, opts.configure_catalogue, from_counts=_gini, item_rows=("count",),
                       upper_bound=1.0, higher_is_better=False),
    # the Gini index of the exposure each item gets, p^(i - 1) at rank i, summed over lists (LensKit)
    "exposure_gini": BeyondFamily({**_CATALOGUE_SIZE, "patience": False}, opts.configure_exposure_gini,
                                from_counts=_exposure_gini, item_rows=("exposure",), upper_bound=1.0,
                                higher_is_better=False),
    "entropy": BeyondFamily({**_CATALOGUE_SIZE, "base": False, "normalization": False}, opts.configure_entropy,
                          from_counts=_entropy, item_rows=("count",)),
    "inter_list_diversity": BeyondFamily(_CATALOGUE_SIZE, opts.configure_catalogue, from_counts=_inter_list,
                                       item_rows=("count", "weight", "weight2"), counts_lists=True,
                                       upper_bound=1.0),
    "intra_list_diversity": BeyondFamily(
        {"item_features": False, "item_similarity": False, "single_item": False, "featureless": False},
        opts.configure_intra_list_diversity, per_query=_intra_list,
    ),
    "novelty": BeyondFamily({_POPULARITY: True, "num_users": False, "cold_items": False},
                          opts.configure_novelty, per_query=_mean_of_table),
    "serendipity": BeyondFamily({_POPULARITY: True, "baseline_size": False}, opts.configure_serendipity,
                              per_query=_serendipity, upper_bound=1.0),
    "average_popularity": BeyondFamily({_POPULARITY: True, "all_zero": False},
                                     opts.configure_average_popularity, per_query=_mean_of_table,
                                     higher_is_better=None),
    "category_entropy": BeyondFamily({"item_categories": True, "smoothing": False},
                                     opts.configure_category_entropy, per_query=_category_entropy),
    "rank_biased_entropy": BeyondFamily({"item_categories": True, "smoothing": False, "patience": False},
                                        opts.configure_rank_biased_entropy, per_query=_category_entropy),
    "long_tail_share": BeyondFamily(_LONG_TAIL, opts.configure_long_tail, per_query=_long_tail_share, upper_bound=1.0),
    "long_tail_count": BeyondFamily(_LONG_TAIL, opts.configure_long_tail, per_query=_long_tail_count),
    # propensity-scored precision and NDCG (pyxclib): pooled over queries, normalised by the best sums
    "psp": BeyondFamily({"inverse_propensity": True}, opts.configure_propensity, per_query=_psp, upper_bound=1.0,
                        pooled=True, reads_relevant_items=True),
    "psndcg": BeyondFamily({"inverse_propensity": True}, opts.configure_propensity, per_query=_psndcg,
                           upper_bound=1.0, pooled=True, reads_relevant_items=True),
    # intent-aware diversity (ndeval): the ideal list is built greedily over every relevant candidate; no upper
    # bound (a list may beat the greedy ideal, and ERR-IA@1 is not normalised)
    "alpha_ndcg": BeyondFamily(_INTENTS, opts.configure_intents, per_query=_intent_aware("alpha_ndcg"),
                               reads_relevant_items=True),
    "err_ia": BeyondFamily(_INTENTS, opts.configure_intents, per_query=_intent_aware("err_ia"),
                           reads_relevant_items=True),
    # ndeval's alpha-DCG: over the "ideal ideal" as ERR-IA (S, the intents covered, from the relevant items)
    "alpha_dcg": BeyondFamily(_INTENTS, opts.configure_intents, per_query=_intent_aware("alpha_dcg"),
                              reads_relevant_items=True),
    "nerr_ia": BeyondFamily(_INTENTS, opts.configure_intents, per_query=_intent_aware("nerr_ia"),
                            reads_relevant_items=True),
    # ndeval's intent-aware precision, subtopic recall and MAP-IA: counts of what the top k covers, no alpha
    "p_ia": BeyondFamily({"item_intents": True}, opts.configure_intents, per_query=_intent_aware("p_ia"),
                         reads_relevant_items=True, upper_bound=1.0),
    "strec": BeyondFamily({"item_intents": True}, opts.configure_intents, per_query=_intent_aware("strec"),
                          reads_relevant_items=True, upper_bound=1.0),
    "ap_ia": BeyondFamily({"item_intents": True}, opts.configure_intents, per_query=_intent_aware("ap_ia"),
                          reads_relevant_items=True, upper_bound=1.0),
    # ndeval's novelty- and rank-biased precision (Clarke et al., ICTIR 2009): alpha and the patience beta
    "nrbp": BeyondFamily(_PATIENT_INTENTS, opts.configure_intents, per_query=_intent_aware("nrbp"),
                         reads_relevant_items=True),
    "nnrbp": BeyondFamily(_PATIENT_INTENTS, opts.configure_intents, per_query=_intent_aware("nnrbp"),
                          reads_relevant_items=True),
}
