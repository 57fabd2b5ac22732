"""The option tables of the ``convention=`` presets, read by every family (the table of what each preset
sets, and why: :mod:`torchrec_eval.conventions`, the public face)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Preset:
    """Common arguments and per-family options of one convention."""

    empty_target_action: str = "skip"
    ties: str = "index"
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    duplicates: str = "error"  # an id repeated in `ranked_ids` / `target_ids`: "error" or "count" (ranx)


def _binary_ndcg(log_base: float = 2.0, ideal: str = "cut", empty_mean: str | None = None) -> dict[str, dict[str, Any]]:
    gains = {"gain": "binary", "log_base": log_base, "ideal": ideal}
    ndcg = gains if empty_mean is None else {**gains, "empty_mean": empty_mean}
    return {"ndcg": ndcg, "dcg": {key: gains[key] for key in ("gain", "log_base")}}


_SKIP_EMPTY_LISTS = {"empty_list_action": "skip"}  # users with relevant items but no recommendation: left out
_ZERO_EMPTY_MEAN = {"empty_mean": "zero"}  # MS Recommenders: 0.0 when no user has a hit in the top k


#: the libraries whose numbers a preset reproduces (``convention=``)
Convention = Literal["trec", "ranx", "torchmetrics", "recbole", "jurity", "recommenders", "spark", "rectools",
                     "lenskit", "cornac"]

PRESETS: dict[str, Preset] = {
    "trec": Preset("neg", "reverse_index", {"map": {"normalizer": "r"}, "mar": {"normalizer": "r"}}),
    "ranx": Preset("neg", "index", {"map": {"normalizer": "r"}, "mar": {"normalizer": "r"}}, duplicates="count"),
    "torchmetrics": Preset("neg", "index", {"map": {"normalizer": "hits"}, "ndcg": {"average_ties": True}}),
    "recbole": Preset("skip", "index", _binary_ndcg()),
    "jurity": Preset(
        "skip",
        "index",
        {
            "precision": {"denominator": "retrieved", **_SKIP_EMPTY_LISTS},
            "map": dict(_SKIP_EMPTY_LISTS),
            "ctr": {"unlogged": "rank"},  # top k of every recommended item, then the logged ones
            **_binary_ndcg(ideal="full"),
        },
    ),
    "recommenders": Preset(
        "skip",
        "index",
        {
            "precision": {**_SKIP_EMPTY_LISTS, **_ZERO_EMPTY_MEAN},
            "recall": {**_SKIP_EMPTY_LISTS, **_ZERO_EMPTY_MEAN},
            "map": {**_SKIP_EMPTY_LISTS, **_ZERO_EMPTY_MEAN},
            "rprecision": {"denominator": "r", "no_hit_action": "skip", **_ZERO_EMPTY_MEAN},
            **_binary_ndcg(log_base=2.718281828459045, empty_mean="zero"),
        },
    ),
    "spark": Preset("neg", "index", _binary_ndcg(log_base=2.718281828459045)),
    "rectools": Preset(
        "skip",
        "index",
        {
            "map": {"normalizer": "r"},
            "novelty": {"cold_items": "one_user"},
            "intra_list_diversity": {"single_item": "zero", "featureless": "nan"},
            "average_popularity": {"all_zero": "zero"},
            **_binary_ndcg(ideal="k"),
        },
    ),
    "lenskit": Preset(
        "skip",
        "index",
        {
            "precision": {"denominator": "retrieved", **_SKIP_EMPTY_LISTS},  # an empty list: NaN
            "recall": {"denominator": "min_k_r"},
            "map": {"normalizer": "min_list_r", **_SKIP_EMPTY_LISTS},
            "ndcg": {"discount": "clipped_log"},
            "dcg": {"discount": "clipped_log"},
            "rbp": {"p": 0.85},
            "category_entropy": {"smoothing": 1e-6},  # LensKit adds 1e-6 to every category's count
            "rank_biased_entropy": {"smoothing": 1e-6},
        },
    ),
    "cornac": Preset(
        "skip",  # users without a test positive are not evaluated
        "index",
        {
            # MAP over the whole ranking, every tied item at its group's last rank (scipy's rankdata "max")
            "map": {"normalizer": "r", "tie_rank": "group_max"},
            "auc": {"tie_credit": 0.0},  # a tied (positive, negative) pair counts 0
            **_binary_ndcg(),
        },
    ),
}


def preset(convention: str | None) -> Preset:
    """The preset named ``convention`` (``None``: the library defaults).

    Raises:
        ValueError: for an unknown name (the message lists the known ones).

    Example:
        >>> from torchrec_eval.conventions import preset
        >>> preset("trec").options["map"]
        {'normalizer': 'r'}
    """
    if convention is None:
        return Preset()
    if convention not in PRESETS:
        raise ValueError(f"Unknown `convention` {convention!r}; known conventions: {sorted(PRESETS)}")
    return PRESETS[convention]


def resolve_common(convention: str | None, empty_target_action: str | None, ties: str | None) -> tuple[str, str]:
    """``empty_target_action`` and ``ties``: the explicit value if given, else the convention's."""
    chosen = preset(convention)
    return (chosen.empty_target_action if empty_target_action is None else empty_target_action,
            chosen.ties if ties is None else ties)


def resolve_options(
    convention: str | None, family: str, options: dict[str, Any], ties: str | None = None
) -> dict[str, Any]:
    """A family's options: the convention's, overridden by every explicit (non-None) option. An
    explicit ``ties`` (the common argument) also overrides a preset's ``average_ties``."""
    explicit = {name: value for name, value in options.items() if value is not None}
    chosen = dict(preset(convention).options.get(family, {}))
    if ties is not None:
        chosen.pop("average_ties", None)
    if explicit.get("gain", "binary") != "binary" and "ideal" not in explicit:
        chosen.pop("ideal", None)  # the preset's uncut / k-slot ideal is for binary gains only
    return {**chosen, **explicit}
