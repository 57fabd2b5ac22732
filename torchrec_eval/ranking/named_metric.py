"""The shared body of the functional top-k metrics: :func:`compute_named_metric` checks the arguments,
ranks the batch once and reduces (:func:`compute_named_metrics`: several families from that one ranking)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, Unpack, cast, overload

from torch import Tensor

from torchrec_eval.members.conventions import Convention, preset, resolve_common, resolve_options
from torchrec_eval.members.steps import EmptyTargetAction, Reduction, check_common, prepare
from torchrec_eval.pipeline import INPUT_KEYWORDS, FormInputs, Inputs, Rules, Ties, keywords_checked_by
from torchrec_eval.ranking.entries import make_entry
from torchrec_eval.ranking.member import TopKMember
from torchrec_eval.ranking.registry import EmptyListAction


class CommonCall(FormInputs, total=False):
    """The common arguments of a functional metric over a ranking (a top-k family's, an intent-aware family's:
    :class:`TopKCall`'s but ``empty_list_action``) and the other input forms."""

    reduction: Reduction
    convention: Convention | None
    empty_target_action: EmptyTargetAction | None
    relevance_threshold: float | None
    ties: Ties | None
    validate_args: bool


class TopKCall(CommonCall, total=False):
    """The keywords every functional top-k metric takes in ``**arguments``, besides ``preds``, ``target``,
    ``k`` and its family's options: the common arguments (their defaults: ``reduction="mean"``,
    ``validate_args=True``, the others None) and the other input forms.

    Attributes:
        preds: [B, N] float scores (any real values; no score is special), or [M] with ``indexes``.
        target: [B, N] relevance (bool, int or float >= 0), or [M] with ``indexes``.
        k: cut-off, an int >= 1 or a sequence of them (then a dict ``{"name@k": value}`` is returned).
        reduction: ``"mean"`` over counted queries (a 0-d float64 tensor, NaN if none is counted) or
            ``"none"`` for per-query values [B] (NaN for skipped queries).
        convention: reproduce another library: ``"trec"``, ``"ranx"``, ``"torchmetrics"``,
            ``"recbole"``, ``"jurity"``, ``"recommenders"``, ``"spark"``, ``"rectools"``, ``"lenskit"``, ``"cornac"`` (see
            :mod:`torchrec_eval.conventions`); explicit arguments override it.
        empty_target_action: queries with no relevant item are ``"skip"``-ped (default), score
            ``"neg"`` (0), ``"pos"`` (1), or raise (``"error"``).
        relevance_threshold: a target >= this is relevant for binary metrics; default: target > 0.
            Gains (DCG, NDCG, CG) are always the raw target values.
        ties: order of equal scores: ``"index"`` (default: lower item index first),
            ``"reverse_index"``, ``"pessimistic"`` (lower gain first), ``"optimistic"``, or ``"average"``
            (the exact expected value over all orderings of tied items), see :mod:`torchrec_eval.pipeline`.
        validate_args: check values (NaN/inf scores, negative relevance, ids out of range); ``False``
            skips the checks that need a host sync.
        empty_list_action: a query whose list is empty (no candidate: a ``ranked_ids`` row of
            padding only, or every score ``-inf`` / masked) scores 0 and counts (``"neg"``, default), or
            is left out of the mean (``"skip"``: Jurity's precision and MAP, MS Recommenders'
            precision, recall and MAP; their presets set it).
        indexes, target_ids, target_gains, ranked_ids, mask, exclude_ids: the other input forms
            (:mod:`torchrec_eval.pipeline`).

    A functional top-k metric raises a ``ValueError`` on a bad ``k`` or option, an unknown input form,
    mismatched shapes or dtypes, and (with ``validate_args``) NaN/inf scores, negative relevance or ids
    out of range; a misspelt keyword names the function and the keywords it takes.
    """

    empty_list_action: EmptyListAction | None


class TopKFunction(Protocol):
    """The type of a top-k family's function that takes no option of its own (F1, MRR, bpref, ...): an int ``k``
    gives a tensor, a sequence of cut-offs a dict ``{"name@k": value}``; the other keywords are :class:`TopKCall`'s.
    A family with options writes its two overloads out instead."""

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
                 **arguments: Unpack[TopKCall]) -> Tensor: ...

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
                 **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


def topk_function(function: Callable[..., Tensor | dict[str, Tensor]]) -> TopKFunction:
    """A top-k family's function without options, typed as :class:`TopKFunction` (its two overloads, which a type
    checker reads), its keywords checked against :class:`TopKCall` (a misspelt one is a ``ValueError``)."""
    return cast(TopKFunction, keywords_checked_by(TopKCall)(function))


def compute_named_metric(name: str, preds: Tensor | None, target: Tensor | None, k: int | Sequence[int | None] | None,
                         options: dict[str, Any], arguments: TopKCall) -> Tensor | dict[str, Tensor]:
    """The top-k metric ``name`` of one batch, the shared body of the functional metrics: ``options`` are the
    family's own, ``arguments`` the caller's common arguments and input forms."""
    results = compute_named_metrics([(name, k, options)], preds, target, arguments)
    return results if isinstance(k, (list, tuple)) else results[next(iter(results))]


def compute_named_metrics(requests: Sequence[tuple[str, int | Sequence[int | None] | None, dict[str, Any]]],
                          preds: Tensor | None, target: Tensor | None, arguments: TopKCall) -> dict[str, Tensor]:
    """Several top-k families of one batch from its one ranking: ``requests`` holds (family, k, its options);
    returns every key's value (a 0-d mean, or [B] per-query values with ``reduction="none"``)."""
    reduction = arguments.get("reduction", "mean")
    convention, ties = arguments.get("convention"), arguments.get("ties")
    empty_target_action = arguments.get("empty_target_action")
    relevance_threshold = arguments.get("relevance_threshold")
    validate_args = arguments.get("validate_args", True)
    inputs = {key: value for key, value in arguments.items() if key in INPUT_KEYWORDS}
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    entries = [make_entry(name, k, resolve_options(  # `ties` as passed
        convention, name, {**options, "empty_list_action": arguments.get("empty_list_action")}, ties))
        for name, k, options in requests]
    action, order = resolve_common(convention, empty_target_action, ties)
    check_common(action, relevance_threshold)
    member = TopKMember(entries)
    rules = Rules(order, relevance_threshold, validate_args, preset(convention).duplicates)
    batch = prepare([member], Inputs.of({**inputs, "preds": preds, "target": target}), rules)
    member.check_ties(order)
    values, counts = member.counted(batch.top_k(), action)
    if reduction == "none":
        values = values.masked_fill(~(counts[:, list(member.count_columns)] > 0), float("nan"))
    else:  # 0/0 = NaN when nothing is counted (or 0.0 with empty_mean="zero")
        values = member.means(values.sum(0, keepdim=True), counts.sum(0, keepdim=True))
    return {key: values[:, i] if reduction == "none" else values[0, i] for i, key in enumerate(member.keys)}
