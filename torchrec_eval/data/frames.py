"""DataFrames in: recommendations and relevance as rows, the layout of MS Recommenders, RecTools and ranx.

Peers' users hold their data as tables, one row per (user, item):

* recommendations -- ``(user, item, score)`` rows (a model's scores, ranx's ``Run``, MS Recommenders'
  ``rating_pred``) or ``(user, item, rank)`` rows (RecTools' ``reco``, rank 1 = top);
* relevance -- ``(user, item)`` rows of relevant items, or ``(user, item, relevance)`` rows with a
  graded relevance (ranx's ``Qrels``, MS Recommenders' ``rating_true``, RecTools' ``interactions``).

:func:`to_batch` turns the two tables into the ranked input form of every metric of the library --
``ranked_ids`` [U, L] (each user's list in rank order, ``-1`` padded), ``target_ids`` [U, T] and, with
a relevance column, ``target_gains`` [U, T] -- exactly (nothing is sampled or cut), with pandas and
NumPy operations over all rows at once (no Python loop over users). Ids may be strings or integers;
items are numbered in sorted id order. :func:`evaluate` is the one-call version.

Which users are evaluated (``users=``), as the libraries differ:

* ``"relevance"`` (default) -- every user of the relevance table; a user without recommendations has
  an empty list and scores 0 (ranx with ``make_comparable``, ``trec_eval -c``, RecTools, MS
  Recommenders' NDCG);
* ``"both"`` -- users present in both tables (``trec_eval`` without ``-c``; Jurity's precision and
  MAP; MS Recommenders' precision, recall and MAP);
* ``"all"`` -- users of either table; a user with recommendations but no relevance row is a query
  with no relevant item, counted or skipped by ``empty_target_action`` (Spark counts it 0).

Equal scores within a user's rows are ordered by ``ties``: ``"index"`` (default) puts the lower item
id first, as the library's ``ties="index"`` does for item indices; ``"reverse_index"`` the higher id
first (trec_eval's docno order); ``"pessimistic"`` / ``"optimistic"`` the lower / higher relevance
first, then the lower id. ``"average"`` needs the scores themselves: it is not available here (use
the dense form). Rows with a rank column are taken in rank order (ranks need not be contiguous).

pandas is needed only here (``pip install pandas``); ``import torchrec_eval`` does not import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from torch import Tensor

from torchrec_eval.members.conventions import Convention

if TYPE_CHECKING:
    import pandas
    from numpy.typing import NDArray

__all__ = ["FRAME_TIES", "USERS", "FrameBatch", "evaluate", "to_batch"]

USERS = ("relevance", "both", "all")
FRAME_TIES = ("index", "reverse_index", "pessimistic", "optimistic")


def require_pandas() -> Any:
    """The pandas module, or an ImportError that says how to install it."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError(
            "reading DataFrames and rating files needs pandas, which is not installed: "
            "pip install pandas (or pip install 'torchrec_eval[data]')"
        ) from error
    return pandas


class FrameBatch(dict[str, Tensor]):
    """The keyword arguments of ``update`` (``metric.update(**batch)``), with the ids of rows and items.

    Keys: ``ranked_ids`` [U, L] and ``target_ids`` [U, T] long tensors (``-1`` = padding), and
    ``target_gains`` [U, T] float64 when a relevance column was given.

    Attributes:
        users: ``pandas.Index``, the user id of each row (sorted).
        items: ``pandas.Index``, the item id of each item index (sorted).
    """

    items: pandas.Index  # the attribute above, set on each instance: it hides the method dict.items

    def __init__(self, tensors: dict[str, Tensor], users: pandas.Index, items: pandas.Index) -> None:
        super().__init__(tensors)
        self.users = users
        self.items = items


def _check_frame(name: str, frame: Any, columns: list[str], pd: Any) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"`{name}` must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(
            f"`{name}` must have the columns {columns}, got the columns {list(frame.columns)} (no {missing}); "
            "name them with user_col=, item_col=, ..."
        )
    for column in columns:
        bad = frame[column].isna().to_numpy()
        if bad.any():
            row = frame.index[int(np.argmax(bad))]
            raise ValueError(f"`{name}` has a missing value in column {column!r} (row {row!r})")


def _check_numbers(name: str, frame: pandas.DataFrame, column: str, pd: Any, *,
                   nonnegative: bool = False) -> NDArray[np.float64]:
    if not pd.api.types.is_numeric_dtype(frame[column]):
        raise ValueError(f"Column {column!r} of `{name}` must be numeric, got {frame[column].dtype}")
    values: NDArray[np.float64] = frame[column].to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | ((values < 0) if nonnegative else False)
    if bad.any():
        first = int(np.argmax(bad))
        rule = "finite and >= 0" if nonnegative else "finite"
        raise ValueError(
            f"Column {column!r} of `{name}` must be {rule}, got {values[first]!r} in row {frame.index[first]!r}"
        )
    return values


def _check_unique(name: str, frame: pandas.DataFrame, columns: list[str], what: str) -> None:
    repeated = frame.duplicated(columns, keep=False).to_numpy()
    if repeated.any():
        example = frame.loc[repeated, columns].head(4).to_dict("records")
        raise ValueError(
            f"`{name}` has {int(repeated.sum())} rows that repeat a {what} {tuple(columns)}, e.g. {example}; "
            "drop or aggregate them first (frame.drop_duplicates or a groupby)"
        )


def _check_id_kinds(recommendations: pandas.DataFrame, relevance: pandas.DataFrame, column: str, pd: Any) -> None:
    numeric = [pd.api.types.is_numeric_dtype(frame[column]) for frame in (recommendations, relevance)]
    if numeric[0] != numeric[1]:
        raise ValueError(
            f"Column {column!r} must hold ids of one kind in both tables, got {recommendations[column].dtype} in "
            f"`recommendations` and {relevance[column].dtype} in `relevance`: no id would match; "
            "convert one of them (e.g. .astype(str))"
        )


def _padded_rows(rows: NDArray[np.intp], values: NDArray[Any], num_rows: int, fill: float,
                 dtype: torch.dtype) -> Tensor:
    """``values`` laid out as a ``[num_rows, width]`` tensor: row ``rows[j]``, in the order given."""
    order = np.argsort(rows, kind="stable")
    rows, values = rows[order], values[order]
    counts = np.bincount(rows, minlength=num_rows)
    position = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    out = torch.full((num_rows, max(int(counts.max(initial=0)), 1)), fill, dtype=dtype)
    out[torch.from_numpy(rows), torch.from_numpy(position)] = torch.as_tensor(values, dtype=dtype)
    return out


def _selected_users(rec_users: pandas.Series, rel_users: pandas.Series, users: str, pd: Any) -> pandas.Index:
    rec, rel = pd.Index(rec_users.unique()), pd.Index(rel_users.unique())
    chosen = {"relevance": rel, "both": rel.intersection(rec), "all": rel.union(rec)}[users]
    if len(chosen) == 0:
        raise ValueError(f"No user to evaluate with users={users!r}: the tables share no user")
    return chosen.sort_values()


def to_batch(
    recommendations: Any,
    relevance: Any,
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str | None = None,
    rank_col: str | None = None,
    relevance_col: str | None = None,
    users: str = "relevance",
    ties: str = "index",
    device: torch.device | str | None = None,
) -> FrameBatch:
    """The ranked input form of the metrics, from a recommendations table and a relevance table.

    Each evaluated user is one row: ``ranked_ids[u]`` is the user's recommended items by decreasing
    score (or increasing rank), ``target_ids[u]`` the items of their relevance rows and
    ``target_gains[u]`` the relevance values. Item ``j`` is ``batch.items[j]``, user row ``u`` is
    ``batch.users[u]``.

    Args:
        recommendations: DataFrame with ``user_col``, ``item_col`` and ``score_col`` or ``rank_col``.
        relevance: DataFrame with ``user_col``, ``item_col`` and, optionally, ``relevance_col``.
        user_col, item_col: the id columns (strings or integers, the same kind in both tables).
        score_col: the score column (higher ranks first); exactly one of ``score_col``, ``rank_col``.
        rank_col: the rank column (lower ranks first; only the order matters).
        relevance_col: graded relevance (``>= 0``; 0 is not relevant), returned as ``target_gains``;
            without it every relevance row is a relevant item of gain 1.
        users: which users are rows: ``"relevance"``, ``"both"`` or ``"all"`` (see the module text).
        ties: the order of equal scores: ``"index"``, ``"reverse_index"``, ``"pessimistic"`` or
            ``"optimistic"`` (see the module text).
        device: where the tensors go (default: the CPU).

    Returns:
        :class:`FrameBatch`: a dict of tensors for ``update(**batch)``, with ``users`` and ``items``.

    Raises:
        ImportError: if pandas is not installed.
        ValueError: if a table is not a DataFrame, lacks a column or has a missing value; if both or
            neither of ``score_col`` and ``rank_col`` are given; if a (user, item) pair (or a (user,
            rank) pair) repeats; if a score or rank is not finite or a relevance negative; if the id
            kinds of the two tables differ; if no user is left to evaluate.

    Example:
        >>> import pandas as pd
        >>> import torchrec_eval as tre
        >>> from torchrec_eval.data.frames import to_batch
        >>> recs = pd.DataFrame({"user": ["ann", "ann", "ann", "bob"], "item": ["x", "y", "z", "x"],
        ...                      "score": [0.2, 0.9, 0.5, 0.7]})
        >>> rel = pd.DataFrame({"user": ["ann", "bob", "cy"], "item": ["z", "y", "x"]})
        >>> batch = to_batch(recs, rel, score_col="score")
        >>> list(batch.users), list(batch.items)
        (['ann', 'bob', 'cy'], ['x', 'y', 'z'])
        >>> batch["ranked_ids"]
        tensor([[ 1,  2,  0],
                [ 0, -1, -1],
                [-1, -1, -1]])
        >>> tre.functional.mrr(**batch, k=3, reduction="none")
        tensor([0.5000, 0.0000, 0.0000], dtype=torch.float64)
    """
    pd = require_pandas()
    if (score_col is None) == (rank_col is None):
        raise ValueError(
            f"Pass exactly one of `score_col` and `rank_col`, got score_col={score_col!r}, rank_col={rank_col!r}"
        )
    if users not in USERS:
        raise ValueError(f"`users` must be one of {USERS}, got {users!r}")
    if ties not in FRAME_TIES:
        hint = " (it needs the scores: use the dense form)" if ties == "average" else ""
        raise ValueError(f"`ties` must be one of {FRAME_TIES}, got {ties!r}{hint}")
    order_col = cast(str, score_col if score_col is not None else rank_col)  # exactly one is given (checked above)
    _check_frame("recommendations", recommendations, [user_col, item_col, order_col], pd)
    _check_frame("relevance", relevance, [user_col, item_col, *([relevance_col] if relevance_col else [])], pd)
    for column in (user_col, item_col):
        _check_id_kinds(recommendations, relevance, column, pd)
    order = _check_numbers("recommendations", recommendations, order_col, pd)
    gains = (_check_numbers("relevance", relevance, relevance_col, pd, nonnegative=True)
             if relevance_col else np.ones(len(relevance)))
    _check_unique("recommendations", recommendations, [user_col, item_col], "(user, item) pair")
    _check_unique("relevance", relevance, [user_col, item_col], "(user, item) pair")
    if rank_col is not None:
        _check_unique("recommendations", recommendations, [user_col, rank_col], "(user, rank) pair")

    user_index = _selected_users(recommendations[user_col], relevance[user_col], users, pd)
    item_index = pd.Index(pd.concat([recommendations[item_col], relevance[item_col]]).unique()).sort_values()
    rec_user = user_index.get_indexer(recommendations[user_col])
    rec_item = item_index.get_indexer(recommendations[item_col])
    rel_user = user_index.get_indexer(relevance[user_col])
    rel_item = item_index.get_indexer(relevance[item_col])

    kept, rel_kept = rec_user >= 0, rel_user >= 0  # the rows of the evaluated users
    rec_user, rec_item, order = rec_user[kept], rec_item[kept], order[kept]
    rel_user, rel_item, gains = rel_user[rel_kept], rel_item[rel_kept], gains[rel_kept]

    # Sort keys, most significant last (np.lexsort): user, then score descending / rank ascending, then ties.
    primary = -order if score_col is not None else order
    tie = -rec_item if ties == "reverse_index" else rec_item
    keys = [tie, primary]
    if ties in ("pessimistic", "optimistic"):
        pairs = pd.Index(rel_user.astype(np.int64) * len(item_index) + rel_item)
        found = pairs.get_indexer(rec_user.astype(np.int64) * len(item_index) + rec_item)
        rec_gain = np.where(found >= 0, gains[found], 0.0)
        keys = [tie, rec_gain if ties == "pessimistic" else -rec_gain, primary]
    ranked = np.lexsort(keys)

    tensors = {
        "ranked_ids": _padded_rows(rec_user[ranked], rec_item[ranked], len(user_index), -1, torch.long),
        "target_ids": _padded_rows(rel_user, rel_item, len(user_index), -1, torch.long),
    }
    if relevance_col is not None:
        tensors["target_gains"] = _padded_rows(rel_user, gains, len(user_index), 0.0, torch.float64)
    return FrameBatch({name: value.to(device) for name, value in tensors.items()}, user_index, item_index)


def evaluate(metrics: Any, recommendations: Any, relevance: Any, *, convention: Convention | None = None,
             **columns: Any) -> Any:
    """Evaluate recommendation and relevance tables in one call: :func:`to_batch`, ``update``, ``compute``.

    Args:
        metrics: a metric or suite object (it accumulates: call ``reset()`` to start over), or a list
            of names such as ``["ndcg@10", "map@10"]`` for a new :class:`~torchrec_eval.RankingMetrics`.
        recommendations, relevance: the tables, as in :func:`to_batch`.
        convention: with a list of names, the suite's convention (``"ranx"``, ``"trec"``, ...).
        columns: the keyword arguments of :func:`to_batch` (``score_col``, ``users``, ...).

    Returns:
        ``metric.compute()``: for a suite, ``{"ndcg@10": tensor, ...}``.

    Raises:
        ImportError: if pandas is not installed.
        ValueError: as :func:`to_batch`; and for ``convention`` with a metric object (set it there).

    Example:
        >>> import pandas as pd
        >>> from torchrec_eval.data.frames import evaluate
        >>> run = pd.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 10, 12], "score": [3.0, 2.0, 1.0, 5.0]})
        >>> qrels = pd.DataFrame({"user": [1, 2], "item": [11, 10], "relevance": [2, 1]})
        >>> evaluate(["mrr@2", "precision@1"], run, qrels, score_col="score", relevance_col="relevance")
        {'mrr@2': tensor(0.5000, dtype=torch.float64), 'precision@1': tensor(0., dtype=torch.float64)}
    """
    from torchmetrics import Metric

    from torchrec_eval.suites.ranking import RankingMetrics

    if isinstance(metrics, Metric):
        if convention is not None:
            raise ValueError(
                f"`convention` goes to the metric's constructor when a metric object is given, got {convention!r}"
            )
        metric = metrics
    else:
        metric = RankingMetrics(metrics, convention=convention)
    metric.update(**to_batch(recommendations, relevance, **columns))
    return metric.compute()
