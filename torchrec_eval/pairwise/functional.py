"""AUC, GAUC, MPR, FCP, CTR@k and pAUC@k as functions of one batch (public as :mod:`torchrec_eval.functional`).

AUC, GAUC, MPR, FCP and pAUC@k look at every candidate of a query, not at a top-k list, so they need a score
for every candidate (the dense, ids or flat input form; not ``ranked_ids``). They share one ascending
``torch.sort`` of each row of scores; non-candidates (``mask`` False, ``exclude_ids``) hold ``-inf``
and sort first, and are left out of every count. Tied scores are handled exactly and do not depend
on ``ties``: a tied (relevant, non-relevant) pair counts 1/2 in AUC, tied items share their mean rank
in MPR, a pair with equal scores is neither concordant nor discordant in FCP, and pAUC@k takes its
expected value over every order of the tied items. No [N, N] tensor is formed and no loop runs over
queries (kernels: :mod:`~torchrec_eval.pairwise.ranks`, :mod:`~torchrec_eval.pairwise.pairs`,
:mod:`~torchrec_eval.pairwise.negatives_above`). CTR@k reads the shared top-k ranking like the top-k
metrics (it works with every input form).

Each function builds a :class:`~torchrec_eval.pairwise.member.PairwiseMember`, as the classes do, so
both give the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack, overload

import torch
from torch import Tensor

from torchrec_eval.members.steps import EmptyTargetAction, Reduction, check_common, prepare
from torchrec_eval.pairwise.ctr import (
    UNLOGGED_THRESHOLD,
    Unlogged,
    apply_ignore_index,
    check_unlogged,
    ctr_cutoffs,
    encode_unlogged,
)
from torchrec_eval.pairwise.member import PairwiseMember
from torchrec_eval.pairwise.mpr import AVERAGES, MPRAverage
from torchrec_eval.pairwise.pauc import InsufficientHandling, check_insufficient_handling
from torchrec_eval.pipeline import FormInputs, Inputs, Rules, Ties, input_keywords_checked

__all__ = ["auc", "ctr", "fcp", "gauc", "mpr", "partial_auc"]


def _compute_requests(requests: list[tuple[str, int | None]], options: dict[str, dict[str, Any]],
                       preds: Tensor | None, target: Tensor | None, reduction: str, empty_target_action: str,
                       relevance_threshold: float | None, ties: str, validate_args: bool,
                       inputs: FormInputs, marks_unlogged: bool = False) -> dict[str, Tensor]:
    """The metrics ``requests`` ((name, k) pairs) of one batch, through one :class:`PairwiseMember`: the
    shared body of the functions of this module. Returns {key: 0-d mean or [B] per query}."""
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    check_common(empty_target_action, relevance_threshold)
    member = PairwiseMember(requests, options, marks_unlogged=marks_unlogged)
    batch = prepare([member], Inputs.of({**dict(inputs), "preds": preds, "target": target}),
                    Rules(ties, relevance_threshold, validate_args))
    numerators, denominators = member.ratios(batch, empty_target_action)
    if reduction == "none":
        values = torch.where(denominators > 0, numerators / denominators.clamp(min=1e-300), float("nan"))
    else:
        values = numerators.sum(0) / denominators.sum(0)  # 0/0 = NaN when nothing is counted
    return {key: values[..., i] for i, key in enumerate(member.keys)}


@input_keywords_checked
def auc(preds: Tensor | None = None, target: Tensor | None = None, *, reduction: Reduction = "mean",
        empty_target_action: EmptyTargetAction = "skip", relevance_threshold: float | None = None,
        validate_args: bool = True, tie_credit: float = 0.5, **inputs: Unpack[FormInputs]) -> Tensor:
    r"""AUC per query: the share of (relevant, non-relevant) candidate pairs ranked right, ties counting 1/2
    (``tie_credit``).

    .. math:: \mathrm{AUC}_q = \frac{1}{R\,(N-R)} \sum_{i\,\mathrm{rel}} \sum_{j\,\mathrm{non\text{-}rel}}
        \left(\mathbb{1}[s_i > s_j] + \tfrac12 \mathbb{1}[s_i = s_j]\right)
        = \frac{A - R(R+1)/2}{R\,(N-R)}

    over the N valid candidates of the query, R of them relevant, A the sum of the ascending mean
    ranks of the relevant ones (Mann-Whitney). Equal to ``sklearn.metrics.roc_auc_score`` of each
    query. ``reduction="mean"`` averages over the queries (``GAUC`` weights them by R). With
    ``tie_credit=0.0`` a tied pair counts nothing, as in cornac's ``AUC``: the pairs ordered strictly right
    over all pairs.

    Shapes: ``preds`` [B, N] float scores, ``target`` [B, N] relevance (bool, int or float >= 0), or
    1-D with ``indexes``, or ``target_ids`` [B, T]. Not ``ranked_ids``: every candidate needs a score.

    Args:
        preds: scores; any real values.
        target: relevance.
        reduction: ``"mean"`` over counted queries (a 0-d float64 tensor, NaN if none is counted) or
            ``"none"`` for per-query values [B] (NaN for skipped queries).
        empty_target_action: a query without a relevant or without a non-relevant candidate is
            ``"skip"``-ped (default), scores ``"neg"`` (0) or ``"pos"`` (1), or raises (``"error"``).
        relevance_threshold: a target >= this is relevant; default: target > 0.
        validate_args, inputs: check values (``False``: no host sync); the other input forms, whose
            non-candidates every count leaves out (:class:`~torchrec_eval.pipeline.inputs.FormInputs`).
        tie_credit: what a tied (relevant, non-relevant) pair counts: 0.5 (default) or 0.0 (cornac).

    Raises:
        ValueError: on a bad argument, with ``ranked_ids`` (every candidate needs a score), on bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import auc
        >>> preds = torch.tensor([[0.9, 0.5, 0.5, 0.1], [0.2, 0.8, 0.4, 0.6]])
        >>> target = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])
        >>> auc(preds, target, reduction="none")
        tensor([0.8750, 0.0000], dtype=torch.float64)
        >>> auc(preds, target)
        tensor(0.4375, dtype=torch.float64)
    """
    return _compute_requests([("auc", None)], {"auc": {"tie_credit": tie_credit}}, preds, target, reduction,
                             empty_target_action, relevance_threshold, "index", validate_args, inputs)["auc"]


@input_keywords_checked
def gauc(preds: Tensor | None = None, target: Tensor | None = None, *, empty_target_action: EmptyTargetAction = "skip",
         relevance_threshold: float | None = None, validate_args: bool = True, **inputs: Unpack[FormInputs]) -> Tensor:
    r"""GAUC: the per-query AUC averaged with weights R, the query's number of relevant items (RecBole).

    .. math:: \mathrm{GAUC} = \sum_q R_q\, \mathrm{AUC}_q \Big/ \sum_q R_q

    over the counted queries (see :func:`auc` for :math:`\mathrm{AUC}_q` and the shapes). For the
    per-query values use ``auc(..., reduction="none")``.

    Args:
        preds: scores; any real values.
        target: relevance.
        empty_target_action: a query without a relevant or without a non-relevant candidate is
            ``"skip"``-ped (default), scores ``"neg"`` (0) or ``"pos"`` (1), or raises (``"error"``).
            (with ``"neg"``/``"pos"`` still weighs R: a query with R = 0 adds nothing).
        relevance_threshold: a target >= this is relevant; default: target > 0.
        validate_args, inputs: check values (``False``: no host sync); the other input forms, whose
            non-candidates every count leaves out (:class:`~torchrec_eval.pipeline.inputs.FormInputs`).

    Raises:
        ValueError: on a bad argument, with ``ranked_ids`` (every candidate needs a score), on bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import gauc
        >>> preds = torch.tensor([[0.9, 0.5, 0.5, 0.1], [0.2, 0.8, 0.4, 0.6]])
        >>> target = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])
        >>> gauc(preds, target)  # (2 * 0.875 + 1 * 0) / 3
        tensor(0.5833, dtype=torch.float64)
    """
    return _compute_requests([("gauc", None)], {}, preds, target, "mean", empty_target_action, relevance_threshold,
                             "index", validate_args, inputs)["gauc"]


@input_keywords_checked
def mpr(preds: Tensor | None = None, target: Tensor | None = None, *, average: MPRAverage = "pooled",
        reduction: Reduction = "mean", empty_target_action: EmptyTargetAction = "skip",
        relevance_threshold: float | None = None, validate_args: bool = True, **inputs: Unpack[FormInputs]) -> Tensor:
    r"""MPR: the mean percentile rank of the relevant items, 0 = top, 100 = bottom. Lower is better.

    The percentile rank of a candidate among the N valid candidates of its query is

    .. math:: \mathrm{pr} = 100 \cdot \frac{\mathrm{rank} - 1}{N - 1}

    with rank the 1-based rank by descending score, the mean rank of its tie group when scores are
    tied (so constant scores give 50), and pr = 0 when N = 1. Random scores give 50 in expectation.

    Shapes: as :func:`auc` (not ``ranked_ids``).

    Args:
        preds: scores; any real values.
        target: relevance.
        average: ``"pooled"`` (default, Hu et al. 2008): the mean over all relevant items of the batch;
            ``"query"``: the mean over queries of each query's mean.
        reduction: ``"mean"`` (the ``average`` above, a 0-d float64 tensor) or ``"none"``: each
            query's mean percentile rank [B] (NaN for a query without a relevant item).
        empty_target_action: only with ``average="query"``: a query without a relevant item is
            ``"skip"``-ped (default), scores ``"neg"`` (100, the worst) or ``"pos"`` (0, the best);
            ``"error"`` raises with either ``average``. Pooled, such a query adds nothing.
        relevance_threshold: a target >= this is relevant; default: target > 0.
        validate_args, inputs: check values (``False``: no host sync); the other input forms, whose
            non-candidates every count leaves out (:class:`~torchrec_eval.pipeline.inputs.FormInputs`).

    Raises:
        ValueError: on a bad argument, with ``ranked_ids`` (every candidate needs a score), on bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import mpr
        >>> preds = torch.tensor([[0.9, 0.7, 0.5, 0.1, 0.0], [0.2, 0.8, 0.4, 0.6, 0.0]])
        >>> target = torch.tensor([[1, 0, 1, 0, 0], [0, 0, 0, 0, 1]])
        >>> mpr(preds, target, reduction="none")  # (0 + 50) / 2 and 100
        tensor([ 25., 100.], dtype=torch.float64)
        >>> mpr(preds, target), mpr(preds, target, average="query")  # 150 / 3 and (25 + 100) / 2
        (tensor(50., dtype=torch.float64), tensor(62.5000, dtype=torch.float64))
    """
    if average not in AVERAGES:
        raise ValueError(f"`average` must be 'pooled' or 'query', got {average!r}")
    return _compute_requests([("mpr", None)], {"mpr": {"average": average}}, preds, target, reduction,
                             empty_target_action, relevance_threshold, "index", validate_args, inputs)["mpr"]


@input_keywords_checked
def fcp(preds: Tensor | None = None, target: Tensor | None = None, *, reduction: Reduction = "mean",
        validate_args: bool = True, **inputs: Unpack[FormInputs]) -> Tensor:
    r"""FCP, the fraction of concordant pairs (Koren & Sill 2011), for graded relevance.

    .. math:: \mathrm{FCP} = \frac{\sum_q n_c(q)}{\sum_q n_c(q) + \sum_q n_d(q)}

    where, over the pairs of valid candidates of query q with different target values, n_c counts
    those whose higher target has the higher score and n_d those whose higher target has the lower
    score; a pair with equal scores is neither. The target values are used as they are (no
    ``relevance_threshold``); a query with no such pair adds nothing. Cost: one sort per row plus one
    pass per distinct target value > 0 over the items with a target > 0, and one host sync per batch.

    Shapes: as :func:`auc` (not ``ranked_ids``); ``target_gains`` give the grades in the ids form.

    Args:
        preds: scores; any real values.
        target: graded relevance (>= 0).
        reduction: ``"mean"``: pooled over the batch, a 0-d float64 tensor (NaN without any pair);
            ``"none"``: each query's n_c / (n_c + n_d) [B] (NaN for a query without a pair).
        validate_args, inputs: check values (``False``: no host sync); the other input forms, whose
            non-candidates every count leaves out (:class:`~torchrec_eval.pipeline.inputs.FormInputs`).

    Raises:
        ValueError: on a bad ``reduction``, with ``ranked_ids``, on mismatched shapes or dtypes and
            (with ``validate_args``) NaN/inf scores or negative relevance.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import fcp
        >>> # true order A > B > C, predicted B, A, C: A>C and B>C concordant, A>B discordant
        >>> fcp(torch.tensor([[0.8, 0.9, 0.1]]), torch.tensor([[3, 2, 1]]))
        tensor(0.6667, dtype=torch.float64)
    """
    return _compute_requests([("fcp", None)], {}, preds, target, reduction, "skip", None, "index", validate_args,
                             inputs)["fcp"]


@overload
def ctr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10, reduction: Reduction = "mean",
        ignore_index: float | None = None, unlogged: Unlogged = "drop", relevance_threshold: float | None = None,
        ties: Ties = "index", validate_args: bool = True, **inputs: Unpack[FormInputs]) -> Tensor: ...
@overload
def ctr(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int], reduction: Reduction = "mean",
        ignore_index: float | None = None, unlogged: Unlogged = "drop", relevance_threshold: float | None = None,
        ties: Ties = "index", validate_args: bool = True, **inputs: Unpack[FormInputs]) -> dict[str, Tensor]: ...
@input_keywords_checked
def ctr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        reduction: Reduction = "mean", ignore_index: float | None = None, unlogged: Unlogged = "drop",
        relevance_threshold: float | None = None, ties: Ties = "index", validate_args: bool = True,
        **inputs: Unpack[FormInputs]) -> Tensor | dict[str, Tensor]:
    r"""CTR@k: clicks over observed (shown) items among the top k, pooled over queries.

    .. math:: \mathrm{CTR@}k = \frac{\sum_q \sum_{i \le k} c_{q,i}}{\sum_q \min(k, N_q)}

    The target is 1 for a click and 0 for an item shown but not clicked; unobserved items are marked
    with ``mask`` False (or ``target == ignore_index``) and are not candidates: they are removed from
    the ranking, so the top k are the k best-scored *observed* items, and N_q is the number of observed
    items of the query. ``empty_target_action`` does not apply: a query without a click adds its shown
    items to the denominator. With ``ranked_ids`` the list is what was shown and ``target_ids`` the
    clicked items.

    With ``unlogged="rank"`` (Jurity's cut) the items with ``target == ignore_index`` stay in the
    ranking: the top k are taken over every candidate, and the logged ones among them count,

    .. math:: \mathrm{CTR@}k = \frac{\sum_q \sum_{i \le k} c_{q,i}}{\sum_q \sum_{i \le k} o_{q,i}}

    with :math:`o_{q,i}` = 1 for a logged item at rank i (0/0 = NaN when no logged item is in any top k).

    Shapes: any input form of :mod:`torchrec_eval.pipeline`.

    Args:
        preds: scores; any real values.
        target: 1 clicked, 0 shown and not clicked (or ``ignore_index``: not shown).
        k: cut-off, an int >= 1 or a sequence of them (then a dict ``{"ctr@k": value}`` is returned).
        reduction: ``"mean"``: pooled clicks / pooled shown items over the batch (a 0-d float64
            tensor) or ``"none"``: per query [B] (NaN for a query with no observed item).
        ignore_index: a ``target`` value that marks unobserved items (e.g. -1); same as ``mask``
            False there (with the default ``unlogged``).
        unlogged: how the items with ``target == ignore_index`` (no logged response) count in the cut:
            ``"drop"`` (default) removes them before the top k is taken; ``"rank"`` ranks them with
            the others, so they take places in the top k, and then counts only the logged items
            there (Jurity's CTR@k: top k of every recommended item, then the logged ones). ``mask``
            False stays a non-candidate either way.
        relevance_threshold: a target >= this is relevant; default: target > 0.
        ties: how equal scores are ordered at the cut-off, any mode of :mod:`torchrec_eval.pipeline`:
            ``"index"`` (default: lower item index first), ``"pessimistic"`` (clicked items last),
            ``"average"`` (the expected value over all orders of the tied items), ...
        validate_args, inputs: check values (``False``: no host sync); the other input forms, whose
            non-candidates every count leaves out (:class:`~torchrec_eval.pipeline.inputs.FormInputs`).

    Raises:
        ValueError: on a bad ``k``, ``reduction``, ``ignore_index`` or ``unlogged``, on mismatched
            shapes or dtypes and (with ``validate_args``) NaN/inf scores or negative relevance.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import ctr
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4]])
        >>> target = torch.tensor([[1, -1, 0, 1], [-1, -1, 1, -1]])  # -1: not shown
        >>> ctr(preds, target, k=2, ignore_index=-1)  # (1 + 1) / (2 + 1)
        tensor(0.6667, dtype=torch.float64)
        >>> ctr(preds, target, k=2, ignore_index=-1, unlogged="rank")  # top 2 of all: (1 + 0) / (1 + 0)
        tensor(1., dtype=torch.float64)
    """
    check_unlogged(unlogged)
    ks = ctr_cutoffs(k)
    mask = inputs.pop("mask", None)
    ranks_unlogged = unlogged == "rank" and ignore_index is not None
    if ranks_unlogged and ignore_index is not None:
        check_common("skip", relevance_threshold)
        target = encode_unlogged(target, mask, ignore_index, relevance_threshold)
        relevance_threshold = UNLOGGED_THRESHOLD
    else:
        target, mask = apply_ignore_index(target, mask, ignore_index)
    inputs["mask"] = mask
    results = _compute_requests([("ctr", one) for one in ks], {"ctr": {"unlogged": unlogged}}, preds, target, reduction,
                                "skip", relevance_threshold, ties, validate_args, inputs,
                                marks_unlogged=ranks_unlogged)
    return results if isinstance(k, (list, tuple)) else results[f"ctr@{k}"]


@overload
def partial_auc(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
                reduction: Reduction = "mean", insufficient_handling: InsufficientHandling = "ignore",
                empty_target_action: EmptyTargetAction = "skip", relevance_threshold: float | None = None,
                validate_args: bool = True, **inputs: Unpack[FormInputs]) -> Tensor: ...
@overload
def partial_auc(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
                reduction: Reduction = "mean", insufficient_handling: InsufficientHandling = "ignore",
                empty_target_action: EmptyTargetAction = "skip", relevance_threshold: float | None = None,
                validate_args: bool = True, **inputs: Unpack[FormInputs]) -> dict[str, Tensor]: ...
@input_keywords_checked
def partial_auc(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
                reduction: Reduction = "mean", insufficient_handling: InsufficientHandling = "ignore",
                empty_target_action: EmptyTargetAction = "skip", relevance_threshold: float | None = None,
                validate_args: bool = True, **inputs: Unpack[FormInputs]) -> Tensor | dict[str, Tensor]:
    r"""pAUC@k, RecTools' partial AUC: each relevant item against the k best-ranked non-relevant candidates.

    .. math:: \mathrm{pAUC@}k_q = \frac{1}{k\,R} \sum_{i\ \mathrm{rel}} \max(k - c_i, 0)

    over the R relevant candidates of the query, :math:`c_i` the non-relevant candidates ranked above the
    relevant item i (RecTools' ``PartialAUC(k)``); ``reduction="mean"`` averages over the queries. Tied
    scores give the expected value over every order of the tied items: a tie group inside the first k
    non-relevant candidates counts each tied pair 1/2, as in AUC (:mod:`~torchrec_eval.pairwise.pauc`);
    ``ties`` has no effect. Without ties it is RecTools' value. Computed from one sort per row, without
    [N, N] pairs.

    Shapes: as :func:`auc` (not ``ranked_ids``).

    Args:
        preds: scores; any real values.
        target: relevance.
        k: the number of top non-relevant candidates, an int >= 1 or a sequence of them (then a dict
            ``{"pauc@k": value}`` is returned).
        reduction: ``"mean"`` over counted queries (a 0-d float64 tensor, NaN if none is counted) or
            ``"none"`` for per-query values [B] (NaN for a query not counted).
        insufficient_handling: a query with fewer than k non-relevant candidates is scored as RecTools
            scores it, as if the missing ones ranked below every relevant item (``"ignore"``, default),
            left out of the mean (``"exclude"``), or raises (``"raise"``, a host read).
        empty_target_action: a query without a relevant item is ``"skip"``-ped (default, as RecTools leaves
            out users without test items), scores ``"neg"`` (0) or ``"pos"`` (1), or raises (``"error"``).
        relevance_threshold: a target >= this is relevant; default: target > 0.
        validate_args, inputs: check values (``False``: no host sync); the other input forms, whose
            non-candidates every count leaves out (:class:`~torchrec_eval.pipeline.inputs.FormInputs`).

    Raises:
        ValueError: on a bad ``k``, ``reduction`` or ``insufficient_handling``, with ``ranked_ids`` (every
            candidate needs a score), on bad input, and with ``insufficient_handling="raise"`` on a query
            with fewer than k non-relevant candidates.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import partial_auc
        >>> preds = torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5], [0.5, 0.4, 0.3, 0.2, 0.1]])
        >>> target = torch.tensor([[0, 1, 0, 1, 0], [1, 0, 0, 0, 0]])
        >>> partial_auc(preds, target, k=2, reduction="none")  # ((2 - 1) + (2 - 2)) / (2 * 2) and 2 / 2
        tensor([0.2500, 1.0000], dtype=torch.float64)
        >>> partial_auc(preds, target, k=[1, 2])
        {'pauc@1': tensor(0.5000, dtype=torch.float64), 'pauc@2': tensor(0.6250, dtype=torch.float64)}
    """
    check_insufficient_handling(insufficient_handling)
    ks = ctr_cutoffs(k)
    options = {"pauc": {"insufficient_handling": insufficient_handling}}
    results = _compute_requests([("pauc", one) for one in ks], options, preds, target, reduction, empty_target_action,
                                relevance_threshold, "index", validate_args, inputs)
    return results if isinstance(k, (list, tuple)) else results[f"pauc@{k}"]
