r"""The sampled member: the histogram of sampled ranks per group, and every estimate from it.

Each query is a held-out (relevant) item scored against its m sampled negatives: a row of ``preds``
[B, m + 1] with exactly one relevant entry in ``target``. Its sampled rank is s = 1 + the negatives scored
above it (ties by the metric's ``ties``: ``"pessimistic"`` counts a tied negative above, ``"optimistic"``
below, ``"index"``/``"reverse_index"`` by column, ``"average"`` spreads the query over the ranks it could
take). A wider row holds R >= 1 held-out items and m negatives (``mask`` or ``-inf`` for unused slots): each
held-out item is an instance ranked against the m negatives alone (the other held-out items set aside, as
Krichene & Rendle's instances), weighing 1 / R so that every query counts once. The state is
``sampled_ranks`` [G, m + 1] float64, the (weighted) count of queries at each sampled rank: a sum, exact
across batches and processes. ``compute`` turns it into each requested metric with the chosen
estimator (:mod:`~torchrec_eval.sampled.estimators`): a linear one is ``histogram @ c / count``; ``"em"``
fits the distribution of true ranks to the histogram first.

Where one :math:`P(s \mid r)` does not hold for every query (a catalogue size per query, or negatives drawn
by popularity) each query takes its own value: the rank estimate (:mod:`~torchrec_eval.sampled.rank_estimates`),
or, for a size per query, K&R's correction of its size (:mod:`~torchrec_eval.sampled.size_corrections`);
the state ``sampled_estimates`` [G, 2K] keeps the sums of the values and of their squares.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.comparison.statistics.significance import percentile_interval
from torchrec_eval.members.interface import Member, Moments
from torchrec_eval.pipeline import Batch
from torchrec_eval.pipeline.validation import describe
from torchrec_eval.sampled import estimators, ranks
from torchrec_eval.sampled.audit import audit_keys
from torchrec_eval.sampled.bootstrap import resampled_histograms
from torchrec_eval.sampled.constrained import constrained_rows
from torchrec_eval.sampled.rank_estimates import popularity_values, uniform_values
from torchrec_eval.sampled.settings import checked_settings
from torchrec_eval.sampled.size_corrections import shared_corrections

__all__ = ["SampledMember"]


class SampledMember(Member):
    """Metrics of held-out items ranked against m sampled negatives per query, estimated for n items.

    Args:
        requests: (family, cut-off or None) pairs of :data:`~torchrec_eval.sampled.rank_metrics.FAMILIES`.
        num_items: n, the candidates of the full ranking (the relevant item included); None: one per query,
            given to each update (``num_items`` [B]).
        num_negatives: m, the sampled negatives of each query.
        estimator: one of :data:`~torchrec_eval.sampled.settings.ESTIMATORS`; ``gamma`` weighs the variance for
            ``"bias_variance"`` and ``"constrained"``.
        replacement: whether the negatives were drawn with replacement.
        sampling: ``"uniform"``, or ``"popularity"``: each update gives ``negative_probabilities`` [B, W],
            the probability with which each negative was drawn (with replacement).
        audit: keep the audit states (:mod:`~torchrec_eval.sampled.audit`) and report the audited queries'
            exact values, estimates and errors.
    """

    depth = 0
    needs_ideal = False
    to_num_relevant = False
    needs_candidates = True
    supports_weights = True
    paired = False

    def __init__(self, requests: Sequence[tuple[str, int | None]], num_items: int | None, num_negatives: int,
                 estimator: str = "bias_variance", gamma: float = 0.01, replacement: bool = True,
                 audit: bool = False, sampling: str = "uniform") -> None:
        settings = checked_settings(requests, num_items, num_negatives, estimator, gamma, replacement, audit, sampling)
        self.requests, self.metric_keys, self.cutoffs = settings.requests, settings.metric_keys, settings.cutoffs
        self.num_items, self.num_negatives, self.sampling = settings.num_items, settings.num_negatives, settings.sampling
        self.estimator, self.gamma = settings.estimator, settings.gamma
        self.replacement, self.audit = settings.replacement, settings.audit
        self.per_query_ranks = settings.per_query_ranks
        self.keys = self.metric_keys + (audit_keys(self.metric_keys) if audit else [])
        self.query_keys = [] if estimator == "em" else list(self.metric_keys)  # EM fits the whole histogram
        self.values = self._values()  # [P, m + 1]: each key's value at each sampled rank (linear estimators)
        self.size_corrections = None  # K&R's corrections of each query's own catalogue size
        if self.per_query_ranks and estimator in ("bias_variance", "constrained"):
            build = estimators.bias_variance_rows if estimator == "bias_variance" else constrained_rows
            rows_of = functools.partial(build, self.requests, num_negatives=self.num_negatives, gamma=gamma,
                                        replacement=replacement)
            smooth = estimators.checked_gamma(gamma) > 0  # K&R's least-bias rows (gamma = 0) are not smooth in n
            self.size_corrections = shared_corrections(rows_of, self.num_negatives, smooth)

    def _values(self) -> Tensor:
        n, m = self.num_items or self.num_negatives + 1, self.num_negatives
        if self.estimator == "bias_variance" and not self.per_query_ranks:
            return estimators.bias_variance_rows(self.requests, n, m, self.gamma, self.replacement)
        if self.estimator == "constrained" and not self.per_query_ranks:
            return constrained_rows(self.requests, n, m, self.gamma, self.replacement)
        rows = []
        for family, k in self.requests:
            if self.estimator == "naive":
                rows.append(estimators.naive(family, k, m))
            elif self.estimator == "rank_estimate" and not self.per_query_ranks:
                rows.append(estimators.rank_estimate(family, k, n, m))
            else:  # em fits the histogram at compute, per-query rank estimates are kept as sums; the naive
                # values check the family and k now
                rows.append(torch.zeros_like(estimators.naive(family, k, m)))
        return torch.stack(rows)

    def configuration(self) -> dict[str, Any]:
        return {"kind": "sampled", "requests": [list(r) for r in self.requests], "num_items": self.num_items,
                "num_negatives": self.num_negatives, "estimator": self.estimator, "gamma": self.gamma,
                "replacement": self.replacement, "audit": self.audit, "sampling": self.sampling}

    # the member interface (torchrec_eval.members.interface) -----------------------------------------
    def add_states(self, metric: Any, num_groups: int) -> None:
        metric.add_state("sampled_ranks", default=torch.zeros(num_groups, self.num_negatives + 1,
                                                              dtype=torch.float64), dist_reduce_fx="sum")
        metric.register_buffer("sampled_values", self.values.clone(), persistent=False)
        if self.per_query_ranks:
            metric.add_state("sampled_estimates", default=torch.zeros(num_groups, 2 * len(self.requests),
                                                                      dtype=torch.float64), dist_reduce_fx="sum")
        if self.audit:
            metric.add_state("audit_sampled_ranks", default=torch.zeros(num_groups, self.num_negatives + 1,
                                                                        dtype=torch.float64), dist_reduce_fx="sum")
            metric.add_state("audit_exact", default=torch.zeros(num_groups, len(self.requests), dtype=torch.float64),
                             dist_reduce_fx="sum")

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        """The batch's histogram [G, m + 1] (:func:`~torchrec_eval.sampled.ranks.rank_histogram`) and, for
        per-query values, the sums of those values and their squares [G, 2K]: added when every member has
        succeeded."""
        items = ranks.held_out_items(batch, self.num_negatives, metric.validate_args)
        low, spread = ranks.spans(items, metric.ties)
        weight = items.share if batch.weights is None else items.share * batch.weights.unsqueeze(1)
        groups = batch.groups if batch.groups is not None else torch.zeros_like(low[:, 0])
        increment = ranks.rank_histogram(low, spread, weight, groups, metric.sampled_ranks.shape[0],
                                         self.num_negatives)
        if not self.per_query_ranks:
            return lambda: metric.sampled_ranks.add_(increment)
        values = self._rank_estimates(items, low, spread, batch, metric)
        query_weight = values.new_ones(values.shape[0]) if batch.weights is None else batch.weights
        moments = torch.cat([values, values * values], dim=1) * query_weight.unsqueeze(1)
        sums = torch.zeros_like(metric.sampled_estimates).index_add_(0, groups, moments)

        def apply() -> None:
            metric.sampled_ranks.add_(increment)
            metric.sampled_estimates.add_(sums)

        return apply

    def _rank_estimates(self, items: ranks.HeldOut, low: Tensor, spread: Tensor, batch: Batch, metric: Any) -> Tensor:
        """[B, K] each query's value: at its own rank estimate (:mod:`~torchrec_eval.sampled.rank_estimates`), or
        its sampled rank's bias-variance value for its own catalogue size
        (:mod:`~torchrec_eval.sampled.size_corrections`)."""
        extras, m, rows = batch.extras or {}, self.num_negatives, low.shape[0]
        if self.num_items is None:
            sizes = _given(extras, "num_items", (rows,), integer=True)
            if metric.validate_args and bool((sizes < m + 1).any()):
                raise ValueError(f"`num_items` must be at least m + 1 = {m + 1} for every query (the negatives are "
                                 f"other items of its catalogue), got {sizes.tolist()}")
        else:
            sizes = torch.full((rows,), self.num_items, device=low.device)
        if self.size_corrections is not None:  # K&R's correction of each query's size
            return self.size_corrections.values(ranks.rank_mass(low, spread, items.share, m), sizes)
        if self.sampling == "uniform":
            return uniform_values(self.requests, ranks.rank_mass(low, spread, items.share, m), sizes, m)
        probabilities = _given(extras, "negative_probabilities", tuple(items.scores.shape), integer=False)
        if metric.validate_args:
            drawn = probabilities[items.negative]
            if bool((~(drawn > 0) | (drawn > 1)).any()):
                raise ValueError("`negative_probabilities` must lie in (0, 1] at every negative (the probability "
                                 f"of drawing it), got values in [{float(drawn.min())}, {float(drawn.max())}]")
        inverse = torch.where(items.negative, 1.0 / probabilities.to(torch.float64), 0.0)
        above, tied = ranks.spans(items, metric.ties, inverse)
        return popularity_values(self.requests, above, tied / 2, items.share, sizes, m)  # a tie counts half

    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        """Each query's estimate [B, K] (its sampled rank's value, or its own rank estimate) and a mask of True
        (every query counts)."""
        items = ranks.held_out_items(batch, self.num_negatives, metric.validate_args)
        low, spread = ranks.spans(items, metric.ties)
        if self.per_query_ranks:
            values = self._rank_estimates(items, low, spread, batch, metric)
        else:
            values = ranks.rank_mass(low, spread, items.share, self.num_negatives) @ metric.sampled_values.T
        return values, torch.ones_like(values, dtype=torch.bool)

    def moments(self, metric: Any) -> Moments:
        """(sum, sum of squares, count) of the per-query estimates of the linear estimators, per group. Under
        ``ties="average"`` a query spread over several ranks adds the mixture's second moment, which bounds
        its own square from above: the interval is conservative."""
        if self.estimator == "em":
            return {}
        histogram, values = metric.sampled_ranks, metric.sampled_values
        counts = histogram.sum(1).round()  # whole queries (a spread query's shares add up to 1)
        if self.per_query_ranks:
            sums, squares = metric.sampled_estimates.chunk(2, dim=1)
            return {key: (sums[:, i], squares[:, i], counts) for i, key in enumerate(self.metric_keys)}
        sums, squares = histogram @ values.T, histogram @ (values * values).T
        return {key: (sums[:, i], squares[:, i], counts) for i, key in enumerate(self.metric_keys)}

    def compute(self, metric: Any) -> dict[str, Tensor]:
        if self.per_query_ranks:
            sums = metric.sampled_estimates[:, : len(self.requests)] / metric.sampled_ranks.sum(1, keepdim=True)
            return {key: sums[:, i] for i, key in enumerate(self.metric_keys)}
        out = self.estimate(metric.sampled_ranks, metric.sampled_values)
        if self.audit:
            estimate = self.estimate(metric.audit_sampled_ranks, metric.sampled_values)
            count = metric.audit_sampled_ranks.sum(1)
            for i, key in enumerate(self.metric_keys):
                exact = metric.audit_exact[:, i] / count  # 0/0 = NaN for a group without audited queries
                out |= {f"audit/{key}/exact": exact, f"audit/{key}/estimate": estimate[key],
                        f"audit/{key}/error": estimate[key] - exact}
            out["audit/queries"] = count
        return out

    def bootstrap(self, metric: Any, level: float, replicates: int,
                  generator: torch.Generator) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        """``{key: (estimate, low, high)}``, each [G]: the estimate and its percentile bootstrap interval at
        ``level`` from ``replicates`` multinomial redraws of each group's histogram
        (:mod:`~torchrec_eval.sampled.bootstrap`); NaN for a group without queries."""
        if self.per_query_ranks:
            raise ValueError("`bootstrap_interval`: per-query values (rank estimates, or the corrections of each "
                             "query's own size) are no function of the sampled rank alone, so the histogram cannot be "
                             "redrawn; confidence_interval(metric) holds for them; "
                             f"got num_items={self.num_items!r}, sampling={self.sampling!r}")
        histogram, values = metric.sampled_ranks.clone(), metric.sampled_values
        estimate = self.estimate(histogram, values)
        bounds: dict[str, list[tuple[Tensor, Tensor]]] = {key: [] for key in self.metric_keys}
        for row in histogram:
            if float(row.sum().round()) < 1:
                nan = torch.tensor(float("nan"), dtype=torch.float64, device=row.device)
                for key in self.metric_keys:
                    bounds[key].append((nan, nan))
                continue
            draws = resampled_histograms(row, replicates, generator)
            if self.estimator != "em":
                replicate_values = (draws @ values.T / draws.sum(1, keepdim=True)).unbind(1)
            else:
                fitted = estimators.em_rank_distribution(draws.cpu(), self.catalogue, self.num_negatives,
                                                         self.replacement, cutoffs=self.cutoffs)
                replicate_values = tuple(estimators.true_value(family, k, fitted).to(row.device)
                                         for family, k in self.requests)
            for key, replicate in zip(self.metric_keys, replicate_values, strict=True):
                bounds[key].append(percentile_interval(replicate, level))
        return {key: (estimate[key], torch.stack([low for low, _ in bounds[key]]),
                      torch.stack([high for _, high in bounds[key]])) for key in self.metric_keys}

    def estimate(self, histogram: Tensor, values: Tensor) -> dict[str, Tensor]:
        """Each metric's [G] estimate from a histogram of sampled ranks [G, m + 1]: ``histogram @ c / count`` for
        the linear estimators (``values`` [P, m + 1]: c per metric), the EM fit's value for ``"em"``."""
        if self.estimator != "em":
            estimates = histogram @ values.T / histogram.sum(1, keepdim=True)  # 0/0 = NaN for an empty group
            return {key: estimates[:, i] for i, key in enumerate(self.metric_keys)}
        out: dict[str, list[Tensor]] = {key: [] for key in self.metric_keys}
        for row in histogram.cpu():
            fitted = estimators.em_rank_distribution(row, self.catalogue, self.num_negatives, self.replacement,
                                                     cutoffs=self.cutoffs) if float(row.sum()) > 0 else None
            for (family, k), key in zip(self.requests, self.metric_keys, strict=True):
                value = torch.tensor(float("nan"), dtype=torch.float64) if fitted is None \
                    else estimators.true_value(family, k, fitted)
                out[key].append(value)
        return {key: torch.stack(values).to(histogram.device) for key, values in out.items()}

    @property
    def catalogue(self) -> int:
        """n, for the estimators that need one size for every query (the constructor ensures there is one)."""
        if self.num_items is None:
            raise ValueError(f"this estimator needs one catalogue size for every query (num_items an int), got "
                             f"num_items={self.num_items!r}")
        return self.num_items


def _given(extras: dict[str, Tensor], name: str, shape: tuple[int, ...], integer: bool) -> Tensor:
    """The per-query input ``name`` of an update, of ``shape``, integers or floats."""
    value = extras.get(name)
    if value is None:
        raise ValueError(f"`{name}` must be given to each update of this metric, shape {list(shape)}, got None")
    if not isinstance(value, Tensor) or tuple(value.shape) != shape or value.is_floating_point() == integer \
            or value.dtype == torch.bool:
        kind = "an integer" if integer else "a float"
        raise ValueError(f"`{name}` must be {kind} tensor of shape {list(shape)}, got {describe(value)}")
    return value
