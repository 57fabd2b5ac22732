"""Sums of one configuration never meet those of another: the checks every metric of the library runs
before it adds states it did not make.

A metric's states are sums whose meaning its configuration fixes (which values, at which cut-offs, in
how many groups). Added to the sums of another configuration they give a number without a word of
warning, so each way in is checked before anything changes:

* ``load_state_dict`` and ``merge_state``: every fixed-size state must have this metric's shape
  (:func:`check_shapes`); a :class:`~torchrec_eval.metrics.base.MemberMetric` also compares the
  configuration its checkpoint names (:mod:`~torchrec_eval.metrics.configuration`).
* the sync of ``compute``/``sync``: before the first sum the ranks all-gather one int64 fingerprint
  of their configurations (:func:`check_ranks_agree`), once per process and process group: one
  collective more at a metric's first sync, none after. On a mismatch
  they gather their descriptions and every rank raises the same ``ValueError``, instead of summing
  unrelated statistics (two ranks with NDCG@5 and NDCG@10) or failing in a collective of another size
  on one rank while the other waits.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor
from torchmetrics.utilities.data import dim_zero_max, dim_zero_mean, dim_zero_min, dim_zero_sum
from torchmetrics.utilities.distributed import gather_all_tensors

from torchrec_eval.pipeline.validation import describe_any

__all__ = ["check_ranks_agree", "check_shapes", "fixed_shapes"]

_FIXED_SIZE = (dim_zero_sum, dim_zero_mean, dim_zero_max, dim_zero_min)  # not "cat": those grow


def fixed_shapes(metric: Any) -> dict[str, tuple[int, ...]]:
    """The shapes of ``metric``'s non-empty states that keep their size (sums, means, extrema), by name."""
    states = {name: getattr(metric, name) for name, reduce in metric._reductions.items() if reduce in _FIXED_SIZE}
    return {name: tuple(state.shape) for name, state in states.items() if isinstance(state, Tensor) and state.numel()}


def check_shapes(metric: Any, states: dict[str, Any], source: str) -> None:
    """Raise a ``ValueError`` where ``states`` holds a fixed-size state of another shape than ``metric``'s.

    Args:
        metric: the metric the states would go into.
        states: state name -> incoming value (names the metric does not have are ignored).
        source: where the states come from, for the message (``"The state_dict"``).
    """
    shapes = fixed_shapes(metric)
    for name, value in states.items():
        if name in shapes and (not isinstance(value, Tensor) or tuple(value.shape) != shapes[name]):
            raise ValueError(
                f"{source} holds state `{name}` of {describe_any(value)}, this metric's has "
                f"{describe_any(getattr(metric, name))} ({metric!r}): another `num_groups` or configuration"
            )


def check_ranks_agree(metric: Any, key: str, process_group: Any) -> None:
    """Compare ``key`` (a description of ``metric``'s configuration, the same string in every process
    for the same configuration) across the ranks of ``process_group``; raise the same ``ValueError`` on
    every rank when they differ.

    One ``all_gather`` of one int64 per rank, through ``torch.distributed`` whatever the metric's
    ``dist_sync_fn`` (a summing one would blend the fingerprints), then nothing more for this process
    and group: a metric's configuration does not change, and a copy sent to another process checks
    again. Without an initialised process group there are no ranks to disagree.
    """
    checked = (os.getpid(), id(process_group))
    if not _distributed() or getattr(metric, "_ranks_agree_on", None) == checked:
        return
    code = int(hashlib.sha1(key.encode()).hexdigest()[:15], 16)
    codes = _gather_codes(torch.tensor([code], dtype=torch.int64, device=metric.device), process_group)
    if any(int(other) != code for other in codes):  # a host read, at the first sync only
        description = f"{key} {metric!r}"
        mine = torch.tensor(list(description.encode()), dtype=torch.uint8, device=metric.device)
        ranks = "; ".join(f"rank {rank}: {bytes(text.tolist()).decode(errors='replace')}"
                          for rank, text in enumerate(_gather_texts(mine, process_group)))
        raise ValueError(
            f"The ranks hold {type(metric).__name__} metrics of different configurations, whose sums cannot "
            f"be added: {ranks}. Build the metric the same way on every rank"
        )
    metric._ranks_agree_on = checked


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def _gather_codes(code: Tensor, group: Any) -> list[Tensor]:
    """Every rank's [1] fingerprint: one collective."""
    codes = [torch.zeros_like(code) for _ in range(dist.get_world_size(group))]
    dist.all_gather(codes, code, group=group)
    return codes


def _gather_texts(text: Tensor, group: Any) -> list[Tensor]:
    """Every rank's description, of any length (torchmetrics' gather pads uneven tensors)."""
    return gather_all_tensors(text, group=group)
