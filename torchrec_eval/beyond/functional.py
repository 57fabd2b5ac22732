r"""The overlap of two models' top-k lists as functions of one batch (public as :mod:`torchrec_eval.functional`):
``intersection`` (RecTools), ``jaccard`` and ``rbo`` (LensKit's rank-biased overlap, or Webber et al.'s
:math:`\mathrm{RBO_{ext}}`). Definitions: :mod:`torchrec_eval.beyond.overlap`.

Each side of a query is given as scores (``preds``, ``reference_preds`` [B, N], ranked by the package's top-k
and tie order) or as item ids in rank order (``ranked_ids``, ``reference_ids`` [B, L], -1: padding); each
function builds the :class:`~torchrec_eval.beyond.overlap_member.OverlapMember` the classes hold, so both give
the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack, overload

from torch import Tensor

from torchrec_eval.beyond.overlap_inputs import OverlapInputs
from torchrec_eval.beyond.overlap_member import OverlapTies, RBOVariant, overlap_values
from torchrec_eval.members.steps import Reduction
from torchrec_eval.pipeline import keywords_checked_by

__all__ = ["intersection", "jaccard", "rbo"]


@overload
def intersection(preds: Tensor | None = None, reference_preds: Tensor | None = None, *, k: int = 10,
                 ref_k: int | None = None, reduction: Reduction = "mean", ties: OverlapTies = "index",
                 validate_args: bool = True, **inputs: Unpack[OverlapInputs]) -> Tensor: ...


@overload
def intersection(preds: Tensor | None = None, reference_preds: Tensor | None = None, *, k: Sequence[int],
                 ref_k: int | None = None, reduction: Reduction = "mean", ties: OverlapTies = "index",
                 validate_args: bool = True, **inputs: Unpack[OverlapInputs]) -> dict[str, Tensor]: ...


@keywords_checked_by(OverlapInputs)
def intersection(preds: Tensor | None = None, reference_preds: Tensor | None = None, *,
                 k: int | Sequence[int] = 10, ref_k: int | None = None, reduction: Reduction = "mean",
                 ties: OverlapTies = "index", validate_args: bool = True,
                 **inputs: Unpack[OverlapInputs]) -> Tensor | dict[str, Tensor]:
    r"""Intersection@k (RecTools): the share of the model's top k that the reference's top ``ref_k`` holds,
    :math:`|A_{:k} \cap B_{:\mathrm{ref\_k}}| / |A_{:k}|`, averaged over queries.

    It divides by the length of the model's list (k, unless the list is shorter), as RecTools does (its
    ``Intersection`` is the reference list's Recall@ref_k against the top k of ``reco``). A query whose top k
    is empty has no value (NaN with ``reduction="none"``); an empty reference list scores 0.

    Args:
        preds: [B, N] the model's scores, or pass ``ranked_ids`` [B, L] (item ids in rank order, -1: padding).
        reference_preds: [B, N] the reference model's scores, or pass ``reference_ids`` [B, L].
        k: the cut-off of the model's list, or a sequence of them (then a dict ``{"intersection@k": value}``).
        ref_k: the cut-off of the reference's list; None (default): k.
        reduction: ``"mean"`` over the counted queries (NaN if none), or ``"none"``: [B] per query.
        ties: order of equal scores, ``"index"`` (lower item index first) or ``"reverse_index"``.
        validate_args: check values (NaN or +inf scores, ids < -1, an id repeated in a list).
        inputs: ``ranked_ids``, ``reference_ids``, ``mask`` [B, N] (the candidates of every side given as
            scores) and ``exclude_ids`` [B, E] (removed from both sides).

    Raises:
        ValueError: on a bad ``k``, ``ref_k``, ``reduction`` or ``ties``, a side given both ways or neither,
            and on bad input, naming the argument.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import intersection
        >>> model = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> reference = torch.tensor([[0.9, 0.1, 0.8, 0.3], [0.1, 0.3, 0.7, 0.2]])
        >>> intersection(model, reference, k=2, reduction="none")  # {0, 1} vs {0, 2}; {2, 1} vs {2, 1}
        tensor([0.5000, 1.0000], dtype=torch.float64)
        >>> intersection(ranked_ids=torch.tensor([[4, 7, -1]]), reference_ids=torch.tensor([[7, 9, 4]]), k=3, ref_k=1)
        tensor(0.5000, dtype=torch.float64)
    """
    return overlap_values("intersection", k, {"ref_k": ref_k},
                          {**inputs, "preds": preds, "reference_preds": reference_preds}, reduction, ties, validate_args)


@overload
def jaccard(preds: Tensor | None = None, reference_preds: Tensor | None = None, *, k: int = 10,
            reduction: Reduction = "mean", ties: OverlapTies = "index", validate_args: bool = True,
            **inputs: Unpack[OverlapInputs]) -> Tensor: ...


@overload
def jaccard(preds: Tensor | None = None, reference_preds: Tensor | None = None, *, k: Sequence[int],
            reduction: Reduction = "mean", ties: OverlapTies = "index", validate_args: bool = True,
            **inputs: Unpack[OverlapInputs]) -> dict[str, Tensor]: ...


@keywords_checked_by(OverlapInputs)
def jaccard(preds: Tensor | None = None, reference_preds: Tensor | None = None, *, k: int | Sequence[int] = 10,
            reduction: Reduction = "mean", ties: OverlapTies = "index", validate_args: bool = True,
            **inputs: Unpack[OverlapInputs]) -> Tensor | dict[str, Tensor]:
    r"""Jaccard@k: the Jaccard index of the two top-k sets, :math:`|A_{:k} \cap B_{:k}| / |A_{:k} \cup B_{:k}|`,
    averaged over queries.

    A query whose two lists are both empty has no value (NaN with ``reduction="none"``); one empty list scores 0.

    Args:
        preds, reference_preds, reduction, ties, validate_args, inputs: as in :func:`intersection`.
        k: the cut-off of both lists, or a sequence of them (then a dict ``{"jaccard@k": value}``).

    Raises:
        ValueError: as :func:`intersection`.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import jaccard
        >>> jaccard(ranked_ids=torch.tensor([[1, 2, 3], [5, 6, -1]]), reference_ids=torch.tensor([[3, 1, 7], [8, 9, 4]]),
        ...         k=3, reduction="none")  # {1, 2, 3} and {1, 3, 7} share 2 of 4 items; {5, 6} and {8, 9, 4} none
        tensor([0.5000, 0.0000], dtype=torch.float64)
    """
    return overlap_values("jaccard", k, {}, {**inputs, "preds": preds, "reference_preds": reference_preds},
                          reduction, ties, validate_args)


@overload
def rbo(preds: Tensor | None = None, reference_preds: Tensor | None = None, *, k: int = 10,
        patience: float = 0.85, variant: RBOVariant = "lenskit", reduction: Reduction = "mean",
        ties: OverlapTies = "index", validate_args: bool = True, **inputs: Unpack[OverlapInputs]) -> Tensor: ...


@overload
def rbo(preds: Tensor | None = None, reference_preds: Tensor | None = None, *, k: Sequence[int],
        patience: float = 0.85, variant: RBOVariant = "lenskit", reduction: Reduction = "mean",
        ties: OverlapTies = "index", validate_args: bool = True,
        **inputs: Unpack[OverlapInputs]) -> dict[str, Tensor]: ...


@keywords_checked_by(OverlapInputs)
def rbo(preds: Tensor | None = None, reference_preds: Tensor | None = None, *, k: int | Sequence[int] = 10,
        patience: float = 0.85, variant: RBOVariant = "lenskit", reduction: Reduction = "mean",
        ties: OverlapTies = "index", validate_args: bool = True,
        **inputs: Unpack[OverlapInputs]) -> Tensor | dict[str, Tensor]:
    r"""RBO@k, rank-biased overlap (Webber, Moffat and Zobel 2010), averaged over queries.

    With :math:`X_d = |A_{:d} \cap B_{:d}|` the overlap of the two lists' first d items:

    * ``variant="lenskit"`` (default; LensKit's ``rank_biased_overlap``):
      :math:`\sum_{d=1}^{k} p^{d-1} X_d / d \,/\, \sum_{d=1}^{k} p^{d-1}`;
    * ``variant="ext"``: :math:`\mathrm{RBO_{ext}}` (eq. 32 of the paper) of the two lists cut at k, which
      extrapolates from the depth the lists reach, so that identical lists score 1 at any length.

    Any empty list scores 0 and every query counts (LensKit).

    Args:
        preds, reference_preds, reduction, ties, validate_args, inputs: as in :func:`intersection`.
        k: the depth (LensKit's ``n``), or a sequence of them (then a dict ``{"rbo@k": value}``).
        patience: p in (0, 1), the weight of each further depth; 0.85 by default (LensKit's
            ``GeometricRankWeight``).
        variant: ``"lenskit"`` or ``"ext"`` (above).

    Raises:
        ValueError: as :func:`intersection`, and on a bad ``patience`` or ``variant``.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import rbo
        >>> model, reference = torch.tensor([[1, 2, 3, 4]]), torch.tensor([[2, 1, 3, 5]])
        >>> rbo(ranked_ids=model, reference_ids=reference, k=4, patience=0.5)  # X_d / d = 0, 1, 1, 3/4
        tensor(0.4500, dtype=torch.float64)
        >>> rbo(ranked_ids=model, reference_ids=reference, k=4, patience=0.5, variant="ext")
        tensor(0.4688, dtype=torch.float64)
    """
    return overlap_values("rbo", k, {"patience": patience, "variant": variant},
                          {**inputs, "preds": preds, "reference_preds": reference_preds}, reduction, ties, validate_args)
