"""The repr of a :class:`~torchrec_eval.metrics.base.RankingMetric`: its value keys and the arguments that
differ from the defaults (``NDCG(ndcg@5, ndcg@10, ties='average')``), tensors by dtype and shape."""

from __future__ import annotations

from typing import Any

from torch import Tensor

__all__ = ["Settings", "given_settings"]


class _TensorShape:
    """A tensor in a repr: its dtype and shape, not its values (``<tensor float64 [500]>``)."""

    def __init__(self, tensor: Tensor) -> None:
        self.text = f"<tensor {str(tensor.dtype).removeprefix('torch.')} {list(tensor.shape)}>"

    def __repr__(self) -> str:
        return self.text


def _shown(value: Any) -> Any:
    if isinstance(value, Tensor):
        return _TensorShape(value)
    if isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    return value


def given_settings(given: dict[str, Any], validate_args: bool, weighted: bool) -> dict[str, Any]:
    """The common constructor arguments that differ from the defaults, for repr (None: not given)."""
    settings = {name: value for name, value in given.items() if value is not None}
    if not validate_args:
        settings["validate_args"] = False
    if weighted:
        settings["weighted"] = True
    return settings


class Settings:
    """Mixin for a :class:`~torchrec_eval.metrics.base.RankingMetric`: ``extra_repr`` from
    ``self._settings``."""

    def _show(self, **arguments: Any) -> None:
        """Show these constructor arguments in repr, those that are not None (tensors by dtype and shape)."""
        self._settings.update({name: _shown(value) for name, value in arguments.items() if value is not None})

    def extra_repr(self) -> str:
        """The value keys and the arguments that differ from the defaults: ``ndcg@5, ndcg@10, ties='average'``."""
        shown = (f"{name}={value!r}" for name, value in self._settings.items())
        return ", ".join([*self._ordered_keys(), *shown])
