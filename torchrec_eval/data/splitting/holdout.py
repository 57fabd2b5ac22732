"""Hold-out splits: the latest interactions of each user, a time cut, a random fraction."""

from __future__ import annotations

import torch

from torchrec_eval.data.interactions import Interactions
from torchrec_eval.data.splitting.arguments import (
    check_choice,
    check_fraction,
    check_interactions,
    seeded_rng,
)
from torchrec_eval.data.splitting.split import (
    Split,
    per_user_tail,
    position_from_end,
    random_times,
    split_by_mask,
)
from torchrec_eval.pipeline.arguments import check_int

__all__ = ["leave_last_out", "random_split", "temporal_split"]


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
        ValueError: if ``interactions`` is not :class:`~torchrec_eval.data.interactions.Interactions` or ``n``
            is not an int >= 1.

    Example:
        >>> from torchrec_eval.data.interactions import generate_interactions
        >>> from torchrec_eval.data.splits import leave_last_out
        >>> data = generate_interactions(num_users=3, num_items=20, interactions_per_user=4, seed=0)
        >>> train, test = leave_last_out(data, n=1)
        >>> len(train), len(test), test.user.tolist()
        (9, 3, [0, 1, 2])
    """
    data = check_interactions(interactions)
    n = check_int("n", n, 1)
    counts = data.user_counts()
    n_test = (counts - 1).clamp(min=0, max=n)
    return split_by_mask(data, position_from_end(data, data.timestamp) < n_test[data.user])


def temporal_split(
    interactions: Interactions,
    test_fraction: float = 0.2,
    *,
    by: str = "user",
    cutoff: int | None = None,
) -> Split:
    r"""Split by time: per user (the latest fraction of each user) or at one global time cut.

    ``by="user"`` (leave-latest-out, the protocol of sequential recommendation): a user with :math:`m_u`
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
        >>> from torchrec_eval.data.splits import as_interactions, temporal_split
        >>> data = as_interactions(torch.tensor([0, 0, 1, 1, 1]), torch.tensor([0, 1, 2, 3, 4]),
        ...                        torch.tensor([10, 40, 20, 30, 50]))
        >>> temporal_split(data, 0.4, by="global").test.timestamp.tolist()
        [40, 50]
        >>> temporal_split(data, by="global", cutoff=30).test.timestamp.tolist()
        [40, 30, 50]
        >>> temporal_split(data, 0.5, by="user").test.item.tolist()  # round(0.5 * 3) = 2 for user 1
        [1, 3, 4]
    """
    data = check_interactions(interactions)
    check_choice("by", by, ("user", "global"))
    if cutoff is not None:
        if by != "global":
            raise ValueError(f"`cutoff` is a global time cut: it needs by='global', got by={by!r}")
        cutoff = check_int("cutoff", cutoff)
    else:
        check_fraction("test_fraction", test_fraction)
    if by == "user":
        return split_by_mask(data, per_user_tail(data, test_fraction))
    if cutoff is None:
        n_test = round(len(data) * test_fraction)
        if n_test == 0:
            return split_by_mask(data, torch.zeros_like(data.user, dtype=torch.bool))
        cutoff = int(torch.sort(data.timestamp).values[len(data) - n_test])
    return split_by_mask(data, data.timestamp >= cutoff)


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
        >>> from torchrec_eval.data.interactions import generate_interactions
        >>> from torchrec_eval.data.splits import random_split
        >>> data = generate_interactions(num_users=10, num_items=50, interactions_per_user=10, seed=0)
        >>> split = random_split(data, 0.2, seed=1)
        >>> len(split.train), len(split.test)
        (80, 20)
        >>> random_split(data, 0.2, per_user=True, seed=1).test.user_counts().tolist()
        [2, 2, 2, 2, 2, 2, 2, 2, 2, 2]
    """
    data = check_interactions(interactions)
    check_fraction("test_fraction", test_fraction)
    gen = seeded_rng(check_int("seed", seed))
    times = random_times(data, gen)
    if per_user:
        return split_by_mask(data, per_user_tail(data, test_fraction, times))
    return split_by_mask(data, times >= len(data) - round(len(data) * test_fraction))
