"""A split as the tensors of a ranking evaluation: held-out users, ``target_ids``, ``exclude_ids``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import torch
from torch import Tensor

from torchrec_eval.data.interactions import Interactions, padded_item_lists
from torchrec_eval.data.splitting.arguments import check_interactions
from torchrec_eval.pipeline.arguments import check_int

__all__ = ["RankingInputs", "ranking_inputs"]


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


def trimmed_rows(interactions: Interactions, num_users: int, users: Tensor) -> Tensor:
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
        >>> from torchrec_eval.data.splits import as_interactions, leave_last_out, ranking_inputs
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
    check_interactions(train)
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
    return RankingInputs(users, trimmed_rows(test, num_users, users), trimmed_rows(train, num_users, users))
