"""Per-query top-k metric values from a :class:`~torchrec_eval.inputs.RankedTargets`.

Every kernel maps the ranked representation and a list of cut-offs to a [B, len(ks)] float64
tensor, from cumulative sums along the rank axis, so all cut-offs of a metric cost one pass and all
metrics of a suite share the same top-k. Definitions follow design section 4.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from torchrec_eval.inputs import RankedTargets

EMPTY_TARGET_ACTIONS = ("skip", "neg", "pos", "error")


def _at(cumulative: Tensor, ks: Sequence[int]) -> Tensor:
    """Columns of a [B, K] cumulative tensor at cut-offs ``ks`` (a cut-off past K reads column K)."""
    depth = cumulative.shape[1]
    if len(ks) == 1:  # a view: no index tensor to build (most metrics have one cut-off)
        column = min(ks[0], depth) - 1
        return cumulative[:, column : column + 1]
    return cumulative[:, [min(k, depth) - 1 for k in ks]]


def _as_row(values: Sequence[float], like: Tensor) -> Tensor:
    return torch.tensor(values, dtype=torch.float64, device=like.device)


def _divide(numerator: Tensor, denominator: Tensor) -> Tensor:
    """numerator / denominator, with 0 where the denominator is 0."""
    return torch.where(
        denominator > 0, numerator / denominator.clamp(min=1e-300), torch.zeros_like(numerator)
    )


def _hits(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return _at(rt.cum_hits, ks)


def precision(rt: RankedTargets, ks: Sequence[int], denominator: str = "k") -> Tensor:
    hits, cutoffs = _hits(rt, ks), _as_row(ks, rt.gains)
    if denominator == "k":
        return hits / cutoffs
    if denominator == "retrieved":
        return _divide(hits, torch.minimum(cutoffs, rt.num_candidates.unsqueeze(1)))
    return _divide(hits, torch.minimum(cutoffs, rt.num_relevant.unsqueeze(1)))  # "min_k_r"


def recall(rt: RankedTargets, ks: Sequence[int], denominator: str = "r") -> Tensor:
    relevant = rt.num_relevant.unsqueeze(1)
    if denominator == "min_k_r":
        relevant = torch.minimum(_as_row(ks, rt.gains), relevant)
    return _divide(_hits(rt, ks), relevant)


def f1(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    p, r = precision(rt, ks), recall(rt, ks)
    return _divide(2 * p * r, p + r)


def hitrate(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return _at(rt.first_hit.cumsum(1), ks)


def mrr(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return _at((rt.first_hit / rt.ranks).cumsum(1), ks)


def arhr(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return _at((rt.hits / rt.ranks).cumsum(1), ks)


def _average(rt: RankedTargets, ks: Sequence[int], per_rank: Tensor, normalizer: str) -> Tensor:
    """sum_{i<=k} per_rank_i / D, where per_rank already carries the relevance of rank i."""
    total = _at(per_rank.cumsum(1), ks)
    cutoffs, relevant = _as_row(ks, rt.gains), rt.num_relevant.unsqueeze(1)
    if normalizer == "min_k_r":
        return _divide(total, torch.minimum(cutoffs, relevant))
    if normalizer == "r":
        return _divide(total, relevant.expand_as(total))
    if normalizer == "hits":
        return _divide(total, _hits(rt, ks))
    return total / cutoffs  # "k"


def average_precision(rt: RankedTargets, ks: Sequence[int], normalizer: str = "min_k_r") -> Tensor:
    return _average(rt, ks, rt.hits_before_and_at / rt.ranks, normalizer)


def average_recall(rt: RankedTargets, ks: Sequence[int], normalizer: str = "min_k_r") -> Tensor:
    relevant = rt.num_relevant.unsqueeze(1).expand_as(rt.cum_hits)
    return _average(rt, ks, _divide(rt.hits_before_and_at, relevant), normalizer)


def _discounts(length: int, log_base: float, device: torch.device) -> Tensor:
    """[length] discounts 1 / log_b(i + 1) for ranks i = 1..length."""
    ranks = torch.arange(1, length + 1, dtype=torch.float64, device=device)
    return math.log(log_base) / torch.log1p(ranks)


def _gains(rt: RankedTargets, gain: str) -> Tensor:
    if gain == "binary":
        return rt.hits
    return torch.exp2(rt.gains) - 1 if gain == "exp" else rt.gains


def dcg(rt: RankedTargets, ks: Sequence[int], gain: str = "linear", log_base: float = 2.0) -> Tensor:
    return _at((_gains(rt, gain) * _discounts(rt.depth, log_base, rt.gains.device)).cumsum(1), ks)


def _ideal_dcg(rt: RankedTargets, ks: Sequence[int], gain: str, log_base: float, ideal: str) -> Tensor:
    if gain != "binary":  # graded: the query's own gains, sorted ("cut" is the only ideal allowed)
        ideal_gains = torch.exp2(rt.ideal_gains) - 1 if gain == "exp" else rt.ideal_gains
        # the ideal list has its own length (min(k, number of targets)): a ranked list shorter than k
        # must not cut the ideal at its own length
        discounts = _discounts(ideal_gains.shape[1], log_base, rt.gains.device)
        return _at((ideal_gains * discounts).cumsum(1), ks)
    # binary gains: the ideal list holds min(R, k) relevant items (R <= max_relevant): tabulate its DCG
    # by length, never longer than the batch can fill, whatever k is
    bound = max(rt.max_relevant, 1)
    table = torch.cat(
        [
            torch.zeros(1, dtype=torch.float64, device=rt.gains.device),
            _discounts(bound, log_base, rt.gains.device).cumsum(0),
        ]
    )
    if ideal == "k":  # RecTools: k relevant slots, whatever R is
        return _as_row([_discount_sum(k, log_base) for k in ks], rt.gains).expand(rt.gains.shape[0], -1)
    relevant = rt.num_relevant.long().clamp(max=bound).unsqueeze(1)
    if ideal == "full":  # Jurity: every relevant item, not cut at k
        return table[relevant].expand(-1, len(ks))
    cutoffs = torch.tensor([min(k, bound) for k in ks], device=relevant.device)
    return table[torch.minimum(relevant, cutoffs)]


# Below this many ranks the discounts are summed term by term; above, an Euler-Maclaurin tail.
_EXACT_TERMS = 1 << 20


@functools.lru_cache(maxsize=256)
def _discount_sum(k: int, log_base: float) -> float:
    r"""sum_{i=1..k} 1 / log_b(i + 1) in float64, in O(min(k, 2^20)) time and memory for any k.

    Past 2^20 terms, f(x) = 1 / ln x on [m, k + 1] is summed as
    \int f + (f(k+1) + f(m)) / 2 - f(m) + (f'(k+1) - f'(m)) / 12, with \int_a^b dx / ln x = li(b) - li(a);
    the next term is below 1e-20 there.
    """
    terms = min(k, _EXACT_TERMS)
    total = float(_discounts(terms, log_base, torch.device("cpu")).sum())
    if k == terms:
        return total
    a, b = terms + 1.0, k + 1.0  # f summed over the integers a + 1 .. b
    f = lambda x: 1.0 / math.log(x)  # noqa: E731
    df = lambda x: -1.0 / (x * math.log(x) ** 2)  # noqa: E731
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


def ndcg(
    rt: RankedTargets, ks: Sequence[int], gain: str = "linear", log_base: float = 2.0, ideal: str = "cut"
) -> Tensor:
    return _divide(dcg(rt, ks, gain, log_base), _ideal_dcg(rt, ks, gain, log_base, ideal))


def cg(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return _at(rt.gains.cumsum(1), ks)


def rprecision(rt: RankedTargets, ks: Sequence[int | None]) -> Tensor:
    columns = []
    for cap in ks:
        depth = rt.num_relevant if cap is None else rt.num_relevant.clamp(max=cap)
        position = (depth.long() - 1).clamp(0, rt.depth - 1).unsqueeze(1)
        columns.append(_divide(rt.cum_hits.gather(1, position).squeeze(1), depth))
    return torch.stack(columns, dim=1)


@dataclass(frozen=True)
class Kernel:
    """A metric family: its per-query function and the options it accepts (name -> allowed values)."""

    fn: Callable[..., Tensor]
    options: dict[str, tuple] = field(default_factory=dict)
    needs_ideal: bool = False
    to_num_relevant: bool = False  # rank down to R (R-Precision)
    optional_k: bool = False


_GAIN_OPTIONS = {"gain": ("linear", "exp", "binary"), "log_base": (float,)}
# average_ties=True: this family's value is the expectation over all orders of tied scores (as
# torchmetrics' and scikit-learn's NDCG), whatever order the other metrics of the suite use
_AVERAGE = {"average_ties": (True, False)}

KERNELS: dict[str, Kernel] = {
    "precision": Kernel(precision, {"denominator": ("k", "retrieved", "min_k_r")}),
    "recall": Kernel(recall, {"denominator": ("r", "min_k_r")}),
    "f1": Kernel(f1),
    "hitrate": Kernel(hitrate),
    "mrr": Kernel(mrr),
    "arhr": Kernel(arhr),
    "map": Kernel(average_precision, {"normalizer": ("min_k_r", "r", "hits", "k")}),
    "mar": Kernel(average_recall, {"normalizer": ("min_k_r", "r", "hits", "k")}),
    "ndcg": Kernel(ndcg, {**_GAIN_OPTIONS, "ideal": ("cut", "full", "k"), **_AVERAGE}, needs_ideal=True),
    "dcg": Kernel(dcg, {**_GAIN_OPTIONS, **_AVERAGE}),
    "cg": Kernel(cg),
    "rprecision": Kernel(rprecision, to_num_relevant=True, optional_k=True),
}


def check_option(metric: str, name: str, value: object) -> None:
    allowed = KERNELS[metric].options[name]
    if allowed == (float,):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 1:
            raise ValueError(f"`{name}` of {metric} must be a number > 1, got {value!r}")
    elif value not in allowed:
        raise ValueError(f"`{name}` of {metric} must be one of {allowed}, got {value!r}")


def check_k(k: object, optional: bool = False) -> int | None:
    """``k`` as a Python int >= 1 (any integer type: int, numpy integer, 0-d integer tensor)."""
    if k is None and optional:
        return None
    try:
        value = None if isinstance(k, bool) else operator.index(k)
    except TypeError:
        value = None
    if value is None or value < 1:
        raise ValueError(f"`k` must be an int >= 1{' or None' if optional else ''}, got {k!r}")
    return value


def apply_empty_target_action(values: Tensor, num_relevant: Tensor, action: str) -> tuple[Tensor, Tensor]:
    """Resolve queries with no relevant item. Returns (values [B, P], counted [B] bool)."""
    empty = (num_relevant == 0).unsqueeze(1)
    if action == "skip":
        return values.masked_fill(empty, 0.0), ~empty.squeeze(1)
    if action == "error":
        if bool(empty.any()):
            row = int(empty.squeeze(1).nonzero()[0])
            raise ValueError(
                f"Query {row} of the batch has no relevant item and `empty_target_action` is 'error'"
            )
        return values, torch.ones_like(num_relevant, dtype=torch.bool)
    return values.masked_fill(empty, 1.0 if action == "pos" else 0.0), torch.ones_like(
        num_relevant, dtype=torch.bool
    )
