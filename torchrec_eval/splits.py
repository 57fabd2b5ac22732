r"""Hold-out splits, k-fold cross-validation and the inputs of a ranking evaluation, from interactions.

Recommender evaluation starts before the metric: which interactions a model may train on, and which
it must predict, decide what the numbers mean. This module splits an
:class:`~torchrec_eval.datasets.Interactions` set (user, item, timestamp tensors; see
:func:`as_interactions` for data without timestamps):

* :func:`leave_last_out` -- each user's latest ``n`` interactions are the test set (sequential
  recommendation);
* :func:`temporal_split` -- per user, the latest fraction of their interactions; or one global time
  cut, every training interaction strictly earlier than every test interaction;
* :func:`random_split` -- a random fraction of all interactions, or of each user's;
* :func:`user_kfold` -- cross-validation by user: the users are dealt into ``n_folds`` folds and, in
  fold ``f``, the users of fold ``f`` are held out: the latest (or a random) ``test_fraction`` of their
  interactions are the test set, the rest of their history is given to the model for training;
* :func:`interaction_kfold` -- cross-validation by interaction: each user's interactions are dealt
  round-robin, in random order, into the folds, and fold ``f`` is the test set of split ``f``.

Every split is a partition of the input: each interaction is in exactly one of ``train`` and
``test``, and the :class:`Split` it returns also gives the index of every output row in the input,
so that any per-interaction side tensor (ratings, weights, contexts) follows with
:meth:`Split.take`. Randomness comes from one seeded CPU :class:`torch.Generator`: a seed gives the
same split on every run, machine and device. Nothing loops over users in Python.

:func:`ranking_inputs` turns a split into the tensors the metrics take -- the held-out users, their
test items as ``target_ids`` and their training items as ``exclude_ids`` -- and
:func:`cross_validate` runs a user's ``fit_and_score`` function on every fold, evaluates a
:class:`~torchrec_eval.RankingMetrics` suite on the held-out users and reports the per-fold values
with their mean, standard deviation and Student-t confidence interval (:func:`t_quantile`, exact for
integer degrees of freedom, needs no SciPy).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import Tensor
from torchmetrics import Metric

from torchrec_eval.datasets import (
    Interactions,
    _sort_by_user_time,
    padded_item_lists,
    train_test_split_by_time,
)
from torchrec_eval.statistics import check_level, mean_confidence_interval, student_t_quantile
from torchrec_eval.validation import check_int

__all__ = [
    "CrossValidationResult",
    "RankingInputs",
    "Split",
    "as_interactions",
    "cross_validate",
    "interaction_kfold",
    "leave_last_out",
    "mean_confidence_interval",
    "random_split",
    "ranking_inputs",
    "t_quantile",
    "temporal_split",
    "user_kfold",
]

DEFAULT_METRICS = ("ndcg@10", "recall@20", "map@10", "mrr@10", "hitrate@10", "precision@10")
HOLDOUTS = ("time", "random")


# --------------------------------------------------------------------------------------------------
# argument checks


def _check_fraction(name: str, value: object, *, open_low: bool = False) -> float:
    bounds = "(0, 1)" if open_low else "[0, 1)"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"`{name}` must be a float in {bounds}, got {value!r}")
    if not (0.0 < value < 1.0 if open_low else 0.0 <= value < 1.0):
        raise ValueError(f"`{name}` must be a float in {bounds}, got {value!r}")
    return float(value)


def _check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {tuple(choices)}, got {value!r}")
    return value  # type: ignore[return-value]


def _check_interactions(interactions: object) -> Interactions:
    if not isinstance(interactions, Interactions):
        raise ValueError(
            "`interactions` must be a torchrec_eval.datasets.Interactions (see "
            f"`as_interactions`), got {type(interactions).__name__}"
        )
    return interactions


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------------------------------
# building blocks


def as_interactions(
    user: Tensor,
    item: Tensor,
    timestamp: Tensor | None = None,
    *,
    num_users: int | None = None,
    num_items: int | None = None,
) -> Interactions:
    """Wrap interaction tensors as :class:`~torchrec_eval.datasets.Interactions`.

    Without ``timestamp`` the input order is the time order (the timestamps are ``0, 1, ..., M-1``), so
    :func:`leave_last_out` and :func:`temporal_split` hold out the last rows of each user. Ratings or
    other per-interaction values are not part of the interactions: split them with
    :meth:`Split.take`.

    Args:
        user: ``[M]`` integer user ids, ``>= 0``.
        item: ``[M]`` integer item ids, ``>= 0``.
        timestamp: ``[M]`` integer event times; default: the row order.
        num_users: the number of users; default: the largest user id + 1.
        num_items: the number of items (the width of a score matrix); default: the largest item id + 1.

    Returns:
        :class:`~torchrec_eval.datasets.Interactions` with long tensors.

    Raises:
        ValueError: if a tensor is not 1-D integer, the shapes differ, an id is negative, or
            ``num_users`` / ``num_items`` does not exceed the largest id.

    Example:
        >>> import torch
        >>> from torchrec_eval.splits import as_interactions
        >>> data = as_interactions(torch.tensor([0, 0, 1]), torch.tensor([2, 0, 1]), num_items=5)
        >>> data
        Interactions(num_interactions=3, num_users=2, num_items=5)
        >>> data.timestamp.tolist()
        [0, 1, 2]
    """
    tensors = {"user": user, "item": item}
    if timestamp is not None:
        tensors["timestamp"] = timestamp
    for name, value in tensors.items():
        if (not isinstance(value, Tensor) or value.ndim != 1 or value.is_floating_point()
                or value.is_complex()):
            got = (f"{value.dtype} shape {tuple(value.shape)}" if isinstance(value, Tensor)
                   else type(value).__name__)
            raise ValueError(f"`{name}` must be a 1-D integer tensor, got {got}")
    if user.shape != item.shape or (timestamp is not None and timestamp.shape != user.shape):
        shapes = ", ".join(f"{name} {tuple(value.shape)}" for name, value in tensors.items())
        raise ValueError(f"`user`, `item` and `timestamp` must have the same shape, got {shapes}")
    sizes = {}
    for name, ids, given in (("num_users", user, num_users), ("num_items", item, num_items)):
        largest = int(ids.max()) if ids.numel() else -1
        if ids.numel() and int(ids.min()) < 0:
            raise ValueError(f"the ids behind `{name}` must be >= 0, got {int(ids.min())}")
        if given is None:
            given = largest + 1
        reason = f"one more than the largest id, {largest}" if largest >= 0 else ""
        sizes[name] = check_int(name, given, largest + 1, reason=reason)
    if timestamp is None:
        timestamp = torch.arange(user.numel(), device=user.device)
    return Interactions(user=user.long(), item=item.long(), timestamp=timestamp.long(), **sizes)


@dataclass(frozen=True, eq=False)
class Split:
    """One train/test split of interactions; unpacks as ``train, test = split``.

    Attributes:
        train: the training interactions, sorted by user, then timestamp.
        test: the test interactions, sorted by user, then timestamp.
        train_index: ``[len(train)]`` long, the row of the input of each training row.
        test_index: ``[len(test)]`` long, the row of the input of each test row.

    The two index tensors partition ``range(M)``: no interaction is on both sides.

    Example:
        >>> import torch
        >>> from torchrec_eval.splits import as_interactions, leave_last_out
        >>> data = as_interactions(torch.tensor([0, 0, 0, 1, 1]), torch.tensor([4, 2, 3, 0, 1]))
        >>> split = leave_last_out(data)
        >>> train, test = split
        >>> test.item.tolist(), split.test_index.tolist()
        ([3, 1], [2, 4])
        >>> ratings = torch.tensor([5.0, 3.0, 4.0, 1.0, 2.0])
        >>> split.take(ratings)
        (tensor([5., 3., 1.]), tensor([4., 2.]))
    """

    train: Interactions
    test: Interactions
    train_index: Tensor
    test_index: Tensor

    def __iter__(self) -> Iterator[Interactions]:
        return iter((self.train, self.test))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(train={self.train!r}, test={self.test!r})"

    def take(self, values: Tensor) -> tuple[Tensor, Tensor]:
        """Split a per-interaction tensor (``[M, ...]``, input order) like the interactions.

        Raises:
            ValueError: if ``values`` does not have one row per input interaction.
        """
        rows = self.train_index.numel() + self.test_index.numel()
        if not isinstance(values, Tensor) or values.ndim < 1 or values.shape[0] != rows:
            got = tuple(values.shape) if isinstance(values, Tensor) else type(values).__name__
            raise ValueError(f"`values` must have {rows} rows (one per interaction), got {got}")
        return values[self.train_index.to(values.device)], values[self.test_index.to(values.device)]


def _split_from_mask(data: Interactions, is_test: Tensor) -> Split:
    """The split with ``is_test`` ([M] bool, input order) as its test set, both parts sorted."""
    order = _sort_by_user_time(data)
    sorted_test = is_test[order]
    train_index, test_index = order[~sorted_test], order[sorted_test]
    return Split(data.select(train_index), data.select(test_index), train_index, test_index)


def _per_user_tail(data: Interactions, test_fraction: float, timestamp: Tensor | None = None) -> Tensor:
    """[M] bool: each user's latest ``test_fraction`` of interactions, by the given times.

    This runs :func:`~torchrec_eval.datasets.train_test_split_by_time` (and so follows its rules: at
    least one and at most ``n - 1`` test interactions per user with ``n >= 2``) on a copy of the data
    whose item ids are the row numbers, which the split carries through to say which rows it took.
    """
    rows = torch.arange(len(data), device=data.user.device)
    proxy = Interactions(
        user=data.user,
        item=rows,
        timestamp=data.timestamp if timestamp is None else timestamp,
        num_users=data.num_users,
        num_items=len(data),
    )
    _, test = train_test_split_by_time(proxy, test_fraction)
    is_test = torch.zeros(len(data), dtype=torch.bool, device=rows.device)
    is_test[test.item] = True
    return is_test


def _random_times(data: Interactions, gen: torch.Generator) -> Tensor:
    """A random permutation of ``0..M-1`` as times: sorting by it shuffles each user's interactions."""
    return torch.randperm(len(data), generator=gen).to(data.user.device)


def _position_from_end(data: Interactions, times: Tensor) -> Tensor:
    """[M] long, input order: 0 for each user's latest interaction by ``times``, 1 for the one before..."""
    by_time = torch.argsort(times, stable=True)
    order = by_time[torch.argsort(data.user[by_time], stable=True)]
    users = data.user[order]
    ends = torch.cumsum(torch.bincount(users, minlength=data.num_users), dim=0)
    position = torch.empty_like(order)
    position[order] = ends[users] - 1 - torch.arange(len(data), device=order.device)
    return position


# --------------------------------------------------------------------------------------------------
# hold-out splits


def leave_last_out(interactions: Interactions, n: int = 1) -> Split:
    r"""Leave-last-out: each user's latest ``n`` interactions are the test set.

    A user with :math:`m_u` interactions puts :math:`\min(n, m_u - 1)` of them in test, so every user
    keeps at least one training interaction (a user with a single interaction is training-only).
    Equal timestamps are ordered by the input order. No test interaction of a user is earlier than
    one of their training interactions.

    Args:
        interactions: the data to split.
        n: the number of test interactions per user, ``>= 1``.

    Returns:
        :class:`Split`.

    Raises:
        ValueError: if ``interactions`` is not :class:`~torchrec_eval.datasets.Interactions` or ``n``
            is not an int >= 1.

    Example:
        >>> from torchrec_eval.datasets import generate_interactions
        >>> from torchrec_eval.splits import leave_last_out
        >>> data = generate_interactions(num_users=3, num_items=20, interactions_per_user=4, seed=0)
        >>> train, test = leave_last_out(data, n=1)
        >>> len(train), len(test), test.user.tolist()
        (9, 3, [0, 1, 2])
    """
    data = _check_interactions(interactions)
    n = check_int("n", n, 1)
    counts = data.user_counts()
    n_test = (counts - 1).clamp(min=0, max=n)
    return _split_from_mask(data, _position_from_end(data, data.timestamp) < n_test[data.user])


def temporal_split(
    interactions: Interactions,
    test_fraction: float = 0.2,
    *,
    by: str = "user",
    cutoff: int | None = None,
) -> Split:
    r"""Split by time: per user (the latest fraction of each user) or at one global time cut.

    ``by="user"`` is :func:`~torchrec_eval.datasets.train_test_split_by_time`: a user with :math:`m_u`
    interactions puts :math:`\operatorname{round}(m_u \cdot f)` of their latest in test, at least one
    and at most :math:`m_u - 1` when :math:`m_u \ge 2`.

    ``by="global"`` cuts the whole data at one time :math:`t^*`: test is every interaction with
    :math:`t \ge t^*`, so every training interaction is strictly earlier than every test interaction
    (no look-ahead across users either). :math:`t^*` is ``cutoff`` if given, else the timestamp of the
    interaction at position :math:`M - \operatorname{round}(M f)` in time order, so that about a
    fraction :math:`f` of the interactions are in test (more when the cut falls on tied timestamps).
    A global cut leaves users with no training interaction (cold start) and users with no test
    interaction; :func:`ranking_inputs` evaluates the users that have a test interaction.

    Args:
        interactions: the data to split.
        test_fraction: :math:`f`, in ``[0, 1)`` (ignored when ``cutoff`` is given).
        by: ``"user"`` (per-user latest fraction) or ``"global"`` (one time cut).
        cutoff: the global cut time :math:`t^*`; only with ``by="global"``.

    Returns:
        :class:`Split`.

    Raises:
        ValueError: if ``test_fraction`` is not in ``[0, 1)``, ``by`` is unknown, or ``cutoff`` is not
            an int or is given with ``by="user"``.

    Example:
        >>> import torch
        >>> from torchrec_eval.splits import as_interactions, temporal_split
        >>> data = as_interactions(torch.tensor([0, 0, 1, 1, 1]), torch.tensor([0, 1, 2, 3, 4]),
        ...                        torch.tensor([10, 40, 20, 30, 50]))
        >>> temporal_split(data, 0.4, by="global").test.timestamp.tolist()
        [40, 50]
        >>> temporal_split(data, by="global", cutoff=30).test.timestamp.tolist()
        [40, 30, 50]
        >>> temporal_split(data, 0.5, by="user").test.item.tolist()  # round(0.5 * 3) = 2 for user 1
        [1, 3, 4]
    """
    data = _check_interactions(interactions)
    _check_choice("by", by, ("user", "global"))
    if cutoff is not None:
        if by != "global":
            raise ValueError(f"`cutoff` is a global time cut: it needs by='global', got by={by!r}")
        cutoff = check_int("cutoff", cutoff)
    else:
        _check_fraction("test_fraction", test_fraction)
    if by == "user":
        return _split_from_mask(data, _per_user_tail(data, test_fraction))
    if cutoff is None:
        n_test = round(len(data) * test_fraction)
        if n_test == 0:
            return _split_from_mask(data, torch.zeros_like(data.user, dtype=torch.bool))
        cutoff = int(torch.sort(data.timestamp).values[len(data) - n_test])
    return _split_from_mask(data, data.timestamp >= cutoff)


def random_split(
    interactions: Interactions, test_fraction: float = 0.2, *, per_user: bool = False, seed: int = 0
) -> Split:
    r"""A random hold-out: a fraction of all interactions, or of each user's.

    With ``per_user=False`` exactly :math:`\operatorname{round}(M f)` interactions, drawn uniformly
    without replacement, are the test set. With ``per_user=True`` each user with :math:`m_u` interactions
    puts :math:`\operatorname{round}(m_u f)` random ones in test, at least one and at most
    :math:`m_u - 1` when :math:`m_u \ge 2` (the rules of :func:`temporal_split`, with a random order in
    place of time).

    Args:
        interactions: the data to split.
        test_fraction: :math:`f`, in ``[0, 1)``.
        per_user: draw within each user (stratified) rather than over all interactions.
        seed: the seed; the same seed gives the same split.

    Returns:
        :class:`Split`.

    Raises:
        ValueError: if ``test_fraction`` is not in ``[0, 1)`` or ``seed`` is not an int.

    Example:
        >>> from torchrec_eval.datasets import generate_interactions
        >>> from torchrec_eval.splits import random_split
        >>> data = generate_interactions(num_users=10, num_items=50, interactions_per_user=10, seed=0)
        >>> split = random_split(data, 0.2, seed=1)
        >>> len(split.train), len(split.test)
        (80, 20)
        >>> random_split(data, 0.2, per_user=True, seed=1).test.user_counts().tolist()
        [2, 2, 2, 2, 2, 2, 2, 2, 2, 2]
    """
    data = _check_interactions(interactions)
    _check_fraction("test_fraction", test_fraction)
    gen = _generator(check_int("seed", seed))
    times = _random_times(data, gen)
    if per_user:
        return _split_from_mask(data, _per_user_tail(data, test_fraction, times))
    return _split_from_mask(data, times >= len(data) - round(len(data) * test_fraction))


# --------------------------------------------------------------------------------------------------
# k-fold cross-validation


def user_kfold(
    interactions: Interactions,
    n_folds: int = 5,
    *,
    test_fraction: float = 0.2,
    holdout: str = "time",
    seed: int = 0,
) -> list[Split]:
    r"""Cross-validation by user: each user is held out, and evaluated, in exactly one fold.

    The users that have interactions are shuffled and dealt round-robin into ``n_folds`` folds (sizes
    differ by at most one). In split ``f`` the users of fold ``f`` are held out: of each such user's
    :math:`m_u` interactions the latest (``holdout="time"``) or a random (``holdout="random"``)
    :math:`\operatorname{round}(m_u \cdot f_t)` are the test set -- at least one and at most
    :math:`m_u - 1` (a user with a single interaction has no test interaction) -- and the rest of
    their history is in the training set with every interaction of the other users, so a model
    that needs a user's history (matrix factorisation, a sequence model) can still score them.
    This is the "strong generalisation" protocol of Marlin (2004) and Liang et al. (2018) with the
    fold-in history given to the training run.

    Args:
        interactions: the data to split.
        n_folds: the number of folds, ``>= 2`` and at most the number of users with interactions.
        test_fraction: :math:`f_t`, the share of a held-out user's interactions that is tested, in
            ``(0, 1)``.
        holdout: ``"time"`` (a held-out user's latest interactions) or ``"random"``.
        seed: the seed of the user shuffle (and of the random hold-out).

    Returns:
        a list of ``n_folds`` :class:`Split`.

    Raises:
        ValueError: if ``n_folds`` is not an int >= 2 or exceeds the number of users with
            interactions, ``test_fraction`` is not in ``(0, 1)``, ``holdout`` is unknown, or ``seed``
            is not an int.

    Example:
        >>> from torchrec_eval.datasets import generate_interactions
        >>> from torchrec_eval.splits import user_kfold
        >>> data = generate_interactions(num_users=10, num_items=50, interactions_per_user=5, seed=0)
        >>> folds = user_kfold(data, n_folds=5, seed=0)
        >>> [test.user.unique().numel() for _, test in folds]
        [2, 2, 2, 2, 2]
        >>> [len(train) for train, _ in folds]
        [48, 48, 48, 48, 48]
    """
    data = _check_interactions(interactions)
    n_folds = check_int("n_folds", n_folds, 2)
    _check_fraction("test_fraction", test_fraction, open_low=True)
    _check_choice("holdout", holdout, HOLDOUTS)
    gen = _generator(check_int("seed", seed))
    active = torch.nonzero(data.user_counts() > 0).squeeze(1)
    if n_folds > active.numel():
        raise ValueError(
            f"`n_folds` must be at most the number of users with interactions ({active.numel()}), "
            f"got {n_folds}"
        )
    user_fold = torch.full((data.num_users,), -1, dtype=torch.long, device=active.device)
    shuffled = active[torch.randperm(active.numel(), generator=gen).to(active.device)]
    user_fold[shuffled] = torch.arange(active.numel(), device=active.device) % n_folds
    times = _random_times(data, gen) if holdout == "random" else None
    tail = _per_user_tail(data, test_fraction, times)
    fold_of_row = user_fold[data.user]
    return [_split_from_mask(data, tail & (fold_of_row == fold)) for fold in range(n_folds)]


def interaction_kfold(interactions: Interactions, n_folds: int = 5, *, seed: int = 0) -> list[Split]:
    r"""Cross-validation by interaction, stratified by user: fold ``f`` is the test set of split ``f``.

    Each user's interactions are put in a random order and dealt round-robin into the folds, starting
    at a random fold per user, so a user with :math:`m_u` interactions has
    :math:`\lfloor m_u / k \rfloor` or :math:`\lceil m_u / k \rceil` of them in every fold, and the folds
    have nearly equal sizes. Every interaction is tested in exactly one split and trained on in the
    other :math:`k - 1`. A user with fewer than :math:`k` interactions has no test interaction in some
    folds, and is not evaluated there.

    Args:
        interactions: the data to split.
        n_folds: the number of folds :math:`k`, ``>= 2`` and at most the number of interactions.
        seed: the seed of the orders and the starting folds.

    Returns:
        a list of ``n_folds`` :class:`Split`.

    Raises:
        ValueError: if ``n_folds`` is not an int >= 2 or exceeds the number of interactions, or
            ``seed`` is not an int.

    Example:
        >>> from torchrec_eval.datasets import generate_interactions
        >>> from torchrec_eval.splits import interaction_kfold
        >>> data = generate_interactions(num_users=4, num_items=50, interactions_per_user=10, seed=0)
        >>> folds = interaction_kfold(data, n_folds=5, seed=0)
        >>> [len(test) for _, test in folds]
        [8, 8, 8, 8, 8]
        >>> folds[0].test.user_counts().tolist()
        [2, 2, 2, 2]
    """
    data = _check_interactions(interactions)
    n_folds = check_int("n_folds", n_folds, 2)
    if n_folds > len(data):
        raise ValueError(
            f"`n_folds` must be at most the number of interactions ({len(data)}), got {n_folds}"
        )
    gen = _generator(check_int("seed", seed))
    position = _position_from_end(data, _random_times(data, gen))
    start = torch.randint(0, n_folds, (data.num_users,), generator=gen).to(data.user.device)
    fold_of_row = (position + start[data.user]) % n_folds
    return [_split_from_mask(data, fold_of_row == fold) for fold in range(n_folds)]


# --------------------------------------------------------------------------------------------------
# ranking inputs


class RankingInputs(NamedTuple):
    """The tensors of a ranking evaluation: one row per evaluated user.

    Attributes:
        users: ``[B]`` long, the evaluated users (ascending): score these against every item.
        target_ids: ``[B, T]`` long, their test items, ``-1`` padded (the metrics' ``target_ids``).
        exclude_ids: ``[B, S]`` long, their training items, ``-1`` padded (the metrics' ``exclude_ids``).
    """

    users: Tensor
    target_ids: Tensor
    exclude_ids: Tensor

    def batches(self, batch_size: int) -> Iterator[RankingInputs]:
        """Consecutive slices of at most ``batch_size`` users."""
        batch_size = check_int("batch_size", batch_size, 1)
        for start in range(0, self.users.numel(), batch_size):
            rows = slice(start, start + batch_size)
            yield RankingInputs(self.users[rows], self.target_ids[rows], self.exclude_ids[rows])


def _trimmed_rows(interactions: Interactions, num_users: int, users: Tensor) -> Tensor:
    """The users' rows of :func:`padded_item_lists`, without all-padding columns on the right."""
    rows = padded_item_lists(interactions, num_users)[users]
    width = int((rows >= 0).sum(dim=1).max()) if rows.numel() else 0
    return rows[:, :width]


def ranking_inputs(train: Interactions, test: Interactions, users: Tensor | None = None) -> RankingInputs:
    """The held-out users, their test items as ``target_ids`` and their training items as ``exclude_ids``.

    Feed a model's ``[B, num_items]`` scores of ``users`` to any metric with
    ``metric.update(scores, target_ids=target_ids, exclude_ids=exclude_ids)``: items the user saw in
    training are removed from the ranking (they are not candidates and do not count as relevant),
    and the test items are the relevant ones. Items keep their time order in each row.

    Args:
        train: the training interactions.
        test: the test interactions.
        users: ``[B]`` the users to evaluate; default: every user with a test interaction, ascending.

    Returns:
        :class:`RankingInputs` ``(users, target_ids, exclude_ids)``.

    Raises:
        ValueError: if ``train`` and ``test`` differ in ``num_users`` or ``num_items``, or ``users`` is
            not a 1-D integer tensor of ids in ``[0, num_users)``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> from torchrec_eval.splits import as_interactions, leave_last_out, ranking_inputs
        >>> data = as_interactions(torch.tensor([0, 0, 0, 1, 1]), torch.tensor([4, 2, 3, 0, 1]),
        ...                        num_items=5)
        >>> users, target_ids, exclude_ids = ranking_inputs(*leave_last_out(data))
        >>> users, target_ids, exclude_ids
        (tensor([0, 1]), tensor([[3],
                [1]]), tensor([[ 4,  2],
                [ 0, -1]]))
        >>> scores = torch.tensor([[0.0, 0.1, 0.2, 0.3, 0.4], [0.0, 0.1, 0.2, 0.3, 0.4]])
        >>> tre.functional.hitrate(scores, target_ids=target_ids, exclude_ids=exclude_ids, k=1)
        tensor(0.5000, dtype=torch.float64)
    """
    _check_interactions(train)
    if not isinstance(test, Interactions):
        raise ValueError(f"`test` must be Interactions, got {type(test).__name__}")
    if (train.num_users, train.num_items) != (test.num_users, test.num_items):
        raise ValueError(
            "`train` and `test` must have the same num_users and num_items, got "
            f"{(train.num_users, train.num_items)} and {(test.num_users, test.num_items)}"
        )
    num_users = train.num_users
    if users is None:
        users = torch.nonzero(test.user_counts() > 0).squeeze(1)
    elif not isinstance(users, Tensor) or users.ndim != 1 or users.is_floating_point():
        got = (f"{users.dtype} shape {tuple(users.shape)}" if isinstance(users, Tensor)
               else type(users).__name__)
        raise ValueError(f"`users` must be a 1-D integer tensor, got {got}")
    elif users.numel() and (int(users.min()) < 0 or int(users.max()) >= num_users):
        raise ValueError(
            f"`users` must lie in [0, {num_users}), got ids from {int(users.min())} to {int(users.max())}"
        )
    users = users.long()
    return RankingInputs(users, _trimmed_rows(test, num_users, users), _trimmed_rows(train, num_users, users))


# --------------------------------------------------------------------------------------------------
# confidence intervals


def t_quantile(p: float, df: int) -> float:
    r"""The ``p`` quantile :math:`t_{p,\nu}` of Student's t distribution with ``df`` degrees of freedom.

    Computed without SciPy and exact to about 1e-12 by
    :func:`~torchrec_eval.statistics.student_t_quantile`: for integer :math:`\nu` the t distribution
    function has the finite closed form of Abramowitz & Stegun (1964), 26.7.3-26.7.4, inverted to
    double precision (see :mod:`torchrec_eval.statistics.student_t`).
    For example :math:`t_{0.975,1} = 12.7062`, :math:`t_{0.975,4} = 2.7764`,
    :math:`t_{0.975,30} = 2.0423`.

    Args:
        p: the probability, in ``(0, 1)``.
        df: the degrees of freedom, an int ``>= 1``.

    Returns:
        the quantile, a float (negative for ``p < 0.5``).

    Raises:
        ValueError: if ``p`` is not in ``(0, 1)`` or ``df`` is not an int >= 1.

    Example:
        >>> from torchrec_eval.splits import t_quantile
        >>> round(t_quantile(0.975, 4), 6)
        2.776445
        >>> round(t_quantile(0.025, 9), 6)
        -2.262157
    """
    _check_fraction("p", p, open_low=True)
    df = check_int("df", df, 1)
    return float(student_t_quantile(p, torch.tensor(float(df), dtype=torch.float64)))


# --------------------------------------------------------------------------------------------------
# cross-validation


@dataclass(frozen=True, eq=False)
class CrossValidationResult:
    """The per-fold values of every metric and their summary over folds.

    Attributes:
        values: metric name -> ``[n_folds]`` float64 tensor (``[n_folds, G]`` for a grouped metric).
        mean, std, low, high: metric name -> the mean over folds, the sample standard deviation, and
            the bounds of the Student-t interval (:func:`mean_confidence_interval`).
        confidence: the confidence level of the interval.
        num_users: ``[n_folds]`` long, the number of users evaluated in each fold.
    """

    values: dict[str, Tensor]
    mean: dict[str, Tensor]
    std: dict[str, Tensor]
    low: dict[str, Tensor]
    high: dict[str, Tensor]
    confidence: float
    num_users: Tensor

    @property
    def n_folds(self) -> int:
        return self.num_users.numel()

    def summary(self, digits: int = 4) -> str:
        """A table: one line per metric with its mean, standard deviation and interval."""
        level = f"{100 * self.confidence:g}% CI"
        lines = [f"{'metric':<14} {'mean':>{digits + 3}} {'std':>{digits + 3}}  {level}"]
        for name in self.values:
            mean, std, low, high = (float(d[name].mean()) for d in (self.mean, self.std, self.low, self.high))
            lines.append(f"{name:<14} {mean:>{digits + 3}.{digits}f} {std:>{digits + 3}.{digits}f}  "
                         f"[{low:.{digits}f}, {high:.{digits}f}]")
        return "\n".join(lines)


def _as_dict(metric: Metric, value: Any) -> dict[str, Tensor]:
    if isinstance(value, dict):
        return {str(key): torch.as_tensor(v).detach().double().cpu() for key, v in value.items()}
    return {type(metric).__name__.lower(): torch.as_tensor(value).detach().double().cpu()}


def _evaluate_fold(suite: Metric, split: Split, fit_and_score: Callable, batch_size: int
                   ) -> tuple[dict[str, Tensor], int]:
    """Fit on the split's training part, evaluate the held-out users; the values and the user count."""
    inputs = ranking_inputs(split.train, split.test)
    suite.reset()
    if inputs.users.numel() == 0:  # nobody to evaluate (e.g. only single-interaction users): NaN values
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*compute.*before.*update")
            return _as_dict(suite, suite.compute()), 0
    scores = fit_and_score(split.train, inputs.users)
    if not callable(scores):
        expected = (inputs.users.numel(), split.train.num_items)
        if not isinstance(scores, Tensor) or tuple(scores.shape) != expected:
            got = tuple(scores.shape) if isinstance(scores, Tensor) else type(scores).__name__
            raise ValueError(
                "`fit_and_score` must return a scorer or scores of shape "
                f"[len(users), num_items] = {list(expected)}, got {got}"
            )
    offset = 0
    for batch in inputs.batches(batch_size):
        size = batch.users.numel()
        batch_scores = scores(batch.users) if callable(scores) else scores[offset : offset + size]
        offset += size
        device = batch_scores.device
        suite.update(batch_scores, target_ids=batch.target_ids.to(device),
                     exclude_ids=batch.exclude_ids.to(device))
    return _as_dict(suite, suite.compute()), inputs.users.numel()


def cross_validate(
    n_folds: int,
    fit_and_score: Callable[[Interactions, Tensor], Tensor | Callable[[Tensor], Tensor]],
    interactions: Interactions,
    metrics: Sequence[str] | Metric = DEFAULT_METRICS,
    *,
    by: str = "user",
    test_fraction: float = 0.2,
    holdout: str = "time",
    seed: int = 0,
    confidence: float = 0.95,
    batch_size: int = 1024,
) -> CrossValidationResult:
    r"""k-fold cross-validation of a recommender: fit on each fold's training part, rank its held-out users.

    For each of the ``n_folds`` splits of :func:`user_kfold` (``by="user"``) or
    :func:`interaction_kfold` (``by="interaction"``), in order:

    1. :func:`ranking_inputs` gives the held-out users (those with a test interaction), their test
       items (``target_ids``) and their training items (``exclude_ids``);
    2. ``fit_and_score(train, users)`` trains a model on the fold's training interactions and returns
       either the ``[len(users), num_items]`` scores of those users, or a function that maps a
       ``[B]`` batch of users to their ``[B, num_items]`` scores (called in batches of
       ``batch_size``, to bound memory);
    3. the metrics are reset, updated batch by batch and computed: the fold's value of each metric is
       its mean over the fold's evaluated users. A fold without an evaluated user (its users all have a
       single interaction) is not fitted, and its values are NaN.

    The summary over the :math:`k` fold values :math:`x_f` of each metric is the mean, the sample
    standard deviation and the Student-t interval
    :math:`\bar x \pm t_{(1+c)/2,\,k-1}\, s/\sqrt{k}` (:func:`mean_confidence_interval`; the folds share
    training data, so read it as indicative). Run two models with the same ``seed`` to get the same
    folds, and compare them fold by fold (a paired difference).

    Args:
        n_folds: the number of folds, ``>= 2``.
        fit_and_score: ``(train: Interactions, users: Tensor) -> scores or scorer``, as above.
        interactions: the data.
        metrics: names for :class:`~torchrec_eval.RankingMetrics` (default: ndcg@10, recall@20, map@10,
            mrr@10, hitrate@10, precision@10), or any metric taking ``target_ids``/``exclude_ids``
            (a :class:`~torchrec_eval.RankingMetrics`, :class:`~torchrec_eval.NDCG`, ...); it is reset
            before each fold.
        by: ``"user"`` (:func:`user_kfold`) or ``"interaction"`` (:func:`interaction_kfold`).
        test_fraction: the tested share of a held-out user's interactions (``by="user"`` only).
        holdout: ``"time"`` or ``"random"``, which of a held-out user's interactions are tested
            (``by="user"`` only).
        seed: the seed of the folds.
        confidence: the level of the interval, in ``(0, 1)``.
        batch_size: users per metric update, ``>= 1``.

    Returns:
        :class:`CrossValidationResult`.

    Raises:
        ValueError: on a bad argument (named, with the value received), or if ``fit_and_score``
            returns neither a callable nor scores of shape ``[len(users), num_items]``.

    Example:
        >>> from torchrec_eval.datasets import generate_interactions, item_popularity
        >>> from torchrec_eval.splits import cross_validate
        >>> data = generate_interactions(num_users=200, num_items=100, interactions_per_user=10, seed=0)
        >>> def popularity(train, users):
        ...     return item_popularity(train).double().expand(users.numel(), -1)
        >>> result = cross_validate(5, popularity, data, ["ndcg@10", "hitrate@10"], seed=0)
        >>> result.values["ndcg@10"].shape, result.num_users.tolist()
        (torch.Size([5]), [40, 40, 40, 40, 40])
        >>> bool(result.low["ndcg@10"] < result.mean["ndcg@10"] < result.high["ndcg@10"])
        True
        >>> print(result.summary())
        metric            mean     std  95% CI
        ndcg@10         0.1926  0.0480  [0.1329, 0.2522]
        hitrate@10      0.5150  0.0602  [0.4402, 0.5898]
    """
    data = _check_interactions(interactions)
    _check_choice("by", by, ("user", "interaction"))
    batch_size = check_int("batch_size", batch_size, 1)
    check_level("confidence", confidence)
    if not callable(fit_and_score):
        raise ValueError(f"`fit_and_score` must be callable, got {type(fit_and_score).__name__}")
    if isinstance(metrics, Metric):
        suite = metrics
    else:
        from torchrec_eval.collection import RankingMetrics

        if isinstance(metrics, str):
            raise ValueError(
                f"`metrics` must be a list of names such as ['ndcg@10'], got {metrics!r}"
            )
        suite = RankingMetrics(list(metrics))
    if by == "user":
        folds = user_kfold(data, n_folds, test_fraction=test_fraction, holdout=holdout, seed=seed)
    else:
        folds = interaction_kfold(data, n_folds, seed=seed)

    per_fold = [_evaluate_fold(suite, split, fit_and_score, batch_size) for split in folds]
    suite.reset()
    num_users = torch.tensor([users for _, users in per_fold])
    values = {name: torch.stack([fold[name] for fold, _ in per_fold]) for name in per_fold[0][0]}
    summary = {name: mean_confidence_interval(v, confidence) for name, v in values.items()}
    mean, std, low, high = ({name: s[i] for name, s in summary.items()} for i in range(4))
    return CrossValidationResult(values, mean, std, low, high, confidence, num_users)
