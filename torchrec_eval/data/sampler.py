"""Data loading for exact distributed evaluation: every query on exactly one rank, none twice.

``torch.utils.data.DistributedSampler`` (and Lightning, which puts one into every dataloader under
DDP) evens out the shards by *repeating* samples: with 2 ranks and 1,001 users one user is evaluated
twice and every mean is slightly off. A metric cannot tell a repeated query from a new one, so the
remedy belongs in the sampler: :class:`UnpaddedDistributedSampler` gives rank ``r`` the samples
``r, r + W, r + 2W, ...`` and nothing more, so ranks may run one batch more or less than others.
That is safe for these metrics (``update`` exchanges nothing; ``compute`` syncs once, on every rank).

Lightning keeps a sampler that is a ``DistributedSampler`` as it is, so passing this one to the
validation ``DataLoader`` is the whole recipe (Lightning's own ``UnrepeatedDistributedSampler`` in
``lightning.pytorch.overrides.distributed`` does the same).
"""

from __future__ import annotations

from collections.abc import Iterator, Sized
from typing import Any, cast

import torch.distributed as dist
from torch.utils.data import Dataset, DistributedSampler


class UnpaddedDistributedSampler(DistributedSampler[int]):
    """``DistributedSampler`` without the repeated samples it appends to even out the shards.

    The parent shuffles (or not) and pads the index list to a multiple of the world size, then rank
    ``r`` takes positions ``r, r + W, r + 2W, ...``; the padding sits at the end, so the positions
    below ``len(dataset)`` are exactly this rank's real samples. Without an initialised process group
    it is one rank holding everything.

    Args:
        dataset: a sized dataset.
        num_replicas, rank: default to the process group's world size and rank (1 and 0 without one).
        shuffle, seed: as ``DistributedSampler`` (``set_epoch`` reshuffles).

    Raises:
        ValueError: if ``drop_last`` is passed (dropping queries changes every mean).

    Example:
        >>> from torchrec_eval.data.sampler import UnpaddedDistributedSampler
        >>> [list(UnpaddedDistributedSampler(range(5), num_replicas=2, rank=r)) for r in (0, 1)]
        [[0, 2, 4], [1, 3]]
    """

    def __init__(
        self,
        dataset: Dataset[Any],
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = False,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        if "drop_last" in kwargs:
            raise ValueError(
                f"`drop_last` is not an option of an evaluation sampler: every query is evaluated once "
                f"(got drop_last={kwargs['drop_last']!r})"
            )
        if kwargs:
            raise ValueError(f"Unexpected arguments {sorted(kwargs)}; valid: num_replicas, rank, shuffle, seed")
        grouped = dist.is_available() and dist.is_initialized()
        num_replicas = num_replicas if num_replicas is not None else dist.get_world_size() if grouped else 1
        rank = rank if rank is not None else dist.get_rank() if grouped else 0
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed)

    def __iter__(self) -> Iterator[int]:
        return iter(list(super().__iter__())[: len(self)])

    def __len__(self) -> int:
        size = len(cast(Sized, self.dataset))  # a sized dataset, as the parent's own len(dataset) needs
        return len(range(self.rank, size, self.num_replicas))
