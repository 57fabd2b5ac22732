"""The options of each beyond-accuracy family, checked and turned into settings, a per-item table and an
id limit.

Each ``configure_*`` function takes the family name (for its messages) and the family's options, already
checked for unknown and missing names, and returns a :class:`Configured`; it raises ``ValueError`` naming
the option and what it received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.beyond.concentration import ENTROPY_NORMALIZATIONS
from torchrec_eval.beyond.diversity import FEATURELESS, SINGLE_ITEM, unit_rows
from torchrec_eval.beyond.intents import table_digest
from torchrec_eval.beyond.long_tail import long_tail
from torchrec_eval.beyond.popularity import COLD_ITEMS, popularity_rank, self_information
from torchrec_eval.pipeline.arguments import check_int, check_probability, is_number

ALL_ZERO = ("error", "zero")


@dataclass
class Configured:
    """A family's checked options: ``settings`` (plain values, part of the member's configuration),
    ``table`` (a per-item tensor kept as a buffer, or None) and ``limit`` (what bounds the item ids, and
    its size, or None)."""

    settings: dict[str, Any] = field(default_factory=dict)
    table: Tensor | None = None
    limit: tuple[str, int] | None = None


def check_vector(name: str, value: object, family: str, all_zero: bool = False) -> Tensor:
    """A non-empty 1-D tensor of finite values >= 0, not all 0 unless ``all_zero``, as float64."""
    if not isinstance(value, Tensor):
        raise ValueError(
            f"{family}: `{name}` must be a 1-D torch.Tensor [num_items], got {type(value).__name__}"
        )
    if value.ndim != 1 or value.numel() == 0 or value.is_complex() or value.dtype == torch.bool:
        raise ValueError(
            f"{family}: `{name}` must be a non-empty 1-D real tensor [num_items], "
            f"got shape {tuple(value.shape)} and dtype {value.dtype}"
        )
    value = value.detach().to(torch.float64)
    low = float(value.min())
    if not bool(torch.isfinite(value).all()) or low < 0 or (float(value.sum()) <= 0 and not all_zero):
        hint = " (all_zero='zero' accepts all 0s)" if family == "average_popularity" else ""
        raise ValueError(
            f"{family}: `{name}` must be finite, >= 0 and not all 0 (counts or probabilities){hint}, "
            f"got min={low} sum={float(value.sum())}"
        )
    return value


def check_matrix(name: str, value: object, family: str, square: bool, nan: bool = False) -> Tensor:
    """A non-empty 2-D floating point tensor (square if ``square``), finite (or NaN if ``nan``)."""
    if not isinstance(value, Tensor):
        raise ValueError(f"{family}: `{name}` must be a 2-D torch.Tensor, got {type(value).__name__}")
    shape = tuple(value.shape)
    if (
        value.ndim != 2
        or value.numel() == 0
        or not value.is_floating_point()
        or (square and shape[0] != shape[1])
    ):
        want = "[num_items, num_items]" if square else "[num_items, d]"
        raise ValueError(
            f"{family}: `{name}` must be a floating point tensor {want}, "
            f"got shape {shape} and dtype {value.dtype}"
        )
    if not bool((torch.isfinite(value) | (torch.isnan(value) if nan else False)).all()):
        allowed = "finite or NaN (featureless='nan')" if nan else "finite (featureless='nan' accepts NaN)"
        raise ValueError(f"{family}: `{name}` must be {allowed}, got {int((~torch.isfinite(value)).sum())} "
                         f"values that are not (first: {value[~torch.isfinite(value)][0].item()})")
    return value.detach()


def _check_choice(family: str, name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{family}: `{name}` must be one of {choices}, got {value!r}")


def configure_catalogue(family: str, options: dict[str, Any]) -> Configured:
    """Coverage, Gini index, inter-list diversity: the catalogue size ``num_items``."""
    num_items = check_int("num_items", options["num_items"], 1, of=family)
    return Configured({"num_items": num_items}, limit=(f"{family}: `num_items`", num_items))


def configure_entropy(family: str, options: dict[str, Any]) -> Configured:
    configured = configure_catalogue(family, options)
    base = options.get("base", 2.0)
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not base > 0 or base == 1:
        raise ValueError(f"entropy: `base` must be a number > 0 other than 1, got {base!r}")
    normalization = options.get("normalization", "none")
    _check_choice(family, "normalization", normalization, ENTROPY_NORMALIZATIONS)
    configured.settings.update(base=float(base), normalization=normalization)
    return configured


def configure_intra_list_diversity(family: str, options: dict[str, Any]) -> Configured:
    """Exactly one of ``item_features`` (kept as unit rows) and ``item_similarity``; ``single_item``,
    ``featureless``."""
    features, similarity = options.get("item_features"), options.get("item_similarity")
    if (features is None) == (similarity is None):
        raise ValueError(
            "intra_list_diversity needs exactly one of `item_features` [num_items, d] and "
            f"`item_similarity` [num_items, num_items], got {'both' if features is not None else 'neither'}"
        )
    featureless = options.get("featureless") or "error"
    _check_choice(family, "featureless", featureless, FEATURELESS)
    nan = featureless == "nan"
    settings: dict[str, Any] = {"featureless": featureless} if nan else {}  # newer than the state name
    if features is not None:
        table = unit_rows(check_matrix("item_features", features, family, square=False, nan=nan), nan)
        settings["mode"] = "features"
    else:
        table = check_matrix("item_similarity", similarity, family, square=True, nan=nan).to(torch.float64)
        settings["mode"] = "similarity"
    settings["single_item"] = options.get("single_item") or "skip"
    _check_choice(family, "single_item", settings["single_item"], SINGLE_ITEM)
    return Configured(settings, table, (f"{family}: `item_{settings['mode']}` rows", table.shape[0]))


def _popularity_limit(family: str, popularity: Tensor) -> tuple[str, int]:
    return f"{family}: `item_popularity` length", popularity.numel()


def configure_novelty(family: str, options: dict[str, Any]) -> Configured:
    """``item_popularity`` (kept as self-information), ``num_users``, ``cold_items``."""
    popularity = check_vector("item_popularity", options["item_popularity"], family)
    num_users = options.get("num_users")
    if num_users is not None:
        num_users = check_int("num_users", num_users, 1, of=family)
        if float(popularity.max()) > num_users:
            raise ValueError(
                f"novelty: `item_popularity` counts users, so it cannot exceed "
                f"`num_users`={num_users}; got a maximum of {float(popularity.max())}"
            )
    cold_items = options.get("cold_items") or "least_popular"
    _check_choice(family, "cold_items", cold_items, COLD_ITEMS)
    table = self_information(popularity, num_users, cold_items)
    return Configured({}, table, _popularity_limit(family, popularity))


def configure_serendipity(family: str, options: dict[str, Any]) -> Configured:
    """``item_popularity`` (kept as each item's rank by popularity), ``baseline_size``."""
    popularity = check_vector("item_popularity", options["item_popularity"], family)
    baseline = options.get("baseline_size")
    if baseline is not None:
        baseline = check_int("baseline_size", baseline, 0, of=family)
    rank = popularity_rank(popularity)
    return Configured({"baseline_size": baseline}, rank, _popularity_limit(family, popularity))


def configure_average_popularity(family: str, options: dict[str, Any]) -> Configured:
    """``item_popularity`` (kept as given), ``all_zero``."""
    all_zero = options.get("all_zero") or "error"
    _check_choice(family, "all_zero", all_zero, ALL_ZERO)
    popularity = check_vector("item_popularity", options["item_popularity"], family, all_zero == "zero")
    settings = {"all_zero": all_zero} if all_zero != "error" else {}  # newer than the state name
    return Configured(settings, popularity, _popularity_limit(family, popularity))


def configure_propensity(family: str, options: dict[str, Any]) -> Configured:
    """``inverse_propensity`` [num_items] (>= 0, kept as float64; see
    :func:`~torchrec_eval.beyond.propensity.inverse_propensity`)."""
    weights = check_vector("inverse_propensity", options["inverse_propensity"], family)
    return Configured({}, weights, (f"{family}: `inverse_propensity` length", weights.numel()))


def configure_intents(family: str, options: dict[str, Any]) -> Configured:
    """``item_intents`` [num_items, I] of 0s and 1s (one- or multi-hot; bool, int or float, kept as float64),
    ``alpha``, the redundancy penalty in [0, 1] (0.5 by default, ndeval's), and for NRBP ``beta``, the patience in
    [0, 1] (0.5, ndeval's)."""
    intents = options["item_intents"]
    if not isinstance(intents, Tensor) or intents.ndim != 2 or intents.numel() == 0 or intents.is_complex():
        shape = tuple(intents.shape) if isinstance(intents, Tensor) else type(intents).__name__
        raise ValueError(f"{family}: `item_intents` must be a non-empty 2-D tensor [num_items, intents] of 0s and 1s, "
                         f"got {shape}")
    table = intents.detach().to(torch.float64)
    binary = (table == 0) | (table == 1)
    if not bool(binary.all()):
        raise ValueError(f"{family}: `item_intents` must hold only 0s and 1s (which intents each item has), got "
                         f"{table[~binary][0].item()}")
    alpha, beta = options.get("alpha", 0.5), options.get("beta", 0.5)
    if not (is_number(alpha) and 0 <= alpha <= 1):
        raise ValueError(f"{family}: `alpha` must be a number in [0, 1], got {alpha!r}")
    if not (is_number(beta) and 0 <= beta <= 1):
        raise ValueError(f"{family}: `beta` must be a number in [0, 1], got {beta!r}")
    settings = {"alpha": float(alpha), "intents_digest": table_digest(table)}  # (families of one table share its ideal)
    if "beta" in options:
        settings["beta"] = float(beta)
    return Configured(settings, table, (f"{family}: `item_intents` rows", table.shape[0]))


def configure_long_tail(family: str, options: dict[str, Any]) -> Configured:
    """``item_popularity`` (kept as the long-tail indicator), and at most one of ``head_share`` (in [0, 1],
    0.8 by default) and ``tail_ratio`` (RecBole's: a share in (0, 1] or a count > 1)."""
    popularity = check_vector("item_popularity", options["item_popularity"], family)
    head_share, tail_ratio = options.get("head_share"), options.get("tail_ratio")
    if head_share is not None and tail_ratio is not None:
        raise ValueError(f"{family}: pass at most one of `head_share` and `tail_ratio`, got {head_share!r} and "
                         f"{tail_ratio!r}")
    if head_share is not None and not (is_number(head_share) and 0 <= head_share <= 1):
        raise ValueError(f"{family}: `head_share` must be a number in [0, 1], got {head_share!r}")
    if tail_ratio is not None and not (is_number(tail_ratio) and tail_ratio > 0):
        raise ValueError(f"{family}: `tail_ratio` must be a share in (0, 1] or a count > 1, got {tail_ratio!r}")
    settings = {name: value for name, value in (("head_share", head_share), ("tail_ratio", tail_ratio))
                if value is not None}
    return Configured(settings, long_tail(popularity, head_share, tail_ratio), _popularity_limit(family, popularity))


def configure_exposure_gini(family: str, options: dict[str, Any]) -> Configured:
    """The catalogue size ``num_items`` and the rank weight's ``patience`` (in (0, 1), 0.85 by default)."""
    configured = configure_catalogue(family, options)
    configured.settings["patience"] = check_probability("patience", options.get("patience", 0.85), of=family)
    return configured


def configure_category_entropy(family: str, options: dict[str, Any]) -> Configured:
    """``item_categories`` [num_items, categories] (>= 0, kept as float64), ``smoothing`` (>= 0, 0 by default)
    and, for the rank-biased entropy, ``patience`` (in (0, 1), 0.85 by default)."""
    table = check_matrix("item_categories", options["item_categories"], family, square=False).to(torch.float64)
    if float(table.min()) < 0:
        raise ValueError(f"{family}: `item_categories` must be >= 0 (memberships or weights), got a minimum of "
                         f"{float(table.min())}")
    smoothing = options.get("smoothing", 0.0)
    if not (is_number(smoothing) and smoothing >= 0):
        raise ValueError(f"{family}: `smoothing` must be a number >= 0, got {smoothing!r}")
    settings = {"smoothing": float(smoothing), "patience": None}
    return Configured(settings, table, (f"{family}: `item_categories` rows", table.shape[0]))


def configure_rank_biased_entropy(family: str, options: dict[str, Any]) -> Configured:
    """As :func:`configure_category_entropy`, and the rank weight's ``patience`` (in (0, 1), 0.85 by default)."""
    configured = configure_category_entropy(family, options)
    configured.settings["patience"] = check_probability("patience", options.get("patience", 0.85), of=family)
    return configured

