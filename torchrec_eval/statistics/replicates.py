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
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import Tensor

__all__ = ["enumerated_signs", "hashed_uniforms", "hashed_words", "permutations", "poisson_weights", "signs"]

_MASK = 0xFFFFFFFF


def _mix(x: Tensor) -> Tensor:
    """lowbias32: a bijection of 32-bit integers whose output bits each depend on every input bit."""
    x = x & _MASK
    x = ((x ^ (x >> 16)) * 0x21F0AAAD) & _MASK
    x = ((x ^ (x >> 15)) * 0x735A2D97) & _MASK
    return x ^ (x >> 15)


def hashed_words(query_ids: Tensor, count: int, stream: int, seed: int) -> Tensor:
    """[B, count] int64 words of 32 random bits, a function of (query id, word index, stream, seed) alone."""
    ids = query_ids.to(torch.int64)
    key = _mix(_mix(ids & _MASK) ^ _mix(((ids >> 32) & _MASK) ^ _mix(torch.tensor(seed & _MASK))))
    key = _mix(key ^ _mix(torch.tensor((stream * 0x9E3779B9 + 1) & _MASK, device=ids.device)))
    index = torch.arange(count, device=ids.device, dtype=torch.int64)
    return _mix(key.unsqueeze(1) ^ _mix(index + 0x632BE5AB).unsqueeze(0))


def hashed_uniforms(query_ids: Tensor, replicates: int, stream: int, seed: int) -> Tensor:
    """[B, R] float64 uniforms on [0, 1), a function of (query id, replicate, stream, seed) alone.

    Example:
        >>> import torch
        >>> u = hashed_uniforms(torch.tensor([7, 7, 8]), replicates=2, stream=0, seed=0)
        >>> bool((u[0] == u[1]).all()), bool((u[0] != u[2]).all()), tuple(u.shape)
        (True, True, (3, 2))
    """
    return (hashed_words(query_ids, replicates, stream, seed).to(torch.float64) + 0.5) / 2.0**32


def signs(query_ids: Tensor, replicates: int, seed: int) -> Tensor:
    """[B, R] float64 ±1, each with probability 1/2: the 32 bits of one hashed word serve 32 replicates."""
    words = hashed_words(query_ids, -(-replicates // 32), 1, seed)  # [B, ceil(R / 32)]
    bits = (words.unsqueeze(2) >> torch.arange(32, device=words.device)) & 1
    return 1.0 - 2.0 * bits.flatten(1)[:, :replicates].to(torch.float64)


def permutations(query_ids: Tensor, replicates: int, models: int, seed: int) -> Tensor:
    """[B, R, M] int64: for each query and replicate, a random order of the M models: one of the M! orders
    picked by 16 hashed bits (up to M = 6: each order's chance is 1/M! to within 2^-16 of it), beyond by the
    argsort of M hashed uniforms."""
    if models <= 6:  # 16 bits a replicate, two replicates a word: each order's chance is 1/M! within 2^-16
        table = _orders(models, query_ids.device)
        words = hashed_words(query_ids, -(-replicates // 2), 2, seed)
        halves = torch.stack([words & 0xFFFF, words >> 16], dim=2).flatten(1)[:, :replicates]
        return table[(halves * table.shape[0]) >> 16]
    columns = torch.stack([hashed_uniforms(query_ids, replicates, 4 + m, seed) for m in range(models)], dim=2)
    return torch.argsort(columns, dim=2)


def _orders(models: int, device: torch.device) -> Tensor:
    """[M!, M] every order of M models."""
    return torch.tensor(list(itertools.permutations(range(models))), dtype=torch.int64, device=device)


#: P(Poisson(1) <= k) for k = 0..19; the 20th count has probability below 2^-64
_POISSON_CDF = [math.exp(-1) * sum(1 / math.factorial(j) for j in range(k + 1)) for k in range(20)]


def poisson_weights(query_ids: Tensor, replicates: int, seed: int) -> Tensor:
    """[B, R] float64 Poisson(1) counts: how many times each query is drawn in each bootstrap replicate."""
    u = hashed_uniforms(query_ids, replicates, 3, seed)
    table = torch.tensor(_POISSON_CDF, dtype=torch.float64, device=u.device)
    return torch.searchsorted(table, u.contiguous(), right=True).to(torch.float64)


def enumerated_signs(query_ids: Tensor, replicates: int) -> Tensor:
    """[B, R] float64 ±1: replicate b flips query q (an id in 0..n-1) where bit q of b is set, so that
    R = 2^n replicates enumerate every sign pattern once (replicate 0: no flip, the observed statistic)."""
    b = torch.arange(replicates, device=query_ids.device, dtype=torch.int64)
    bits = (b.unsqueeze(0) >> query_ids.to(torch.int64).unsqueeze(1)) & 1
    return 1.0 - 2.0 * bits.to(torch.float64)
