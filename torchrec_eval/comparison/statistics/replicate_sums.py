r"""Each replicate's sums over one batch, drawn and added a block at a time, and what a comparison's replicate
state needs in memory.

A randomization or bootstrap test adds, for each replicate :math:`b` of :math:`R`, a sum over the batch's
queries of their values times their draws: :math:`\sum_q \epsilon_{qb} x_{qkm}` (Fisher's signs),
:math:`\sum_q w_{qb} x_{qkm}` (the bootstrap's Poisson weights) or the values of the models in the order the
replicate permutes them (the randomized Tukey HSD). The draws of a whole batch are a [B, R] matrix (B R
float64: 0.8 GB at B = 1,024 and R = 100,000, and its hashing takes a few such); drawn and summed a block of
rows and replicates at a time (:func:`blocks`, at most :data:`BLOCK_CELLS` cells), the memory beyond the
batch's values and the [R, K, M] increment stays under 64 MB whatever B and R.

Each block draws the very replicates one draw of the whole batch gives (the draws are a hash of the query id
and the replicate's index, :mod:`~torchrec_eval.comparison.statistics.replicates`), and adds each replicate's products
over a block of rows by one matrix product: where the batch's rows fit one block (8 replicates of every row
and, for the bootstrap, the rows' K M^2 products: B up to 32,768 for Fisher's test, 10,922 for Tukey's test of
3 models, 5,825 for the bootstrap of 3 models on 5 metrics) the sums are those of one product over the whole
batch, to the bit; beyond, the same sums up to the order of the additions, as for any split of the queries
into batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from torch import Tensor

from torchrec_eval.comparison.statistics.replicates import (
    enumerated_signs,
    permutations,
    poisson_weights,
    signs,
)

__all__ = ["BLOCK_CELLS", "blocks", "bootstrap_sums", "check_replicates_fit", "fisher_sums", "replicate_state_bytes",
           "tukey_sums"]

#: the cells of one block's draws (rows x replicates x values per cell): 2^18, 2 MiB as float64; the hashing
#: of one block holds a few such tensors at once. Smaller blocks cost more calls, larger ones miss the caches:
#: 2^18 was the fastest of 2^16 to 2^20 (and of one block) at 1024 x 100, R = 100,000 on one CPU thread
BLOCK_CELLS = 1 << 18

_WORD = 32  # replicates of one hashed word of signs: wide blocks of replicates start at a multiple of it
_LEAST = 8  # the fewest replicates of a block: fewer would hash each row's key for little else


def blocks(rows: int, replicates: int, width: int = 1, row_width: int = 1, out_width: int = 1
           ) -> Iterator[tuple[slice, slice]]:
    """(rows, replicates) slices of blocks whose draws hold at most :data:`BLOCK_CELLS` cells: ``width`` per
    (row, replicate), ``row_width`` per row and ``out_width`` per replicate (at least one row and 8
    replicates a block). The rows stay whole where 8 replicates of all of them fit (their sums then match
    one product over the batch to the bit); the replicates go by multiples of 32 where 32 fit, replicates
    outermost."""
    cells = BLOCK_CELLS
    least = min(replicates, _LEAST)
    row_span = max(1, min(rows, cells // (width * least), cells // max(row_width, 1)))
    fitting = min(cells // (row_span * width), cells // max(out_width, 1))
    replicate_span = min(replicates, max(least, fitting // _WORD * _WORD if fitting >= _WORD else fitting))
    for start in range(0, replicates, replicate_span):
        columns = slice(start, min(replicates, start + replicate_span))
        for first in range(0, rows, row_span):
            yield slice(first, min(rows, first + row_span)), columns


def fisher_sums(values: Tensor, query_ids: Tensor, replicates: int, seed: int, exact: bool = False) -> Tensor:
    r"""[R, K, M] :math:`\sum_q \epsilon_{qb} x_{qkm}`, each replicate's sum of the values [B, K, M] under its
    random signs (``exact``: the enumerated ones, :func:`~torchrec_eval.comparison.statistics.replicates.enumerated_signs`)."""
    rows, keys, models = values.shape
    flat = values.reshape(rows, keys * models)
    out = values.new_zeros(replicates, keys * models)
    for part, span in blocks(rows, replicates, out_width=keys * models):
        count = span.stop - span.start
        ids = query_ids[part]
        flips = enumerated_signs(ids, count, span.start) if exact else signs(ids, count, seed, span.start)
        out[span] += flips.T @ flat[part]
    return out.view(replicates, keys, models)


def bootstrap_sums(values: Tensor, counted: Tensor, query_ids: Tensor, replicates: int, seed: int
                   ) -> dict[str, Tensor]:
    r"""Each replicate's Poisson-weighted sums: of the values [R, K, M], of the weights of the counted queries
    [R, K] (``counted`` [B, K], 1 where every model counts the query) and of the products of every two models'
    values [R, K, M, M] (the weighted variance of every pair's differences)."""
    rows, keys, models = values.shape
    flat = values.reshape(rows, keys * models)
    sums = values.new_zeros(replicates, keys * models)
    counts = values.new_zeros(replicates, keys)
    products = values.new_zeros(replicates, keys * models * models)
    for part, span in blocks(rows, replicates, row_width=keys * models * models, out_width=keys * models * models):
        weights = poisson_weights(query_ids[part], span.stop - span.start, seed, span.start).T  # [r, b]
        block = values[part]
        sums[span] += weights @ flat[part]
        counts[span] += weights @ counted[part]
        products[span] += weights @ (block.unsqueeze(3) * block.unsqueeze(2)).flatten(1)
    return {"replicate_sums": sums.view(replicates, keys, models), "replicate_counts": counts,
            "replicate_products": products.view(replicates, keys, models, models)}


def tukey_sums(values: Tensor, query_ids: Tensor, replicates: int, seed: int) -> Tensor:
    """[R, K, M] each replicate's sums of the values [B, K, M] with the models permuted within each query: slot
    m of replicate r sums the values of the model its order puts there."""
    rows, keys, models = values.shape
    permuted = values.new_zeros(replicates * models, keys)
    for part, span in blocks(rows, replicates, width=models, out_width=keys * models):
        order = permutations(query_ids[part], span.stop - span.start, models, seed, span.start)  # [b, r, M]
        slots = permuted[span.start * models:span.stop * models]
        for source in range(models):  # slot m of replicate r takes model order[b, r, m]'s value
            taken = (order == source).flatten(1).to(values.dtype)  # [b, r * M]
            slots += taken.T @ values[part, :, source]
    return permuted.view(replicates, models, keys).transpose(1, 2)


def replicate_state_bytes(test: str, replicates: int, keys: int, models: int) -> int:
    """The bytes of a comparison's replicate states: [R, K, M] float64 sums, and for the bootstrap the [R, K]
    weights and [R, K, M, M] products too (none for the t-test)."""
    if test == "student":
        return 0
    per_replicate = keys * models + (keys + keys * models * models if test == "bootstrap" else 0)
    return 8 * replicates * per_replicate


def host_memory() -> int | None:
    """This machine's physical memory in bytes, where the platform says (``os.sysconf``); else None."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name: not known
        return None


def check_replicates_fit(test: str, replicates: int, keys: int, models: int) -> None:
    """Raise a ``ValueError`` naming ``replicates`` where the replicate states, and the copy torchmetrics keeps
    of them for ``reset()``, need more bytes than this machine's memory (unknown memory: no check)."""
    state = replicate_state_bytes(test, replicates, keys, models)
    needed, memory = 2 * state, host_memory()
    if memory is None or needed <= memory:
        return
    shape = f"[{replicates}, {keys}, {models}]" + (" sums, [R, K] weights and [R, K, M, M] products"
                                                   if test == "bootstrap" else " sums")
    raise ValueError(
        f"`replicates`={replicates:,} needs {needed:,} bytes ({needed / 1e9:,.1f} GB) of memory: the {test} test's "
        f"float64 {shape} ({state:,} bytes) and torchmetrics' copy of them for reset(), more than this machine's "
        f"{memory:,} bytes. Use fewer replicates: a p-value's Monte-Carlo error is about sqrt(p (1 - p) / R), "
        "0.002 at p = 0.05 with R = 10,000"
    )
