"""Validation of the input tensors: every check names the argument and shows what it received.

Value checks that need the data (NaN, ranges, repeats) are gathered in a :class:`Checks` so that all
of them cost one host sync; ``validate_args=False`` skips them. Shape and dtype checks are free.
Plain (non-tensor) arguments are checked in :mod:`~torchrec_eval.pipeline.arguments`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

import torch
from torch import Tensor


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


def check_groups_shape(groups: Tensor | None, rows: int) -> None:
    if groups is not None and (groups.ndim != 1 or groups.shape[0] != rows):
        raise ValueError(f"`groups` must have shape [{rows}] (one group per query), got {describe(groups)}")


def check_flat_shapes(
    preds: Tensor,
    target: Tensor | None,
    indexes: Tensor,
    mask: Tensor | None,
    groups: Tensor | None,
    checks: Checks | None,
) -> None:
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


def require_groups(groups: Tensor | None, num_groups: int | None) -> None:
    """``groups`` must be given exactly when the metric was built with ``num_groups``."""
    if (groups is None) != (num_groups is None):
        raise ValueError(
            "`groups` must be given exactly when the metric was built with `num_groups` "
            f"(num_groups={num_groups}, groups {'missing' if groups is None else 'given'})"
        )


def checked_groups(groups: Tensor, num_groups: int, device: torch.device, validate_args: bool) -> Tensor:
    """``groups`` [B], integers in [0, num_groups) (checked with ``validate_args``), on ``device``."""
    if groups.is_floating_point() or groups.dtype == torch.bool:
        raise ValueError(f"`groups` must be an integer tensor, got dtype {groups.dtype}")
    if validate_args:
        low, high = torch.aminmax(groups)
        if bool((low < 0) | (high >= num_groups)):
            raise ValueError(f"`groups` must lie in [0, {num_groups}), got values from {low.item()} to {high.item()}")
    return groups.to(device)


def checked_weights(weight: Any, rows: int, weighted: bool, device: torch.device, validate_args: bool) -> Tensor | None:
    """The [B] float64 query weights on ``device`` (None: unweighted), for a batch of ``rows`` queries."""
    if weight is None:
        return None
    if not weighted:
        raise ValueError("`sample_weight` needs a metric built with `weighted=True`; got `sample_weight` of "
                         f"{describe_any(weight)} for an unweighted metric")
    if not isinstance(weight, Tensor) or weight.shape != (rows,) or weight.dtype == torch.bool or weight.is_complex():
        shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"`sample_weight` must be a number tensor of shape [B] ({rows},), one weight per "
                         f"query, got {shape}")
    weight = weight.to(device=device, dtype=torch.float64)
    if validate_args and weight.numel() and not bool((torch.isfinite(weight) & (weight >= 0)).all()):
        raise ValueError(f"`sample_weight` must be finite and >= 0, got values from {weight.min().item()} "
                         f"to {weight.max().item()}")
    return weight
