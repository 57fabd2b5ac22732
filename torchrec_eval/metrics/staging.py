"""The update of a :class:`~torchrec_eval.metrics.base.RankingMetric`, staged: every member computes its
increments of one batch (any may raise, nothing is touched yet), then one call adds them all
(:mod:`~torchrec_eval.metrics.lifecycle` makes the update all or nothing with it). After ``compile_update``
the increments come from one compiled graph (:mod:`~torchrec_eval.metrics.compiled`).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from torch import Tensor

from torchrec_eval.metrics.compiled import compiled_step
from torchrec_eval.metrics.lifecycle import Apply
from torchrec_eval.pipeline import Batch

__all__ = ["Staging"]


class Staging:
    """Mixin for a :class:`~torchrec_eval.metrics.base.RankingMetric`: a batch's increments, staged."""

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        weight = inputs.get("sample_weight")
        inputs = self._inputs({name: value for name, value in inputs.items() if name != "sample_weight"})
        compiling = getattr(self, "_compile_options", None) is not None
        failure = None
        if compiling and weight is None and inputs.get("indexes") is None:  # the flat form stays eager
            try:
                return functools.partial(self._add, compiled_step(self)(inputs))  # pure: nothing is touched yet
            except Exception as error:  # noqa: BLE001 - bad input raises its named ValueError just below
                failure = error
        batch = self.batch(**inputs)
        batch.weights = self._check_weight(weight, batch)
        if failure is not None:  # the eager path takes this input: the graph itself failed
            self._give_up_compiling(failure)
        return self._stage_batch(batch)

    def _give_up_compiling(self, failure: Exception) -> None:
        """Update eagerly from now on, and say why once: a graph that fails would otherwise be traced
        again (and fail again) at every update, at the cost of a compilation each."""
        self._compile_options = self._compiled_step = None
        # torch.compile's errors name the inner error on their next lines ("backend=... raised:\nRuntimeError: ...")
        lines = [line.strip() for line in str(failure).splitlines() if line.strip()][:3]
        cause = f"{type(failure).__name__}: {' '.join(lines)}"[:400]
        warnings.warn(f"compile_update(): the compiled update of {type(self).__name__} failed ({cause}); "
                      "it updates eagerly from now on (same values, no graph)", RuntimeWarning, stacklevel=4)

    def __getstate__(self) -> dict[str, Any]:
        """torchmetrics' pickled state, without the compiled graph (it does not pickle; the copy builds
        its own at its first update)."""
        state = super().__getstate__()  # type: ignore[misc]
        if state.get("_compiled_step") is not None:
            state["_compiled_step"] = None
        return state

    def _add(self, increments: dict[str, Tensor]) -> None:
        for name, increment in increments.items():
            getattr(self, name).add_(increment)

    def _stage_batch(self, batch: Batch) -> Apply:
        applies = [member.stage(self, batch) for member in self.members]  # any error: nothing applied yet

        def apply() -> None:
            for one in applies:
                one()

        return apply
