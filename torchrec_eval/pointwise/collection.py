"""PointwiseMetrics: several pointwise values of one or more tasks from one float64 state."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Unpack

from torchmetrics import Metric

from torchrec_eval.pointwise.base import PointwiseArguments, StatisticsMetric
from torchrec_eval.pointwise.members import build_members


class PointwiseMetrics(StatisticsMetric):
    """A suite of pointwise metrics: one update of one state [G, T, S] for all of them.

    ``compute`` returns ``{"ne": t, "calibration": t, ...}`` in the order requested, or with ``tasks``
    ``{"click/ne": t, ..., "conversion/auc": t}``: ready for Lightning's ``log_dict``. Wrap it in
    :class:`~torchrec_eval.Windowed` for lifetime and window values.

    Args:
        metrics: names among ``"ne"``, ``"log_loss"``, ``"calibration"``, ``"ctr"``, ``"mse"``, ``"rmse"``,
            ``"mae"``, ``"auc"`` and ``"auprc"`` (binned: fixed memory; see :class:`~torchrec_eval.BinnedAUC`).
        options: per-metric options: ``{"ne": {"eta": 1e-12}, "log_loss": {"log_base": 2},
            "auc": {"bins": 10000}, "auprc": {"bins": 10000}}`` (AUC and AUPRC with the same ``bins`` share
            one histogram).
        kwargs: ``tasks``, ``num_groups``, ``validate_args`` and the torchmetrics arguments, see
            :class:`~torchrec_eval.pointwise.base.PointwiseMetric`.

    Raises:
        ValueError: on an unknown name (the message lists the known ones), a repeated name, an option of
            a metric not in the suite or a bad option; in ``update`` on bad inputs (``preds`` must be
            probabilities in [0, 1] when NE, log loss, AUC or AUPRC is in the suite).

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> suite = tre.PointwiseMetrics(["ne", "calibration", "auc"], tasks=["click", "buy"])
        >>> suite.update(torch.tensor([[0.9, 0.2], [0.2, 0.1], [0.3, 0.3], [0.6, 0.1]]),
        ...              torch.tensor([[1, 1], [0, 0], [0, 0], [1, 0]]))
        >>> {key: round(value.item(), 4) for key, value in suite.compute().items()}  # doctest: +NORMALIZE_WHITESPACE
        {'click/ne': 0.4314, 'buy/ne': 0.9678, 'click/calibration': 1.0, 'buy/calibration': 0.7,
         'click/auc': 1.0, 'buy/auc': 0.6667}
    """

    def __init__(self, metrics: Sequence[str], *, options: dict[str, dict[str, Any]] | None = None,
                 **kwargs: Unpack[PointwiseArguments]) -> None:
        if isinstance(metrics, str) or not isinstance(metrics, Sequence) or not metrics:
            raise ValueError(f"`metrics` must be a non-empty list of names such as ['ne', 'auc'], got {metrics!r}")
        for name in metrics:
            if not isinstance(name, str):
                raise ValueError(f"`metrics` must hold names such as 'ne', got {name!r} in {metrics!r}")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"`options` must map a metric name to its options, got {options!r}")
        keys = [name.strip().lower() for name in metrics]
        super().__init__(build_members(keys, options or {}), **kwargs)
        self.value_keys = keys  # results in the order requested

    def keys(self) -> list[str]:
        """The result keys, in the order of ``compute``."""
        return list(self.name_values({key: self.stats[..., 0] for key in self.value_keys}))

    @classmethod
    def from_config(cls, config: str | os.PathLike[str] | dict[str, Any], **overrides: Any) -> Metric:
        """A suite from a YAML file, a ready-made suite by name (``"ctr"``) or a dict, see
        :func:`~torchrec_eval.suites.config.pointwise_suite_kwargs`; ``overrides`` replace the config's keys
        (e.g. ``tasks=["ctr"]``). With ``window`` set, the suite comes wrapped in
        :class:`~torchrec_eval.Windowed`."""
        from torchrec_eval.pointwise.window import Windowed
        from torchrec_eval.suites.config import load_yaml, pointwise_suite_kwargs

        if overrides:
            raw = load_yaml(config) if isinstance(config, (str, os.PathLike)) else config
            config = {**raw, **overrides} if isinstance(raw, dict) else raw
        kwargs = pointwise_suite_kwargs(config)
        window = {key: kwargs.pop(key) for key in ("window", "window_unit", "max_updates") if key in kwargs}
        suite = cls(**kwargs)
        if "window" not in window:
            return suite
        unit = window.get("window_unit", "updates")
        return Windowed(suite, window["window"], unit=unit, max_updates=window.get("max_updates"))
