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

Where each job lives: validation in :mod:`~torchrec_eval.pipeline.validation`, the four forms (and
the checks of each) in :mod:`~torchrec_eval.pipeline.forms`, which items are candidates in
:mod:`~torchrec_eval.pipeline.candidate_mask`, the batch representation in
:mod:`~torchrec_eval.pipeline.batch`, ranking and tie order in :mod:`~torchrec_eval.pipeline.topk`,
``exclude_ids`` in :mod:`~torchrec_eval.pipeline.exclusion`, ``ties="average"`` in
:mod:`~torchrec_eval.pipeline.average_ties`. This module checks which form a call uses and hands the
call to its form, in steps: the arguments' types, the form, then (for a scored form) the scores, the
candidates and the target.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import Batch, Candidates
from torchrec_eval.pipeline.candidate_mask import candidate_items, checked_exclusions
from torchrec_eval.pipeline.forms import FORMS
from torchrec_eval.pipeline.forms.common import check_preds
from torchrec_eval.pipeline.forms.dense import check_dense_target, dense_batch
from torchrec_eval.pipeline.forms.flat import flat_rows
from torchrec_eval.pipeline.forms.ids import check_target_ids, ids_ranked
from torchrec_eval.pipeline.forms.ranked import ranked_batch
from torchrec_eval.pipeline.validation import Checks, as_long, one_column_at_least, require_tensor

__all__ = ["INPUT_KEYWORDS", "TIES", "input_keywords_checked", "prepare_batch"]

TIES = ("index", "reverse_index", "pessimistic", "optimistic", "average")
_GAIN_AWARE_TIES = ("pessimistic", "optimistic")  # these order equal scores by every candidate's gain


#: the input keywords of the forms besides ``preds`` and ``target`` (see :func:`prepare_batch`)
INPUT_KEYWORDS = ("indexes", "target_ids", "target_gains", "ranked_ids", "mask", "exclude_ids")


def input_keywords_checked(function: Callable[..., Any]) -> Callable[..., Any]:
    """A functional metric whose ``**inputs`` take :data:`INPUT_KEYWORDS` only: a misspelt keyword raises
    a ``ValueError`` that names the function the user called and the keywords it takes (it was a
    ``TypeError`` naming ``prepare_batch``, an internal function)."""
    parameters = [name for name, parameter in inspect.signature(function).parameters.items()
                  if parameter.kind is not inspect.Parameter.VAR_KEYWORD]
    accepted = set(parameters) | set(INPUT_KEYWORDS)

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            raise ValueError(f"{function.__name__}() got an unexpected keyword argument {unknown[0]!r}; it takes "
                             f"{parameters} and the input forms' {list(INPUT_KEYWORDS)}")
        return function(*args, **kwargs)

    return checked


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
    _require_tensors(preds=preds, target=target, indexes=indexes, target_ids=target_ids,
                     target_gains=target_gains, ranked_ids=ranked_ids, mask=mask, exclude_ids=exclude_ids,
                     groups=groups)
    # ids of any integer dtype are used as int64 indices (uint8 / int16 ids index like any others)
    target_ids, ranked_ids, exclude_ids = (as_long(x) for x in (target_ids, ranked_ids, exclude_ids))
    target_ids, target_gains = one_column_at_least(target_ids, target_gains)

    form = _form(preds, target, indexes, target_ids, ranked_ids)
    if form == "ranked":
        return ranked_batch(ranked_ids, target_ids, target_gains, mask, exclude_ids, groups, k,
                            relevance_threshold, need_ideal, to_num_relevant, need_candidates, checks, duplicates)
    if form == "flat":
        preds, target, mask, groups = flat_rows(preds, target, indexes, target_ids, target_gains, mask,
                                                exclude_ids, groups, checks)
    return _scored_batch(preds, target, target_ids, target_gains, mask, exclude_ids, groups, k, ties,
                         relevance_threshold, need_ideal, to_num_relevant, need_candidates, average_view, checks)


def _form(
    preds: Tensor | None,
    target: Tensor | None,
    indexes: Tensor | None,
    target_ids: Tensor | None,
    ranked_ids: Tensor | None,
) -> str:
    """Which input form a call uses: ``"ranked"``, ``"flat"`` or ``"scored"`` (dense or ids); a
    ValueError for no form or a mix of forms (the flat form checks its own mix)."""
    if ranked_ids is not None:
        if preds is not None or target is not None or indexes is not None or target_ids is None:
            raise ValueError(
                f"The ranked form takes `ranked_ids` and `target_ids` only (no `preds`, `target`, "
                f"`indexes`); expected one of the forms: {FORMS}"
            )
        return "ranked"
    if preds is None:
        raise ValueError(
            f"No input form recognised (got neither `preds` nor `ranked_ids`); expected one of: {FORMS}"
        )
    if indexes is not None:
        return "flat"
    if (target is None) == (target_ids is None):
        got = "both `target` and `target_ids`" if target is not None else "neither `target` nor `target_ids`"
        raise ValueError(
            f"Pass exactly one of `target` and `target_ids` with `preds` (got {got}); "
            f"expected one of: {FORMS}"
        )
    return "scored"


def _require_tensors(**inputs: object) -> None:
    """Every input that is given must be a tensor (the forms read their shapes and dtypes next)."""
    for name, value in inputs.items():
        if value is not None:
            require_tensor(name, value)


def _scored_batch(
    preds: Tensor,
    target: Tensor | None,
    target_ids: Tensor | None,
    target_gains: Tensor | None,
    mask: Tensor | None,
    exclude_ids: Tensor | None,
    groups: Tensor | None,
    k: int,
    ties: str,
    relevance_threshold: float | None,
    need_ideal: bool,
    to_num_relevant: bool,
    need_candidates: bool,
    average_view: bool,
    checks: Checks | None,
) -> Batch:
    """A form with scores ``preds`` [B, N] (dense, ids, or flat grouped into rows): its candidates, then
    its target, ranked by the dense form unless the ids form's top-k view can skip a [B, N] target."""
    check_preds(preds, groups, checks)
    averaging = ties == "average" or average_view
    exclusions = None if exclude_ids is None else checked_exclusions(exclude_ids, preds, checks)
    ids_top_k = (
        target_ids is not None and mask is None and not (need_candidates or averaging)
        and ties not in _GAIN_AWARE_TIES
    )
    valid, exclusions, neg_inf = candidate_items(preds, mask, exclusions, checks, ids_top_k,
                                                 dense_mask=need_candidates or averaging)
    if target_ids is None:
        check_dense_target(preds, target, target_gains, checks)
    else:
        gains_t, relevant_t = check_target_ids(
            target_ids, target_gains, preds.shape[0], preds.shape[1], valid, relevance_threshold, checks,
            exclusions, scores=preds if neg_inf else None,
        )
        if checks is not None:
            checks.run()
        if not (averaging or ties in _GAIN_AWARE_TIES):
            # the full view keeps the target ids as they are: no [B, N] target
            candidates = None
            if need_candidates:
                candidates = Candidates.from_ids(preds, valid, target_ids, gains_t, relevant_t)
            ranked = ids_ranked(preds, valid, exclusions, target_ids, gains_t, relevant_t, k, ties, need_ideal,
                                to_num_relevant, neg_inf)
            return Batch(ranked, candidates, groups)
        target = _scattered_target(preds, target_ids, gains_t)
    ranked, candidates = dense_batch(preds, target, valid, exclusions, k, ties, averaging,
                                     relevance_threshold, need_ideal, to_num_relevant, need_candidates)
    return Batch(ranked, candidates, groups)


def _scattered_target(preds: Tensor, target_ids: Tensor, gains_t: Tensor) -> Tensor:
    """The ids form's gains as a dense [B, N] float64 target: gain-aware tie orders need every
    candidate's gain."""
    target = torch.zeros(preds.shape, dtype=torch.float64, device=preds.device)
    return target.scatter_add_(1, target_ids.clamp(min=0), gains_t)  # padding adds a gain of 0
