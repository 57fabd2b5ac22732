"""Argument checks shared by the splits: fractions, choices, the interactions, the seeded generator."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from torchrec_eval.data.interactions import Interactions

__all__ = ["check_choice", "check_fraction", "check_interactions", "seeded_rng"]


def check_fraction(name: str, value: object, *, open_low: bool = False) -> float:
    bounds = "(0, 1)" if open_low else "[0, 1)"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"`{name}` must be a float in {bounds}, got {value!r}")
    if not (0.0 < value < 1.0 if open_low else 0.0 <= value < 1.0):
        raise ValueError(f"`{name}` must be a float in {bounds}, got {value!r}")
    return float(value)


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {tuple(choices)}, got {value!r}")
    return value  # type: ignore[return-value]


def check_interactions(interactions: object) -> Interactions:
    if not isinstance(interactions, Interactions):
        raise ValueError(
            "`interactions` must be a torchrec_eval.data.interactions.Interactions (see "
            f"`as_interactions`), got {type(interactions).__name__}"
        )
    return interactions


def seeded_rng(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)
