"""One train/test split (:class:`Split`) and the per-user masks and orders the splits build it from."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from torchrec_eval.data.interactions import Interactions, sort_by_user_time

__all__ = ["Split", "per_user_tail", "position_from_end", "random_times", "split_by_mask"]


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
        >>> from torchrec_eval.data.splits import as_interactions, leave_last_out
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


def split_by_mask(data: Interactions, is_test: Tensor) -> Split:
    """The split with ``is_test`` ([M] bool, input order) as its test set, both parts sorted."""
    order = sort_by_user_time(data)
    sorted_test = is_test[order]
    train_index, test_index = order[~sorted_test], order[sorted_test]
    return Split(data.select(train_index), data.select(test_index), train_index, test_index)


def per_user_tail(data: Interactions, test_fraction: float, timestamp: Tensor | None = None) -> Tensor:
    """[M] bool, input order: each user's latest ``test_fraction`` of interactions by the given times
    (default: the data's; equal times keep the input order): ``round(n * test_fraction)`` of a user's
    ``n``, at least one when ``test_fraction > 0`` and at most ``n - 1`` (a single interaction stays in
    training)."""
    times = data.timestamp if timestamp is None else timestamp
    by_time = torch.argsort(times, stable=True)
    order = by_time[torch.argsort(data.user[by_time], stable=True)]  # by user, then time
    user = data.user[order]
    counts = torch.bincount(user, minlength=data.num_users)
    n_test = torch.round(counts.double() * test_fraction).long()
    if test_fraction > 0:
        n_test = torch.maximum(n_test, torch.ones_like(n_test))
    n_test = torch.minimum(n_test, (counts - 1).clamp(min=0))
    from_end = counts.cumsum(0)[user] - 1 - torch.arange(len(data), device=user.device)  # 0 = the latest
    is_test = torch.zeros(len(data), dtype=torch.bool, device=user.device)
    is_test[order] = from_end < n_test[user]
    return is_test


def random_times(data: Interactions, gen: torch.Generator) -> Tensor:
    """A random permutation of ``0..M-1`` as times: sorting by it shuffles each user's interactions."""
    return torch.randperm(len(data), generator=gen).to(data.user.device)


def position_from_end(data: Interactions, times: Tensor) -> Tensor:
    """[M] long, input order: 0 for each user's latest interaction by ``times``, 1 for the one before..."""
    by_time = torch.argsort(times, stable=True)
    order = by_time[torch.argsort(data.user[by_time], stable=True)]
    users = data.user[order]
    ends = torch.cumsum(torch.bincount(users, minlength=data.num_users), dim=0)
    position = torch.empty_like(order)
    position[order] = ends[users] - 1 - torch.arange(len(data), device=order.device)
    return position
