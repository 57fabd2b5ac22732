"""Ids as uint64 keys, matched by a 64-bit hash of their bytes checked word by word: the distinct
queries of a table (:func:`code_queries`) and the hashes of (query, document) pairs (:class:`PairIndex`,
looked up by :mod:`~torchrec_eval.trec.matching`), so that no string is made per line.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from torchrec_eval.trec.parse import decode_keys

LOOKUP_CHUNK = 1 << 14  # pairs hashed or looked up at once (their temporaries: about 1 MB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place: a bijection of uint64 that spreads every input bit."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _hash_words(keys: np.ndarray, seed: np.ndarray | None = None) -> np.ndarray:
    """[M] uint64 hash of each row of [M, k] keys (ignoring trailing zero words, so that the width of
    the key matrix does not matter), chained from ``seed`` (not modified)."""
    h = np.full(len(keys), 0x9E3779B97F4A7C15, dtype=np.uint64) if seed is None else seed ^ keys[:, 0]
    if seed is None:
        h ^= keys[:, 0]
    _mix(h)
    for w in range(1, keys.shape[1]):
        word = keys[:, w]
        h = np.where(word != 0, _mix(h ^ word), h)
    return h


def pad_words(keys: np.ndarray, words: int) -> np.ndarray:
    return keys if keys.shape[1] == words else np.pad(keys, ((0, 0), (0, words - keys.shape[1])))


class PairIndex:
    """The (query, document) pairs of a table, sorted by hash: the hash's high bits with the entry's
    index in the low bits, so that one ``np.sort`` (no argsort) groups equal pairs and finds entries."""

    def __init__(self, query_hash: np.ndarray, query_index: np.ndarray, doc_key: np.ndarray) -> None:
        self.shift = np.uint64(max(1, int(len(query_index)).bit_length()))
        self.sorted = np.empty(len(query_index), dtype=np.uint64)
        for start in range(0, len(query_index), LOOKUP_CHUNK):  # chunks: no table-long temporaries
            part = slice(start, start + LOOKUP_CHUNK)
            hashes = _hash_words(doc_key[part], query_hash[query_index[part]])
            hashes >>= self.shift
            hashes <<= self.shift
            hashes |= np.arange(start, start + len(hashes), dtype=np.uint64)
            self.sorted[part] = hashes
        self.sorted.sort()
        self.query_hash = query_hash

    @classmethod
    def of(cls, query_keys: np.ndarray, query_index: np.ndarray, doc_key: np.ndarray) -> PairIndex:
        """The index of a table's entries: ``query_keys`` [Q, k] the keys of its distinct queries."""
        return cls(_hash_words(query_keys), query_index, doc_key)

    def reindexed(self, query_index: np.ndarray, doc_key: np.ndarray) -> PairIndex:
        """The index of other entries of the same queries (the table less its repeated entries)."""
        return PairIndex(self.query_hash, query_index, doc_key)

    def entry(self, positions: NDArray[np.intp]) -> NDArray[np.int64]:
        return (self.sorted[positions] & ((np.uint64(1) << self.shift) - np.uint64(1))).astype(np.int64)

    def prefix(self, positions: NDArray[np.intp]) -> NDArray[np.uint64]:
        return self.sorted[positions] >> self.shift

    def prefix_of(self, doc_keys: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The hash prefix of (query ``codes`` into this index's queries, document ``doc_keys``) pairs, to
        look up among :meth:`prefix`."""
        return _hash_words(doc_keys, self.query_hash[codes]) >> self.shift

    def same_prefix(self) -> np.ndarray:
        """Positions p whose entry's hash prefix equals that of the entry at p + 1."""
        prefix = self.sorted >> self.shift
        return np.flatnonzero(prefix[1:] == prefix[:-1])


def code_queries(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct query ids, their keys, [M] index into them) from [M, k] keys; files list a
    query's lines together, so only the first line of each block is decoded."""
    if not len(keys):
        return np.zeros(0, dtype=str), keys, np.zeros(0, dtype=np.int32)
    heads = np.flatnonzero(np.concatenate([[True], (keys[1:] != keys[:-1]).any(axis=1)]))
    head_keys = keys[heads]
    # distinct ids by their hash (a sort of integers), checked exactly; rows of words sort far slower
    _, representative, inverse = np.unique(_hash_words(head_keys), return_index=True, return_inverse=True)
    distinct = head_keys[representative]
    if not (distinct[inverse] == head_keys).all():  # two ids with one hash: sort the rows themselves
        distinct, inverse = np.unique(head_keys, axis=0, return_inverse=True)
    names = decode_keys(distinct)
    order = np.argsort(names, kind="stable")
    rank = np.empty(len(order), dtype=np.int32)  # int32: fewer queries than 2**31; [M] below
    rank[order] = np.arange(len(order))
    index = np.repeat(rank[inverse.reshape(-1)], np.diff(np.append(heads, len(keys))))
    return names[order], distinct[order], index
