"""``empty_target_action="error"`` of the full-ranking formulas: name the first query that cannot be scored."""

from __future__ import annotations

from torch import Tensor


def raise_for_empty(bad: Tensor, what: str) -> None:
    """Raise a ValueError naming the first query where ``bad`` [B] is True (the query has ``what``)."""
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        raise ValueError(f"Query {row} of the batch has {what} and `empty_target_action` is 'error'")
