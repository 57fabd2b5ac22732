"""Which queries each value of the top-k member counts: the count columns of its state.

Column 0 counts the queries kept by ``empty_target_action`` (every value's count by default);
``"listed"`` those of them with a non-empty list (``empty_list_action="skip"``); ``("hit", j)`` those with a
relevant item in the top min(k, R) of value ``j`` (R-Precision, ``no_hit_action="skip"``).
"""

from __future__ import annotations

import functools
from typing import Any

from torchrec_eval.ranking.entries import Entry


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
            elif options.get("empty_list_action") == "skip":
                kind = "listed"
            else:
                kind = "all"
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
                elif options.get("empty_list_action") == "skip":
                    out.append((j, "listed"))
                else:
                    out.append((j, "all"))
            j += 1
    return out
