"""The four input forms of a ranking metric, normalised into one ranked representation.

Every top-k metric of the library is a pure function of :class:`RankedTargets`: the gains of the
top-``K`` items in rank order, their binary relevance, the number of relevant items ``R`` and the
number of candidates of each query. :func:`rank_targets` is the only place that ranks, and the only
place that validates user input, so a whole suite of metrics costs one ``torch.topk``.

Forms (exactly one per call):

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
every device and for every batch size (see :mod:`torchrec_eval.topk`).

Where each job lives: validation in :mod:`torchrec_eval.validation`, the batch representation in
:mod:`torchrec_eval.batch`, ranking and tie order in :mod:`torchrec_eval.topk`, ``exclude_ids`` in
:mod:`torchrec_eval.exclusion`, ``ties="average"`` in :mod:`torchrec_eval.ties`; this module turns
the four input forms into one :class:`~torchrec_eval.batch.Batch`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.batch import Batch, Candidates, RankedTargets
from torchrec_eval.constants import filled
from torchrec_eval.exclusion import Exclusions
from torchrec_eval.syncs import host_reads_free
from torchrec_eval.ties import tie_statistics
from torchrec_eval.topk import top_indices
from torchrec_eval.validation import (
    Checks,
    as_long,
    check_flat_shapes,
    check_groups_shape,
    check_id_range,
    check_scores,
    check_target_values,
    check_unique_ids,
    count_true,
    describe,
    require_float,
    require_ids,
    require_nonempty,
    require_tensor,
)

__all__ = ["TIES", "Batch", "Candidates", "RankedTargets", "check_flat", "count_true", "prepare_batch"]

TIES = ("index", "reverse_index", "pessimistic", "optimistic", "average")
FORMS = (
    "dense: update(preds [B, N], target [B, N]); "
    "ids: update(preds [B, N], target_ids=[B, T]); "
    "ranked: update(ranked_ids=[B, L], target_ids=[B, T]); "
    "flat: update(preds [M], target [M], indexes=[M])"
)


def _is_relevant(values: Tensor, relevance_threshold: float | None) -> Tensor:
    if relevance_threshold is None:
        return values if values.dtype == torch.bool else values > 0
    return values.to(torch.float64 if values.dtype == torch.float64 else torch.float32) >= relevance_threshold


def _lookup(items: Tensor, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Find ``items`` [B, K] among the row-wise ``ids`` [B, T] (-1 = padding) without a [B, K, T] tensor.

    Returns (found [B, K] bool, position in ``ids`` [B, K], sort order of ``ids``) so that a value
    attached to ``ids`` can be read for each found item as ``values.gather(1, order).gather(1, pos)``.
    """
    sorted_ids, order = torch.sort(ids, dim=1, stable=True)  # a repeated id: its first row is found
    pos = torch.searchsorted(sorted_ids, items.contiguous()).clamp_(max=ids.shape[1] - 1)
    found = (sorted_ids.gather(1, pos) == items) & (items >= 0)
    return found, pos, order


def _read(values: Tensor, found: Tensor, pos: Tensor, order: Tensor) -> Tensor:
    return torch.where(found, values.gather(1, order).gather(1, pos), torch.zeros((), dtype=values.dtype))


def _dense_batch(
    preds: Tensor,
    target: Tensor,
    valid: Tensor | None,
    exclusions: Exclusions | None,
    k: int,
    ties: str,
    averaging: bool,
    relevance_threshold: float | None,
    need_ideal: bool,
    to_num_relevant: bool,
    need_candidates: bool,
    check_boundary: bool,
) -> tuple[RankedTargets | None, Candidates | None]:
    rows, num_items = preds.shape
    if valid is not None:
        preds = preds.masked_fill(~valid, float("-inf"))
        target = target.masked_fill(~valid, 0)  # a non-candidate is neither relevant nor ideal
    graded = target.dtype != torch.bool
    # Graded targets with NDCG: the ideal top-k also yields R for every row with fewer than k relevant
    # items, which spares a compare-and-count pass over [B, N] (needs no R-deep ranking, and the
    # relevance flags of every candidate for nothing else).
    from_ideal = (
        k > 0
        and graded
        and need_ideal
        and not to_num_relevant
        and not need_candidates
        and not averaging
        and exclusions is None
    )
    relevant_all = None if from_ideal else _is_relevant(target, relevance_threshold)
    candidates = Candidates(preds, target, relevant_all, valid) if need_candidates else None
    if k == 0:
        return None, candidates
    num_candidates = _num_candidates(preds, valid, exclusions)
    ideal = None
    if from_ideal:
        depth = min(k, num_items)
        ideal = torch.topk(target, depth, dim=1).values
        num_relevant = _relevant_from_ideal(target, ideal, relevance_threshold)
        ideal = ideal.to(torch.float64)
    else:
        num_relevant = count_true(relevant_all, torch.float64)
        if exclusions is not None:
            num_relevant = num_relevant - exclusions.count_flags(relevant_all)
        depth = _depth(k, num_items, num_relevant, to_num_relevant)
    tie_gains = target if ties in ("pessimistic", "optimistic") else None
    idx, following = top_indices(preds, depth, ties, tie_gains, check_boundary, exclusions)
    restricted = valid is not None or exclusions is not None
    raw_gains = target.gather(1, idx)
    gains = raw_gains.to(torch.float64)
    relevant = _is_relevant(raw_gains, relevance_threshold)
    if restricted:
        in_list = torch.arange(depth, device=preds.device) < num_candidates.unsqueeze(1)
        gains, relevant = gains * in_list, relevant & in_list
    tie_stats = None
    if averaging:
        tie_stats = tie_statistics(preds, idx, following, target, relevant_all, gains, relevant)
    if restricted:
        idx = idx.masked_fill(~in_list, -1)
    if need_ideal and ideal is None:
        if graded and exclusions is not None:
            ideal = exclusions.top_values(target, depth).to(torch.float64)
        elif graded:
            ideal = torch.topk(target, depth, dim=1).values.to(torch.float64)
        # a binary target needs no ideal list: its ideal DCG is tabulated by R (functional._kernels)
    ranked = RankedTargets(gains, relevant, num_relevant, num_candidates, ideal, idx, num_items)
    if tie_stats is not None:
        averaged = ranked.with_tie_statistics(*tie_stats)
        ranked = averaged if ties == "average" else ranked
        ranked.averaged = averaged
    return ranked, candidates


def _relevant_from_ideal(target: Tensor, ideal: Tensor, relevance_threshold: float | None) -> Tensor:
    """R per row from the sorted top gains; rows whose top list is all relevant are counted in full."""
    relevant_top = _is_relevant(ideal, relevance_threshold)
    num_relevant = relevant_top.sum(1)
    full = relevant_top[:, -1]
    if ideal.shape[1] < target.shape[1]:
        rows = full.nonzero().squeeze(1) if host_reads_free(target) else None  # a free check on the CPU
        if rows is None or rows.numel() * 8 > target.shape[0]:  # many rows: one pass over all is cheaper
            num_relevant = torch.where(
                full, count_true(_is_relevant(target, relevance_threshold)), num_relevant
            )
        elif rows.numel():
            counted = count_true(_is_relevant(target[rows], relevance_threshold))
            num_relevant = num_relevant.index_copy(0, rows, counted)
    return num_relevant.to(torch.float64)


def _depth(k: int, available: int, num_relevant: Tensor, to_num_relevant: bool) -> int:
    depth = min(k, available)
    if to_num_relevant and available > depth:
        depth = min(available, max(depth, int(num_relevant.max())))  # host sync, R-Precision only
    return max(depth, 1)


def _target_table(
    target_ids: Tensor,
    target_gains: Tensor | None,
    valid_target: Tensor | None,
    relevance_threshold: float | None,
) -> tuple[Tensor, Tensor]:
    """Gains [B, T] (0 for padding and for items that are not candidates) and relevance of target ids."""
    present = target_ids >= 0
    if valid_target is not None:
        present = present & valid_target
    gains = torch.ones(target_ids.shape, dtype=torch.float64, device=target_ids.device)
    if target_gains is not None:
        gains = target_gains.to(torch.float64)
    gains = torch.where(present, gains, torch.zeros((), dtype=torch.float64, device=gains.device))
    relevant = _is_relevant(gains, relevance_threshold) & present
    return gains, relevant


def _table_ranked(
    item_ids: Tensor,
    target_ids: Tensor,
    gains_t: Tensor,
    relevant_t: Tensor,
    num_candidates: Tensor,
    need_ideal: bool,
    k: int,
) -> RankedTargets:
    num_relevant = relevant_t.sum(1).to(torch.float64)
    found, pos, order = _lookup(item_ids, target_ids)
    gains = _read(gains_t, found, pos, order)
    relevant = _read(relevant_t, found, pos, order)
    ideal = None
    if need_ideal:  # the best min(k, T) gains: the ideal list does not depend on the ranked list's width
        take = min(k, gains_t.shape[1])
        ideal = torch.topk(gains_t, take, dim=1).values if take else gains_t.new_zeros(gains_t.shape[0], 1)
    return RankedTargets(gains, relevant, num_relevant, num_candidates, ideal, item_ids, target_ids.shape[1])


def _flat_to_dense(
    preds: Tensor, target: Tensor, indexes: Tensor, mask: Tensor | None, groups: Tensor | None
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """Group 1-D inputs by query id into padded [Q, L] tensors plus a candidate mask (host sync)."""
    _, query, counts = torch.unique(indexes, return_inverse=True, return_counts=True)
    num_queries, width = counts.numel(), int(counts.max())
    order = torch.argsort(query, stable=True)
    starts = counts.cumsum(0) - counts
    column = torch.arange(query.numel(), device=query.device) - starts[query[order]]
    row = query[order]
    dense_preds = preds.new_zeros(num_queries, width)
    dense_preds[row, column] = preds[order]
    dense_target = target.new_zeros(num_queries, width)
    dense_target[row, column] = target[order]
    valid = None
    if mask is not None or bool((counts != width).any()):
        valid = torch.zeros(num_queries, width, dtype=torch.bool, device=preds.device)
        valid[row, column] = True if mask is None else mask[order]
    query_groups = None
    if groups is not None:
        query_groups = groups.new_zeros(num_queries)
        query_groups[row] = groups[order]
    return dense_preds, dense_target, valid, query_groups


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
        if mask is not None:
            raise ValueError("`mask` needs scores over a candidate set; with `ranked_ids` use `exclude_ids`")
        if need_candidates:
            raise ValueError(
                "AUC, GAUC, MPR, FCP and CTR need a score for every candidate: pass `preds` "
                "(dense, ids or flat form), not `ranked_ids`"
            )
        check_groups_shape(groups, ranked_ids.shape[0] if ranked_ids.ndim else 0)
        ranked = _ranked_form(
            ranked_ids,
            target_ids,
            target_gains,
            exclude_ids,
            k,
            relevance_threshold,
            need_ideal,
            to_num_relevant,
            checks,
            duplicates == "count",
        )
        return Batch(ranked, None, groups)
    if preds is None:
        raise ValueError(
            f"No input form recognised (got neither `preds` nor `ranked_ids`); expected one of: {FORMS}"
        )
    if indexes is not None:
        if target is None or target_ids is not None or target_gains is not None:
            raise ValueError(
                f"The flat form takes `preds`, `target` and `indexes` (graded relevance goes in `target`, "
                f"not `target_gains`); expected one of: {FORMS}"
            )
        if exclude_ids is not None:
            raise ValueError("`exclude_ids` is not supported with the flat form; use a boolean `mask` [M]")
        check_flat_shapes(preds, target, indexes, mask, groups, checks)
        preds, target, mask, groups = _flat_to_dense(preds, target, indexes, mask, groups)
    elif (target is None) == (target_ids is None):
        got = "both `target` and `target_ids`" if target is not None else "neither `target` nor `target_ids`"
        raise ValueError(
            f"Pass exactly one of `target` and `target_ids` with `preds` (got {got}); "
            f"expected one of: {FORMS}"
        )

    require_float("preds", preds)
    if preds.ndim != 2:
        raise ValueError(
            f"`preds` must have shape [B, N] (one row of item scores per query), got {describe(preds)}"
        )
    require_nonempty("preds", preds)
    rows, num_items = preds.shape
    check_groups_shape(groups, rows)
    if checks is not None:
        check_scores(checks, "preds", preds)
    averaging = ties == "average" or average_view
    exclusions = None if exclude_ids is None else _exclusions(exclude_ids, preds, checks)
    ids_top_k = (
        target_ids is not None and mask is None and not (need_candidates or averaging)
        and ties not in ("pessimistic", "optimistic")
    )
    if ids_top_k:  # -inf scores are read off the ranked list and the targets: no pass over [B, N]
        if checks is not None:
            checks.run()
        valid, neg_inf = None, checks is None or checks.notes.get("-inf", False)
    else:
        valid = _without_neg_inf(preds, _checked_mask(mask, preds), checks)  # runs the checks so far
    if exclusions is not None and (valid is not None or need_candidates or averaging):
        # by id (no [B, N] mask, no copy) unless a dense mask is needed anyway: it then holds both
        keep = exclusions.keep_mask(num_items)
        valid, exclusions = (keep if valid is None else valid & keep), None
    check_boundary = preds.device.type != "cuda" or validate_args or ties not in ("index", "average")

    if target_ids is not None:
        gains_t, relevant_t = _check_target_ids(
            target_ids, target_gains, rows, num_items, valid, relevance_threshold, checks, exclusions,
            scores=preds if ids_top_k and neg_inf else None,
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
                _ids_ranked(
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
                    ids_top_k and neg_inf,
                ),
                candidates,
                groups,
            )
    else:
        if target_gains is not None:
            raise ValueError(
                "`target_gains` goes with `target_ids` (ids form); with a dense `target` the gains are the "
                f"target values themselves. Got `target` of {describe(target)} and `target_gains` too"
            )
        if target.shape != preds.shape:
            raise ValueError(
                f"`target` must have the shape of `preds` {tuple(preds.shape)}, got {describe(target)}"
            )
        if target.is_complex():
            raise ValueError(f"`target` must be bool, integer or float relevance, got {describe(target)}")
        if checks is not None:
            check_target_values(checks, "target", target)
            checks.run()
    ranked, candidates = _dense_batch(
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


def _ids_ranked(
    preds: Tensor,
    valid: Tensor | None,
    exclusions: Exclusions | None,
    target_ids: Tensor,
    gains_t: Tensor,
    relevant_t: Tensor,
    k: int,
    ties: str,
    need_ideal: bool,
    to_num_relevant: bool,
    check_boundary: bool,
    neg_inf: bool = False,
) -> RankedTargets | None:
    """Top-k of the ids form, looking the ranked items up in the target ids (no dense target).

    With ``neg_inf`` (scores may hold ``-inf`` and no mask says where), the candidates are counted
    within the ranked list only: -inf and excluded entries sort last, so the list's candidates number
    min(K, candidates), all that a top-k value reads (min(k, candidates) for k <= K).
    """
    if k == 0:
        return None
    num_items = preds.shape[1]
    if valid is not None:
        preds = preds.masked_fill(~valid, float("-inf"))
    depth = _depth(k, num_items, relevant_t.sum(1), to_num_relevant)
    idx = top_indices(preds, depth, ties, None, check_boundary, exclusions).indices
    if neg_inf:
        listed = preds.gather(1, idx) > float("-inf")
        if exclusions is not None:
            listed &= ~exclusions.contains(idx)
        return _table_ranked(idx.masked_fill(~listed, -1), target_ids, gains_t, relevant_t,
                             count_true(listed, torch.float64), need_ideal, k)
    num_candidates = _num_candidates(preds, valid, exclusions)
    if valid is not None or exclusions is not None:
        idx = idx.masked_fill(torch.arange(depth, device=idx.device) >= num_candidates.unsqueeze(1), -1)
    return _table_ranked(idx, target_ids, gains_t, relevant_t, num_candidates, need_ideal, k)


def _num_candidates(preds: Tensor, valid: Tensor | None, exclusions: Exclusions | None) -> Tensor:
    """[B] float64 number of candidates of each row."""
    if valid is not None:
        return count_true(valid, torch.float64)
    rows, num_items = preds.shape
    if exclusions is not None:
        return (num_items - exclusions.count).to(torch.float64)
    return filled((rows,), float(num_items), preds.device)


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


def check_flat(inputs: dict[str, Tensor | None], validate_args: bool) -> None:
    """Validate a whole flat-form call (forms, shapes, dtypes and, with ``validate_args``, values).

    A metric holds the last query of a call back until the next one; this check makes a bad row fail
    in the call that brings it, not in a later one.
    """
    preds, target, indexes = inputs.get("preds"), inputs.get("target"), inputs.get("indexes")
    for name, value in inputs.items():
        if value is not None:
            require_tensor(name, value)
    others = [name for name in ("target_ids", "target_gains", "ranked_ids", "exclude_ids") if inputs.get(name) is not None]
    if preds is None or target is None or others:
        raise ValueError(
            f"The flat form takes `preds`, `target` and `indexes` (and `mask`, `groups`), got also {others}"
            f"{'' if target is not None else ' and no `target`'}; expected one of: {FORMS}"
        )
    check_flat_shapes(preds, target, indexes, inputs.get("mask"), inputs.get("groups"), None)
    if target.is_complex():
        raise ValueError(f"`target` must be bool, integer or float relevance, got {describe(target)}")
    if validate_args:
        checks = Checks()
        check_scores(checks, "preds", preds)
        check_target_values(checks, "target", target)
        checks.run()


def _checked_mask(mask: Tensor | None, preds: Tensor) -> Tensor | None:
    if mask is not None and (mask.dtype != torch.bool or mask.shape != preds.shape):
        raise ValueError(
            f"`mask` must be a bool tensor of the shape of `preds` {tuple(preds.shape)}, got {describe(mask)}"
        )
    return mask


def _check_target_ids(
    target_ids: Tensor,
    target_gains: Tensor | None,
    rows: int,
    num_items: int | None,
    valid: Tensor | None,
    relevance_threshold: float | None,
    checks: Checks | None,
    exclusions: Exclusions | None = None,
    unique: bool = True,
    scores: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Check the ids form's targets; their gains and relevance [B, T], 0 / False where a target is
    not a candidate: padding, outside ``valid``, excluded, or scored -inf in ``scores`` (if given)."""
    require_ids("target_ids", target_ids, rows)
    if target_gains is not None:
        if target_gains.shape != target_ids.shape or target_gains.is_complex():
            raise ValueError(
                f"`target_gains` must be real and of the shape of `target_ids` {tuple(target_ids.shape)}, "
                f"got {describe(target_gains)}"
            )
    if checks is not None:
        check_id_range(checks, "target_ids", target_ids, num_items)
        if unique:
            check_unique_ids(checks, "target_ids", target_ids)
        if target_gains is not None:
            check_target_values(checks, "target_gains", target_gains)
    valid_target = None
    if valid is not None:
        valid_target = valid.gather(1, target_ids.clamp(min=0))
    elif exclusions is not None:
        valid_target = ~exclusions.contains(target_ids)
    if scores is not None:
        finite = scores.gather(1, target_ids.clamp(min=0)) > float("-inf")
        valid_target = finite if valid_target is None else valid_target & finite
    return _target_table(target_ids, target_gains, valid_target, relevance_threshold)


def _ranked_form(
    ranked_ids: Tensor,
    target_ids: Tensor,
    target_gains: Tensor | None,
    exclude_ids: Tensor | None,
    k: int,
    relevance_threshold: float | None,
    need_ideal: bool,
    to_num_relevant: bool,
    checks: Checks | None,
    repeats: bool = False,
) -> RankedTargets:
    if ranked_ids.ndim != 2:
        raise ValueError(
            f"`ranked_ids` must have shape [B, L] (one ranked list per query), got {describe(ranked_ids)}"
        )
    require_nonempty("ranked_ids", ranked_ids)
    rows = ranked_ids.shape[0]
    require_ids("ranked_ids", ranked_ids, rows)
    if checks is not None:
        check_id_range(checks, "ranked_ids", ranked_ids, None)
        if not repeats:
            check_unique_ids(checks, "ranked_ids", ranked_ids)
    gains_t, relevant_t = _check_target_ids(
        target_ids, target_gains, rows, None, None, relevance_threshold, checks, unique=not repeats
    )
    if repeats:  # as ranx: a ranked item takes the gain of its first relevant row
        target_ids = target_ids.masked_fill(~relevant_t, -1)
    if exclude_ids is not None:
        require_ids("exclude_ids", exclude_ids, rows)
        if checks is not None:
            check_id_range(checks, "exclude_ids", exclude_ids, None)
        dropped, _, _ = _lookup(ranked_ids, exclude_ids)
        ranked_ids = ranked_ids.masked_fill(dropped, -1)
        excluded_targets, _, _ = _lookup(target_ids, exclude_ids)
        gains_t = gains_t.masked_fill(excluded_targets, 0)
        relevant_t = relevant_t & ~excluded_targets
    if checks is not None:
        checks.run()
    present = ranked_ids >= 0
    # padding may sit anywhere in a row: move the real ids to the front, keeping their order
    order = torch.sort((~present).to(torch.uint8), dim=1, stable=True).indices
    ranked_ids = ranked_ids.gather(1, order)
    num_candidates = present.sum(1).to(torch.float64)
    depth = ranked_ids.shape[1] if to_num_relevant else min(k, ranked_ids.shape[1])
    return _table_ranked(
        ranked_ids[:, :depth], target_ids, gains_t, relevant_t, num_candidates, need_ideal, k
    )
