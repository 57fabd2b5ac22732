"""The overlap member: one overlap family (``intersection``, ``jaccard`` or ``rbo``) at one or more cut-offs,
from the two ranked lists of each query (formulas: :mod:`~torchrec_eval.beyond.overlap`; the two lists:
:mod:`~torchrec_eval.beyond.overlap_inputs`).

Its state is ``overlap_stats`` [G, 3Q] float64: per value the sum over counted queries, the sum of squares
and the number of counted queries, so per-query values, confidence intervals, groups, query weights, exact
syncs and checkpoints work as for the top-k metrics. The evaluated list is the batch's top-k view
(``batch.top_k().item_ids``), the reference list ``batch.extras["reference_ids"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch
from torch import Tensor

from torchrec_eval.beyond.overlap import (
    intersection,
    jaccard,
    overlap_at_depths,
    rank_biased_overlap,
    reference_positions,
)
from torchrec_eval.beyond.overlap_inputs import ranked_pair
from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import Reduction, accumulate
from torchrec_eval.pipeline import Batch, Rules
from torchrec_eval.pipeline.arguments import check_k, check_optional_int, check_probability

__all__ = ["OVERLAP_FAMILIES", "OVERLAP_TIES", "OverlapMember", "OverlapTies", "RBOVariant", "overlap_values"]

OverlapTies = Literal["index", "reverse_index"]
RBOVariant = Literal["lenskit", "ext"]

#: family -> its options and their defaults
OVERLAP_FAMILIES: dict[str, dict[str, Any]] = {
    "intersection": {"ref_k": None},
    "jaccard": {},
    "rbo": {"patience": 0.85, "variant": "lenskit"},
}
RBO_VARIANTS = ("lenskit", "ext")
#: the tie orders an overlap takes: the lists hold item ids only, no relevance to order equal scores by
OVERLAP_TIES = ("index", "reverse_index")


def _settings(family: str, options: dict[str, Any]) -> dict[str, Any]:
    """The family's options, checked, with their defaults."""
    if family not in OVERLAP_FAMILIES:
        raise ValueError(f"Unknown overlap metric {family!r}; known: {sorted(OVERLAP_FAMILIES)}")
    known = OVERLAP_FAMILIES[family]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"{family} has no option {unknown[0]!r}; its options are {sorted(known)}")
    settings = {**known, **{name: value for name, value in options.items() if value is not None}}
    if family == "intersection":
        settings["ref_k"] = check_optional_int("ref_k", settings["ref_k"], 1, of=family)
    if family == "rbo":
        settings["patience"] = check_probability("patience", settings["patience"], of=family)
        if settings["variant"] not in RBO_VARIANTS:
            raise ValueError(f"`variant` of rbo must be one of {RBO_VARIANTS}, got {settings['variant']!r}")
    return settings


class OverlapMember(Member):
    """One overlap family at cut-offs ``ks`` (member protocol; state ``overlap_stats`` [G, 3Q]).

    Args:
        family: ``"intersection"``, ``"jaccard"`` or ``"rbo"``.
        ks: the cut-offs, each an int >= 1, in key order.
        options: the family's options (``ref_k``; ``patience``, ``variant``); None: the default.

    Raises:
        ValueError: on an unknown family or option, a bad option value, a bad or repeated cut-off.
    """

    needs_ideal = False
    to_num_relevant = False
    needs_candidates = False
    needs_listed_ids = True  # every value reads the ids of the listed items
    supports_weights = True  # every value is a mean over queries
    paired = False  # a paired comparison feeds one ranking per model, not two per model

    def __init__(self, family: str, ks: Sequence[Any], options: dict[str, Any]) -> None:
        self.settings = _settings(family, options)
        self.family = family
        self.ks = [check_k(k) for k in ks]
        if not self.ks:
            raise ValueError(f"{family} needs a cut-off: pass `k`, got {list(ks)!r}")
        self.keys = [f"{family}@{k}" for k in self.ks]
        if len(set(self.keys)) != len(self.keys):
            raise ValueError(f"A metric is requested twice: {self.keys}")
        self.query_keys = list(self.keys)
        self.depth = max(self.ks)
        self.reference_depth = max(self.reference_cut(k) for k in self.ks)

    def reference_cut(self, k: int) -> int:
        """How deep the reference list is read for the value at cut-off ``k`` (``ref_k``, else k)."""
        ref_k = self.settings.get("ref_k")
        return k if ref_k is None else int(ref_k)

    def configuration(self) -> dict[str, Any]:
        return {"kind": "overlap", "family": self.family, "ks": list(self.ks), "settings": dict(self.settings)}

    def check_ties(self, ties: str) -> None:
        if ties not in OVERLAP_TIES:
            raise ValueError(f"{self.family} compares two lists of item ids, with no relevance to order equal scores "
                             f"by: `ties` must be one of {OVERLAP_TIES}, got {ties!r}")

    def rules(self, ties: str, validate_args: bool, num_groups: int | None = None) -> Rules:
        """How each side is ranked: the tie order, the checks (of the groups too, with ``num_groups``), an id
        repeated in a list refused."""
        self.check_ties(ties)
        return Rules(ties, None, validate_args, "error", num_groups)

    def values(self, own: Tensor, reference: Tensor) -> tuple[Tensor, Tensor]:
        """Per-query values [B, Q] float64 (0 where not counted) and whether each counts [B, Q], from the two
        lists ``own`` [B, K] and ``reference`` [B, R] (-1 past a short list, real ids first)."""
        positions = reference_positions(own, reference)
        values, counted = [], []
        if self.family == "rbo":
            overlap = overlap_at_depths(positions, self.depth)
            own_length, reference_length = (own >= 0).sum(1), (reference >= 0).sum(1)
            for k in self.ks:
                values.append(rank_biased_overlap(overlap, own_length, reference_length, k,
                                                  self.settings["patience"], self.settings["variant"]))
                counted.append(torch.ones_like(own_length, dtype=torch.bool))  # LensKit: every query, 0 if empty
        else:
            for k in self.ks:
                if self.family == "intersection":
                    value, flag = intersection(positions, own, k, self.reference_cut(k))
                else:
                    value, flag = jaccard(positions, own, reference, k)
                values.append(value)
                counted.append(flag)
        return torch.stack(values, dim=1), torch.stack(counted, dim=1)

    # the member interface (torchrec_eval.members.interface) -----------------------------------------
    def add_states(self, metric: Any, num_groups: int) -> None:
        default = torch.zeros(num_groups, 3 * len(self.keys), dtype=torch.float64)
        metric.add_state("overlap_stats", default=default, dist_reduce_fx="sum")

    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        extras = batch.extras or {}
        if "reference_ids" not in extras:
            raise ValueError(f"{self.family} needs the reference list of each query: this batch holds none, got "
                             f"extras={sorted(extras)}")
        return self.values(batch.top_k().listed_ids(), extras["reference_ids"])

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        values, counted = self.per_query(metric, batch)
        rows = torch.cat([values, values * values, counted.to(torch.float64)], dim=1)
        return lambda: accumulate(metric.overlap_stats, rows, batch.groups, batch.weights)

    def moments(self, metric: Any) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        q, stats = len(self.keys), metric.overlap_stats
        return {key: (stats[:, i], stats[:, q + i], stats[:, 2 * q + i]) for i, key in enumerate(self.keys)}

    def compute(self, metric: Any) -> dict[str, Tensor]:
        return {key: total / count for key, (total, _, count) in self.moments(metric).items()}


def overlap_values(family: str, k: Any, options: dict[str, Any], inputs: dict[str, Any], reduction: Reduction,
                   ties: str, validate_args: bool) -> Tensor | dict[str, Tensor]:
    """The body of the overlap functions (:mod:`torchrec_eval.beyond.functional`): one batch through one
    :class:`OverlapMember`, as a class sees it; the mean over counted queries (NaN: none) or each query's value
    (NaN: not counted); a tensor for an int ``k``, a dict for a sequence of them."""
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    ks = list(k) if isinstance(k, (list, tuple)) else [k]
    member = OverlapMember(family, ks, options)
    own, reference = ranked_pair(**inputs, depth=member.depth, reference_depth=member.reference_depth,
                                 rules=member.rules(ties, validate_args))
    values, counted = member.values(own.listed_ids(), reference)
    if reduction == "none":
        results = values.masked_fill(~counted, float("nan"))
    else:
        results = values.sum(0) / counted.sum(0, dtype=torch.float64)  # 0/0 = NaN when no query counts
    columns = dict(zip(member.keys, results.unbind(-1), strict=True))
    return columns if isinstance(k, (list, tuple)) else columns[member.keys[0]]
