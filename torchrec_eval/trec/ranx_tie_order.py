"""ranx's order of tied scores, with numba (ranx's own dependency), imported only when it is used.

``ranx.Run`` sorts each query's documents, taken in the file's order, with numba's ``np.argsort`` of
the negated scores: numba's quicksort, which is not stable, so equal scores come out in an order
that only that algorithm defines. Calling numba's own ``np.argsort`` reproduces it exactly.
"""

from collections.abc import Callable
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

SegmentArgsort = Callable[[NDArray[np.float64], NDArray[np.intp]], NDArray[np.int64]]


def _segment_argsort(values: NDArray[np.float64],
                     bounds: NDArray[np.intp]) -> NDArray[np.int64]:  # pragma: no cover - compiled by numba
    out = np.empty(len(values), dtype=np.int64)
    for i in range(len(bounds) - 1):
        a, b = bounds[i], bounds[i + 1]
        out[a:b] = np.argsort(values[a:b]) + a
    return out


@lru_cache(maxsize=1)
def segment_argsort() -> SegmentArgsort:
    """The compiled function ``(values, bounds) -> order``: for each segment
    ``values[bounds[i]:bounds[i + 1]]``, numba's ``np.argsort`` plus the segment's offset (compiled
    once, then loaded from numba's cache).

    Raises:
        ImportError: without numba.
    """
    import numba

    return numba.njit(cache=True)(_segment_argsort)
