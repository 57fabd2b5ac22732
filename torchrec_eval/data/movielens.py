"""Real data: MovieLens rating files, and RecBole's atomic ``.inter`` files, from a path you give.

Nothing is downloaded: point :func:`load_movielens` at a file you have. Formats, detected from the
first line (or named with ``format=``):

==============  ======================================  ========================================================
``format``      file                                    layout
==============  ======================================  ========================================================
``"u.data"``    MovieLens 100K ``u.data``               ``user item rating timestamp``, tab-separated, no header
``"dat"``       MovieLens 1M / 10M ``ratings.dat``      ``UserID::MovieID::Rating::Timestamp``, no header
``"csv"``       ml-latest, 20M, 25M ``ratings.csv``     header ``userId,movieId,rating,timestamp``
``"inter"``     RecBole ``.inter`` (``ml-100k.inter``)  header ``user_id:token<TAB>item_id:token<TAB>...``
==============  ======================================  ========================================================

A RecBole file needs ``user_id`` and ``item_id`` columns; ``rating`` (default 1) and ``timestamp``
(default: the row order) are read when present, other columns are ignored. Tokens that are all
integers are read as integers, so ``ml-100k.inter`` and ``u.data`` load to the same tensors.

The result is a :class:`~torchrec_eval.data.interactions.RatedInteractions`: user and item indices numbered in
sorted id order (``user_ids[u]`` is the original id of user ``u``), ratings, timestamps in seconds,
sorted by user, then time. It goes where the synthetic data goes: the splits of
:mod:`torchrec_eval.data.splits`, :func:`~torchrec_eval.data.interactions.padded_item_lists`, the demo's model.
Implicit feedback is a selection: ``data.select(data.rating >= 4)``.

Reading is vectorised (pandas' C parser, then whole-column checks); a malformed line is a
``ValueError`` that names the file and the line. pandas is needed (``pip install pandas``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from torchrec_eval.data.frames import require_pandas
from torchrec_eval.data.interactions import RatedInteractions, sort_by_user_time

if TYPE_CHECKING:
    import pandas
    from numpy.typing import NDArray

__all__ = ["FORMATS", "load_movielens"]

FORMATS = ("u.data", "dat", "csv", "inter")
_COLUMNS = ("user", "item", "rating", "timestamp")
_CSV_HEADER = "userId,movieId,rating,timestamp"
_INTER_NAMES = {"user_id": "user", "item_id": "item", "rating": "rating", "timestamp": "timestamp"}


def _detect(first_line: str, path: Path) -> str:
    if first_line.startswith("userId,"):
        return "csv"
    if "\t" in first_line and all(":" in field for field in first_line.split("\t")):
        return "inter"
    if "::" in first_line:
        return "dat"
    if first_line.count("\t") == 3:
        return "u.data"
    raise ValueError(
        f"{path}:1: cannot tell the format from the first line {first_line!r}; expected a MovieLens "
        f"u.data, ratings.dat or ratings.csv file or a RecBole .inter file, or pass format= one of {FORMATS}"
    )


def _data_line(path: Path, row: int, header: bool) -> tuple[int, str]:
    """The line number and text of data row ``row`` (blank lines are not rows): for error messages."""
    with path.open(encoding="utf-8") as lines:
        seen = -1
        for number, line in enumerate(lines, start=1):
            if (header and number == 1) or not line.strip():
                continue
            seen += 1
            if seen == row:
                return number, line.rstrip("\n")
    return 0, ""


def _first_bad_width(path: Path, sep: str, width: int, header: bool) -> tuple[int, str, int]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            text = line.rstrip("\r\n")
            if (header and number == 1) or not text.strip():
                continue
            if len(text.split(sep)) != width:
                return number, text, len(text.split(sep))
    return 0, "", width


def _read_table(path: Path, sep: str, width: int, header: bool, pd: Any) -> pandas.DataFrame:
    """Every data line as ``width`` string fields; a line with another number of fields is an error."""
    try:
        table = pd.read_csv(path, sep=sep, header=None, names=range(width), skiprows=1 if header else 0,
                            dtype=str, na_filter=False, engine="c", quoting=3, encoding="utf-8")
    except pd.errors.ParserError as error:
        table, problem = None, error  # a line with too many fields, found below
    if table is None or (table[width - 1] == "").any():  # pandas pads a short line with empty fields
        number, text, got = _first_bad_width(path, sep, width, header)
        if number:
            raise ValueError(f"{path}:{number}: expected {width} fields separated by {sep!r}, got {got}: {text!r}")
        if table is None:
            raise ValueError(f"{path}: {problem}")
    return table


def _numbers(table: pandas.DataFrame, column: int, name: str, path: Path, header: bool, pd: Any,
             integer: bool) -> NDArray[np.float64]:
    values: NDArray[np.float64] = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if integer:
        bad |= np.where(bad, False, values != np.round(values))
    if bad.any():
        row = int(np.argmax(bad))
        number, text = _data_line(path, row, header)
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{path}:{number}: expected {kind} for {name}, got {table[column].iloc[row]!r}: {text!r}")
    return values


def _ids(table: pandas.DataFrame, column: int, name: str, path: Path, header: bool, pd: Any,
         tokens: bool) -> NDArray[np.int64] | NDArray[np.object_]:
    """The id column: integers, or (RecBole tokens) strings unless every token is an integer."""
    if tokens:
        as_int = pd.to_numeric(table[column], errors="coerce")
        if as_int.isna().any() or (as_int != as_int.round()).any():
            strings: NDArray[np.object_] = table[column].to_numpy(dtype=object)
            return strings
        integers: NDArray[np.int64] = as_int.to_numpy(dtype=np.int64)
        return integers
    return _numbers(table, column, name, path, header, pd, integer=True).astype(np.int64)


def _inter_columns(header_line: str, path: Path) -> dict[str, int]:
    names = [field.split(":", 1)[0] for field in header_line.split("\t")]
    found = {_INTER_NAMES[name]: index for index, name in enumerate(names) if name in _INTER_NAMES}
    missing = [name for name in ("user_id", "item_id") if _INTER_NAMES[name] not in found]
    if missing:
        raise ValueError(f"{path}:1: a RecBole .inter header needs the fields {missing}, got {header_line!r}")
    return found


def load_movielens(path: str | Path, format: str | None = None) -> RatedInteractions:
    """Load a MovieLens ratings file (``u.data``, ``ratings.dat``, ``ratings.csv``) or a RecBole ``.inter``.

    Args:
        path: the file.
        format: ``"u.data"``, ``"dat"``, ``"csv"`` or ``"inter"``; default: detected from the first line.

    Returns:
        :class:`~torchrec_eval.data.interactions.RatedInteractions`, sorted by user, then timestamp (equal
        timestamps in file order).

    Raises:
        ImportError: if pandas is not installed.
        ValueError: for an unknown ``format``, a file whose format cannot be told, an empty file, or a
            malformed line (wrong number of fields, an id or timestamp that is not an integer, a
            rating that is not a finite number): the message names the file and the line.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from torchrec_eval.data.movielens import load_movielens
        >>> path = Path(tempfile.mkdtemp()) / "u.data"
        >>> _ = path.write_text("196\\t242\\t3\\t881250949\\n186\\t302\\t3\\t891717742\\n196\\t302\\t5\\t881250000\\n")
        >>> data = load_movielens(path)
        >>> data
        RatedInteractions(num_interactions=3, num_users=2, num_items=2)
        >>> data.user.tolist(), data.item.tolist(), data.rating.tolist()
        ([0, 1, 1], [1, 1, 0], [3.0, 5.0, 3.0])
        >>> data.user_ids.tolist(), data.item_ids.tolist()
        ([186, 196], [242, 302])
    """
    pd = require_pandas()
    path = Path(path)
    if format is not None and format not in FORMATS:
        raise ValueError(f"`format` must be one of {FORMATS}, got {format!r}")
    with path.open(encoding="utf-8") as lines:
        first_line = lines.readline().rstrip("\r\n")
    if not first_line:
        raise ValueError(f"{path}: the file is empty (or its first line is blank)")
    format = format or _detect(first_line, path)
    header = format in ("csv", "inter")
    if format == "inter":
        columns, sep, width = _inter_columns(first_line, path), "\t", first_line.count("\t") + 1
    elif format == "dat":  # "::" as ":" with an empty field between: pandas' fast C parser takes one character
        columns, sep, width = {name: 2 * index for index, name in enumerate(_COLUMNS)}, ":", 7
    else:
        columns, sep, width = {name: index for index, name in enumerate(_COLUMNS)}, "," if header else "\t", 4
    if format == "csv" and first_line.replace(" ", "") != _CSV_HEADER:
        raise ValueError(f"{path}:1: expected the header {_CSV_HEADER!r}, got {first_line!r}")
    table = _read_table(path, sep, width, header, pd)
    if format == "dat" and (table[[1, 3, 5]] != "").to_numpy().any():
        row = int(np.argmax((table[[1, 3, 5]] != "").to_numpy().any(axis=1)))
        number, text = _data_line(path, row, header)
        raise ValueError(f"{path}:{number}: expected fields separated by '::', got {text!r}")
    return _interactions(table, columns, path, header, format == "inter", pd)


def _interactions(table: pandas.DataFrame, columns: dict[str, int], path: Path, header: bool, tokens: bool,
                  pd: Any) -> RatedInteractions:
    if len(table) == 0:
        raise ValueError(f"{path}: no interaction in the file")
    users = _ids(table, columns["user"], "the user id", path, header, pd, tokens)
    items = _ids(table, columns["item"], "the item id", path, header, pd, tokens)
    rating = (_numbers(table, columns["rating"], "the rating", path, header, pd, integer=False)
              if "rating" in columns else np.ones(len(table)))
    timestamp = (_numbers(table, columns["timestamp"], "the timestamp", path, header, pd, integer=True)
                 if "timestamp" in columns else np.arange(len(table), dtype=np.float64))
    if timestamp.size and max(abs(timestamp.min()), abs(timestamp.max())) >= math.ldexp(1, 53):
        raise ValueError(f"{path}: timestamps beyond 2^53 cannot be read exactly")
    user_ids, user = np.unique(users, return_inverse=True)
    item_ids, item = np.unique(items, return_inverse=True)
    data = RatedInteractions(
        user=torch.from_numpy(user.astype(np.int64)),
        item=torch.from_numpy(item.astype(np.int64)),
        timestamp=torch.from_numpy(timestamp.astype(np.int64)),
        num_users=len(user_ids),
        num_items=len(item_ids),
        rating=torch.from_numpy(rating.astype(np.float32)),
        user_ids=user_ids,
        item_ids=item_ids,
    )
    return data.select(sort_by_user_time(data))
