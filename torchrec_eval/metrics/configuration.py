"""The configuration of a :class:`~torchrec_eval.metrics.base.MemberMetric`: the name of its state, and the
checkpoints and merges of another configuration it refuses.

MetricCollection's compute groups merge metrics whose states look alike; an empty state named after the
configuration (``config_<sha>``) keeps different metrics apart (it costs nothing and is never synced).
The name must be the same in every process: it hashes a canonical description (:func:`fingerprint`),
never a repr of a tensor. ``load_state_dict`` (strict or not) refuses a checkpoint that names another
configuration or carries states without naming one, before it changes anything; ``merge_state`` refuses
states of another configuration; the ranks compare the name before their first sync
(:mod:`~torchrec_eval.metrics.configuration_guard` holds the checks every metric runs).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.members.interface import Member
from torchrec_eval.pipeline.validation import describe_any

__all__ = ["check_loaded_configuration", "check_same_states", "config_state_name", "fingerprint"]


def fingerprint(value: Any) -> str:
    """A description of a configuration that is the same in every process, on every device, under any
    print options: tensors by dtype, shape and the bytes of their values; a member by the configuration
    it declares (``configuration()``), never by its class name or attributes.

    Raises:
        TypeError: on an object that declares no configuration.
    """
    if isinstance(value, Tensor):
        data = value.detach().to("cpu").contiguous()
        digest = hashlib.sha1(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"").hexdigest()
        return f"tensor({str(data.dtype)},{tuple(data.shape)},{digest})"
    if isinstance(value, dict):
        items = sorted((str(key), fingerprint(item)) for key, item in value.items())
        return "{" + ",".join(f"{key}:{item}" for key, item in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(fingerprint(item) for item in value) + "]"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if callable(getattr(value, "configuration", None)):
        return fingerprint(value.configuration())
    raise TypeError(f"fingerprint: {type(value).__name__} declares no configuration() (got {value!r})")


def config_state_name(metric: Any, members: Sequence[Member]) -> str:
    """``config_<sha>``: the name of the configuration state of ``metric`` holding ``members``."""
    description = [metric.value_keys, list(members), metric.empty_target_action, metric.relevance_threshold,
                   metric.ties]
    if metric.weighted:  # unweighted metrics keep their state names
        description.append("weighted")
    return f"config_{hashlib.sha1(fingerprint(description).encode()).hexdigest()[:12]}"


def check_loaded_configuration(metric: Any, state_dict: dict[str, Any], prefix: str) -> None:
    """Raise a ``ValueError`` on a checkpoint that another configuration made (or that does not say),
    before anything of ``metric`` changes."""
    own = prefix + metric._config_state
    saved = {key: value for key, value in state_dict.items() if key.startswith(prefix) and "." not in key[len(prefix):]}
    states = [name for name in metric._defaults if prefix + name in saved]
    others = sorted(key[len(prefix):] for key in saved if key.startswith(prefix + "config_") and key != own)
    if own not in saved and (states or others):
        shapes = {key[len(prefix):]: describe_any(value) for key, value in saved.items()}
        made_by = f"names configuration {others}" if others else "names no configuration (no config_* entry)"
        raise ValueError(
            f"The state_dict was not made by this metric's configuration: it {made_by}, this metric "
            f"is {metric._config_state} ({metric!r}); its states {shapes} would be read as this metric's. "
            "Load it into a metric built with the same metrics, options and arguments"
        )


def check_same_states(expected: Sequence[str], states: dict[str, Any]) -> None:
    """``merge_state`` refuses the states of a metric configured differently (other state names)."""
    if set(states) != set(expected):
        raise ValueError(
            f"Cannot merge a state of another configuration: expected states {sorted(expected)}, got {sorted(states)}"
        )
