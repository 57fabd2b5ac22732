"""Checks of plain arguments (ints, probabilities): a ValueError naming the argument and showing what
it received. Shared by the whole package (metric options, splits, statistics, datasets).
"""

from __future__ import annotations

import operator
from typing import Literal, TypeGuard, overload

import torch
from torch import Tensor


def as_int(value: object) -> int | None:
    """``value`` as a Python int if it is an integer (int, numpy integer, one-element integer tensor), else
    None; a bool (Python, numpy or tensor) is not an integer here."""
    if isinstance(value, bool) or (isinstance(value, Tensor) and value.dtype == torch.bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def is_int(value: object) -> bool:
    return as_int(value) is not None


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or a float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_int(name: str, value: object, minimum: int | None = None, *, of: str = "", reason: str = "",
              _or_none: str = "") -> int:
    """``value`` as a Python int (see :func:`as_int`), or a ValueError naming the argument and showing it.

    Args:
        name: the argument, shown in backticks.
        value: what was received.
        minimum: the smallest allowed value, if any.
        of: what the argument belongs to, shown after its name (``"`bins` of auc"``).
        reason: why the minimum, shown after it in parentheses.
    """
    number = as_int(value)
    if number is None or (minimum is not None and number < minimum):
        rule = "an int" + (f" >= {minimum}" if minimum is not None else "") + (f" ({reason})" if reason else "")
        where = f" of {of}" if of else ""
        raise ValueError(f"`{name}`{where} must be {rule}{_or_none}, got {value!r}")
    return number


def check_optional_int(name: str, value: object, minimum: int | None = None, *, of: str = "") -> int | None:
    """None, or ``value`` as :func:`check_int` takes it (the error says that None is allowed too)."""
    return None if value is None else check_int(name, value, minimum, of=of, _or_none=" or None")


def check_probability(name: str, value: object, *, of: str = "") -> float:
    """A probability or confidence level strictly between 0 and 1, as a float (``of``: as in :func:`check_int`)."""
    if not is_number(value) or not 0 < value < 1:
        where = f" of {of}" if of else ""
        raise ValueError(f"`{name}`{where} must be a number in (0, 1), such as 0.95, got {value!r}")
    return float(value)


@overload
def check_k(k: object, optional: Literal[False] = False) -> int: ...
@overload
def check_k(k: object, optional: bool) -> int | None: ...
def check_k(k: object, optional: bool = False) -> int | None:
    """``k`` as a Python int >= 1 (any integer type: int, numpy integer, 0-d integer tensor)."""
    return check_optional_int("k", k, 1) if optional else check_int("k", k, 1)
