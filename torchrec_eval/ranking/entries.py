"""An entry of the top-k member: one top-k family at one or more cut-offs with its options, checked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torchrec_eval.pipeline.arguments import check_k
from torchrec_eval.ranking.registry import REGISTRY, check_option


@dataclass(frozen=True)
class Entry:
    """One metric family evaluated at one or more cut-offs (``None`` = no cut-off, R-Precision only)."""

    name: str
    ks: tuple[int | None, ...]
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def keys(self) -> list[str]:
        return [self.name if k is None else f"{self.name}@{k}" for k in self.ks]


def make_entry(name: str, k: int | Sequence[int | None] | None, options: dict[str, Any]) -> Entry:
    """Validate a metric family, its cut-offs and options."""
    if name not in REGISTRY:
        raise ValueError(f"Unknown metric {name!r}; known metrics: {sorted(REGISTRY)}")
    spec = REGISTRY[name]
    ks = tuple(k) if isinstance(k, (list, tuple)) else (k,)
    if not ks:
        raise ValueError(f"`k` must be an int or a non-empty sequence of ints, got {k!r}")
    ks = tuple(check_k(one, optional=spec.optional_k) for one in ks)
    if spec.cutoff == "none" and ks != (None,):
        raise ValueError(f"{name} takes no cut-off (it counts the query's relevant items), got k={k!r}")
    if len(set(ks)) != len(ks):
        raise ValueError(f"`k` has repeated cut-offs: {k!r}")
    options = {option: value for option, value in options.items() if value is not None}
    for option, value in options.items():
        if option not in spec.options:
            raise ValueError(f"{name} has no option {option!r}; its options are {sorted(spec.options)}")
        check_option(name, option, value)
    if options.get("ideal", "cut") != "cut" and options.get("gain") != "binary":
        raise ValueError(
            f"`ideal={options['ideal']!r}` is defined for binary relevance: pass gain='binary' "
            f"(got gain={options.get('gain', 'linear')!r})"
        )
    return Entry(name, ks, tuple(sorted(options.items())))
