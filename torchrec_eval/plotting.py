"""``metric.plot()``: a result, or results over steps, drawn with matplotlib as torchmetrics' ``Metric.plot``.

Every metric of the library (every class, a :class:`~torchrec_eval.RankingMetrics` suite and each of its
logged values) has ``plot(val=None, ax=None) -> (figure, axes)``, the signature and return of
torchmetrics' ``Metric.plot``. ``val`` is what ``compute()`` or ``forward()`` returned (by default
``compute()`` is called) or a list of such results, one per step (an epoch, a batch):

* one result: a bar per value, labelled with its key (``"ndcg@10"``); with ``num_groups`` a bar per
  group side by side under each key, one colour per group;
* a list of results: a line per value (and per group) over the step index, x label ``"step"``.

The y axis starts at 0 (every metric of the library is >= 0, save a paired difference) and reaches the
metric's upper bound where all plotted values share one (1 for most, 100 for MPR); the title says
whether higher is better when every plotted value agrees. matplotlib is an optional dependency (the
``cli`` extra); without it ``plot`` raises a ``ModuleNotFoundError`` that says how to install it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = ["plot_metric", "plot_values"]

def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ModuleNotFoundError(
            "plot() needs matplotlib, which is not installed: pip install \"torchrec_eval[cli]\" "
            "(or pip install matplotlib)"
        ) from None
    return plt


def _as_table(val: Any, label: str) -> tuple[dict[str, Tensor], bool]:
    """``val`` -> ({key: [steps, groups] float64 on the CPU}, whether it is a list of results over steps)."""
    over_steps = isinstance(val, Sequence) and not isinstance(val, (str, bytes))
    results = list(val) if over_steps else [val]
    if not results:
        raise ValueError(f"`val` is an empty list: nothing to plot, got {val!r}")
    rows: list[dict[str, Tensor]] = []
    for result in results:
        if isinstance(result, Tensor):
            result = {label: result}
        if not isinstance(result, Mapping) or not all(isinstance(v, Tensor) for v in result.values()):
            raise ValueError(
                "`val` must be a result of compute() or forward() (a tensor or a dict of tensors) or a list "
                f"of them, got {type(result).__name__} {result!r:.80}"
            )
        rows.append({key: value.detach().to("cpu", torch.float64).reshape(-1) for key, value in result.items()})
    keys = list(rows[0])
    if any(list(row) != keys for row in rows) or len({v.numel() for row in rows for v in row.values()}) != 1:
        shapes = [{key: tuple(value.shape) for key, value in row.items()} for row in rows]
        raise ValueError("Every result in `val` must have the same keys and shapes (results of one metric), got "
                         f"{shapes!r:.300}")
    return {key: torch.stack([row[key] for row in rows]) for key in keys}, over_steps


def _bars(ax: Any, table: dict[str, Tensor]) -> None:
    keys = list(table)
    num_groups = next(iter(table.values())).shape[1]
    width = 0.8 / num_groups
    for group in range(num_groups):
        heights = [float(table[key][0, group]) for key in keys]
        offsets = [i + (group - (num_groups - 1) / 2) * width for i in range(len(keys))]
        bars = ax.bar(offsets, heights, width, label=f"group {group}" if num_groups > 1 else None)
        if num_groups == 1:  # side-by-side group bars are too narrow for their numbers
            ax.bar_label(bars, fmt="%.4g", fontsize="small")
    tilted = len(keys) > 4
    ax.set_xticks(range(len(keys)), keys, rotation=30 if tilted else 0, ha="right" if tilted else "center")
    ax.set_xlim(-0.75, len(keys) - 0.25)


def _lines(ax: Any, table: dict[str, Tensor]) -> None:
    for key, values in table.items():
        steps = range(values.shape[0])
        for group in range(values.shape[1]):
            name = key if values.shape[1] == 1 else f"{key} group {group}"
            ax.plot(steps, values[:, group].tolist(), marker="o", label=name)
    ax.set_xlabel("step")
    ax.set_xticks(range(next(iter(table.values())).shape[0]))


def _limits(ax: Any, table: dict[str, Tensor], upper: float | None) -> None:
    """y from min(0, lowest value) to max(upper bound, highest value), with a margin; NaN values ignored."""
    values = torch.cat([v.reshape(-1) for v in table.values()])
    values = values[torch.isfinite(values)]
    highs = ([float(values.max())] if values.numel() else []) + ([] if upper is None else [upper])
    low, high = min(0.0, float(values.min())) if values.numel() else 0.0, max(highs, default=1.0)
    span = (high - low) or 1.0
    ax.set_ylim(low - 0.05 * span, high + 0.1 * span)


def plot_values(
    val: Any,
    ax: Any = None,
    *,
    title: str,
    label: str,
    higher_is_better: bool | None = None,
    upper_bound: float | None = None,
) -> tuple[Any, Any]:
    """Draw one result of a metric (bars) or a list of results over steps (lines).

    Args:
        val: a tensor (0-d, or [G] with groups), a dict of them (a suite's ``compute()``), or a list of
            either (values over steps).
        ax: a matplotlib ``Axes`` to draw on; by default a new figure.
        title: the axes title (the metric's class name); the direction is appended when known.
        label: the key of a bare tensor value (``"ndcg@10"``); also the y label when it is the only key.
        higher_is_better: shown in the title (``True``: "higher is better", ``False``: "lower ...").
        upper_bound: the most the values can be (the bound their families share,
            :func:`torchrec_eval.metrics.families.upper_bound`): the y axis reaches it.

    Returns:
        ``(figure, axes)``.

    Raises:
        ModuleNotFoundError: if matplotlib is not installed.
        ValueError: if ``val`` is not a result or a list of results of one metric.

    Example:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import torch
        >>> import torchrec_eval as tre
        >>> suite = tre.RankingMetrics(["ndcg@2", "mrr@2"])
        >>> suite.update(torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 0]]))
        >>> fig, ax = suite.plot()
        >>> [tick.get_text() for tick in ax.get_xticklabels()], [round(float(bar.get_height()), 4) for bar in ax.patches]
        (['ndcg@2', 'mrr@2'], [0.6309, 0.5])
    """
    table, over_steps = _as_table(val, label)  # before matplotlib: a bad `val` is a ValueError either way
    plt = _pyplot()
    figure, ax = plt.subplots() if ax is None else (ax.figure, ax)
    (_lines if over_steps else _bars)(ax, table)
    _limits(ax, table, upper_bound)
    directions: dict[bool | None, str] = {True: " (higher is better)", False: " (lower is better)"}
    direction = directions.get(higher_is_better, "")
    ax.set_title(title + direction)
    ax.set_ylabel(next(iter(table)) if len(table) == 1 else "value")
    ax.grid(True, axis="y", alpha=0.4)
    if len(ax.get_legend_handles_labels()[0]) > 1:
        ax.legend(fontsize="small")
    return figure, ax


def plot_metric(metric: Any, val: Any, ax: Any = None, upper_bound: float | None = None) -> tuple[Any, Any]:
    """:func:`plot_values` for a metric object: its class name, first key and direction."""
    keys = list(getattr(metric, "value_keys", []))
    return plot_values(val, ax, title=type(metric).__name__, label=keys[0] if keys else type(metric).__name__,
                       higher_is_better=metric.higher_is_better, upper_bound=upper_bound)
