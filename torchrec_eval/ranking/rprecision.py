"""R-Precision: the hits in the top min(k, R), over min(k, R) or over R."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.ranking.ratios import divide


def rprecision(rt: RankedTargets, ks: Sequence[int | None], denominator: str = "min_k_r") -> Tensor:
    """hits in the top min(k, R) over min(k, R) (``"min_k_r"``), or over R (``"r"``: MS Recommenders)."""
    columns = []
    for cap in ks:
        depth = rt.num_relevant if cap is None else rt.num_relevant.clamp(max=cap)
        position = (depth.long() - 1).clamp(0, rt.depth - 1).unsqueeze(1)
        hits = rt.cum_hits.gather(1, position).squeeze(1)
        columns.append(divide(hits, rt.num_relevant if denominator == "r" else depth))
    return torch.stack(columns, dim=1)
