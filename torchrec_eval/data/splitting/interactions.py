"""Interactions from plain tensors: :func:`as_interactions`."""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.data.interactions import Interactions
from torchrec_eval.pipeline.arguments import check_int

__all__ = ["as_interactions"]


def as_interactions(
    user: Tensor,
    item: Tensor,
    timestamp: Tensor | None = None,
    *,
    num_users: int | None = None,
    num_items: int | None = None,
) -> Interactions:
    """Wrap interaction tensors as :class:`~torchrec_eval.data.interactions.Interactions`.

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
        :class:`~torchrec_eval.data.interactions.Interactions` with long tensors.

    Raises:
        ValueError: if a tensor is not 1-D integer, the shapes differ, an id is negative, or
            ``num_users`` / ``num_items`` does not exceed the largest id.

    Example:
        >>> import torch
        >>> from torchrec_eval.data.splits import as_interactions
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
