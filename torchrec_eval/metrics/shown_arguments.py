"""The repr of a :class:`~torchrec_eval.metrics.base.MemberMetric`: its value keys and the arguments that
differ from the defaults (``NDCG(ndcg@5, ndcg@10, ties='average')``), tensors by dtype and shape."""

from __future__ import annotations

from typing import Any

from torch import Tensor

__all__ = ["given_arguments", "shown", "shown_repr"]


class _TensorInRepr:
    """A tensor in a repr: its dtype and shape, not its values (``<tensor float64 [500]>``)."""

    def __init__(self, tensor: Tensor) -> None:
        self.text = f"<tensor {str(tensor.dtype).removeprefix('torch.')} {list(tensor.shape)}>"

    def __repr__(self) -> str:
        return self.text


def shown(value: Any) -> Any:
    """``value`` as a repr shows it: a tensor by dtype and shape (in dicts too)."""
    if isinstance(value, Tensor):
        return _TensorInRepr(value)
    if isinstance(value, dict):
        return {key: shown(item) for key, item in value.items()}
    return value


def given_arguments(given: dict[str, Any], validate_args: bool, weighted: bool) -> dict[str, Any]:
    """The common constructor arguments that differ from the defaults, for repr (None: not given)."""
    arguments = {name: value for name, value in given.items() if value is not None}
    if not validate_args:
        arguments["validate_args"] = False
    if weighted:
        arguments["weighted"] = True
    return arguments


def shown_repr(keys: list[str], arguments: dict[str, Any]) -> str:
    """``ndcg@5, ndcg@10, ties='average'``: the value keys, then the arguments given."""
    return ", ".join([*keys, *(f"{name}={value!r}" for name, value in arguments.items())])
