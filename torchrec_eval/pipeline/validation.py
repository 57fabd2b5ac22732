"""Validation of the input tensors: every check names the argument and shows what it received.

One call of :func:`checked_inputs` validates a whole call of any input form before any form reads it: which
form it is, every shape and dtype check of that form (free), and, with ``validate_args``, every value check
(NaN, ranges, repeats), gathered in a :class:`Checks` so that all of them cost one host sync. The forms of
:mod:`~torchrec_eval.pipeline.forms` then compute only. Plain (non-tensor) arguments are checked in
:mod:`~torchrec_eval.pipeline.arguments`, a metric's own ``groups`` and ``sample_weight`` in
:mod:`~torchrec_eval.metrics.arguments`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, overload

import torch
from torch import Tensor

from torchrec_eval.pipeline.forms import FORMS
from torchrec_eval.pipeline.inputs import TIES, Inputs, Needs, Rules


class Checks:
    """Value checks gathered so that all of them cost one host sync."""

    def __init__(self) -> None:
        self._flags: list[Tensor] = []
        self._messages: list[Callable[[], str] | str] = []
        self.notes: dict[str, bool] = {}

    def add(self, bad: Tensor, message: Callable[[], str]) -> None:
        self._flags.append(bad.reshape(()))
        self._messages.append(message)

    def note(self, name: str, flag: Tensor) -> None:
        """A fact read in the same host sync as the checks, found in ``notes[name]`` after ``run``."""
        self._flags.append(flag.reshape(()))
        self._messages.append(name)

    def run(self) -> None:
        if not self._flags:
            return
        flags, messages = torch.stack(self._flags).tolist(), self._messages
        self._flags, self._messages = [], []
        for flag, message in zip(flags, messages, strict=False):
            if isinstance(message, str):
                self.notes[message] = bool(flag)
            elif flag:
                raise ValueError(message())


def describe(x: Tensor) -> str:
    return f"shape {tuple(x.shape)} and dtype {x.dtype}"


def describe_any(x: object) -> str:
    """What an argument was, for an error message: a tensor's shape and dtype, else its type and value."""
    if isinstance(x, Tensor):
        return describe(x)
    return "None" if x is None else f"{type(x).__name__} {x!r:.80}"


def required(name: str, value: Tensor | None, form: str) -> Tensor:
    """An argument the input form ``form`` needs: a ValueError naming it when it is missing."""
    if value is None:
        raise ValueError(f"The {form} form needs `{name}`, got None")
    return value


@overload
def as_long(x: Tensor) -> Tensor: ...
@overload
def as_long(x: None) -> None: ...
def as_long(x: Tensor | None) -> Tensor | None:
    """Integer ids as int64 (any other tensor, and None, as they are: their checks name them)."""
    if x is None or x.dtype == torch.bool or x.is_floating_point() or x.is_complex():
        return x
    return x.long()


def one_column_at_least(ids: Tensor | None, gains: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
    """Ids [B, 0] (no query has an id, as ``pad_sequence`` of empty lists gives) as one padding column
    [B, 1] of -1, and their gains as [B, 1] zeros: every lookup then has a column to read."""
    if ids is None or ids.ndim != 2 or ids.shape[1] > 0:
        return ids, gains
    padded = ids.new_full((ids.shape[0], 1), -1)
    if gains is not None and gains.ndim == 2 and gains.shape == ids.shape:
        gains = gains.new_zeros((gains.shape[0], 1))
    return padded, gains


def require_tensor(name: str, x: object) -> Tensor:
    if not isinstance(x, Tensor):
        raise ValueError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    return x


def require_float(name: str, x: Tensor) -> None:
    if not x.is_floating_point():
        raise ValueError(f"`{name}` must be a floating point tensor of scores, got {describe(x)}")


def require_ids(name: str, x: Tensor, rows: int) -> None:
    """Item ids: any integer dtype (``prepare_batch`` reads them as int64), one row per query."""
    if x.dtype in (torch.bool,) or x.is_floating_point() or x.is_complex():
        raise ValueError(f"`{name}` must be an integer tensor of item ids, got {describe(x)}")
    if x.ndim != 2 or x.shape[0] != rows:
        raise ValueError(f"`{name}` must have shape [{rows}, T] (one row per query), got {describe(x)}")


def require_nonempty(name: str, x: Tensor) -> None:
    if x.numel() == 0:
        raise ValueError(f"`{name}` is an empty batch: got {describe(x)}; pass at least one query and item")


def check_scores(checks: Checks, name: str, scores: Tensor) -> None:
    """NaN and +inf are errors; -inf means "not a candidate" (noted as ``checks.notes["-inf"]``)."""
    low, high = torch.aminmax(scores.detach())
    checks.add(
        torch.isnan(high) | (high == float("inf")),
        lambda: (
            f"`{name}` must be real scores, not NaN or +inf, got min={low.item()} max={high.item()} "
            "(-inf is allowed: it marks an item that is not a candidate, like `mask`/`exclude_ids`)"
        ),
    )
    checks.note("-inf", low == float("-inf"))


def check_finite(checks: Checks, name: str, x: Tensor) -> None:
    # min/max propagate NaN, and one aminmax pass is ~6x cheaper than isnan(x).any()
    low, high = torch.aminmax(x.detach())
    bounds = torch.stack([low, high])
    checks.add(
        ~torch.isfinite(bounds).all(),
        lambda: f"`{name}` must be finite, got min={low.item()} max={high.item()}",
    )


#: the target gain of a pooled item that is not judged (a qrels line of -1: infAP's pool), where a metric reads
#: the judgments (``Needs.judged``)
UNJUDGED_GAIN = -1


def check_target_values(checks: Checks, name: str, target: Tensor, unjudged: bool = False) -> None:
    """Relevance values >= 0 (and finite); with ``unjudged``, -1 too (:data:`UNJUDGED_GAIN`: pooled, not judged)."""
    if target.dtype == torch.bool:
        return
    if unjudged:
        low = torch.where(target == UNJUDGED_GAIN, 0, target).min()
        checks.add(low < 0, lambda: f"`{name}` must be >= 0 (relevance) or -1 (pooled, not judged), got a "
                                    f"minimum of {low.item()} besides -1")
    else:
        low = target.min()
        checks.add(low < 0, lambda: f"`{name}` must be >= 0 (relevance), got a minimum of {low.item()}"
                                    + (_UNJUDGED_HINT if name == "target_gains" and low.item() == UNJUDGED_GAIN else ""))
    if target.is_floating_point():
        check_finite(checks, name, target)


_UNJUDGED_HINT = (" (a gain of -1, a pooled item that is not judged, is taken where a metric reads the judgments: "
                  "infAP, bpref, Judged)")


def check_gain_bound(checks: Checks, name: str, gains: Tensor | None, bound: float) -> None:
    """Gains at most ``bound``: the top grade (``max_grade``) of a metric whose value has no meaning past it."""
    if gains is None or gains.dtype == torch.bool or gains.is_complex() or gains.numel() == 0:
        return  # bool gains are 0 or 1, within any bound (>= 1); the forms reject complex ones
    high = gains.max()
    checks.add(high > bound, lambda: f"`{name}` must be <= max_grade={bound:g} (the top grade of ERR and SDCG: "
                                     f"pass their `max_grade`), got a maximum of {high.item()}")


def check_id_range(checks: Checks, name: str, ids: Tensor, num_items: int | None) -> None:
    if ids.numel() == 0:  # no id to check (and aminmax has no identity)
        return
    low, high = torch.aminmax(ids)
    checks.add(low < -1, lambda: f"`{name}` must be item ids >= 0 or -1 for padding, got {low.item()}")
    if num_items is not None:
        checks.add(
            high >= num_items,
            lambda: (
                f"`{name}` must be item ids < {num_items} (the number of columns of `preds`), got {high.item()}"
            ),
        )


def check_unique_ids(checks: Checks, name: str, ids: Tensor) -> None:
    if ids.shape[1] < 2:
        return
    ordered = ids.sort(dim=1).values
    duplicate = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    checks.add(
        duplicate.any(), lambda: f"`{name}` has an item id repeated within a row: {_first_duplicate(ordered)}"
    )


def _first_duplicate(ordered: Tensor) -> str:
    duplicate = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    row, col = (int(v) for v in duplicate.nonzero()[0])
    return f"row {row} has id {int(ordered[row, col + 1])} twice"


def require_groups(groups: Tensor | None, num_groups: int | None) -> None:
    """``groups`` must be given exactly when the metric was built with ``num_groups``."""
    if (groups is None) != (num_groups is None):
        raise ValueError(
            "`groups` must be given exactly when the metric was built with `num_groups` "
            f"(num_groups={num_groups}, groups {'missing' if groups is None else 'given'})"
        )


def check_group_values(checks: Checks | None, groups: Tensor, num_groups: int) -> None:
    """``groups``: integers (always), in [0, num_groups) (a value check)."""
    if groups.is_floating_point() or groups.dtype == torch.bool or groups.is_complex():
        raise ValueError(f"`groups` must be an integer tensor, got dtype {groups.dtype}")
    if checks is not None and groups.numel():
        low, high = torch.aminmax(groups)
        checks.add((low < 0) | (high >= num_groups),
                   lambda: f"`groups` must lie in [0, {num_groups}), got values from {low.item()} to {high.item()}")


def check_groups_shape(groups: Tensor | None, rows: int) -> None:
    if groups is not None and (groups.ndim != 1 or groups.shape[0] != rows):
        raise ValueError(f"`groups` must have shape [{rows}] (one group per query), got {describe(groups)}")


# The checks of each input form, entered once per call ---------------------------------------------------------

#: the facts read in the checks' host sync (``{"-inf": any score is -inf}``); None: the values were not checked
Notes = dict[str, bool]


class CheckedInputs(NamedTuple):
    """A call's input form, its tensors with integer ids as int64, and the :data:`Notes` of its checks."""

    form: str
    inputs: Inputs
    notes: Notes | None


def checked_inputs(inputs: Inputs, needs: Needs, rules: Rules) -> CheckedInputs:
    """Validate one call of any input form in full, before any form reads it.

    Every check names the argument and what it received; the value checks (``rules.validate_args``) cost one
    host sync together, and run before any id is used as an index.

    Args:
        inputs: the tensors of the call (exactly one input form).
        needs: what the members read (a bound on the gains, judgments, candidates: what a form cannot give).
        rules: the tie order, ``validate_args`` and the duplicates rule.

    Returns:
        The form (``"dense"``, ``"ids"``, ``"ranked"`` or ``"flat"``), the inputs with integer ids as int64 and
        ids [B, 0] as one padding column, and the notes of the value checks (None without them).

    Raises:
        ValueError: if no form or several forms are given, on any shape or dtype mismatch, and (with
            ``validate_args``) on NaN/inf scores, negative relevance, ids out of range or repeated ids.

    Example:
        >>> import torch
        >>> from torchrec_eval.pipeline.inputs import Inputs, Needs, Rules
        >>> checked = checked_inputs(Inputs(preds=torch.tensor([[0.5, -float("inf")]]),
        ...                                 target_ids=torch.tensor([[0]], dtype=torch.int32)), Needs(), Rules())
        >>> checked.form, checked.inputs.target_ids.dtype, checked.notes
        ('ids', torch.int64, {'-inf': True})
    """
    if rules.ties not in TIES:
        raise ValueError(f"`ties` must be one of {TIES}, got {rules.ties!r}")
    for name, value in inputs.given().items():
        require_tensor(name, value)  # the forms' checks read their shapes and dtypes next
    require_groups(inputs.groups, rules.num_groups)
    # ids of any integer dtype are used as int64 indices (uint8 / int16 ids index like any others)
    target_ids, gains = one_column_at_least(as_long(inputs.target_ids), inputs.target_gains)
    ids = {"target_ids": target_ids, "target_gains": gains, "ranked_ids": as_long(inputs.ranked_ids),
           "exclude_ids": as_long(inputs.exclude_ids)}
    if any(value is not getattr(inputs, name) for name, value in ids.items()):
        inputs = inputs.replace(**ids)
    form = form_of(inputs)
    checks = Checks() if rules.validate_args else None
    _FORM_CHECKS[form](inputs, needs, rules, checks)
    if inputs.groups is not None and rules.num_groups is not None:  # (given together: require_groups)
        check_group_values(checks, inputs.groups, rules.num_groups)
    if checks is None:
        return CheckedInputs(form, inputs, None)
    if needs.max_gain is not None:
        for name in ("target", "target_gains"):
            check_gain_bound(checks, name, getattr(inputs, name), needs.max_gain)
    checks.run()
    return CheckedInputs(form, inputs, checks.notes)


def form_of(inputs: Inputs) -> str:
    """Which input form a call uses: ``ranked_ids`` marks the ranked form, ``indexes`` the flat one, ``target_ids``
    the ids form and ``target`` the dense one; a ValueError for no form or a mix (the flat form checks its own)."""
    if inputs.ranked_ids is not None:
        if inputs.preds is not None or inputs.target is not None or inputs.indexes is not None \
                or inputs.target_ids is None:
            raise ValueError(
                f"The ranked form takes `ranked_ids` and `target_ids` only (no `preds`, `target`, "
                f"`indexes`); expected one of the forms: {FORMS}"
            )
        return "ranked"
    if inputs.preds is None:
        raise ValueError(
            f"No input form recognised (got neither `preds` nor `ranked_ids`); expected one of: {FORMS}"
        )
    if inputs.indexes is not None:
        return "flat"
    if (inputs.target is None) == (inputs.target_ids is None):
        got = "both `target` and `target_ids`" if inputs.target is not None else "neither `target` nor `target_ids`"
        raise ValueError(
            f"Pass exactly one of `target` and `target_ids` with `preds` (got {got}); expected one of: {FORMS}"
        )
    return "ids" if inputs.target_ids is not None else "dense"


def _check_scored(inputs: Inputs, needs: Needs, rules: Rules, checks: Checks | None) -> None:
    """The scored forms: ``preds`` [B, N] real scores (``-inf``: not a candidate), a bool ``mask`` of its shape,
    ``exclude_ids`` [B, E], one group per row, and a dense ``target`` [B, N] or ``target_ids`` [B, T]."""
    preds = required("preds", inputs.preds, "scored")
    require_float("preds", preds)
    if preds.ndim != 2:
        raise ValueError(f"`preds` must have shape [B, N] (one row of item scores per query), got {describe(preds)}")
    require_nonempty("preds", preds)
    check_groups_shape(inputs.groups, preds.shape[0])
    if checks is not None:
        check_scores(checks, "preds", preds)
    if inputs.exclude_ids is not None:
        require_ids("exclude_ids", inputs.exclude_ids, preds.shape[0])
        if checks is not None:
            check_id_range(checks, "exclude_ids", inputs.exclude_ids, preds.shape[1])
    mask = inputs.mask
    if mask is not None and (mask.dtype != torch.bool or mask.shape != preds.shape):
        raise ValueError(
            f"`mask` must be a bool tensor of the shape of `preds` {tuple(preds.shape)}, got {describe(mask)}"
        )
    if inputs.target_ids is None:
        _check_dense_target(preds, required("target", inputs.target, "dense"), inputs.target_gains, checks)
    else:
        check_target_ids(inputs.target_ids, inputs.target_gains, (preds.shape[0], preds.shape[1]), checks,
                         unjudged=needs.judged)


def _check_dense_target(preds: Tensor, target: Tensor, target_gains: Tensor | None, checks: Checks | None) -> None:
    """The dense ``target``: the shape of ``preds``, real relevance >= 0, no ``target_gains``."""
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


def check_target_ids(
    target_ids: Tensor,
    target_gains: Tensor | None,
    shape: tuple[int, int | None],
    checks: Checks | None,
    unique: bool = True,
    unjudged: bool = False,
) -> None:
    """Check the ids form's targets against a batch of ``shape`` (rows, items; items None: any id >= 0); with
    ``unjudged`` a gain of -1 (pooled, not judged) is taken."""
    rows, num_items = shape
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
            check_target_values(checks, "target_gains", target_gains, unjudged)


def _check_ranked(inputs: Inputs, needs: Needs, rules: Rules, checks: Checks | None) -> None:
    """The ranked form: ``ranked_ids`` [B, L] (no repeat unless ``rules.duplicates="count"``), ``target_ids``
    [B, T], ``exclude_ids`` [B, E], no ``mask``; and no member that needs scores."""
    ranked_ids = required("ranked_ids", inputs.ranked_ids, "ranked")
    if inputs.mask is not None:
        raise ValueError("`mask` needs scores over a candidate set; with `ranked_ids` use `exclude_ids`, got "
                         f"`mask` of {describe_any(inputs.mask)}")
    if needs.candidates:
        raise ValueError(
            "AUC, GAUC, MPR, FCP and CTR need a score for every candidate: pass `preds` "
            f"(dense, ids or flat form), not `ranked_ids` (got `ranked_ids` of {describe_any(ranked_ids)})"
        )
    if needs.non_relevant:
        raise ValueError(
            "FallOut divides by each query's non-relevant candidates, which a ranked list does not know: pass "
            f"`preds` (dense, ids or flat form), not `ranked_ids` (got `ranked_ids` of {describe_any(ranked_ids)})"
        )
    check_groups_shape(inputs.groups, ranked_ids.shape[0] if ranked_ids.ndim else 0)
    if ranked_ids.ndim != 2:
        raise ValueError(
            f"`ranked_ids` must have shape [B, L] (one ranked list per query), got {describe(ranked_ids)}"
        )
    require_nonempty("ranked_ids", ranked_ids)
    rows = ranked_ids.shape[0]
    require_ids("ranked_ids", ranked_ids, rows)
    repeats = rules.duplicates == "count"
    if checks is not None:
        check_id_range(checks, "ranked_ids", ranked_ids, None)
        if not repeats:
            check_unique_ids(checks, "ranked_ids", ranked_ids)
    target_ids = required("target_ids", inputs.target_ids, "ranked")
    check_target_ids(target_ids, inputs.target_gains, (rows, None), checks, unique=not repeats, unjudged=needs.judged)
    if inputs.exclude_ids is not None:
        require_ids("exclude_ids", inputs.exclude_ids, rows)
        if checks is not None:
            check_id_range(checks, "exclude_ids", inputs.exclude_ids, None)


def _check_flat(inputs: Inputs, needs: Needs, rules: Rules, checks: Checks | None) -> None:
    """The flat form: 1-D ``preds``, ``target``, ``indexes`` (and ``mask``, ``groups``) of one length; graded
    relevance in ``target``, no ids."""
    target, target_ids, target_gains = inputs.target, inputs.target_ids, inputs.target_gains
    if target is None or target_ids is not None or target_gains is not None:
        raise ValueError(
            f"The flat form takes `preds`, `target` and `indexes` (graded relevance goes in `target`, "
            f"not `target_gains`); expected one of: {FORMS}. Got `target` {describe_any(target)}, `target_ids` "
            f"{describe_any(target_ids)}, `target_gains` {describe_any(target_gains)}"
        )
    if inputs.exclude_ids is not None:
        raise ValueError("`exclude_ids` is not supported with the flat form; use a boolean `mask` [M], got "
                         f"`exclude_ids` of {describe_any(inputs.exclude_ids)}")
    preds, indexes = required("preds", inputs.preds, "flat"), required("indexes", inputs.indexes, "flat")
    _check_flat_shapes(preds, target, indexes, inputs.mask, inputs.groups)
    if target.is_complex():
        raise ValueError(f"`target` must be bool, integer or float relevance, got {describe(target)}")
    if checks is not None:
        check_scores(checks, "preds", preds)
        check_target_values(checks, "target", target)


def _check_flat_shapes(preds: Tensor, target: Tensor, indexes: Tensor, mask: Tensor | None,
                       groups: Tensor | None) -> None:
    require_float("preds", preds)
    require_nonempty("preds", preds)
    if preds.ndim != 1:
        raise ValueError(f"With `indexes` (flat form) `preds` must be 1-D, got {describe(preds)}")
    for name, value in (("target", target), ("indexes", indexes), ("mask", mask), ("groups", groups)):
        if value is not None and value.shape != preds.shape:
            raise ValueError(
                f"`{name}` must have the shape of `preds` {tuple(preds.shape)} in the flat form, "
                f"got {describe(value)}"
            )
    if indexes.is_floating_point() or indexes.dtype == torch.bool:
        raise ValueError(f"`indexes` must be an integer tensor of query ids, got {describe(indexes)}")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(f"`mask` must be a bool tensor, got {describe(mask)}")


_FORM_CHECKS: dict[str, Callable[[Inputs, Needs, Rules, Checks | None], None]] = {
    "dense": _check_scored, "ids": _check_scored, "ranked": _check_ranked, "flat": _check_flat,
}
