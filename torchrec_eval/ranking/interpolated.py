"""Interpolated precision (trec_eval's ``iprec_at_recall``) and the 11-point interpolated average precision
(``11pt_avg``), within each cut-off."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.pipeline.tensor_cache import ranks, row

#: the recall levels 0.0, 0.1, ..., 1.0 of the 11-point average (j / 10 is the double nearest the literal)
ELEVEN_LEVELS = tuple(j / 10 for j in range(11))


def iprec(rt: RankedTargets, ks: Sequence[int], recall: float = 0.0) -> Tensor:
    return torch.stack([_at_levels(rt, k, (recall,))[:, 0] for k in ks], dim=1)


def interpolated_ap(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return torch.stack([_at_levels(rt, k, ELEVEN_LEVELS).mean(1) for k in ks], dim=1)


def _at_levels(rt: RankedTargets, k: int, levels: tuple[float, ...]) -> Tensor:
    """[B, len(levels)]: trec_eval's interpolated precision at each recall level p, the most precision
    P@j over ranks j <= k at or after the c-th relevant item (c = 0: every rank); 0 where the top k holds
    fewer than c relevant items (or the query has none). c = (long)(p R + 0.9) in float64, trec_eval
    9's rule (pytrec_eval, ir-measures): the first rank whose recall reaches p, with its rounding."""
    depth = min(k, rt.depth)
    found = rt.cum_hits[:, :depth]
    precision = found / ranks(depth, found.device)
    best_from = precision.flip(1).cummax(1).values.flip(1)  # max over the ranks from i to k
    needed = torch.trunc(rt.relevant_column * row(levels, found.device) + 0.9)  # [B, L]
    reached = found.unsqueeze(2) >= needed.unsqueeze(1)  # [B, k, L]: the c-th relevant item is at or above
    first = reached.to(torch.uint8).argmax(1)
    return best_from.gather(1, first) * (reached.any(1) & (rt.relevant_column > 0))
