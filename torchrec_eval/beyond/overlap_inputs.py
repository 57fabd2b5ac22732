"""The two ranked lists an overlap metric compares, from the caller's tensors.

Each side is given one way: the evaluated model as ``preds`` [B, N] scores or ``ranked_ids`` [B, L], the
reference model as ``reference_preds`` [B, N] or ``reference_ids`` [B, L] (item ids in rank order, ``-1``:
padding, anywhere in a row). Scores are ranked by the package's one top-k (:mod:`torchrec_eval.pipeline`),
with its tie order and its meaning of ``-inf``; ``mask`` [B, N] (False: not a candidate) applies to every
side given as scores, ``exclude_ids`` [B, E] to both sides. Each side goes through
:func:`~torchrec_eval.pipeline.prepare_batch` exactly as a one-model metric's input does (the ids or the
ranked form, with no target), so every check and message is the pipeline's; an error of the reference side
names the reference's argument.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline import Inputs, Needs, RankedInputs, RankedTargets, Rules, prepare_batch
from torchrec_eval.pipeline.tensor_cache import constant
from torchrec_eval.pipeline.validation import describe_any, require_tensor

__all__ = ["OVERLAP_FORMS", "OverlapInputs", "ranked_pair"]

#: the argument of each side's two forms: (scores, ranked ids)
OWN = ("preds", "ranked_ids")
REFERENCE = ("reference_preds", "reference_ids")
OVERLAP_FORMS = ("each side as scores or as ranked ids: update(preds [B, N] or ranked_ids=[B, L], "
                 "reference_preds [B, N] or reference_ids=[B, L])")


class OverlapInputs(RankedInputs, total=False):
    """The keywords an overlap function or ``update`` takes in ``**inputs`` besides ``preds`` and
    ``reference_preds``: :class:`~torchrec_eval.pipeline.RankedInputs` (``ranked_ids``, the evaluated model's items
    in rank order instead of ``preds``; ``mask``, for each side given as scores; ``exclude_ids``, on both sides)
    and the reference's ranking.

    Attributes:
        reference_ids: [B, L] the reference model's items in rank order, instead of ``reference_preds``.
    """

    reference_ids: Tensor | None


def _no_targets(rows: int, device: torch.device) -> Tensor:
    """[rows, 1] target ids that are all padding: the forms' targets, which an overlap does not read."""
    return constant(("overlap_no_targets", rows, device),
                    lambda: torch.full((rows, 1), -1, dtype=torch.long, device=device))


def _renamed(message: str) -> str:
    """A pipeline message about the reference side, in the names of the reference's arguments."""
    return message.replace("`preds`", "`reference_preds`").replace("`ranked_ids`", "`reference_ids`")


def _side(names: tuple[str, str], scores: object, ids: object, mask: Tensor | None, exclude_ids: Tensor | None,
          groups: Tensor | None, depth: int, rules: Rules) -> RankedTargets:
    """One side ranked to ``depth``: its top-k view, whose ``item_ids`` list the side's items."""
    score_name, ids_name = names
    if (scores is None) == (ids is None):
        got = f"both, `{score_name}` of {describe_any(scores)} and `{ids_name}` of {describe_any(ids)}" \
            if scores is not None else "neither"
        raise ValueError(f"Pass exactly one of `{score_name}` (scores [B, N]) and `{ids_name}` (item ids in rank "
                         f"order [B, L], -1: padding), got {got}; the overlap metrics take {OVERLAP_FORMS}")
    try:
        if scores is not None:
            preds = require_tensor("preds", scores)
            rows = preds.shape[0] if preds.ndim else 0
            inputs = Inputs(preds=preds, target_ids=_no_targets(rows, preds.device), mask=mask,
                            exclude_ids=exclude_ids, groups=groups)
        else:
            ranked = require_tensor("ranked_ids", ids)
            rows = ranked.shape[0] if ranked.ndim else 0
            inputs = Inputs(ranked_ids=ranked, target_ids=_no_targets(rows, ranked.device), exclude_ids=exclude_ids,
                            groups=groups)
        return prepare_batch(inputs, Needs(depth=depth, listed_ids=True), rules).top_k()
    except ValueError as error:
        if names == OWN:
            raise
        raise ValueError(_renamed(str(error))) from None


def ranked_pair(*, preds: object = None, reference_preds: object = None, ranked_ids: object = None,
                reference_ids: object = None, mask: Tensor | None = None, exclude_ids: Tensor | None = None,
                groups: Tensor | None = None, depth: int, reference_depth: int,
                rules: Rules) -> tuple[RankedTargets, Tensor]:
    """Both sides of one call, checked and ranked: the evaluated model's top-``depth`` view (its ``item_ids``
    [B, <= depth]) and the reference's top ``reference_depth`` ids [B, <= reference_depth], ``-1`` past a short
    list (real ids first).

    Raises:
        ValueError: on a side given both ways or neither, a ``mask`` with no side given as scores, sides of
            different numbers of queries, and whatever the pipeline refuses in either side (shapes, dtypes,
            NaN or +inf scores, ids < -1, an id repeated in a list), naming the argument.
    """
    if mask is not None and preds is None and reference_preds is None:
        raise ValueError("`mask` marks the candidates among scored items: pass it with `preds` or "
                         f"`reference_preds`; with ranked ids use `exclude_ids`, got `mask` of {describe_any(mask)}")
    own = _side(OWN, preds, ranked_ids, mask if preds is not None else None, exclude_ids, groups, depth, rules)
    rows = own.num_relevant.shape[0]
    name, other = (REFERENCE[0], reference_preds) if reference_preds is not None else (REFERENCE[1], reference_ids)
    if isinstance(other, Tensor) and other.ndim and other.shape[0] != rows:
        mine = OWN[0] if preds is not None else OWN[1]
        raise ValueError(f"`{name}` must have one row per query, as `{mine}` ({rows}), got {describe_any(other)}")
    reference = _side(REFERENCE, reference_preds, reference_ids, mask if reference_preds is not None else None,
                      exclude_ids, groups, reference_depth, rules)
    return own, reference.listed_ids()
