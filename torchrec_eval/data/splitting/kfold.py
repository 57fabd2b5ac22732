"""k-fold splits: by user (held-out users) and by interaction (round-robin folds)."""

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

__all__ = ["HOLDOUTS", "interaction_kfold", "user_kfold"]

HOLDOUTS = ("time", "random")


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
        >>> from torchrec_eval.data.interactions import generate_interactions
        >>> from torchrec_eval.data.splits import user_kfold
        >>> data = generate_interactions(num_users=10, num_items=50, interactions_per_user=5, seed=0)
        >>> folds = user_kfold(data, n_folds=5, seed=0)
        >>> [test.user.unique().numel() for _, test in folds]
        [2, 2, 2, 2, 2]
        >>> [len(train) for train, _ in folds]
        [48, 48, 48, 48, 48]
    """
    data = check_interactions(interactions)
    n_folds = check_int("n_folds", n_folds, 2)
    check_fraction("test_fraction", test_fraction, open_low=True)
    check_choice("holdout", holdout, HOLDOUTS)
    gen = seeded_rng(check_int("seed", seed))
    active = torch.nonzero(data.user_counts() > 0).squeeze(1)
    if n_folds > active.numel():
        raise ValueError(
            f"`n_folds` must be at most the number of users with interactions ({active.numel()}), "
            f"got {n_folds}"
        )
    user_fold = torch.full((data.num_users,), -1, dtype=torch.long, device=active.device)
    shuffled = active[torch.randperm(active.numel(), generator=gen).to(active.device)]
    user_fold[shuffled] = torch.arange(active.numel(), device=active.device) % n_folds
    times = random_times(data, gen) if holdout == "random" else None
    tail = per_user_tail(data, test_fraction, times)
    fold_of_row = user_fold[data.user]
    return [split_by_mask(data, tail & (fold_of_row == fold)) for fold in range(n_folds)]


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
        >>> from torchrec_eval.data.interactions import generate_interactions
        >>> from torchrec_eval.data.splits import interaction_kfold
        >>> data = generate_interactions(num_users=4, num_items=50, interactions_per_user=10, seed=0)
        >>> folds = interaction_kfold(data, n_folds=5, seed=0)
        >>> [len(test) for _, test in folds]
        [8, 8, 8, 8, 8]
        >>> folds[0].test.user_counts().tolist()
        [2, 2, 2, 2]
    """
    data = check_interactions(interactions)
    n_folds = check_int("n_folds", n_folds, 2)
    if n_folds > len(data):
        raise ValueError(
            f"`n_folds` must be at most the number of interactions ({len(data)}), got {n_folds}"
        )
    gen = seeded_rng(check_int("seed", seed))
    position = position_from_end(data, random_times(data, gen))
    start = torch.randint(0, n_folds, (data.num_users,), generator=gen).to(data.user.device)
    fold_of_row = (position + start[data.user]) % n_folds
    return [split_by_mask(data, fold_of_row == fold) for fold in range(n_folds)]
