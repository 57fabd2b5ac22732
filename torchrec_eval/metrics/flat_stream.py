"""The flat form across ``update`` calls: the rows of a query that may continue into the next call.

A query whose rows arrive in two ``update`` calls is evaluated once, whole: each call's last query is
held back (:class:`FlatStream`) until the next call shows it complete. Meanwhile it is in the states as it
stands (its increments kept with the stream, to take back out when it continues), so that whatever reads or
shares the states sees every row. Query ids must increase from call to call; the stream is an immutable
value, so a failed update leaves it as it was, and it travels in a persistent ``state_dict`` as
``_flat_stream_*`` entries (see :mod:`torchrec_eval.metrics.lifecycle`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.pipeline.validation import describe_any

__all__ = ["PENDING", "STREAM", "STREAM_EVALUATED", "STREAM_LAST", "TENTATIVE", "FlatStream"]


@dataclass(frozen=True)
class FlatStream:
    """Rows of the flat form held back between calls: the last query of a call may continue.

    Attributes:
        pending: 1-D columns (``indexes``, ``preds``, ...) of the query held back, or None.
        last: the highest query id seen so far (held back or evaluated), or None.
    """

    pending: dict[str, Tensor] | None = None
    last: int | None = None
    evaluated: bool = False  # whether the query `last` was already evaluated
    # each state's increment from the held-back query, added to the states already (taken back if it continues)
    tentative: dict[str, Tensor] = field(default_factory=dict)

    def feed(self, columns: dict[str, Tensor]) -> tuple[dict[str, Tensor] | None, FlatStream]:
        """Split a call's rows (plus the held-back ones) into complete queries and the new held-back one.

        Returns the rows ready to evaluate (None if none) and the stream after this call; ``self`` is
        not changed, so a failure later in the update leaves the stream as it was.
        """
        indexes = columns["indexes"]
        low, high = (int(v) for v in torch.aminmax(indexes))  # the flat form syncs anyway (torch.unique)
        if self.last is not None and (low < self.last or (low == self.last and self.evaluated)):
            raise ValueError(
                f"`indexes`: query {low} arrives after query {self.last} was "
                f"{'evaluated' if low == self.last and self.evaluated else 'seen'}. In the flat form a "
                "query's rows must be contiguous in the stream and query ids must increase from one "
                "update to the next (a query may continue into the next update call, not after "
                "compute() or forward()); number the queries of each batch after those of the last "
                "(e.g. add an offset) or pass each query whole"
            )
        if self.pending is not None:
            columns = _concat(self.pending, columns)
            indexes = columns["indexes"]
        tail = indexes == high
        if bool(tail.all()):
            return None, FlatStream(columns, high)
        head = ~tail
        ready = {name: value[head] for name, value in columns.items()}
        return ready, FlatStream({name: value[tail] for name, value in columns.items()}, high)

    def drained(self) -> FlatStream:
        """The stream once its held-back query is evaluated: that query may not continue."""
        return FlatStream(None, self.last, evaluated=self.pending is not None or self.evaluated)

    def holding(self, tentative: dict[str, Tensor]) -> FlatStream:
        """The stream with the states' increments from its held-back query."""
        return replace(self, tentative=tentative)

    def to(self, device: torch.device) -> FlatStream:
        """The stream with its rows and increments on ``device``."""
        pending = None if self.pending is None else {name: column.to(device) for name, column in self.pending.items()}
        return replace(self, pending=pending, tentative={name: value.to(device) for name, value in self.tentative.items()})

    def entries(self) -> dict[str, Tensor]:
        """The stream as ``_flat_stream_*`` tensors (empty before any flat-form row): for ``state_dict``."""
        if self.last is None:
            return {}
        out = {STREAM_LAST: torch.tensor(self.last), STREAM_EVALUATED: torch.tensor(self.evaluated)}
        out.update({PENDING + name: column.detach().clone() for name, column in (self.pending or {}).items()})
        out.update({TENTATIVE + name: value.detach().clone() for name, value in self.tentative.items()})
        return out

    @staticmethod
    def from_entries(entries: dict[str, Any], device: torch.device) -> FlatStream:
        """The stream that :meth:`entries` wrote (no entries: an empty stream, as in an old checkpoint).

        Raises:
            ValueError: on entries that are not such a stream, naming the entry and what it holds.
        """
        if not entries:
            return FlatStream()
        last, evaluated = entries.get(STREAM_LAST), entries.get(STREAM_EVALUATED, torch.tensor(False))
        pending = {key[len(PENDING):]: value for key, value in entries.items() if key.startswith(PENDING)}
        tentative = {key[len(TENTATIVE):]: value for key, value in entries.items() if key.startswith(TENTATIVE)}
        unknown = set(entries) - {STREAM_LAST, STREAM_EVALUATED, *(PENDING + name for name in pending),
                                  *(TENTATIVE + name for name in tentative)}
        columns = list(pending.values())
        if (
            unknown or not isinstance(last, Tensor) or last.numel() != 1 or last.is_floating_point()
            or not isinstance(evaluated, Tensor) or evaluated.numel() != 1
            or (pending and "indexes" not in pending) or bool(pending) != bool(tentative)
            or not all(isinstance(c, Tensor) and c.ndim == 1 and c.shape == columns[0].shape for c in columns)
            or not all(isinstance(value, Tensor) for value in tentative.values())
        ):
            shown = {key: describe_any(value) for key, value in entries.items()}
            raise ValueError(
                f"The flat-form stream of a state_dict must be `{STREAM_LAST}` (one integer), "
                f"`{STREAM_EVALUATED}`, 1-D `{PENDING}<column>` rows of equal length including "
                f"`indexes` and, with them, `{TENTATIVE}<state>` increments; got {shown}"
            )
        held = {name: column.to(device) for name, column in pending.items()} or None
        return FlatStream(held, int(last), evaluated=held is None and bool(evaluated),
                          tentative={name: value.to(device) for name, value in tentative.items()})


STREAM = "_flat_stream_"  # the prefix of the stream's entries in a state_dict and in metric_state
STREAM_LAST, STREAM_EVALUATED, PENDING = STREAM + "last", STREAM + "evaluated", STREAM + "pending."
TENTATIVE = STREAM + "tentative."  # the states' increments from the held-back query


def _concat(old: dict[str, Tensor], new: dict[str, Tensor]) -> dict[str, Tensor]:
    if set(old) != set(new):
        if set(old) ^ set(new) != {"mask"}:
            raise ValueError(
                f"The flat form needs the same arguments in every update call of a stream: the last "
                f"call had {sorted(old)}, this one {sorted(new)}"
            )
        old, new = ({"mask": torch.ones_like(c["indexes"], dtype=torch.bool), **c} for c in (old, new))
    return {name: torch.cat([old[name], new[name].to(old[name].device)]) for name in new}
