"""``metric.compile_update()``: the update as one ``torch.compile(fullgraph=True)`` graph per batch shape.

The compiled function is pure: it returns the batch's increment of every state (the members stage the
batch against zero states of a stand-in object) and the metric adds them outside the graph. So a
``reset()`` (new state tensors) or a ``.to(device)`` never invalidates the graph, and a failure leaves
the state as it was. Every state of the library is a sum, so adding the increments is the update.

What cannot be one graph, because it reads data on the host: the flat form (the number of queries
depends on the data: it stays eager), FCP (its grade levels), R-Precision without a cut-off (its depth
is the batch's largest R), ``empty_target_action="error"``, pAUC@k's ``insufficient_handling="raise"`` and
``validate_args=True`` (they raise on values). :func:`compile_update` refuses those up front.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import checked_weights
from torchrec_eval.metrics.families import families
from torchrec_eval.metrics.replay import ReplayedCompile


class _ZeroStates:
    """The metric as its members see it, with every state replaced by zeros: staging fills increments. The zeros
    are made from the states' layout only, so the states are no input of the graph (``reset`` and ``.to`` give
    new state tensors)."""

    def __init__(self, metric: Any) -> None:
        self.__dict__["_metric"] = metric
        for name in metric._defaults:
            state = getattr(metric, name)
            # static sizes: Dynamo's automatic dynamic shapes, keyed by the source's name, would otherwise make them
            # symbols once two metrics' states differ, and the state a graph input to read them
            torch._dynamo.mark_static(state)
            self.__dict__[name] = torch.zeros(state.shape, dtype=state.dtype, device=state.device)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_metric"], name)


def increments(metric: Any, inputs: dict[str, Any]) -> tuple[Tensor, ...]:
    """What ``update(**inputs)`` adds to each state of ``metric`` (in ``metric._defaults``' order), without
    touching it (``inputs["sample_weight"]``: the queries' weights, if given)."""
    weight = inputs.get("sample_weight")
    zeros, batch = _ZeroStates(metric), metric.batch(**{name: value for name, value in inputs.items()
                                                          if name != "sample_weight"})  # one ranking for every member
    if weight is not None:  # as the eager update checks them
        batch.weights = checked_weights(weight, batch.num_queries, metric.weighted, metric.device, metric.validate_args)
    for member in metric.members:
        member.stage(zeros, batch)()
    return tuple(zeros.__dict__[name] for name in metric._defaults)


def compile_update(metric: Any, **compile_kwargs: Any) -> Any:
    """Run every later ``update`` of ``metric`` as one ``torch.compile(fullgraph=True)`` graph per batch shape
    (``metric.compile_update(**compile_kwargs)``).

    One graph means one launch sequence with no host sync on an accelerator, and no Python per operation
    anywhere. Values equal the eager update's (float64 sums may differ in the last bit). Needs
    ``validate_args=False``; refuses FCP, R-Precision without a cut-off and ``empty_target_action="error"``,
    which read the data on the host (see the module's docstring). The flat form stays eager.

    Args:
        metric: a :class:`~torchrec_eval.metrics.base.MemberMetric`.
        compile_kwargs: passed to ``torch.compile`` (``mode=``, ``dynamic=``, ``backend=``).

    Returns:
        the metric itself.

    Raises:
        ValueError: with ``validate_args=True`` or a family that cannot be one graph.

    Example:
        >>> import torch
        >>> from torchrec_eval import RankingMetrics
        >>> suite = RankingMetrics(["ndcg@2"], validate_args=False).compile_update(backend="eager")
        >>> suite.update(torch.tensor([[0.9, 0.1, 0.5]]), torch.tensor([[0, 1, 1]]))
        >>> suite.compute()
        {'ndcg@2': tensor(0.3869, dtype=torch.float64)}
    """
    if metric.validate_args:
        raise ValueError("compile_update() needs validate_args=False: the value checks read the data on the host; "
                         f"got validate_args={metric.validate_args!r}")
    if metric.empty_target_action == "error":
        raise ValueError("compile_update() cannot raise on data: empty_target_action='error' reads it on the host; "
                         f"got empty_target_action={metric.empty_target_action!r}")
    raising = [key for member in metric.members if getattr(member, "raises_on_data", False)
               for key in member.keys]
    if raising:
        raise ValueError("compile_update() cannot raise on data: insufficient_handling='raise' reads it on the host; "
                         f"got it for {raising}")
    table = families()
    found = [(key, table.get(key.partition("@")[0])) for key in metric.value_keys]  # None: not a suite's
    blocked = [key for key, family in found if family is not None and family.reads_host(key)]
    if blocked:
        raise ValueError(f"compile_update(): {blocked} read the batch on the host (FCP's grade levels, "
                         "R-Precision's depth = the largest R) and cannot be one graph")
    metric._compile_options = dict(compile_kwargs)
    metric._compiled_step = None
    return metric


def compiled_increments(metric: Any, inputs: dict[str, Any], weight: Tensor | None = None) -> dict[str, Tensor]:
    """:func:`increments` of ``inputs`` weighted by ``weight`` (None: unweighted) from ``metric``'s compiled graphs
    (built at the first use in this process; a known input signature replays its graph without Dynamo:
    :class:`~torchrec_eval.metrics.replay.ReplayedCompile`)."""
    if weight is not None:
        inputs = {**inputs, "sample_weight": weight}
    if torch.compiler.is_compiling():  # inside a user's own graph: traced into it
        return dict(zip(metric._defaults, increments(metric, inputs), strict=True))
    if metric._compiled_step is None:
        metric._compiled_step = ReplayedCompile(increments, metric, metric._compile_options)
    return dict(zip(metric._defaults, metric._compiled_step(inputs), strict=True))


def give_up_compiling(metric: Any, failure: Exception) -> None:
    """Update ``metric`` eagerly from now on, and say why once: a graph that fails would otherwise be traced
    again (and fail again) at every update, at the cost of a compilation each."""
    metric._compile_options = metric._compiled_step = None
    # torch.compile's errors name the inner error on their next lines ("backend=... raised:\nRuntimeError: ...")
    lines = [line.strip() for line in str(failure).splitlines() if line.strip()][:3]
    cause = f"{type(failure).__name__}: {' '.join(lines)}"[:400]
    warnings.warn(f"compile_update(): the compiled update of {type(metric).__name__} failed ({cause}); "
                  "it updates eagerly from now on (same values, no graph)", RuntimeWarning, stacklevel=4)
