"""The update of a :class:`~torchrec_eval.metrics.base.RankingMetric`, staged: every member computes its
increments of one batch (any may raise, nothing is touched yet), then one call adds them all
(:mod:`~torchrec_eval.metrics.lifecycle` makes the update all or nothing with it). After ``compile_update``
the increments come from one compiled graph (:mod:`~torchrec_eval.metrics.compiled`).
"""

from __future__ import annotations

import functools
from typing import Any

from torch import Tensor

from torchrec_eval.metrics.lifecycle import Apply
from torchrec_eval.pipeline import Batch

__all__ = ["Staging"]


class Staging:
    """Mixin for a :class:`~torchrec_eval.metrics.base.RankingMetric`: a batch's increments, staged."""

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        weight = inputs.get("sample_weight")
        inputs = self._inputs({name: value for name, value in inputs.items() if name != "sample_weight"})
        step = getattr(self, "_compiled_increments", None)
        if step is not None and weight is None and inputs.get("indexes") is None:  # the flat form stays eager
            try:
                return functools.partial(self._add, step(inputs))  # pure: nothing is touched yet
            except Exception:  # noqa: S110 - bad input: the eager path below raises its named ValueError
                pass
        batch = self.batch(**inputs)
        batch.weights = self._check_weight(weight, batch)
        return self._stage_batch(batch)

    def _add(self, increments: dict[str, Tensor]) -> None:
        for name, increment in increments.items():
            getattr(self, name).add_(increment)

    def _stage_batch(self, batch: Batch) -> Apply:
        applies = [member.stage(self, batch) for member in self.members]  # any error: nothing applied yet

        def apply() -> None:
            for one in applies:
                one()

        return apply
