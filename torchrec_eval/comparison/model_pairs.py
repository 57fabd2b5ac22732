"""The functional core of :class:`~torchrec_eval.comparison.models.ModelComparison`: its settings, checked once;
each batch's increments of the replicate sums, drawn from the query ids; and every pair's statistics, read from
the sums (means, paired differences, effect sizes, p-values and the bootstrap's interval).

The class holds the sums as states and calls these functions, which keep nothing: the same sums give the same
results wherever they were summed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from torchrec_eval.comparison.statistics import adjusted_p_values
from torchrec_eval.comparison.statistics.multiple_testing import ADJUSTMENTS
from torchrec_eval.comparison.statistics.replicate_sums import bootstrap_sums, fisher_sums, tukey_sums
from torchrec_eval.comparison.statistics.significance import (
    TESTS,
    bootstrap_interval,
    effect_size,
    exceedance,
    student_p_value,
    tukey_p_values,
)
from torchrec_eval.pipeline.arguments import check_int, check_probability
from torchrec_eval.pipeline.validation import describe_any


@dataclass(frozen=True)
class TestSettings:
    """How M models are compared.

    Attributes:
        models: the M model names, in the order of ``update``'s ``preds``.
        test: ``"student"``, ``"fisher"``, ``"bootstrap"`` or ``"tukey"``.
        replicates: R, the random replicates of the randomization and bootstrap tests.
        seed: the seed of the replicates' hash.
        correction: None, or the adjustment of each metric's pairs' p-values.
        level: the bootstrap interval's confidence level.
        exact: Fisher's test over every sign pattern of queries 0..n-1 (R = 2^n).
        pairs: every pair (i, j) of models, i < j.
    """

    models: list[str]
    test: str
    replicates: int
    seed: int
    correction: str | None
    level: float
    exact: bool
    pairs: list[tuple[int, int]] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pairs", list(itertools.combinations(range(len(self.models)), 2)))


def check_settings(models: Sequence[str], test: str, replicates: int, seed: int, correction: str | None,
                   level: float, exact: bool) -> TestSettings:
    """The checked settings of a comparison (see :class:`~torchrec_eval.comparison.models.ModelComparison`).

    Raises:
        ValueError: on fewer than 2 models (or a repeated or empty name), an unknown ``test`` or ``correction``,
            a bad ``replicates``, ``seed`` or ``level``, ``exact`` without Fisher's test and 2^n replicates, and
            for the bootstrap too few replicates to put one in each tail of its interval.
    """
    if isinstance(models, str) or len(models) < 2 or len(set(models)) != len(models) \
            or not all(isinstance(name, str) and name for name in models):
        raise ValueError(f"`models` must name 2 or more models, each once, got {models!r}")
    if test not in TESTS:
        raise ValueError(f"`test` must be one of {TESTS}, got {test!r}")
    if correction is not None and correction not in ADJUSTMENTS:
        raise ValueError(f"`correction` must be None or one of {ADJUSTMENTS}, got {correction!r}")
    count = check_int("replicates", replicates, 1)
    seed, level = check_int("seed", seed, 0), check_probability("level", level)
    if exact and (test != "fisher" or count & (count - 1) or count < 2):
        raise ValueError(f"`exact` enumerates the 2^n sign patterns of Fisher's test: test='fisher' and "
                         f"`replicates` a power of 2 (2^n for queries 0..n-1), got test={test!r}, "
                         f"replicates={replicates!r}")
    if test == "bootstrap" and count * (1 - level) / 2 < 1:  # the bounds would be the extreme replicates
        raise ValueError(f"`replicates` must put at least one replicate in each tail of the bootstrap's "
                         f"{level} interval, that is >= {math.ceil(2 / (1 - level))} at level={level}; "
                         f"got replicates={replicates!r}")
    return TestSettings(list(models), test, count, seed, correction, level, exact)


def replicate_increments(settings: TestSettings, values: Tensor, counted: Tensor, query_ids: object,
                         validate: bool) -> dict[str, Tensor]:
    """One batch's increments of the replicate states: each replicate's sums [R, K, M] (and the bootstrap's
    weights [R, K] and products [R, K, M, M]), drawn from ``query_ids`` in blocks of bounded memory
    (:mod:`~torchrec_eval.comparison.statistics.replicate_sums`).

    Args:
        settings: the comparison's.
        values: [B, K, M] float64 per-query values, 0 where a model does not count the query.
        counted: [B, K] float64, 1 where every model counts the query.
        query_ids: [B] int, each query's id, unique over the whole evaluation.
        validate: read the ids on the host: a repeat within the batch, an id beyond what ``exact`` enumerates.

    Raises:
        ValueError: on ``query_ids`` that are not an integer tensor [B]; with ``validate``, on a repeated id or
            one outside 0..n-1 for the exact test.
    """
    rows = values.shape[0]
    if not isinstance(query_ids, Tensor) or query_ids.shape != (rows,) or query_ids.is_floating_point() \
            or query_ids.dtype == torch.bool:
        raise ValueError(f"`query_ids` must be an integer tensor [B] ({rows},), one id per query, unique over "
                         f"the evaluation: the {settings.test} test draws each query's replicates from it; got "
                         f"{describe_any(query_ids)}")
    ids = query_ids.to(values.device)
    if validate:
        _check_distinct(ids)
        if settings.exact:
            _check_enumerable(ids, settings.replicates)
    if settings.test == "fisher":
        return {"replicate_sums": fisher_sums(values, ids, settings.replicates, settings.seed, settings.exact)}
    if settings.test == "bootstrap":
        return bootstrap_sums(values, counted, ids, settings.replicates, settings.seed)
    return {"replicate_sums": tukey_sums(values, ids, settings.replicates, settings.seed)}


def pair_results(settings: TestSettings, keys: Sequence[str], states: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Every result of a comparison from its sums, as a flat dict: ``"<key>/<model>"`` each model's mean, and per
    pair ``"<key>/<a>_vs_<b>/diff"``, ``.../effect_size``, ``.../p_value``, with a correction ``.../p_adjusted``,
    with the bootstrap ``.../low`` and ``.../high``.

    Args:
        settings: the comparison's.
        keys: the K compared values' names.
        states: ``sums`` [K, M], ``products`` [K, M, M], ``counts`` [K] and the test's replicate states
            (``replicate_sums`` [R, K, M]; the bootstrap's ``replicate_counts`` [R, K] and ``replicate_products``).
    """
    out: dict[str, Tensor] = {}
    means = states["sums"] / states["counts"].unsqueeze(1)  # [K, M]
    differences, deviations = _differences(settings.pairs, states)  # [K, P] each
    # the bootstrap's (low, high, p) of each key and pair, read once: its p-values and its intervals
    intervals = {(k, p): _bootstrap(settings, states, k, i, j, deviations[k, p]) for k in range(len(keys))
                 for p, (i, j) in enumerate(settings.pairs)} if settings.test == "bootstrap" else {}
    p_values = _p_values(settings, means, differences, deviations, intervals, states)  # [K, P]
    models = settings.models
    for k, key in enumerate(keys):
        for m, model in enumerate(models):
            out[f"{key}/{model}"] = means[k, m]
        adjusted = adjusted_p_values(p_values[k], settings.correction) if settings.correction else None
        for p, (i, j) in enumerate(settings.pairs):
            name = f"{key}/{models[i]}_vs_{models[j]}"
            out[f"{name}/diff"] = differences[k, p]
            out[f"{name}/effect_size"] = effect_size(differences[k, p], deviations[k, p])
            out[f"{name}/p_value"] = p_values[k, p]
            if adjusted is not None:
                out[f"{name}/p_adjusted"] = adjusted[p]
            if intervals:
                out[f"{name}/low"], out[f"{name}/high"] = intervals[k, p][:2]
    return out


def _differences(pairs: list[tuple[int, int]], states: Mapping[str, Tensor]) -> tuple[Tensor, Tensor]:
    """[K, P] the mean and the standard deviation of each pair's per-query differences, from the sums."""
    sums, products = states["sums"], states["products"]
    first = torch.tensor([i for i, _ in pairs], device=sums.device)
    second = torch.tensor([j for _, j in pairs], device=sums.device)
    total = sums[:, first] - sums[:, second]
    squares = products[:, first, first] + products[:, second, second] - 2 * products[:, first, second]
    count = states["counts"].unsqueeze(1)
    return total / count, ((squares - total * total / count) / (count - 1)).clamp(min=0).sqrt()


def _p_values(settings: TestSettings, means: Tensor, differences: Tensor, deviations: Tensor,
              intervals: Mapping[tuple[int, int], tuple[Tensor, Tensor, Tensor]], states: Mapping[str, Tensor]) -> Tensor:
    """[K, P] each pair's p-value of the test (NaN below 2 queries); ``intervals``: the bootstrap's (low, high, p)
    of each (key, pair)."""
    counts = states["counts"]
    count = counts.unsqueeze(1)
    if settings.test == "student":
        p = student_p_value(differences, deviations, count)
    elif settings.test == "tukey":
        p = tukey_p_values(means, states["replicate_sums"] / count, settings.pairs)
    elif settings.test == "fisher":
        replicated = states["replicate_sums"]
        p = torch.stack([exceedance(differences[:, p] * counts, replicated[:, :, i] - replicated[:, :, j])
                         for p, (i, j) in enumerate(settings.pairs)], dim=1)
    else:  # bootstrap
        p = torch.stack([torch.stack([intervals[k, p][2] for k in range(means.shape[0])])
                         for p in range(len(settings.pairs))], dim=1)
    return torch.where(count < 2, torch.nan, p)


def _bootstrap(settings: TestSettings, states: Mapping[str, Tensor], k: int, i: int, j: int,
               deviation: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(low, high, p) of models i and j on key k: the percentile interval of the replicates' mean differences,
    and the studentized bootstrap's p (each replicate's t of its difference from the observed one against the
    observed t; ``deviation``: the observed differences' standard deviation)."""
    sums, replicated, products = states["sums"], states["replicate_sums"], states["replicate_products"]
    counts, count = states["replicate_counts"][:, k], states["counts"][k]
    totals = replicated[:, k, i] - replicated[:, k, j]
    squares = products[:, k, i, i] + products[:, k, j, j] - 2 * products[:, k, i, j]
    observed = (sums[k, i] - sums[k, j]) / count
    return bootstrap_interval(totals / counts, observed, settings.level, squares, counts, deviation / count.sqrt())


def _check_enumerable(ids: Tensor, replicates: int) -> None:
    """The exact test's query ids lie in 0..n-1 for its 2^n replicates (replicate b flips query q where bit q of
    b is set)."""
    bits = int(math.log2(replicates))
    if bool(((ids < 0) | (ids >= bits)).any()):
        raise ValueError(f"`query_ids` must lie in [0, {bits}) for the exact test of replicates = 2^{bits} "
                         f"(2^n for queries 0..n-1), got {ids.tolist()}")


def _check_distinct(ids: Tensor) -> None:
    """Raise a ``ValueError`` on an id that repeats within the batch: each id is one query, drawn once per
    replicate; a repeat would add one query's draws twice, as if two queries agreed perfectly."""
    ordered = ids.sort().values
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if bool(repeated.numel()):
        shown = torch.unique(repeated)
        raise ValueError(f"`query_ids` must not repeat an id within a batch (one id per query: a repeated id "
                         f"would count its query's random draws twice); got {describe_any(ids)} repeating "
                         f"{shown[:10].tolist()}{' ...' if shown.numel() > 10 else ''}")
