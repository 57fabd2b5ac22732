"""The input forms of a ranking metric, validated and normalised into one ranked representation.

Every top-k metric of the library is a pure function of :class:`RankedTargets`: the gains of the
top-``K`` items in rank order, their binary relevance, the number of relevant items ``R`` and the
number of candidates of each query. :func:`prepare_batch` is the only entry that ranks, and the
only one that validates user input, so a whole suite of metrics costs one ``torch.topk``.

Forms (exactly one per call; each lives in its own module of :mod:`torchrec_eval.pipeline.forms`):

* dense  -- ``preds`` [B, N] scores, ``target`` [B, N] relevance (bool, int or float, >= 0);
* ids    -- ``preds`` [B, N], ``target_ids`` [B, T] item indices into dim 1 (-1 = padding),
  optional ``target_gains`` [B, T];
* ranked -- ``ranked_ids`` [B, L] item ids in rank order (-1 = padding), ``target_ids`` [B, T];
* flat   -- 1-D ``preds``, ``target`` and ``indexes`` (torchmetrics.retrieval style); the queries come
  out in ascending ``indexes`` order. A metric object carries a query that continues into its next
  ``update`` (see :mod:`torchrec_eval.metrics.lifecycle`). This form needs a host sync (the number
  of queries is data dependent).

A score of ``-inf`` marks an item that is not a candidate, exactly like ``mask`` False; NaN and
``+inf`` are errors.

Ties (``ties=``): ``"index"`` orders equal scores by the lower item index first; ``"reverse_index"``
by the higher index first (trec_eval's docno order); ``"pessimistic"`` by the lower gain first, then
the lower index, so a model that outputs constant scores gets the worst ranking, not a lucky one;
``"optimistic"`` by the higher gain first; ``"average"`` yields the exact expected value of every
metric over all orderings of the tied items (McSherry & Najork, ECIR 2008). The order is the same on
every device and for every batch size (see :mod:`torchrec_eval.pipeline.topk`).

Where each job lives: validation in :mod:`torchrec_eval.pipeline.validation`, the four forms in
:mod:`torchrec_eval.pipeline.forms`, the batch representation in :mod:`torchrec_eval.pipeline.batch`, ranking and tie
order in :mod:`torchrec_eval.pipeline.topk`, ``exclude_ids`` in :mod:`torchrec_eval.pipeline.exclusion`,
``ties="average"`` in :mod:`torchrec_eval.pipeline.average_ties`; this module checks which form a call uses and which
items are candidates, and hands the call to its form.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import Batch, Candidates, RankedTargets
from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.forms import FORMS
from torchrec_eval.pipeline.forms.dense import dense_batch
from torchrec_eval.pipeline.forms.flat import check_flat, flat_to_dense
from torchrec_eval.pipeline.forms.ids import check_target_ids, ids_ranked
from torchrec_eval.pipeline.forms.ranked import ranked_form
from torchrec_eval.pipeline.syncs import host_reads_free, topk_keeps_lowest_index
from torchrec_eval.pipeline.validation import (
    Checks,
    as_long,
    check_flat_shapes,
    check_groups_shape,
    check_id_range,
    check_scores,
    check_target_values,
    count_true,
    describe,
    describe_any,
    require_float,
    require_ids,
    require_nonempty,
    require_tensor,
)

__all__ = ["FORMS", "TIES", "Batch", "Candidates", "RankedTargets", "check_flat", "count_true", "prepare_batch"]

TIES = ("index", "reverse_index", "pessimistic", "optimistic", "average")









def prepare_batch(
    preds: Tensor | None = None,
    target: Tensor | None = None,
    *,
    indexes: Tensor | None = None,
    target_ids: Tensor | None = None,
    target_gains: Tensor | None = None,
    ranked_ids: Tensor | None = None,
    mask: Tensor | None = None,
    exclude_ids: Tensor | None = None,
    groups: Tensor | None = None,
    k: int,
    ties: str = "index",
    relevance_threshold: float | None = None,
    need_ideal: bool = False,
    to_num_relevant: bool = False,
    need_candidates: bool = False,
    average_view: bool = False,
    validate_args: bool = True,
    duplicates: str = "error",
) -> Batch:
    """Validate any input form; rank it to depth ``k`` and/or keep its full candidate view.

    Args:
        k: depth of the top-k view (``0``: none); with ``to_num_relevant`` at least the batch's largest R.
        need_ideal: also compute the ideal gains (NDCG).
        need_candidates: also return every candidate's score and relevance (not for the ranked form).
        average_view: also attach the view averaged over tie orders (``RankedTargets.averaged``), for
            a metric with ``average_ties=True`` under another tie order.
        duplicates: ``"error"`` for an id repeated in a row of the ranked form, or ``"count"``: ranx's
            arrays (a repeated ranked id is a hit at each rank, a repeated target counts in R).
        other: the input forms of this module, ``ties``, ``relevance_threshold`` and ``validate_args``.

    Raises:
        ValueError: if no form or several forms are given, on any shape or dtype mismatch, and
            (with ``validate_args``) on NaN/inf scores, negative relevance, ids out of range or
            repeated ids.
    """
    if ties not in TIES:
        raise ValueError(f"`ties` must be one of {TIES}, got {ties!r}")
    checks = Checks() if validate_args else None
    for name, value in (
        ("preds", preds),
        ("target", target),
        ("indexes", indexes),
        ("target_ids", target_ids),
        ("target_gains", target_gains),
        ("ranked_ids", ranked_ids),
        ("mask", mask),
        ("exclude_ids", exclude_ids),
        ("groups", groups),
    ):
        if value is not None:
            require_tensor(name, value)
    # ids of any integer dtype are used as int64 indices (uint8 / int16 ids index like any others)
    target_ids, ranked_ids, exclude_ids = (as_long(x) for x in (target_ids, ranked_ids, exclude_ids))

    if ranked_ids is not None:
        if preds is not None or target is not None or indexes is not None or target_ids is None:
            raise ValueError(
                f"The ranked form takes `ranked_ids` and `target_ids` only (no `preds`, `target`, "
                f"`indexes`); expected one of the forms: {FORMS}"
            )
        return _ranked_batch(ranked_ids, target_ids, target_gains, mask, exclude_ids, groups, k, relevance_threshold,
                             need_ideal, to_num_relevant, need_candidates, checks, duplicates)
    if preds is None:
        raise ValueError(
            f"No input form recognised (got neither `preds` nor `ranked_ids`); expected one of: {FORMS}"
        )
    if indexes is not None:
        preds, target, mask, groups = _flat_rows(preds, target, indexes, target_ids, target_gains, mask,
                                                 exclude_ids, groups, checks)
    elif (target is None) == (target_ids is None):
        got = "both `target` and `target_ids`" if target is not None else "neither `target` nor `target_ids`"
        raise ValueError(
            f"Pass exactly one of `target` and `target_ids` with `preds` (got {got}); "
            f"expected one of: {FORMS}"
        )
    _check_preds(preds, groups, checks)
    rows, num_items = preds.shape
    averaging = ties == "average" or average_view
    exclusions = None if exclude_ids is None else _exclusions(exclude_ids, preds, checks)
    ids_top_k = (
        target_ids is not None and mask is None and not (need_candidates or averaging)
        and ties not in ("pessimistic", "optimistic")
    )
    valid, exclusions, neg_inf = _candidates(preds, mask, exclusions, checks, ids_top_k,
                                             dense_mask=need_candidates or averaging)
    check_boundary = not topk_keeps_lowest_index(preds) or validate_args or ties not in ("index", "average")

    if target_ids is not None:
        gains_t, relevant_t = check_target_ids(
            target_ids, target_gains, rows, num_items, valid, relevance_threshold, checks, exclusions,
            scores=preds if neg_inf else None,
        )
        if checks is not None:
            checks.run()
        if averaging or ties in ("pessimistic", "optimistic"):
            # gain-aware ties need every candidate's gain: scatter the ids to dense
            target = torch.zeros(rows, num_items, dtype=torch.float64, device=preds.device)
            target.scatter_add_(1, target_ids.clamp(min=0), gains_t)  # padding adds a gain of 0
        else:
            # the full view keeps the target ids as they are: no [B, N] target
            candidates = None
            if need_candidates:
                candidates = Candidates.from_ids(preds, valid, target_ids, gains_t, relevant_t)
            return Batch(
                ids_ranked(
                    preds,
                    valid,
                    exclusions,
                    target_ids,
                    gains_t,
                    relevant_t,
                    k,
                    ties,
                    need_ideal,
                    to_num_relevant,
                    check_boundary,
                    neg_inf,
                ),
                candidates,
                groups,
            )
    else:
        _check_dense_target(preds, target, target_gains, checks)
    ranked, candidates = dense_batch(
        preds,
        target,
        valid,
        exclusions,
        k,
        ties,
        averaging,
        relevance_threshold,
        need_ideal,
        to_num_relevant,
        need_candidates,
        check_boundary,
    )
    return Batch(ranked, candidates, groups)



def _flat_rows(
    preds: Tensor,
    target: Tensor | None,
    indexes: Tensor,
    target_ids: Tensor | None,
    target_gains: Tensor | None,
    mask: Tensor | None,
    exclude_ids: Tensor | None,
    groups: Tensor | None,
    checks: Checks | None,
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """The flat form's checks and its rows: (preds, target, mask, groups) as [Q, L]."""
    if target is None or target_ids is not None or target_gains is not None:
        raise ValueError(
            f"The flat form takes `preds`, `target` and `indexes` (graded relevance goes in `target`, "
            f"not `target_gains`); expected one of: {FORMS}. Got `target` {describe_any(target)}, `target_ids` "
            f"{describe_any(target_ids)}, `target_gains` {describe_any(target_gains)}"
        )
    if exclude_ids is not None:
        raise ValueError("`exclude_ids` is not supported with the flat form; use a boolean `mask` [M], got "
                         f"`exclude_ids` of {describe_any(exclude_ids)}")
    check_flat_shapes(preds, target, indexes, mask, groups, checks)
    return flat_to_dense(preds, target, indexes, mask, groups)


def _check_preds(preds: Tensor, groups: Tensor | None, checks: Checks | None) -> None:
    require_float("preds", preds)
    if preds.ndim != 2:
        raise ValueError(f"`preds` must have shape [B, N] (one row of item scores per query), got {describe(preds)}")
    require_nonempty("preds", preds)
    check_groups_shape(groups, preds.shape[0])
    if checks is not None:
        check_scores(checks, "preds", preds)


def _ranked_batch(
    ranked_ids: Tensor,
    target_ids: Tensor,
    target_gains: Tensor | None,
    mask: Tensor | None,
    exclude_ids: Tensor | None,
    groups: Tensor | None,
    k: int,
    relevance_threshold: float | None,
    need_ideal: bool,
    to_num_relevant: bool,
    need_candidates: bool,
    checks: Checks | None,
    duplicates: str,
) -> Batch:
    """The ranked form's batch: no scores, so no candidate view."""
    if mask is not None:
        raise ValueError("`mask` needs scores over a candidate set; with `ranked_ids` use `exclude_ids`, got "
                         f"`mask` of {describe_any(mask)}")
    if need_candidates:
        raise ValueError(
            "AUC, GAUC, MPR, FCP and CTR need a score for every candidate: pass `preds` "
            f"(dense, ids or flat form), not `ranked_ids` (got `ranked_ids` of {describe_any(ranked_ids)})"
        )
    check_groups_shape(groups, ranked_ids.shape[0] if ranked_ids.ndim else 0)
    ranked = ranked_form(
        ranked_ids, target_ids, target_gains, exclude_ids, k, relevance_threshold, need_ideal, to_num_relevant,
        checks, duplicates == "count",
    )
    return Batch(ranked, None, groups)


def _check_dense_target(preds: Tensor, target: Tensor, target_gains: Tensor | None, checks: Checks | None) -> None:
    if target_gains is not None:
        raise ValueError(
            "`target_gains` goes with `target_ids` (ids form); with a dense `target` the gains are the "
            f"target values themselves. Got `target` of {describe(target)} and `target_gains` of "
            f"{describe_any(target_gains)}"
        )
    if target.shape != preds.shape:
        raise ValueError(f"`target` must have the shape of `preds` {tuple(preds.shape)}, got {describe(target)}")
    if target.is_complex():
        raise ValueError(f"`target` must be bool, integer or float relevance, got {describe(target)}")
    if checks is not None:
        check_target_values(checks, "target", target)
        checks.run()


def _candidates(
    preds: Tensor,
    mask: Tensor | None,
    exclusions: Exclusions | None,
    checks: Checks | None,
    ids_top_k: bool,
    dense_mask: bool,
) -> tuple[Tensor | None, Exclusions | None, bool]:
    """Which items are candidates: (dense ``valid`` mask or None, exclusions kept as ids or None, and
    whether -inf scores must still be read off the ranked list). Runs the checks so far.

    The ids form's top-k view reads -inf scores off its ranked list and its targets (no pass over
    [B, N]); other views mask them. Excluded ids stay ids unless a dense mask is built anyway (or
    ``dense_mask``: the full candidate view and averaged ties need one): it then holds both.
    """
    if ids_top_k:
        if checks is not None:
            checks.run()
        return None, exclusions, checks is None or checks.notes.get("-inf", False)
    valid = _without_neg_inf(preds, _checked_mask(mask, preds), checks)
    if exclusions is not None and (valid is not None or dense_mask):
        keep = exclusions.keep_mask(preds.shape[1])
        valid, exclusions = (keep if valid is None else valid & keep), None
    return valid, exclusions, False


def _exclusions(exclude_ids: Tensor, preds: Tensor, checks: Checks | None) -> Exclusions:
    """The excluded ids, range-checked (the check runs with the others, before any use as an index)."""
    require_ids("exclude_ids", exclude_ids, preds.shape[0])
    if checks is not None:
        check_id_range(checks, "exclude_ids", exclude_ids, preds.shape[1])
    return Exclusions.from_ids(exclude_ids)


def _without_neg_inf(preds: Tensor, valid: Tensor | None, checks: Checks | None) -> Tensor | None:
    """The candidate mask with items scored ``-inf`` left out: ``-inf`` means "not a candidate".

    With validation the check's host sync already tells whether any score is ``-inf``; without it a
    CPU looks (a cheap reduction, no device to wait for) and an accelerator always builds the mask.
    """
    if checks is not None:
        checks.run()
        present = checks.notes.get("-inf", False)
    elif host_reads_free(preds):
        present = preds.amin().item() == float("-inf")
    else:
        present = True
    if not present:
        return valid
    finite = preds > float("-inf")
    return finite if valid is None else valid & finite


def _checked_mask(mask: Tensor | None, preds: Tensor) -> Tensor | None:
    if mask is not None and (mask.dtype != torch.bool or mask.shape != preds.shape):
        raise ValueError(
            f"`mask` must be a bool tensor of the shape of `preds` {tuple(preds.shape)}, got {describe(mask)}"
        )
    return mask


