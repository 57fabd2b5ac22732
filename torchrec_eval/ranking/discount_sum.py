"""The sum of the rank discounts 1 / log_b(i + 1) over ranks 1..k, for any k (RecTools' ideal DCG)."""

from __future__ import annotations

import math

import torch

# Below this many ranks the discounts are summed term by term; above, an Euler-Maclaurin tail.
_EXACT_TERMS = 1 << 20
_SUMS: dict[tuple[int, float], float] = {}


def _cached_discount_sum(k: int, log_base: float) -> float:
    r"""sum_{i=1..k} 1 / log_b(i + 1) in float64, in O(min(k, 2^20)) time and memory for any k (once per
    (k, log_base)).

    Past 2^20 terms, f(x) = 1 / ln x on [m, k + 1] is summed as
    \int f + (f(k+1) + f(m)) / 2 - f(m) + (f'(k+1) - f'(m)) / 12, with \int_a^b dx / ln x = li(b) - li(a);
    the next term is below 1e-20 there.
    """
    key = (k, log_base)
    if key not in _SUMS:
        _SUMS[key] = _discount_sum(k, log_base)
    return _SUMS[key]


# A compiled update takes the number as a constant, computed in eager torch: traced, its float64 sum could be
# reduced in another order (inductor's), some ulps away from the eager update's. The cache is a plain dict,
# not functools.lru_cache, whose wrapper dynamo would trace past. The mark is the attribute that
# `torch.compiler.assume_constant_result` sets: calling it imports torch._dynamo, a second of every user's import
# (tests/ranking/test_discount_sum.py checks that the public decorator still sets exactly this mark).
CONSTANT_MARK = "_dynamo_marked_constant"
setattr(_cached_discount_sum, CONSTANT_MARK, True)
discount_sum = _cached_discount_sum


def _discount_sum(k: int, log_base: float) -> float:
    terms = min(k, _EXACT_TERMS)
    total = float((math.log(log_base) / torch.log1p(torch.arange(1, terms + 1, dtype=torch.float64))).sum())
    if k == terms:
        return total
    a, b = terms + 1.0, k + 1.0  # f summed over the integers a + 1 .. b
    def f(x: float) -> float:
        return 1.0 / math.log(x)

    def df(x: float) -> float:
        return -1.0 / (x * math.log(x) ** 2)

    tail = _li(b) - _li(a) + (f(b) - f(a)) / 2 + (df(b) - df(a)) / 12
    return total + math.log(log_base) * tail


def _li(x: float) -> float:
    """The logarithmic integral li(x) for x > 1 (Ramanujan's series, converges fast for any x)."""
    ln = math.log(x)
    total, term, inner = 0.0, 1.0, 0.0
    for n in range(1, 200):
        term *= ln / n  # ln^n / n!
        if n % 2:
            inner += 1.0 / n  # sum of 1 / (2j + 1) for j <= (n - 1) / 2
        sign = -1.0 if n % 2 == 0 else 1.0
        step = sign * term / 2 ** (n - 1) * inner
        total += step
        if abs(step) < 1e-17 * abs(total):
            break
    return 0.5772156649015329 + math.log(ln) + math.sqrt(x) * total
