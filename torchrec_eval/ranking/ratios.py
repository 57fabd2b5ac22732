"""Safe divisions of the top-k formulas: by a cut-off row, a count of relevant items, min(R, k); and the
:class:`Ratio` a formula returns to leave its division to the member, which divides every family's at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.pipeline.batch import once_per_view
from torchrec_eval.pipeline.tensor_cache import row


def as_row(values: Sequence[float], like: Tensor) -> Tensor:
    """``values`` as a float64 row on ``like``'s device (built once per device)."""
    return row(tuple(float(v) for v in values), like.device)


class Ratio(NamedTuple):
    """A formula's value as ``numerator`` [B, P] / ``denominator`` (broadcast to [B, P]), 0 where the denominator is 0
    (:func:`divide`'s rule: every numerator here is 0 there). The top-k member divides the ratios of all its
    families in one op, where each would divide its own."""

    numerator: Tensor
    denominator: Tensor


def quotient(value: Tensor | Ratio) -> Tensor:
    """A formula's value as a tensor: a :class:`Ratio` divided (as the member divides it), a tensor as it is."""
    return divide(*value) if isinstance(value, Ratio) else value


def divide(numerator: Tensor, denominator: Tensor) -> Tensor:
    """numerator / denominator, with 0 where the denominator is 0: every numerator here is 0 there
    (no gain in the list without an ideal gain, no precision without hits), or its query has R = 0
    and ``empty_target_action`` replaces its value."""
    return numerator / denominator.clamp(min=1e-300)


def per_count(numerator: Tensor, count: Tensor) -> Tensor:
    """numerator / count for a count of relevant items (0, 1, 2, ...) that is 0 only where the
    numerator is 0 too (hits and precision sums need a relevant item): 0 there, as :func:`divide`."""
    return numerator / count.clamp(min=1)


def capped_relevant(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)] float64 min(R, k) for each cut-off, read once per batch (AP divides by it, and the binary ideal
    DCG is tabulated by it)."""
    def capped() -> Tensor:
        relevant = rt.relevant_column
        return relevant.clamp(max=ks[0]) if len(ks) == 1 else torch.minimum(as_row(ks, relevant), relevant)

    return once_per_view(rt, "_capped_relevant_" + "_".join(map(str, ks)), capped)


def per_capped_count(numerator: Tensor, rt: RankedTargets, ks: Sequence[int]) -> Ratio:
    """numerator / min(R, k) for each cut-off; 0 where R = 0, as :func:`per_count`."""
    return Ratio(numerator, capped_relevant(rt, ks))
