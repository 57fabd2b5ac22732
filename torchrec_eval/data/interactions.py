"""Synthetic implicit-feedback data with real structure, for the demo, the examples and the tests.

The generator is a small latent-factor model of user behaviour:

* every user ``u`` and item ``i`` has a latent factor vector ``p_u``, ``q_i`` of dimension ``dim``;
* item popularity is long-tailed: the item of popularity rank ``r`` (a random permutation of the item
  ids) has a popularity logit ``-popularity_exponent * log(r)``, i.e. a Zipf law;
* the affinity of a user for an item is the logit
  ``preference_strength * <p_u, q_i> / sqrt(dim) - popularity_exponent * log(rank_i)``,
  and each user's items are drawn *without replacement* with probabilities proportional to
  ``exp(affinity)`` (a Plackett-Luce draw, done for all users at once with the Gumbel-top-k trick);
* each interaction gets a timestamp (seconds); a user's interactions are spread over time in an
  order that is independent of the items, so a split by time leaves a test set that the training
  interactions predict (same tastes), not one that a model can only guess.

Everything is drawn from one seeded :class:`torch.Generator` on the CPU, so a seed gives the same
data on every run and machine. No Python loop runs over users: the users are processed in a few
chunks of whole tensors.

:func:`torchrec_eval.data.splits.temporal_split` splits per user (the latest interactions go to test) and
``padded_item_lists`` turns a split into the ``[U, T]`` id tensors, ``-1`` padded, that the metrics
take as ``target_ids`` and ``exclude_ids``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from torchrec_eval.pipeline.arguments import check_int, is_int

__all__ = [
    "Interactions",
    "RatedInteractions",
    "generate_interactions",
    "interaction_matrix",
    "item_popularity",
    "padded_item_lists",
    ]

# Bound on the number of [users, items] logits held at once while generating (about 64 MiB of float32).
_MAX_CHUNK_ELEMENTS = 1 << 24


@dataclass(frozen=True, eq=False)
class Interactions:
    """A set of implicit-feedback interactions, one entry per (user, item, timestamp) event.

    Attributes:
        user: ``[M]`` long tensor of user ids in ``[0, num_users)``.
        item: ``[M]`` long tensor of item ids in ``[0, num_items)``.
        timestamp: ``[M]`` long tensor of event times (seconds).
        num_users: the number of users (ids may be absent from ``user``).
        num_items: the number of items (the width of a score matrix).

    The generator and the splitter return interactions sorted by user, then by timestamp.

    Example:
        >>> import torch
        >>> from torchrec_eval.data.interactions import Interactions
        >>> data = Interactions(
        ...     user=torch.tensor([0, 0, 1]), item=torch.tensor([3, 1, 2]),
        ...     timestamp=torch.tensor([10, 20, 15]), num_users=2, num_items=4)
        >>> data
        Interactions(num_interactions=3, num_users=2, num_items=4)
        >>> len(data)
        3
    """

    user: Tensor
    item: Tensor
    timestamp: Tensor
    num_users: int
    num_items: int

    def __post_init__(self) -> None:
        for name in ("user", "item", "timestamp"):
            value = getattr(self, name)
            if not isinstance(value, Tensor) or value.ndim != 1 or value.dtype != torch.long:
                got = (
                    f"{type(value).__name__} {getattr(value, 'dtype', '')} shape {tuple(value.shape)}"
                    if isinstance(value, Tensor)
                    else type(value).__name__
                )
                raise ValueError(f"`{name}` must be a 1-D long tensor, got {got}")
        if not (self.user.shape == self.item.shape == self.timestamp.shape):
            raise ValueError(
                "`user`, `item` and `timestamp` must have the same shape, got "
                f"{tuple(self.user.shape)}, {tuple(self.item.shape)} and {tuple(self.timestamp.shape)}"
            )
        if self.num_users < 0 or self.num_items < 0:
            raise ValueError(
                f"`num_users` and `num_items` must be >= 0, got {self.num_users} and {self.num_items}"
            )

    def __len__(self) -> int:
        return self.user.numel()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_interactions={len(self)}, "
            f"num_users={self.num_users}, num_items={self.num_items})"
        )

    @property
    def num_interactions(self) -> int:
        """The number of interactions ``M``."""
        return len(self)

    def select(self, keep: Tensor) -> Interactions:
        """The interactions where the ``[M]`` bool tensor ``keep`` is True (or at the given indices)."""
        return Interactions(
            user=self.user[keep],
            item=self.item[keep],
            timestamp=self.timestamp[keep],
            num_users=self.num_users,
            num_items=self.num_items,
        )

    def user_counts(self) -> Tensor:
        """``[num_users]`` long tensor: the number of interactions of each user."""
        return torch.bincount(self.user, minlength=self.num_users)


@dataclass(frozen=True, eq=False, repr=False)
class RatedInteractions(Interactions):
    """:class:`Interactions` with a rating per interaction and the original ids: real data, loaded.

    It is an :class:`Interactions` (every function that takes one takes it); :meth:`select`, and so
    every split, keeps the ratings of the rows it keeps and the id maps whole.

    Attributes:
        rating: ``[M]`` float32 tensor, the rating of each interaction.
        user_ids: ``[num_users]`` NumPy array, the original id of each user index (sorted).
        item_ids: ``[num_items]`` NumPy array, the original id of each item index (sorted).

    Example:
        >>> import numpy as np
        >>> import torch
        >>> from torchrec_eval.data.interactions import RatedInteractions
        >>> from torchrec_eval.data.splits import temporal_split
        >>> data = RatedInteractions(
        ...     user=torch.tensor([0, 0, 1]), item=torch.tensor([1, 0, 1]), timestamp=torch.tensor([5, 9, 7]),
        ...     num_users=2, num_items=2, rating=torch.tensor([4.0, 2.5, 5.0]),
        ...     user_ids=np.array([196, 305]), item_ids=np.array([242, 302]))
        >>> liked = data.select(data.rating >= 4)
        >>> liked
        RatedInteractions(num_interactions=2, num_users=2, num_items=2)
        >>> data.item_ids[liked.item].tolist()
        [302, 302]
        >>> train, test = temporal_split(data, 0.5)
        >>> test.rating
        tensor([2.5000])
    """

    rating: Tensor
    user_ids: np.ndarray
    item_ids: np.ndarray

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.rating, Tensor) or self.rating.shape != self.user.shape:
            got = tuple(self.rating.shape) if isinstance(self.rating, Tensor) else type(self.rating).__name__
            raise ValueError(f"`rating` must be a tensor of shape {tuple(self.user.shape)}, got {got}")
        for name, size in (("user_ids", self.num_users), ("item_ids", self.num_items)):
            ids = getattr(self, name)
            if len(ids) != size:
                raise ValueError(f"`{name}` must have {size} entries (one per index), got {len(ids)}")

    def select(self, keep: Tensor) -> RatedInteractions:
        """The interactions (and their ratings) where the ``[M]`` bool tensor ``keep`` is True (or at
        the given indices)."""
        return RatedInteractions(
            user=self.user[keep],
            item=self.item[keep],
            timestamp=self.timestamp[keep],
            num_users=self.num_users,
            num_items=self.num_items,
            rating=self.rating[keep],
            user_ids=self.user_ids,
            item_ids=self.item_ids,
        )


def generate_interactions(
    num_users: int = 500,
    num_items: int = 1000,
    interactions_per_user: int | Sequence[int] = 20,
    *,
    dim: int = 8,
    preference_strength: float = 3.0,
    popularity_exponent: float = 1.0,
    start_time: int = 1_700_000_000,
    seed: int = 0,
) -> Interactions:
    r"""Draw a synthetic implicit-feedback data set from a latent-factor model with Zipf popularity.

    User ``u`` chooses among the items with the logits

    .. math::
        a_{ui} = \beta \, \frac{p_u^\top q_i}{\sqrt{d}} - \alpha \log \mathrm{rank}_i,
        \qquad p_u, q_i \sim \mathcal{N}(0, I_d),

    where :math:`\mathrm{rank}_i \in \{1, \dots, N\}` is the popularity rank of item ``i`` (a random
    permutation of the items), :math:`\beta` is ``preference_strength`` and :math:`\alpha` is
    ``popularity_exponent``. The user's ``n_u`` items are drawn without replacement with probability
    proportional to :math:`e^{a_{ui}}` (no repeated item per user). The interactions get increasing
    timestamps, one to 86,400 seconds apart, starting at a random time in the 30 days after
    ``start_time``, in an order independent of the items.

    Args:
        num_users: the number of users ``U``.
        num_items: the number of items ``N``.
        interactions_per_user: an int ``n``, every user has ``n`` interactions; or a pair ``(lo, hi)``,
            each user's count is drawn log-uniformly from ``[lo, hi]`` (a long tail of user activity).
            Counts must be between 1 and ``num_items``.
        dim: the dimension ``d`` of the latent factors.
        preference_strength: ``beta``, the weight of the personal taste; 0 gives pure popularity.
        popularity_exponent: ``alpha``, the Zipf exponent of item popularity; 0 gives no popularity bias.
        start_time: the earliest possible timestamp.
        seed: the seed of the generator; the same seed gives the same data.

    Returns:
        :class:`Interactions`, sorted by user, then by timestamp.

    Raises:
        ValueError: if a size, count or seed is not a valid int, or a count exceeds ``num_items``.

    Example:
        >>> from torchrec_eval.data.interactions import generate_interactions
        >>> data = generate_interactions(num_users=4, num_items=10, interactions_per_user=3, seed=0)
        >>> data
        Interactions(num_interactions=12, num_users=4, num_items=10)
        >>> data.user.tolist()
        [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
        >>> data.item.dtype, data.timestamp.dtype
        (torch.int64, torch.int64)
        >>> bool((data.timestamp[1:3] > data.timestamp[0:2]).all())  # user 0's events in time order
        True
    """
    num_users = check_int("num_users", num_users, 1)
    num_items = check_int("num_items", num_items, 1)
    dim = check_int("dim", dim, 1)
    seed = check_int("seed", seed)
    lo, hi = _count_range(interactions_per_user, num_items)
    gen = torch.Generator().manual_seed(seed)
    # the draws below, in this order, are the data set of a seed: a step that draws must not move
    user_factors = torch.randn(num_users, dim, generator=gen)
    item_factors = torch.randn(num_items, dim, generator=gen)
    popularity_rank = torch.randperm(num_items, generator=gen) + 1  # 1 = most popular
    popularity_logit = -popularity_exponent * torch.log(popularity_rank.double()).float()
    counts = _user_counts(num_users, lo, hi, gen)
    taste_scale = preference_strength / math.sqrt(dim)
    items = _draw_items(user_factors, item_factors, taste_scale, popularity_logit, hi, gen)
    times = _timestamps(num_users, hi, start_time, gen)
    valid = torch.arange(hi).unsqueeze(0) < counts.unsqueeze(1)  # [U, hi]: the first n_u draws
    users = torch.arange(num_users).unsqueeze(1).expand(num_users, hi)
    data = Interactions(
        user=users[valid],
        item=items[valid],
        timestamp=times[valid],
        num_users=num_users,
        num_items=num_items,
    )
    return data.select(sort_by_user_time(data))


def _count_range(interactions_per_user: int | Sequence[int], num_items: int) -> tuple[int, int]:
    """The bounds ``(lo, hi)`` of the per-user counts: ``(n, n)`` for an int ``n``, or the pair given."""
    if is_int(interactions_per_user):
        lo = hi = check_int("interactions_per_user", interactions_per_user)
    elif (
        isinstance(interactions_per_user, Sequence)
        and len(interactions_per_user) == 2
        and all(is_int(v) for v in interactions_per_user)
    ):
        lo, hi = (check_int("interactions_per_user", v) for v in interactions_per_user)
    else:
        raise ValueError(f"`interactions_per_user` must be an int or a pair of ints, got {interactions_per_user!r}")
    if not 1 <= lo <= hi <= num_items:
        raise ValueError(
            f"`interactions_per_user` must lie between 1 and `num_items` ({num_items}), with lo <= hi, "
            f"got {interactions_per_user!r}"
        )
    return lo, hi


def _user_counts(num_users: int, lo: int, hi: int, gen: torch.Generator) -> Tensor:
    """[U] long: each user's number of interactions, ``lo`` for all, or log-uniform on ``[lo, hi]``."""
    if lo == hi:
        return torch.full((num_users,), lo, dtype=torch.long)
    u = torch.rand(num_users, generator=gen, dtype=torch.float64)
    log_counts = math.log(lo) + u * (math.log(hi + 1) - math.log(lo))
    return log_counts.exp().floor().long().clamp_(lo, hi)


def _draw_items(user_factors: Tensor, item_factors: Tensor, taste_scale: float, popularity_logit: Tensor, hi: int,
                gen: torch.Generator) -> Tensor:
    """[U, hi] each user's ``hi`` items drawn without replacement with probability proportional to
    ``exp(logit)``, in draw order: Gumbel-top-k, in chunks of users bounded in memory."""
    num_users, num_items = len(user_factors), len(item_factors)
    chunk = max(1, _MAX_CHUNK_ELEMENTS // num_items)
    drawn = []
    for begin in range(0, num_users, chunk):
        end = min(begin + chunk, num_users)
        logits = taste_scale * (user_factors[begin:end] @ item_factors.T) + popularity_logit
        uniform = torch.rand(logits.shape, generator=gen).clamp_(min=1e-20)
        gumbel = -torch.log(-torch.log(uniform).clamp_(max=-1e-20))
        drawn.append(torch.topk(logits + gumbel, hi, dim=1).indices)
    return torch.cat(drawn)


def _timestamps(num_users: int, hi: int, start_time: int, gen: torch.Generator) -> Tensor:
    """[U, hi] increasing times from a random start per user (within 30 days of ``start_time``), 1 to
    86,400 seconds apart, given to the draws in a random order: time order is independent of draw order
    (and so of how strongly the user prefers the item)."""
    start = start_time + torch.randint(0, 30 * 86_400, (num_users, 1), generator=gen)
    gaps = torch.randint(1, 86_401, (num_users, hi), generator=gen)
    times = start + torch.cumsum(gaps, dim=1)
    order = torch.argsort(torch.rand(num_users, hi, generator=gen), dim=1)
    return torch.gather(times, 1, order)


def sort_by_user_time(interactions: Interactions) -> Tensor:
    """Permutation that sorts by user, then timestamp; equal timestamps keep their current order."""
    by_time = torch.argsort(interactions.timestamp, stable=True)
    by_user = torch.argsort(interactions.user[by_time], stable=True)
    return by_time[by_user]


def padded_item_lists(
    interactions: Interactions, num_users: int | None = None, pad_value: int = -1
) -> Tensor:
    """Each user's items as one row of a ``[U, L]`` long tensor, padded with ``-1``.

    Row ``u`` holds the items of user ``u`` in time order (ties in the input's order), followed by
    ``pad_value``; ``L`` is the largest number of interactions of a user (0 if there are none), and
    users without interactions get a row of padding. The result is what the metrics take as
    ``target_ids`` (the test items) or ``exclude_ids`` (the items seen in training).

    Args:
        interactions: the interactions to lay out.
        num_users: the number of rows ``U``; default ``interactions.num_users``.
        pad_value: the padding value.

    Returns:
        ``[U, L]`` long tensor.

    Raises:
        ValueError: if ``num_users`` is smaller than a user id present.

    Example:
        >>> import torch
        >>> from torchrec_eval.data.interactions import Interactions, padded_item_lists
        >>> data = Interactions(
        ...     user=torch.tensor([2, 0, 2, 2]), item=torch.tensor([7, 4, 5, 6]),
        ...     timestamp=torch.tensor([30, 10, 10, 20]), num_users=3, num_items=8)
        >>> padded_item_lists(data)
        tensor([[ 4, -1, -1],
                [-1, -1, -1],
                [ 5,  6,  7]])
    """
    if num_users is None:
        num_users = interactions.num_users
    largest = int(interactions.user.max()) if len(interactions) else -1
    reason = f"one more than the largest user id, {largest}" if largest >= 0 else ""
    num_users = check_int("num_users", num_users, largest + 1, reason=reason)
    data = interactions.select(sort_by_user_time(interactions))
    counts = torch.bincount(data.user, minlength=num_users)
    width = int(counts.max()) if num_users and len(data) else 0
    starts = torch.cumsum(counts, dim=0) - counts
    position = torch.arange(len(data)) - starts[data.user]
    out = torch.full((num_users, width), pad_value, dtype=torch.long)
    out[data.user, position] = data.item
    return out


def interaction_matrix(interactions: Interactions) -> Tensor:
    """The ``[num_users, num_items]`` bool matrix, True where the user interacted with the item.

    This is the ``target`` of the dense input form (or, negated, a candidate ``mask``).

    Example:
        >>> import torch
        >>> from torchrec_eval.data.interactions import Interactions, interaction_matrix
        >>> data = Interactions(user=torch.tensor([0, 1]), item=torch.tensor([2, 0]),
        ...                     timestamp=torch.tensor([0, 0]), num_users=2, num_items=3)
        >>> interaction_matrix(data)
        tensor([[False, False,  True],
                [ True, False, False]])
    """
    out = torch.zeros(interactions.num_users, interactions.num_items, dtype=torch.bool)
    out[interactions.user, interactions.item] = True
    return out


def item_popularity(interactions: Interactions) -> Tensor:
    """``[num_items]`` long tensor: the number of interactions of each item.

    Example:
        >>> import torch
        >>> from torchrec_eval.data.interactions import Interactions, item_popularity
        >>> data = Interactions(user=torch.tensor([0, 1, 1]), item=torch.tensor([2, 2, 0]),
        ...                     timestamp=torch.tensor([0, 0, 1]), num_users=2, num_items=3)
        >>> item_popularity(data)
        tensor([1, 0, 2])
    """
    return torch.bincount(interactions.item, minlength=interactions.num_items)
