"""A (query, document) listed twice in one table: refused, as trec_eval refuses it, or read as ranx
reads it (the last line's value, at the first line's place)."""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from torchrec_eval.trec.keys import PairIndex
from torchrec_eval.trec.parse import decode_keys, line_numbers


class TableFields(TypedDict):
    """The fields of a table read from a file: the keywords of :class:`~torchrec_eval.trec.tables.Run` and
    :class:`~torchrec_eval.trec.tables.Qrels`."""

    path: str
    queries: np.ndarray
    query_index: np.ndarray
    doc_key: np.ndarray
    lines: np.ndarray | None
    pairs: PairIndex


def _same_entries(table: TableFields) -> tuple[np.ndarray, np.ndarray]:
    """(first, second): pairs of entries of one table with the same query and document."""
    pairs, query, keys = table["pairs"], table["query_index"], table["doc_key"]
    same = pairs.same_prefix()
    if same.size and np.any(same[1:] == same[:-1] + 1):  # three equal prefixes: sort exactly instead
        order = np.lexsort([keys[:, w] for w in range(keys.shape[1] - 1, -1, -1)] + [query])
        first, second = order[:-1], order[1:]
    else:
        first, second = pairs.entry(same), pairs.entry(same + 1)
    equal = (query[first] == query[second]) & (keys[first] == keys[second]).all(axis=1)
    return first[equal], second[equal]


def last_value_first_place(table: TableFields, numbers: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """A (query, document) listed more than once, read as a Python dict reads it (ranx's ``from_file``):
    the value of its last line, at the place of its first. Returns the entries to keep (None: no
    repeat) and the values."""
    first, second = _same_entries(table)
    if not first.size:
        return None, numbers
    line = line_numbers(table["lines"], len(numbers))
    early = np.where(line[first] < line[second], first, second)
    late = np.where(line[first] < line[second], second, first)
    numbers = numbers.copy()
    while np.any(numbers[early] != numbers[late]):  # a chain a < b < c: one step down it per pass
        numbers[early] = numbers[late]
    keep = np.ones(len(line), dtype=bool)
    keep[late] = False
    return keep, numbers


def refuse_repeats(table: TableFields, what: str) -> None:
    first, second = _same_entries(table)
    if first.size:
        line = line_numbers(table["lines"], len(table["query_index"]))
        i = int(np.argmin(np.maximum(line[first], line[second])))
        a, b = sorted((int(first[i]), int(second[i])), key=lambda e: line[e])
        raise ValueError(f"{table['path']}:{int(line[b])}: document {str(decode_keys(table['doc_key'][[a]])[0])!r} "
                         f"is listed twice for query {str(table['queries'][table['query_index'][a]])!r} in this {what} "
                         f"(first at line {int(line[a])})")
