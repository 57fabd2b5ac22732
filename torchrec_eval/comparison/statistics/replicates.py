r"""Random replicates drawn from the query itself: a counter-based hash of (query id, replicate, stream, seed).

A randomization or bootstrap test needs, for each query q and replicate b, a random sign, a permutation of
the models or a resampling weight. Drawn from a generator, they would depend on the order in which batches
and processes meet the queries; drawn from a hash of the query's own id, they are the same whatever the
split, so each replicate's statistic is a plain sum that every batch and every rank adds into one state.

The hash is a 32-bit integer bijection (C. Wellons' ``lowbias32``, its improved constants: xor-shifts and
two odd multipliers below 2^31, so that a 32-bit value times one never overflows int64), applied to the
query id's two 32-bit halves, the seed, the stream and the replicate in turn; its output u / 2^32 is
uniform on [0, 1) to 32 bits.

* :func:`signs`: ±1 with probability 1/2 each (Fisher's randomization test of two models);
* :func:`permutations`: a uniformly random order of M models (the randomized Tukey HSD), one of the M!
  picked by one hashed uniform;
* :func:`poisson_weights`: Poisson(1) counts, the weight of a query in a bootstrap replicate (the Poisson
  bootstrap: each query is drawn a Poisson(1) number of times, independently, so that replicates need no
  fixed n and add across batches);
* :func:`enumerated_signs`: every one of the 2^n sign patterns of queries 0..n-1 (the exact test).

Each takes ``start``: it draws replicates ``start .. start + replicates - 1`` of the same sequence, so that a
comparison draws them in blocks of bounded memory (:mod:`~torchrec_eval.comparison.statistics.replicate_sums`) and
gets exactly the draws of one call.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor

from torchrec_eval.pipeline.tensor_cache import constant

__all__ = ["enumerated_signs", "hashed_uniforms", "hashed_words", "permutations", "poisson_weights", "signs"]

_MASK = 0xFFFFFFFF


def _mix(x: Tensor) -> Tensor:
    """lowbias32: a bijection of 32-bit integers whose output bits each depend on every input bit."""
    x = x & _MASK
    x = ((x ^ (x >> 16)) * 0x21F0AAAD) & _MASK
    x = ((x ^ (x >> 15)) * 0x735A2D97) & _MASK
    return x ^ (x >> 15)


def _mix_(x: Tensor) -> Tensor:
    """:func:`_mix` in place (the same bits): a [B, R] block of words holds one temporary at a time."""
    x &= _MASK
    x ^= x >> 16
    x *= 0x21F0AAAD
    x &= _MASK
    x ^= x >> 15
    x *= 0x735A2D97
    x &= _MASK
    x ^= x >> 15
    return x


def hashed_words(query_ids: Tensor, count: int, stream: int, seed: int, start: int = 0) -> Tensor:
    """[B, count] int64 words of 32 random bits, words ``start .. start + count - 1``: a function of (query id,
    word index, stream, seed) alone."""
    ids = query_ids.to(torch.int64)
    key = _mix(_mix(ids & _MASK) ^ _mix(((ids >> 32) & _MASK) ^ _mix(torch.tensor(seed & _MASK))))
    key = _mix(key ^ _mix(torch.tensor((stream * 0x9E3779B9 + 1) & _MASK, device=ids.device)))
    index = torch.arange(start, start + count, device=ids.device, dtype=torch.int64)
    return _mix_(key.unsqueeze(1) ^ _mix(index + 0x632BE5AB).unsqueeze(0))


def hashed_uniforms(query_ids: Tensor, replicates: int, stream: int, seed: int, start: int = 0) -> Tensor:
    """[B, R] float64 uniforms on [0, 1) of replicates ``start ..``, a function of (query id, replicate, stream,
    seed) alone.

    Example:
        >>> import torch
        >>> u = hashed_uniforms(torch.tensor([7, 7, 8]), replicates=2, stream=0, seed=0)
        >>> bool((u[0] == u[1]).all()), bool((u[0] != u[2]).all()), tuple(u.shape)
        (True, True, (3, 2))
    """
    uniforms = hashed_words(query_ids, replicates, stream, seed, start).to(torch.float64)
    return uniforms.add_(0.5).div_(2.0**32)


def signs(query_ids: Tensor, replicates: int, seed: int, start: int = 0) -> Tensor:
    """[B, R] float64 ±1 of replicates ``start ..``, each with probability 1/2: the 32 bits of one hashed word
    serve 32 replicates (replicate r: bit r % 32 of word r // 32)."""
    first, skip = divmod(start, 32)
    words = hashed_words(query_ids, -(-(skip + replicates) // 32), 1, seed, first)  # the words holding them
    bits = words.unsqueeze(2) >> torch.arange(32, device=words.device)
    bits &= 1  # in place: one [B, R] int64 block at a time
    flipped = bits.flatten(1)[:, skip:skip + replicates].to(torch.bool)
    del bits
    one = torch.ones((), dtype=torch.float64, device=words.device)
    return torch.where(flipped, -one, one)


def permutations(query_ids: Tensor, replicates: int, models: int, seed: int, start: int = 0) -> Tensor:
    """[B, R, M] int64: for each query and replicate (from ``start``), a random order of the M models: one of
    the M! orders picked by 16 hashed bits (up to M = 6: each order's chance is 1/M! to within 2^-16 of it),
    beyond by the argsort of M hashed uniforms."""
    if models <= 6:  # 16 bits a replicate, two replicates a word: each order's chance is 1/M! within 2^-16
        table = _orders(models, query_ids.device)
        first, skip = divmod(start, 2)
        words = hashed_words(query_ids, -(-(skip + replicates) // 2), 2, seed, first)
        halves = torch.stack([words & 0xFFFF, words >> 16], dim=2).flatten(1)[:, skip:skip + replicates]
        return table[(halves * table.shape[0]) >> 16]
    columns = torch.stack([hashed_uniforms(query_ids, replicates, 4 + m, seed, start) for m in range(models)], dim=2)
    return torch.argsort(columns, dim=2)


def _orders(models: int, device: torch.device) -> Tensor:
    """[M!, M] every order of M models (built once per device: a list copied to an accelerator waits for it)."""
    return constant(("model_orders", models, device), lambda: torch.tensor(
        list(itertools.permutations(range(models))), dtype=torch.int64, device=device))


#: P(Poisson(1) <= k) for k = 0..19; the 20th count has probability below 2^-64
_POISSON_CDF = [math.exp(-1) * sum(1 / math.factorial(j) for j in range(k + 1)) for k in range(20)]


def poisson_weights(query_ids: Tensor, replicates: int, seed: int, start: int = 0) -> Tensor:
    """[B, R] float64 Poisson(1) counts: how many times each query is drawn in each bootstrap replicate (from
    ``start``)."""
    u = hashed_uniforms(query_ids, replicates, 3, seed, start)
    table = constant(("poisson_cdf", u.device), lambda: torch.tensor(_POISSON_CDF, dtype=torch.float64, device=u.device))
    return torch.searchsorted(table, u.contiguous(), right=True, out_int32=True).to(torch.float64)


def enumerated_signs(query_ids: Tensor, replicates: int, start: int = 0) -> Tensor:
    """[B, R] float64 ±1: replicate b (from ``start``) flips query q (an id in 0..n-1) where bit q of b is set,
    so that 2^n replicates enumerate every sign pattern once (replicate 0: no flip, the observed statistic)."""
    b = torch.arange(start, start + replicates, device=query_ids.device, dtype=torch.int64)
    bits = (b.unsqueeze(0) >> query_ids.to(torch.int64).unsqueeze(1)) & 1
    return 1.0 - 2.0 * bits.to(torch.float64)
