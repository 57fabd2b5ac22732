"""The stateful base of the pointwise metrics: inputs, tasks, groups and result names.

:class:`PointwiseMetric` takes one prediction per sample and task and names the results for Lightning's
``log_dict``; :class:`StatisticsMetric` keeps float64 sufficient statistics [G, T, S] (memory fixed,
exact under the torchmetrics ``"sum"`` sync). The exact AUC/AUPRC classes, which must store samples,
derive from :class:`PointwiseMetric` directly (:mod:`torchrec_eval.pointwise.exact`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.metrics.base import fingerprint
from torchrec_eval.metrics.lifecycle import Apply, StatefulMetric, TorchmetricsArguments
from torchrec_eval.pipeline.arguments import check_optional_int
from torchrec_eval.pointwise.inputs import PointwiseBatch, prepare_pointwise


def _check_tasks(tasks: Any) -> list[str] | None:
    if tasks is None:
        return None
    if isinstance(tasks, str) or not isinstance(tasks, Sequence) or not tasks:
        raise ValueError(f"`tasks` must be None or a non-empty list of task names, got {tasks!r}")
    if not all(isinstance(task, str) and task for task in tasks) or len(set(tasks)) != len(tasks):
        raise ValueError(f"`tasks` must hold distinct non-empty strings, got {tasks!r}")
    return list(tasks)


class PointwiseArguments(TorchmetricsArguments, total=False):
    """The keyword arguments every pointwise metric class takes (``**kwargs: Unpack[PointwiseArguments]``)."""

    tasks: Sequence[str] | None
    num_groups: int | None
    validate_args: bool


class PointwiseMetric(StatefulMetric):
    """One prediction per sample (and task): ``update(preds, target, sample_weight=None, groups=None)``.

    Args:
        tasks: None: ``preds`` and ``target`` are [B] and ``compute`` returns a tensor; a list of T task
            names: they are [B, T] (column t = task t) and ``compute`` returns ``{"{task}/{key}": value}``.
        num_groups: if set, ``update`` takes ``groups`` [B] in [0, num_groups) and every value is a
            [num_groups] tensor (NaN for a group without samples).
        validate_args: check values (finite, in range); False skips the checks that need a host sync.
        kwargs: torchmetrics ``Metric`` arguments (``sync_on_compute``, ``dist_sync_fn``, ...).

    Subclasses set ``value_keys`` and the input requirements, and implement ``_stage`` and ``_values``.
    """

    is_differentiable = False
    higher_is_better: bool | None = None
    full_state_update = False
    value_keys: list[str]
    probabilities = False  # preds must lie in [0, 1]
    binary_target = False  # target must lie in [0, 1]

    def __init__(self, *, tasks: Sequence[str] | None = None, num_groups: int | None = None,
                 validate_args: bool = True, single_key: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        num_groups = check_optional_int("num_groups", num_groups, 1)
        self.tasks = _check_tasks(tasks)
        self.num_groups = num_groups
        self.validate_args = validate_args
        self.single_key = single_key

    @property
    def num_tasks(self) -> int:
        return 1 if self.tasks is None else len(self.tasks)

    def update(self, preds: Tensor, target: Tensor, *, sample_weight: Tensor | None = None,
               groups: Tensor | None = None) -> None:
        """Add one batch; on any error every state is left as it was.

        Args:
            preds: [B] predictions ([B, T] with ``tasks``): probabilities for NE, log loss and the
                binned curves; any real scores for the exact AUC/AUPRC and the errors.
            target: labels of the shape of ``preds``, in [0, 1] (soft labels allowed) for the binary
                metrics; any real values for MSE, RMSE and MAE.
            sample_weight: [B] (shared by the tasks) or the shape of ``preds``; >= 0. Default: 1.
            groups: [B] segment of each sample, when the metric was built with ``num_groups``.
        """
        self._update_from({"preds": preds, "target": target, "sample_weight": sample_weight, "groups": groups})

    def batch(self, preds: Any, target: Any, sample_weight: Any = None, groups: Any = None) -> PointwiseBatch:
        """Check one batch against this metric's settings; the canonical tensors are on its device."""
        return prepare_pointwise(
            preds, target, sample_weight, groups, num_tasks=None if self.tasks is None else len(self.tasks),
            num_groups=self.num_groups, probabilities=self.probabilities, binary_target=self.binary_target,
            validate_args=self.validate_args, device=self.device,
        )

    def _values(self) -> dict[str, Tensor]:
        """Each value key -> [G, T] (G = 1 without groups, T = 1 without tasks)."""
        raise NotImplementedError

    def name_values(self, values: dict[str, Tensor], prefix: str = "") -> dict[str, Tensor]:
        """Results keyed for ``log_dict``: ``{prefix + key}`` or ``{f"{task}/{prefix}{key}"}`` with tasks.

        Each value is [num_groups] with groups, else 0-d (``values`` hold [G, T] tensors).
        """
        out: dict[str, Tensor] = {}
        for key in self.value_keys:
            value = values[key] if self.num_groups is not None else values[key][0]
            if self.tasks is None:
                out[prefix + key] = value[..., 0]
            else:
                out.update({f"{task}/{prefix}{key}": value[..., i] for i, task in enumerate(self.tasks)})
        return out

    def compute(self) -> Tensor | dict[str, Tensor]:
        results = self.name_values(self._values())
        return next(iter(results.values())) if self.single_key and self.tasks is None else results


class StatisticsMetric(PointwiseMetric):
    """Pointwise members (:mod:`torchrec_eval.pointwise.members`) summed into one float64 state [G, T, S].

    The state never grows with the number of samples and the torchmetrics sync reduces it with one
    ``"sum"`` collective, so every value is exact over any split of the data across updates and ranks.
    It is named after the configuration (``stats_<hash>``), so that torchmetrics' compute groups never
    merge two metrics whose statistics merely look alike.

    Args:
        members: the value families; their keys are the result keys.
        kwargs: see :class:`PointwiseMetric`.
    """

    def __init__(self, members: Sequence[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.members = list(members)
        self.value_keys = [key for member in self.members for key in member.keys]
        self.probabilities = any(member.probabilities for member in self.members)
        self.binary_target = any(member.binary_target for member in self.members)
        self.offsets = [0]
        for member in self.members:
            self.offsets.append(self.offsets[-1] + member.size)
        signature = hashlib.sha1(fingerprint([self.value_keys, self.members]).encode())
        self.state_name = f"stats_{signature.hexdigest()[:12]}"
        default = torch.zeros(self.num_groups or 1, self.num_tasks, self.offsets[-1], dtype=torch.float64)
        self.add_state(self.state_name, default=default, dist_reduce_fx="sum")

    @property
    def stats(self) -> Tensor:
        """The sufficient statistics [G, T, S]."""
        return getattr(self, self.state_name)

    def statistics(self, batch: PointwiseBatch) -> Tensor:
        """One batch's statistics [G, T, S] (the state is not touched)."""
        return torch.cat([member.statistics(batch, self.num_groups) for member in self.members], dim=-1)

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        stats = self.statistics(self.batch(**inputs))

        def apply() -> None:
            self.stats.add_(stats)

        return apply

    def values_from(self, stats: Tensor) -> dict[str, Tensor]:
        """Every value key -> [...] from statistics [..., S] (this metric's layout)."""
        values: dict[str, Tensor] = {}
        for member, start, end in zip(self.members, self.offsets, self.offsets[1:], strict=False):
            values.update(member.values(stats[..., start:end]))
        return values

    def _values(self) -> dict[str, Tensor]:
        return self.values_from(self.stats)
