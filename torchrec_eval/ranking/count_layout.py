"""Which queries each value of the top-k member counts: the count columns of its state.

Column 0 counts the queries kept by ``empty_target_action`` (every value's count by default);
``"listed"`` those of them with a non-empty list (``empty_list_action="skip"``); ``("hit", j)`` those with a
relevant item in the top min(k, R) of value ``j`` (R-Precision, ``no_hit_action="skip"``). A family whose
empty query is another (its registry entry's ``empty_basis``) counts the queries that ``empty_target_action``
keeps for it: those with a non-relevant candidate (FallOut): ``"non_relevant"``, and ``"listed_non_relevant"``
with a non-empty list; those with a judged item (Judged@k): ``"judged_items"`` and ``"listed_judged_items"``.
"""

from __future__ import annotations

import functools
from typing import Any

from torchrec_eval.ranking.entries import Entry
from torchrec_eval.ranking.registry import REGISTRY

#: the count kinds of the queries kept for a family of each empty basis (``TopKFamily.empty_basis``): every
#: kept query, and those of them with a non-empty list
BASIS_KINDS = {"relevant": ("all", "listed"), "non_relevant": ("non_relevant", "listed_non_relevant"),
               "judged_items": ("judged_items", "listed_judged_items")}
#: the empty basis of each count kind of :data:`BASIS_KINDS` (the others, R-Precision's hits, count by R)
KIND_BASIS = {kind: basis for basis, kinds in BASIS_KINDS.items() for kind in kinds}


@functools.lru_cache(maxsize=256)
def count_layout(entries: tuple[Entry, ...]) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """Which count column divides each value, and what each count column counts (see the module).

    Returns (the count column of each value, the kind of each column).
    """
    kinds: list[Any] = ["all"]
    columns: list[int] = []
    for entry in entries:
        options = dict(entry.options)
        for _ in entry.ks:
            if options.get("no_hit_action") == "skip":  # an empty list has no hit: "listed" is implied
                kind: Any = ("hit", len(columns))
            else:
                kind = _kept_kind(entry, listed=options.get("empty_list_action") == "skip")
            if kind not in kinds:
                kinds.append(kind)
            columns.append(kinds.index(kind))
    for _, kind in zero_kinds(entries):
        if kind not in kinds:
            kinds.append(kind)
    return tuple(columns), tuple(kinds)


def zero_kinds(entries: tuple[Entry, ...]) -> list[tuple[int, Any]]:
    """(value index, count kind) of each value with ``empty_mean="zero"``: the value is 0.0 where that
    count is 0. Its own count, except R-Precision with ``no_hit_action="skip"``, whose own count
    (hits in the top min(k, R)) may be 0 while the top k has hits (MS Recommenders: NaN): there the
    kind ``("top_hit", j)`` counts the kept queries with a relevant item in the top k."""
    out: list[tuple[int, Any]] = []
    j = 0
    for entry in entries:
        options = dict(entry.options)
        for _ in entry.ks:
            if options.get("empty_mean") == "zero":
                if options.get("no_hit_action") == "skip":
                    out.append((j, ("top_hit", j)))
                else:
                    out.append((j, _kept_kind(entry, listed=options.get("empty_list_action") == "skip")))
            j += 1
    return out


def _kept_kind(entry: Entry, listed: bool) -> str:
    """The count kind of the queries ``empty_target_action`` keeps for ``entry`` (with a non-empty list if ``listed``)."""
    every, with_a_list = BASIS_KINDS[REGISTRY[entry.name].empty_basis]
    return with_a_list if listed else every  # (not a tuple indexed by a bool: torch 2.11's dynamo refuses it)
