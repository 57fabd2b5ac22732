"""Vectorised reading of whitespace-separated TREC files (runs, qrels) into column arrays.

The file is read in chunks of whole lines as bytes; each chunk is split into tokens by numpy
operations on its bytes (no Python loop over lines). A chunk whose lines all have the plain layout
(one space or tab between the expected columns, ``\\n`` line ends, no comment) takes a fast path that
finds the separators in one pass; any other chunk (runs of blanks, leading blanks, ``\\r\\n``,
comments, extra run columns, blank lines) goes through a general tokenizer, also vectorised.

Columns come back as

* **keys**: ``[M, k]`` uint64, the token's bytes as big-endian 8-byte words, zero padded. Two tokens
  are equal iff their keys are; rows compare (lexicographically) in byte order, which is ``strcmp``'s
  order, trec_eval's. No Python string is made per line.
* **numbers**: ``[M]`` float64, parsed exactly (correctly rounded, as ``strtod``): plain decimals with
  up to 15 digits are parsed by array arithmetic, anything else (exponents, ``inf``) by Python's
  ``float`` on those tokens only.

Memory: the reader's own working memory is a few times a chunk's bytes (a line longer than a read makes
one chunk), whatever the lengths of the tokens: keys are read through windows of at most 64 bytes, long
number tokens in groups of similar lengths (never the square of the longest token). A key column is at
most 8 words a line whatever its ids' lengths: an id of more than 56 bytes is held as its first 56 bytes
and its rank among the column's distinct long ids, whose bytes are kept once (:class:`LongKeys`), so
that what the reader returns is a small multiple of the file's size (not its lines x its longest id).

Errors are ``ValueError`` messages starting with ``FILE:LINE:``.

Example:
    >>> import os, tempfile
    >>> from torchrec_eval.trec.parse import decode_keys, read_columns
    >>> path = os.path.join(tempfile.mkdtemp(), "run")
    >>> with open(path, "w") as f:
    ...     _ = f.write("q1 Q0 doc-7 1 2.5 tag\\n# a comment\\nq1 Q0 d2 2 -0.125 tag\\n")
    >>> table = read_columns(path, ("qid", "Q0", "docid", "rank", "score", "tag"), "run",
    ...                      keys=(0, 2), numbers=(4,), comment="leading", extra_columns=True)
    >>> decode_keys(table.keys[2]).tolist(), table.numbers[4].tolist(), table.line.tolist()
    (['doc-7', 'd2'], [2.5, -0.125], [1, 3])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

__all__ = ["Columns", "LongKeys", "decode_keys", "index_dtype", "line_numbers", "long_ids", "read_columns",
           "translate_long"]

CHUNK_BYTES = 1 << 18  # small enough for the per-chunk temporaries to stay in cache
_SPACE, _TAB, _NEWLINE, _HASH, _DOT, _MINUS, _PLUS, _ZERO = 32, 9, 10, 35, 46, 45, 43, 48
_EXACT_DIGITS = 15  # a decimal mantissa of <= 15 digits is an exact float64 integer (< 2**53)
_POWERS_OF_TEN = np.array([10.0**i for i in range(_EXACT_DIGITS + 1)])  # exact doubles


def index_dtype(size: int) -> type[np.int32] | type[np.int64]:
    """The integer type of positions into ``size`` entries: int32 where it holds them."""
    return np.int32 if size < (1 << 31) else np.int64


def line_numbers(lines: np.ndarray | None, count: int) -> np.ndarray:
    """[count] the 1-based line of each entry: ``lines``, or for None (a file whose every line is an
    entry, held without an array) 1, 2, ..., count."""
    return lines if lines is not None else np.arange(1, count + 1, dtype=index_dtype(count))


@dataclass
class Columns:
    """The parsed columns of a file: ``keys[c]`` [M, k] uint64 (k <= 8; :class:`LongKeys` where a column
    has ids of more than 56 bytes), ``numbers[c]`` [M] float64 and the
    1-based ``line`` [M] of each data line (``lines``: None when every line is one); ``last`` holds the
    last data line's tokens of the ``last`` columns asked for (trec_eval keeps the run tag of the last line)."""

    path: str
    keys: dict[int, np.ndarray]
    numbers: dict[int, np.ndarray]
    lines: np.ndarray | None
    last: dict[int, str]
    size: int

    def __len__(self) -> int:
        return self.size

    @property
    def line(self) -> np.ndarray:
        return line_numbers(self.lines, self.size)

    def finite(self, column: int, name: str) -> np.ndarray:
        """[M] the numbers of ``column`` (``name`` in messages); a ``FILE:LINE:`` ValueError where one is
        not finite."""
        values = self.numbers[column]
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(f"{self.path}:{int(self.line[bad[0]])}: the {name} must be a finite "
                             f"number, got {float(values[bad[0]])!r}")
        return values


# Ids of more than _SHORT_ID bytes (none in a usual file) are held as their first _SHORT_ID bytes and one
# rank word (:class:`LongKeys`): a key column is at most _ID_WORDS words wide, whatever its ids' lengths.
_SHORT_ID = 56
_ID_WORDS = _SHORT_ID // 8 + 1
_ABSENT = np.uint64(0xFFFFFFFFFFFFFFFF)  # a rank word no id of the other file has (:func:`translate_long`)


class LongKeys(np.ndarray):
    """[M, 8] uint64 keys of a column with ids of more than 56 bytes: each id's first 56 bytes as big-endian
    words (zero padded), then 0 for an id of at most 56 bytes, or 1 + the id's rank among ``long``, the
    column's distinct long ids in byte order. Rows then compare, sort and hash as the ids' bytes do (the
    first 56 bytes first; at a tie the shorter id first, then the ranks) in 64 bytes a line, not the
    longest id's width; ``long`` follows the array through indexing (``__array_finalize__``), so that
    rows taken from it decode. Keys of two files are compared after :func:`translate_long`."""

    long: tuple[bytes, ...] = ()

    def __array_finalize__(self, obj: NDArray[Any] | None) -> None:
        self.long = getattr(obj, "long", ())

    def __reduce__(self) -> tuple[Any, ...]:  # ``long`` pickled with the words (ndarray's state has no room for it)
        # an ndarray's __reduce__ is a (constructor, args, state) tuple, never object's str form
        constructor, args, state = cast(tuple[Any, Any, Any], super().__reduce__())
        return constructor, args, (state, self.long)

    def __setstate__(self, state: object) -> None:
        # (ndarray's state, long), as __reduce__ above makes it
        words, self.long = cast(tuple[Any, tuple[bytes, ...]], state)
        super().__setstate__(words)


def long_ids(keys: np.ndarray) -> tuple[bytes, ...]:
    """The distinct long ids whose ranks ``keys`` holds (none for keys of short ids only)."""
    return getattr(keys, "long", ())


def translate_long(keys: np.ndarray, into: np.ndarray) -> np.ndarray:
    """``keys`` (plain) with the rank word of each long id replaced by that of the same id among the long
    ids of ``into`` (another file's keys), or a value no rank takes where ``into`` has no such id: ranks
    are per column, so keys of two files compare equal only once in one numbering. A dict over the
    distinct long ids, no work on short ones."""
    source, target = long_ids(keys), long_ids(into)
    if not source or source is target:
        return np.asarray(keys)
    where = {doc: rank for rank, doc in enumerate(target, 1)}
    mapping = np.array([0] + [where.get(doc, _ABSENT) for doc in source], dtype=np.uint64)
    out = np.array(keys)  # a plain copy
    out[:, _ID_WORDS - 1] = mapping[out[:, _ID_WORDS - 1]]
    return out


def decode_keys(keys: np.ndarray) -> np.ndarray:
    """``[M, k]`` uint64 keys back to a numpy str array (UTF-8; undecodable bytes escaped); an object
    array for keys with long ids (a str array would take 4 bytes x rows x the longest id)."""
    if keys.shape[0] == 0:
        return np.zeros(0, dtype=str)
    long = long_ids(keys)
    if long:
        rank = np.asarray(keys[:, _ID_WORDS - 1])
        out = decode_keys(np.asarray(keys[:, : _ID_WORDS - 1])).astype(object)
        rows = np.flatnonzero(rank)
        out[rows] = [long[r - 1].decode("utf-8", "surrogateescape") for r in rank[rows].tolist()]
        return out
    raw = np.ascontiguousarray(keys.astype(">u8")).view(f"S{8 * keys.shape[1]}").ravel()
    try:
        return np.char.decode(raw, "utf-8")
    except UnicodeDecodeError:
        return np.array([value.decode("utf-8", "surrogateescape") for value in raw.tolist()], dtype=str)


# Byte-parallel arithmetic on uint64 words (8 bytes at once): exact per-byte tests and digit sums.
_U = np.uint64
_LOW7, _HIGH, _ONES = _U(0x7F7F7F7F7F7F7F7F), _U(0x8080808080808080), _U(0x0101010101010101)
_ZEROS8, _DOTS8 = _U(0x3030303030303030), _U(0x1E1E1E1E1E1E1E1E)  # '0' x 8; '.' ^ '0' x 8


def _zero_bytes(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """0x80 in each byte of ``x`` that is 0, else 0 (exact: no borrow between bytes)."""
    return ~(((x & _LOW7) + _LOW7) | x | _LOW7)


def _bytes_over_9(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """0x80 in each byte of ``x`` that is >= 10, else 0."""
    return (((x & _LOW7) + _U(0x7676767676767676)) | x) & _HIGH


def _count_flags(flags: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """How many bytes of each word hold 0x80."""
    return ((flags >> _U(7)) * _ONES) >> _U(56)


def _eight_digits(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The number written by 8 digit values (0..9), the first (lowest address) most significant."""
    x = (x * _U(10) + (x >> _U(8))) & _U(0x00FF00FF00FF00FF)
    x = (x * _U(100) + (x >> _U(16))) & _U(0x0000FFFF0000FFFF)
    return (x * _U(10000) + (x >> _U(32))) & _U(0x00000000FFFFFFFF)


def _byte_tables(width: int, right: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per token length L (0..width): a [width + 1, width // 8] uint64 mask keeping the token's bytes of
    a ``width``-byte window (left or right aligned), and the complement. Made once, for small widths
    only: the table grows as the square of the width."""
    keep = np.zeros((width + 1, width), dtype=np.uint8)
    for length in range(width + 1):
        if right:
            keep[length, width - length :] = 0xFF
        else:
            keep[length, :length] = 0xFF
    keep_words = keep.view(np.uint64)
    return keep_words, ~keep_words


_NUMBER_WIDTH = 16
_NUMBER_KEEP, _NUMBER_PAD = _byte_tables(_NUMBER_WIDTH, right=True)
_FIRST_BYTE = np.zeros((_NUMBER_WIDTH + 1, _NUMBER_WIDTH), dtype=np.uint8)
_FIRST_BYTE[np.arange(1, _NUMBER_WIDTH + 1), _NUMBER_WIDTH - np.arange(1, _NUMBER_WIDTH + 1)] = 0xFF
_FIRST_BYTE = _FIRST_BYTE.view(np.uint64)  # the token's first byte in the right-aligned window
_POWERS = 10 ** np.arange(_NUMBER_WIDTH + 1, dtype=np.int64)
# Key windows up to _KEY_WINDOW bytes wide (every id of a usual file) are masked by these tables; wider
# ones without a table (:func:`_token_words`), in groups of similar lengths (:func:`_key_groups`).
_KEY_WINDOW = 64
_KEY_KEEP = [np.ascontiguousarray(_byte_tables(_KEY_WINDOW, right=False)[0][: 8 * k + 1, :k])
             for k in range(_KEY_WINDOW // 8 + 1)]  # by words: contiguous, gathered faster


def _windows(buffer: NDArray[np.uint8], at: NDArray[np.intp], width: int, before: bool,
             fill: int) -> NDArray[np.uint64]:
    """[n, width // 8] uint64: the ``width`` bytes of ``buffer`` starting at ``at`` (or ending there, if
    ``before``), as words in address order; ``fill`` pads past the buffer's ends."""
    if before:
        padded = np.concatenate([np.full(width, fill, dtype=np.uint8), buffer])
    else:  # padded only as far as the last window needs: no copy of a chunk for a long token at its start
        pad = max(0, int(at.max()) + width - len(buffer)) if len(at) else width
        padded = np.concatenate([buffer, np.full(pad, fill, dtype=np.uint8)]) if pad else buffer
    return sliding_window_view(padded, width)[at].view(np.uint64)


_KeyGroup = tuple[np.ndarray | None, np.ndarray]  # (rows or None for all, [n, k] words)


def _key_words(length: np.ndarray) -> int:
    """Words of the key of the longest of tokens of ``length`` bytes (at least 1)."""
    return max(1, (int(length.max()) + 7) // 8) if len(length) else 1


def _token_words(buffer: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """[n, k] uint64 big-endian words of the tokens at ``start`` of ``length`` bytes, zero padded to the
    longest (k words): n x k bytes, so the caller groups tokens of similar lengths."""
    width = 8 * _key_words(length)
    words = _windows(buffer, start, width, before=False, fill=0)
    if width <= _KEY_WINDOW:
        words &= _KEY_KEEP[width // 8][length]
    else:  # no mask table (one of this width would cost its square): zero the words past each token
        full, part = length // 8, length % 8
        words[np.arange(width // 8) >= (full + (part > 0))[:, None]] = 0
        rows = np.flatnonzero(part)  # the last word, part-filled: its first bytes are its low ones
        words[rows, full[rows]] &= (np.uint64(1) << (8 * part[rows]).astype(np.uint64)) - np.uint64(1)
    return words.byteswap(inplace=True)  # big-endian: integer order is byte order


def _key_groups(buffer: np.ndarray, start: np.ndarray, end: np.ndarray) -> Iterator[_KeyGroup]:
    """Yield (rows, [n, k] big-endian words) of the tokens ``buffer[start:end]``.

    Usually all at once (``rows`` None): where the longest is at most ``_KEY_WINDOW`` bytes (every usual
    file) or windows of its width take at most twice the tokens' bytes. Otherwise a group of similar
    lengths at a time (``rows``: their positions), since one width for all would cost the chunk's tokens
    x the longest (gigabytes for one id of a megabyte among short ones). The groups are the tokens up to
    ``_KEY_WINDOW`` bytes, then lengths in (2**(g-1), 2**g]: a group's windows are under twice its
    shortest token, so they cost under twice the tokens' bytes (at most ``_KEY_WINDOW`` a token in the first).
    """
    length = end - start
    width = 8 * _key_words(length)
    if width <= _KEY_WINDOW or len(length) * width <= 2 * int(length.sum()):
        yield None, _token_words(buffer, start, length)
        return
    # the bit length of L - 1: lengths in (2**(g-1), 2**g] share g; all up to _KEY_WINDOW share one
    group = np.frexp(np.maximum(length - 1, _KEY_WINDOW - 1).astype(np.float64))[1]
    for g in np.flatnonzero(np.bincount(group)):  # a few, one per power of two (not np.unique: numpy.ma)
        rows = np.flatnonzero(group == g)
        yield rows, _token_words(buffer, start[rows], length[rows])


def _span_keys(buffer: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """[n, k] uint64 big-endian words of the tokens ``buffer[start:end]``, zero padded to the longest
    (the reader writes :func:`_key_groups` into its columns itself, without this n x k temporary)."""
    words = np.zeros((len(start), _key_words(end - start)), dtype=np.uint64)
    for rows, group_words in _key_groups(buffer, start, end):
        words[slice(None) if rows is None else rows, : group_words.shape[1]] = group_words
    return words


def _span_numbers(buffer: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values [n] float64, [n] bool: token not a plain decimal, left for numpy's parser).

    A plain decimal (``[+-]digits[.digits]``, <= 15 digits, <= 16 characters) is parsed exactly, 8
    digits at a time: its digits as one int64 mantissa ``m`` and ``f`` digits after the dot give
    ``m / 10**f``, one correctly rounded division of two exact doubles: what ``strtod`` returns.
    """
    length = end - start
    fits = np.minimum(length, _NUMBER_WIDTH)
    x = _windows(buffer, end, _NUMBER_WIDTH, before=True, fill=_ZERO)  # right aligned: units digit last
    x &= _NUMBER_KEEP[fits]
    x |= _NUMBER_PAD[fits] & _ZEROS8  # leading zeros do not change the value
    first = buffer[np.minimum(start, len(buffer) - 1)]
    negative = first == _MINUS
    signed = negative | (first == _PLUS)
    rows = np.flatnonzero(signed)
    if rows.size:  # the sign becomes a leading zero
        x[rows] = (x[rows] & ~_FIRST_BYTE[fits[rows]]) | (_FIRST_BYTE[fits[rows]] & _ZEROS8)
    x ^= _ZEROS8  # '0'..'9' -> 0..9
    dot = _zero_bytes(x ^ _DOTS8)
    other = _bytes_over_9(x) & ~dot
    x &= ~((dot >> _U(7)) * _U(0xFF))
    dots = (_count_flags(dot[:, 0]) + _count_flags(dot[:, 1])).astype(np.int64)
    value = _eight_digits(x[:, 0]).astype(np.int64) * 100_000_000 + _eight_digits(x[:, 1]).astype(np.int64)
    # digits after the dot: its flag is bit 8 * i + 7 of its word, for byte (column) i of that word
    high = dot[:, 1] != 0
    bit = np.frexp(np.where(high, dot[:, 1], dot[:, 0]).astype(np.float64))[1] - 1
    after = np.where(dots > 0, np.where(high, 7, 15) - (bit - 7) // 8, 0)
    # the dot counted as a 0 digit: the digits before it are one power of ten too high
    below = value % _POWERS[after + (dots > 0)]
    mantissa = np.where(dots > 0, (value - below) // 10 + below, value)
    digits = length - signed - dots
    plain = ((other[:, 0] | other[:, 1]) == 0) & (dots <= 1) & (digits > 0) & (digits <= _EXACT_DIGITS)
    plain &= length <= _NUMBER_WIDTH
    values = mantissa.astype(np.float64) / _POWERS_OF_TEN[np.minimum(after, _EXACT_DIGITS)]
    values[negative] = -values[negative]
    return values, ~plain


class _Columns:
    """The output columns, allocated once for the file's line count and filled chunk by chunk: no
    per-chunk parts to concatenate (small arrays that the heap keeps after they are freed)."""

    def __init__(self, capacity: int, keys: Sequence[int], numbers: Sequence[int]) -> None:
        self.size, self.capacity = 0, capacity
        self.keys = {c: np.zeros((capacity, 1), dtype=np.uint64) for c in keys}
        self.long: dict[int, list[tuple[np.ndarray, list[bytes]]]] = {c: [] for c in keys}  # (rows, ids)
        self.numbers = {c: np.empty(capacity, dtype=np.float64) for c in numbers}
        self.line: np.ndarray | None = None  # made at the first line that is not an entry

    def put_lines(self, line: np.ndarray) -> None:
        if self.line is None:
            if line[0] == self.size + 1 and line[-1] == self.size + len(line):  # every line an entry so far
                return
            self.line = np.empty(self.capacity, dtype=index_dtype(self.capacity))
            self.line[: self.size] = np.arange(1, self.size + 1)
        self.line[self.size : self.size + len(line)] = line

    def put_keys(self, column: int, chunk: bytes, buffer: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        """Write the keys of the tokens ``buffer[start:end]`` into the next rows of ``column``: their first
        ``_SHORT_ID`` bytes; the longer tokens' bytes are kept aside for their rank (:meth:`_ranked`)."""
        out, length = self.keys[column], end - start
        words = _key_words(length)
        if words > _ID_WORDS - 1:  # a token of more than _SHORT_ID bytes (rare): the first ones, a rank
            long = np.flatnonzero(length > _SHORT_ID)
            ids = [chunk[s : s + n] for s, n in zip(start[long].tolist(), length[long].tolist(), strict=True)]
            self.long[column].append((self.size + long, ids))
            words, length = _ID_WORDS, np.minimum(length, _SHORT_ID)
        if words > out.shape[1]:  # a longer token than any before: widen the column (rare)
            wider = np.zeros((len(out), words), dtype=np.uint64)
            wider[:, : out.shape[1]] = out
            self.keys[column] = out = wider
        head = _token_words(buffer, start, length)
        out[self.size : self.size + len(start), : head.shape[1]] = head

    def _ranked(self, column: int) -> np.ndarray:
        """The keys of ``column`` with the rank word of each long id written (1 + its rank among the
        column's distinct long ids in byte order), as :class:`LongKeys`; a sort of the long ids only.
        Trailing NUL bytes are dropped, as the zero padding of the words drops them."""
        keys, parts = self.keys[column], self.long.pop(column)
        ids = [doc.rstrip(b"\0") for _, docs in parts for doc in docs]
        distinct = sorted({doc for doc in ids if len(doc) > _SHORT_ID})
        if not distinct:
            return keys
        where = {doc: rank for rank, doc in enumerate(distinct, 1)}
        rows = np.concatenate([rows for rows, _ in parts])
        keys[rows, _ID_WORDS - 1] = np.fromiter((where.get(doc, 0) for doc in ids), dtype=np.uint64, count=len(ids))
        ranked = keys.view(LongKeys)
        ranked.long = tuple(distinct)
        return ranked

    def columns(self) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray], np.ndarray | None]:
        """The filled rows: the arrays shrunk in place (no copy) where blank or comment lines left rows."""
        arrays = [*self.keys.values(), *self.numbers.values()] + ([self.line] if self.line is not None else [])
        for array in arrays:
            if len(array) != self.size:
                array.resize((self.size, *array.shape[1:]), refcheck=False)
        keys = {c: self._ranked(c) for c in list(self.keys)}
        return keys, self.numbers, self.line


def _line_count(path: str) -> int:
    """Lines of the file (a last line without ``\\n`` counted): the rows to allocate."""
    count, tail = 0, b""
    with open(path, "rb") as handle:
        while data := handle.read(1 << 20):
            count += data.count(b"\n")
            tail = data[-1:]
    return count + (tail not in (b"", b"\n"))


def _plain_layout(buffer: np.ndarray, width: int, comment_byte: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Fast path: (line starts [n], separator positions [n, width]) when every line is ``width`` tokens
    with one space or tab between them and ``\\n`` at the end; None otherwise."""
    flat = np.flatnonzero(buffer <= _SPACE)
    lines = len(flat) // width
    if lines == 0 or len(flat) != lines * width:
        return None
    separators = flat.reshape(lines, width)
    starts = np.empty(lines, dtype=np.int64)
    starts[0] = 0
    starts[1:] = separators[:-1, -1] + 1
    between = buffer[separators[:, :-1]]
    if not (
        (buffer[separators[:, -1]] == _NEWLINE).all()
        and ((between == _SPACE) | (between == _TAB)).all()
        and (separators[:, 0] > starts).all()
        and (np.diff(separators, axis=1) > 1).all()
        and (buffer[starts] != comment_byte).all()
    ):
        return None
    return starts, separators


_Positions = NDArray[np.intp]


def _general_layout(buffer: np.ndarray, chunk: bytes, first_line: int, path: str, what: str, columns: tuple[str, ...],
                    comment: str, extra_columns: bool) -> tuple[_Positions, _Positions, _Positions, _Positions]:
    """General tokenizer: (data line indices in the chunk, token starts, token ends, first token of
    each data line). Blank and comment lines are skipped; a short (or, for qrels, long) line raises."""
    blank = (buffer == _SPACE) | ((buffer - np.uint8(_TAB)) < 5)  # C isspace: \t \n \v \f \r and space
    before = np.ones(len(buffer), dtype=bool)
    before[1:] = blank[:-1]
    after = np.ones(len(buffer), dtype=bool)
    after[:-1] = blank[1:]
    token_start = np.flatnonzero(~blank & before)
    token_end = np.flatnonzero(~blank & after) + 1
    newlines = np.flatnonzero(buffer == _NEWLINE)
    token_line = np.searchsorted(newlines, token_start)
    count = np.bincount(token_line, minlength=len(newlines))
    first = np.cumsum(count) - count
    line_start = np.zeros(len(newlines), dtype=np.int64)
    line_start[1:] = newlines[:-1] + 1
    if comment == "leading":  # the first non-blank character is '#'
        commented = np.zeros(len(newlines), dtype=bool)
        nonblank = np.flatnonzero(count)
        commented[nonblank] = buffer[token_start[first[nonblank]]] == _HASH
    else:  # '#' in the first column only (a document id may hold '#')
        commented = buffer[line_start] == _HASH
    data = (count > 0) & ~commented
    width = len(columns)
    bad = np.flatnonzero(data & ((count < width) if extra_columns else (count != width)))
    if bad.size:
        i = int(bad[0])
        text = chunk[line_start[i] : newlines[i]].decode("utf-8", "replace").rstrip()
        swapped = " (a qrels line? torchrec-eval takes the run first, trec_eval the qrels)" if (
            what == "run" and int(count[i]) == 4) else ""
        raise ValueError(f"{path}:{first_line + i}: a {what} line has {width} columns ({' '.join(columns)}"
                         f"{', then anything' if extra_columns else ''}), got {int(count[i])}: {text!r}{swapped}")
    rows = np.flatnonzero(data)
    return rows, token_start, token_end, first[rows]


def _parse_tokens(buffer: np.ndarray, start: np.ndarray, end: np.ndarray, line: np.ndarray, path: str,
                  name: str, columns: tuple[str, ...]) -> np.ndarray:
    """Numbers that are not plain decimals, by numpy's string to float conversion, a length group at a
    time (:func:`_key_groups`: a long token does not widen the others); a ``FILE:LINE:`` ValueError at
    the first line whose token is not a number."""
    values = np.empty(len(start), dtype=np.float64)
    bad: list[tuple[int, bytes]] = []
    for group, words in _key_groups(buffer, start, end):
        rows = slice(None) if group is None else group
        tokens = words.astype(">u8").view(f"S{8 * words.shape[1]}").ravel()
        try:
            values[rows] = tokens.astype(np.float64)
        except ValueError:
            i = next((i for i, token in enumerate(tokens.tolist()) if not _is_float(token)), None)
            if i is None:  # numpy refused a token that Python's float takes: its own message
                raise
            bad.append((int(line[rows][i]), tokens[i]))
    if bad:
        at, token = min(bad, key=lambda entry: entry[0])
        raise ValueError(f"{path}:{at}: the {name} column ({columns.index(name) + 1} of {' '.join(columns)}) "
                         f"must be a number, got {token.decode('utf-8', 'replace')!r}")
    return values


def _is_float(token: bytes) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _parse_chunk(chunk: bytes, first_line: int, out: _Columns, last: dict[int, str], path: str, what: str,
                 columns: tuple[str, ...], comment: str, extra_columns: bool) -> None:
    buffer = np.frombuffer(chunk, dtype=np.uint8)
    plain = _plain_layout(buffer, len(columns), _HASH)
    if plain is not None:
        starts, separators = plain
        line = first_line + np.arange(len(starts))
        span_start = np.concatenate([starts[:, None], separators[:, :-1] + 1], axis=1)
        span_end = separators
    else:
        rows, token_start, token_end, first = _general_layout(buffer, chunk, first_line, path, what, columns,
                                                              comment, extra_columns)
        line = first_line + rows
        token = first[:, None] + np.arange(len(columns))
        span_start, span_end = token_start[token], token_end[token]
    if not len(line):
        return
    filled = slice(out.size, out.size + len(line))
    for c in out.keys:
        out.put_keys(c, chunk, buffer, span_start[:, c], span_end[:, c])
    for c, column in out.numbers.items():
        values, other = _span_numbers(buffer, span_start[:, c], span_end[:, c])
        other = np.flatnonzero(other)
        if other.size:  # exponents, inf, nan, long mantissas, or not a number: numpy's own parser
            values[other] = _parse_tokens(buffer, span_start[other, c], span_end[other, c], line[other], path,
                                          columns[c], columns)
        column[filled] = values
    out.put_lines(line)
    out.size += len(line)
    for c in last:
        last[c] = chunk[span_start[-1, c] : span_end[-1, c]].decode("utf-8", "replace")


def read_columns(path: str | os.PathLike[str], columns: tuple[str, ...], what: str, *, keys: Sequence[int] = (),
                 numbers: Sequence[int] = (), last: Sequence[int] = (), comment: str = "leading",
                 extra_columns: bool = False, progress: Callable[[int], None] | None = None) -> Columns:
    """Read the ``keys`` and ``numbers`` columns (indices into ``columns``) of a whitespace-separated file.

    Args:
        path: the file.
        columns: the names of the columns, for messages (``("qid", "iter", "docid", "rel")``).
        what: ``"run"`` or ``"qrels"``, for messages.
        keys: columns returned as [M, k] uint64 byte keys (k at most 8: ids of more than 56 bytes
            are held as :class:`LongKeys`).
        numbers: columns returned as [M] float64.
        last: columns whose token on the last data line is returned (as str).
        comment: ``"leading"``: a line whose first non-blank character is ``#`` is a comment (trec_eval
            10's runs); ``"column0"``: only a ``#`` in the first column (its qrels).
        extra_columns: allow tokens after the last column (ignored), as trec_eval 10 does in runs.
        progress: called with the byte count of each chunk read.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` for a line with the wrong number of columns or a number column
            that is not a number; ``"FILE: no such ... file"``.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such {what} file")
    out = _Columns(_line_count(path), keys, numbers)
    last_tokens = dict.fromkeys(last, "")
    line = 1
    parts: list[bytes] = []  # the unfinished last line: joined once its end is read, not copied per read
    with open(path, "rb") as handle:
        while data := handle.read(CHUNK_BYTES):
            if progress is not None:
                progress(len(data))
            cut = data.rfind(b"\n") + 1
            if not cut:  # no line ends here: a line longer than a read
                parts.append(data)
                continue
            chunk = b"".join([*parts, data[:cut]]) if parts else data[:cut]
            parts = [data[cut:]] if cut < len(data) else []
            _parse_chunk(chunk, line, out, last_tokens, path, what, columns, comment, extra_columns)
            line += chunk.count(b"\n")
    tail = b"".join(parts)
    if tail.strip():  # the end: a last line without '\n' gets one
        _parse_chunk(tail + b"\n", line, out, last_tokens, path, what, columns, comment, extra_columns)
    key_columns, number_columns, line_column = out.columns()
    return Columns(path=path, keys=key_columns, numbers=number_columns, lines=line_column, last=last_tokens,
                   size=out.size)
