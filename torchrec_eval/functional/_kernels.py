"""Per-query top-k metric values from a :class:`~torchrec_eval.inputs.RankedTargets`.

Every kernel maps the ranked representation and a list of cut-offs to a [B, len(ks)] float64
tensor, from cumulative sums along the rank axis, so all cut-offs of a metric cost one pass and all
metrics of a suite share the same top-k. Definitions follow design section 4.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from torchrec_eval.constants import constant, filled, ranks, row
from torchrec_eval.inputs import RankedTargets
from torchrec_eval.validation import check_int, check_optional_int

EMPTY_TARGET_ACTIONS = ("skip", "neg", "pos", "error")


def _at(cumulative: Tensor, ks: Sequence[int]) -> Tensor:
    """Columns of a [B, K] cumulative tensor at cut-offs ``ks`` (a cut-off past K reads column K)."""
    depth = cumulative.shape[1]
    if len(ks) == 1:  # a view: no index tensor to build (most metrics have one cut-off)
        column = min(ks[0], depth) - 1
        return cumulative[:, column : column + 1]
    columns = tuple(min(k, depth) - 1 for k in ks)
    index = constant(("columns", columns, cumulative.device), lambda: torch.tensor(columns, device=cumulative.device))
    return cumulative.index_select(1, index)


def _summed(
    per_rank: Tensor, ks: Sequence[int], weight: str = "one", log_base: float = 2.0, finite: bool = True
) -> Tensor:
    """[B, len(ks)]: for each cut-off k, the sum over ranks i <= k of ``per_rank`` [B, K] times the rank
    weight (``"one"``, ``"reciprocal"`` 1 / i, ``"discount"`` 1 / log_b(i + 1)).

    One matrix product with a cached [K, len(ks)] table of the weights within each cut-off, for every
    cut-off at once: few dispatches, which dominate small batches. Values that may be infinite
    (``finite=False``: exponential gains overflow past 1023) take a running sum instead, where an
    infinite gain past a cut-off cannot reach it (inf x 0 would be NaN).
    """
    depth, device = per_rank.shape[1], per_rank.device
    if not finite and len(ks) > 1:
        return _at((per_rank * _rank_weights(depth, weight, log_base, device)).cumsum(1), ks)
    if len(ks) == 1 and ks[0] < depth:
        per_rank, depth = per_rank[:, : ks[0]], ks[0]

    def build() -> Tensor:
        within = ranks(depth, device).unsqueeze(1) <= row(tuple(float(k) for k in ks), device)
        return _rank_weights(depth, weight, log_base, device).unsqueeze(1) * within

    return per_rank @ constant(("summed", depth, tuple(ks), weight, log_base, device), build)


def _rank_weights(depth: int, weight: str, log_base: float, device: torch.device) -> Tensor:
    """[depth] weights of ranks 1..depth (built once per device)."""

    def build() -> Tensor:
        if weight == "discount":
            return _discounts(depth, log_base, device)
        return ranks(depth, device).reciprocal() if weight == "reciprocal" else torch.ones_like(ranks(depth, device))

    return constant(("weights", depth, weight, log_base, device), build)


def _per_capped_count(numerator: Tensor, relevant: Tensor, ks: Sequence[int]) -> Tensor:
    """numerator / min(R, k) for each cut-off (R as a column [B, 1]); 0 where R = 0, as ``_per_count``."""
    if len(ks) == 1:
        return numerator / relevant.clamp(1, ks[0])
    return _per_count(numerator, torch.minimum(_as_row(ks, relevant), relevant))


def _as_row(values: Sequence[float], like: Tensor) -> Tensor:
    return row(tuple(float(v) for v in values), like.device)


def _divide(numerator: Tensor, denominator: Tensor) -> Tensor:
    """numerator / denominator, with 0 where the denominator is 0: every numerator here is 0 there
    (no gain in the list without an ideal gain, no precision without hits), or its query has R = 0
    and ``empty_target_action`` replaces its value."""
    return numerator / denominator.clamp(min=1e-300)


def _per_count(numerator: Tensor, count: Tensor) -> Tensor:
    """numerator / count for a count of relevant items (0, 1, 2, ...) that is 0 only where the
    numerator is 0 too (hits and precision sums need a relevant item): 0 there, as ``_divide``."""
    return numerator / count.clamp(min=1)


def _hits(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    """[B, len(ks)] relevant items within each cut-off (read once per batch: several families use it)."""
    read = rt.__dict__.setdefault("_hits_within", {})
    key = tuple(ks)
    if key not in read:
        read[key] = _at(rt.cum_hits, ks)
    return read[key]


def precision(rt: RankedTargets, ks: Sequence[int], denominator: str = "k") -> Tensor:
    hits, cutoffs = _hits(rt, ks), _as_row(ks, rt.gains)
    if denominator == "k":
        return hits / cutoffs
    if denominator == "retrieved":
        return _divide(hits, torch.minimum(cutoffs, rt.num_candidates.unsqueeze(1)))
    return _per_capped_count(hits, rt.relevant_column, ks)  # "min_k_r"


def recall(rt: RankedTargets, ks: Sequence[int], denominator: str = "r") -> Tensor:
    if denominator == "min_k_r":
        return _per_capped_count(_hits(rt, ks), rt.relevant_column, ks)
    return _per_count(_hits(rt, ks), rt.relevant_column)


def f1(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    p, r = precision(rt, ks), recall(rt, ks)
    return _divide(2 * p * r, p + r)


def hitrate(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return _summed(rt.first_hit, ks)


def mrr(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return _summed(rt.first_hit, ks, "reciprocal")


def arhr(rt: RankedTargets, ks: Sequence[int]) -> Tensor:
    return _summed(rt.hits, ks, "reciprocal")


def _average(rt: RankedTargets, ks: Sequence[int], per_rank: Tensor, normalizer: str, weight: str = "one") -> Tensor:
    """sum_{i<=k} per_rank_i w_i / D, where per_rank already carries the relevance of rank i."""
    total = _summed(per_rank, ks, weight)
    if normalizer == "min_k_r":
        return _per_capped_count(total, rt.relevant_column, ks)
    if normalizer == "r":
        return _per_count(total, rt.relevant_column)
    if normalizer == "hits":  # an expected number of hits under averaged ties may lie in (0, 1)
        return _divide(total, _hits(rt, ks))
    return total / _as_row(ks, rt.gains)  # "k"


def average_precision(rt: RankedTargets, ks: Sequence[int], normalizer: str = "min_k_r") -> Tensor:
    return _average(rt, ks, rt.hits_before_and_at, normalizer, "reciprocal")


def average_recall(rt: RankedTargets, ks: Sequence[int], normalizer: str = "min_k_r") -> Tensor:
    return _average(rt, ks, _per_count(rt.hits_before_and_at, rt.relevant_column), normalizer)


def _discounts(length: int, log_base: float, device: torch.device) -> Tensor:
    """[length] discounts 1 / log_b(i + 1) for ranks i = 1..length (built once per device)."""
    return constant(
        ("discounts", length, log_base, device), lambda: math.log(log_base) / torch.log1p(ranks(length, device))
    )


def _ideal_table(bound: int, log_base: float, device: torch.device) -> Tensor:
    """[bound + 1] DCG of an ideal binary list by its length 0..bound (built once per device)."""

    def build() -> Tensor:
        zero = torch.zeros(1, dtype=torch.float64, device=device)
        return torch.cat([zero, _discounts(bound, log_base, device).cumsum(0)])

    return constant(("ideal", bound, log_base, device), build)


def _gains(rt: RankedTargets, gain: str) -> Tensor:
    if gain == "binary":
        return rt.hits
    return torch.exp2(rt.gains) - 1 if gain == "exp" else rt.gains


def dcg(rt: RankedTargets, ks: Sequence[int], gain: str = "linear", log_base: float = 2.0) -> Tensor:
    return _summed(_gains(rt, gain), ks, "discount", log_base, finite=gain != "exp")


def _ideal_dcg(rt: RankedTargets, ks: Sequence[int], gain: str, log_base: float, ideal: str) -> Tensor:
    if gain != "binary" and rt.ideal_gains is not None:  # graded: the query's own gains, sorted ("cut" only)
        ideal_gains = torch.exp2(rt.ideal_gains) - 1 if gain == "exp" else rt.ideal_gains
        # the ideal list has its own length (min(k, number of targets)): a ranked list shorter than k
        # must not cut the ideal at its own length
        return _summed(ideal_gains, ks, "discount", log_base, finite=gain != "exp")
    # binary gains (or a binary target, whose every gain is 0 or 1): the ideal list holds min(R, k)
    # relevant items (R <= max_relevant): tabulate its DCG by length, never longer than the batch can
    # fill, whatever k is
    bound = max(rt.max_relevant, 1) if ideal == "full" else min(max(rt.max_relevant, 1), max(ks))
    table = _ideal_table(bound, log_base, rt.gains.device)
    if ideal == "k":  # RecTools: k relevant slots, whatever R is
        return _as_row([_discount_sum(k, log_base) for k in ks], rt.gains).expand(rt.gains.shape[0], -1)
    if ideal == "full":  # Jurity: every relevant item, not cut at k
        return table[rt.num_relevant.long().clamp(max=bound)].unsqueeze(1).expand(-1, len(ks))
    if len(ks) == 1:
        return table[rt.relevant_column.long().clamp(max=min(ks[0], bound))]
    relevant = rt.num_relevant.long().clamp(max=bound).unsqueeze(1)
    cutoffs = constant(("cutoffs", tuple(min(k, bound) for k in ks), relevant.device),
                       lambda: torch.tensor([min(k, bound) for k in ks], device=relevant.device))
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
    total = float((math.log(log_base) / torch.log1p(torch.arange(1, terms + 1, dtype=torch.float64))).sum())
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
    return _summed(rt.gains, ks)


def rprecision(rt: RankedTargets, ks: Sequence[int | None], denominator: str = "min_k_r") -> Tensor:
    """hits in the top min(k, R) over min(k, R) (``"min_k_r"``), or over R (``"r"``: MS Recommenders)."""
    columns = []
    for cap in ks:
        depth = rt.num_relevant if cap is None else rt.num_relevant.clamp(max=cap)
        position = (depth.long() - 1).clamp(0, rt.depth - 1).unsqueeze(1)
        hits = rt.cum_hits.gather(1, position).squeeze(1)
        columns.append(_divide(hits, rt.num_relevant if denominator == "r" else depth))
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
# Options of which queries a value counts, read by the plan (not by the kernel): every family takes
# ``empty_list_action`` -- "neg" (default): a query whose list is empty (no candidate: a ``ranked_ids``
# row of padding only) scores the family's value for it, 0, and counts; "skip": it is left out of the
# mean (Jurity's precision and MAP, MS Recommenders' precision, recall and MAP).
EMPTY_LIST_ACTIONS = ("neg", "skip")
NO_HIT_ACTIONS = ("neg", "skip")
# ``empty_mean``: the value of a mean over no query: "nan" (default) or "zero" where no query kept has a
# relevant item in its top k (MS Recommenders' 0.0 when its table of hits is empty)
EMPTY_MEANS = ("nan", "zero")
PLAN_OPTIONS = ("empty_list_action", "no_hit_action", "empty_mean")
_LIST = {"empty_list_action": EMPTY_LIST_ACTIONS, "empty_mean": EMPTY_MEANS}
# average_ties=True: this family's value is the expectation over all orders of tied scores (as
# torchmetrics' and scikit-learn's NDCG), whatever order the other metrics of the suite use
_AVERAGE = {"average_ties": (True, False)}

KERNELS: dict[str, Kernel] = {
    "precision": Kernel(precision, {"denominator": ("k", "retrieved", "min_k_r"), **_LIST}),
    "recall": Kernel(recall, {"denominator": ("r", "min_k_r"), **_LIST}),
    "f1": Kernel(f1, {**_LIST}),
    "hitrate": Kernel(hitrate, {**_LIST}),
    "mrr": Kernel(mrr, {**_LIST}),
    "arhr": Kernel(arhr, {**_LIST}),
    "map": Kernel(average_precision, {"normalizer": ("min_k_r", "r", "hits", "k"), **_LIST}),
    "mar": Kernel(average_recall, {"normalizer": ("min_k_r", "r", "hits", "k"), **_LIST}),
    "ndcg": Kernel(ndcg, {**_GAIN_OPTIONS, "ideal": ("cut", "full", "k"), **_AVERAGE, **_LIST}, needs_ideal=True),
    "dcg": Kernel(dcg, {**_GAIN_OPTIONS, **_AVERAGE, **_LIST}),
    "cg": Kernel(cg, {**_LIST}),
    # no_hit_action="skip": a query without a relevant item in its top min(k, R) is left out (MS
    # Recommenders' r_precision_at_k averages over the users with such a hit)
    "rprecision": Kernel(
        rprecision,
        {"denominator": ("min_k_r", "r"), "no_hit_action": NO_HIT_ACTIONS, **_LIST},
        to_num_relevant=True,
        optional_k=True,
    ),
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
    return check_optional_int("k", k, 1) if optional else check_int("k", k, 1)


def apply_empty_target_action(values: Tensor, num_relevant: Tensor, action: str) -> tuple[Tensor, Tensor]:
    """Resolve queries with no relevant item. Returns (values [B, P], counted [B] bool)."""
    values, counted = counted_values(values, num_relevant, action)
    return values, counted > 0


def counted_values(values: Tensor, num_relevant: Tensor, action: str) -> tuple[Tensor, Tensor]:
    """Resolve queries with no relevant item, given R as [B] or as a column [B, 1]. Returns (values
    [B, P], counted: float64 1 or 0 per query, of R's shape)."""
    if action == "skip":  # R is a count: min(R, 1) is 1 where the query counts, 0 where it has no relevant item
        counted = num_relevant.clamp(max=1)
        return values * (counted if counted.ndim == 2 else counted.unsqueeze(1)), counted
    ones = filled(tuple(num_relevant.shape), 1.0, num_relevant.device)
    empty = num_relevant == 0
    empty = empty if empty.ndim == 2 else empty.unsqueeze(1)
    if action == "error":
        if bool(empty.any()):
            row = int(empty.squeeze(1).nonzero()[0])
            raise ValueError(
                f"Query {row} of the batch has no relevant item and `empty_target_action` is 'error'"
            )
        return values, ones
    return values.masked_fill(empty, 1.0 if action == "pos" else 0.0), ones
