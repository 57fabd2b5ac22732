"""ranx's order of tied scores, with numba (ranx's own dependency): imported only for ``ties="ranx"``.

``ranx.Run`` sorts each query's documents, taken in the file's order, with numba's ``np.argsort`` of
the negated scores: numba's quicksort, which is not stable, so equal scores come out in an order
that only that algorithm defines. Calling numba's own ``np.argsort`` reproduces it exactly.
"""

import numba
import numpy as np


@numba.njit(cache=True)
def segment_argsort(values, bounds):  # pragma: no cover - compiled by numba
    """For each segment ``values[bounds[i]:bounds[i + 1]]``, numba's ``np.argsort`` (+ the offset)."""
    out = np.empty(len(values), dtype=np.int64)
    for i in range(len(bounds) - 1):
        a, b = bounds[i], bounds[i + 1]
        out[a:b] = np.argsort(values[a:b]) + a
    return out
