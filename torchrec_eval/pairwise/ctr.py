r"""CTR@k: clicks over the logged (shown) items among the top k, and the encodings of unlogged items.

.. math:: \mathrm{CTR@}k = \frac{\sum_q \sum_{i \le k} c_{q,i}}{\sum_q \min(k, N_q)}

CTR@k reads the shared top-k ranking like the top-k metrics (so it works with every input form), but
its value is a ratio of two sums like the full-ranking metrics of this package: it is a family of the
pairwise member (state ``pairwise_ctr_at_k``), so its formula lives here. Items with ``target ==
ignore_index`` (no logged response) are either dropped before the top k is taken (``unlogged="drop"``)
or ranked with the others and left out of the counts (``"rank"``, Jurity's cut, through the target of
:func:`encode_unlogged`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args, overload

import torch
from torch import Tensor

from torchrec_eval.pipeline import RankedTargets
from torchrec_eval.pipeline.forms.candidates import is_relevant
from torchrec_eval.pipeline.tensor_cache import constant, row

#: ``unlogged`` of CTR: how the items with ``target == ignore_index`` count in the cut
Unlogged = Literal["drop", "rank"]
UNLOGGED_MODES: tuple[Unlogged, ...] = get_args(Unlogged)
#: ``unlogged="rank"`` reads the top k of a target encoded by :func:`encode_unlogged` (this threshold)
UNLOGGED_THRESHOLD = 2.0


def ctr_counts(ranked: RankedTargets, ks: Sequence[int], unlogged: str = "drop") -> tuple[Tensor, Tensor]:
    """Clicks among the top k and logged items shown in the top k, [B, len(ks)].

    ``unlogged="drop"``: the unlogged items are not candidates, so the logged ones shown are
    min(k, candidates). ``"rank"``: the target is :func:`encode_unlogged`'s (0 unlogged, 1 logged, 2
    clicked; relevant from 2), so the gains in the top k sum to logged + clicked items."""
    device, columns = ranked.cum_hits.device, tuple(min(k, ranked.depth) - 1 for k in ks)
    # cached per device: a list index or torch.tensor(ks) would copy from the host (a sync) every update
    index = constant(("ctr-columns", columns, device), lambda: torch.tensor(columns, device=device))
    clicks = ranked.cum_hits.index_select(1, index)
    if unlogged == "rank":
        return clicks, ranked.gains.cumsum(1).index_select(1, index) - clicks
    shown = torch.minimum(row(tuple(float(k) for k in ks), device), ranked.num_candidates.unsqueeze(1))
    return clicks, shown


def encode_unlogged(target: Tensor | None, mask: Tensor | None, ignore_index: int | float,
                    relevance_threshold: float | None) -> Tensor:
    """The target of ``unlogged="rank"``: 0 for an unlogged item (``target == ignore_index``, which stays
    a candidate), 1 logged and not clicked, 2 clicked (relevant under ``relevance_threshold``)."""
    plain, logged = apply_ignore_index(target, mask, ignore_index)
    clicked = logged & is_relevant(plain, relevance_threshold)
    dtype = torch.float32 if plain.dtype == torch.bool or plain.dtype.is_complex else plain.dtype
    return logged.to(dtype) + clicked.to(dtype)


@overload
def apply_ignore_index(target: Tensor | None, mask: Tensor | None, ignore_index: float) -> tuple[Tensor, Tensor]: ...
@overload
def apply_ignore_index(target: Tensor | None, mask: Tensor | None,
                       ignore_index: float | None) -> tuple[Tensor | None, Tensor | None]: ...
def apply_ignore_index(target: Tensor | None, mask: Tensor | None,
                       ignore_index: float | None) -> tuple[Tensor | None, Tensor | None]:
    """Turn ``target == ignore_index`` into non-candidates (``mask`` False) with a target of 0."""
    if ignore_index is None:
        return target, mask
    check_ignore_index(ignore_index)
    if target is None:
        raise ValueError(f"`ignore_index` ({ignore_index!r}) marks unobserved items in `target`; pass `target` "
                         "(dense or flat form), or use `mask` with the other forms; got no `target`")
    observed = target != ignore_index
    target = target.masked_fill(~observed, 0)
    if mask is not None:
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.shape != observed.shape:
            raise ValueError(f"`mask` must be a bool tensor of the shape of `target` "
                             f"{tuple(observed.shape)}, got {mask!r:.80}")
        observed = observed & mask
    return target, observed


def check_unlogged(unlogged: Any) -> None:
    """``unlogged`` of CTR: ``"drop"`` or ``"rank"``."""
    if not isinstance(unlogged, str) or unlogged not in UNLOGGED_MODES:
        raise ValueError(f"`unlogged` must be one of {UNLOGGED_MODES}, got {unlogged!r}")


def check_ignore_index(ignore_index: Any) -> None:
    """``ignore_index`` of CTR: a number (bool is not one) or None."""
    if ignore_index is not None and (isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, float))):
        raise ValueError(f"`ignore_index` must be a number or None, got {ignore_index!r}")


def ctr_cutoffs(k: Any) -> list[Any]:
    """``k`` of CTR (and of pAUC) as a list: one cut-off, or a non-empty list or tuple of them (each checked by
    the member)."""
    ks = list(k) if isinstance(k, (list, tuple)) else [k]
    if not ks:
        raise ValueError(f"`k` must be an int or a non-empty sequence of ints, got {k!r}")
    return ks
