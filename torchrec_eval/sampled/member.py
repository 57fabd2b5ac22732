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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args

import torch
from torch import Tensor

from torchrec_eval.members.interface import Member, Moments
from torchrec_eval.pipeline import Batch
from torchrec_eval.pipeline.batch import Candidates
from torchrec_eval.pipeline.validation import describe
from torchrec_eval.sampled import estimators
from torchrec_eval.sampled.audit import audit_keys
from torchrec_eval.sampled.bootstrap import percentile_interval, resampled_histograms
from torchrec_eval.sampled.constrained import constrained_rows
from torchrec_eval.sampled.rank_metrics import FAMILIES
from torchrec_eval.sampled.transitions import check_sampling

__all__ = ["ESTIMATORS", "Estimator", "SampledMember"]

#: how the full-catalogue value is estimated from the sampled ranks
Estimator = Literal["naive", "rank_estimate", "bias_variance", "constrained", "em"]
ESTIMATORS: tuple[Estimator, ...] = get_args(Estimator)


def _spans(scores: Tensor, held_out: Tensor, columns: Tensor, negative: Tensor, ties: str) -> tuple[Tensor, Tensor]:
    """[B, P] the negatives above each held-out item (scores [B, P, 1] at ``columns`` [B, P, 1]) and its tied
    negatives: the first 0-based sampled rank and the spread by ``ties`` (``"index"``: the tied negatives of
    earlier columns rank above; ``"reverse_index"``: those of later ones)."""
    row = scores.unsqueeze(1)  # [B, 1, W]
    others = negative.unsqueeze(1)
    above = ((row > held_out) & others).sum(2)
    tied = (row == held_out) & others  # [B, P, W]
    if ties == "average":
        return above, tied.sum(2)
    if ties == "pessimistic":
        return above + tied.sum(2), torch.zeros_like(above)
    if ties == "optimistic":
        return above, torch.zeros_like(above)
    positions = torch.arange(scores.shape[1], device=scores.device)
    before = positions < columns if ties == "index" else positions > columns
    return above + (tied & before).sum(2), torch.zeros_like(above)


class SampledMember(Member):
    """Metrics of held-out items ranked against m sampled negatives per query, estimated for n items.

    Args:
        requests: (family, cut-off or None) pairs of :data:`~torchrec_eval.sampled.rank_metrics.FAMILIES`.
        num_items: n, the candidates of the full ranking (the relevant item included).
        num_negatives: m, the sampled negatives of each query.
        estimator: one of :data:`ESTIMATORS`; ``gamma`` weighs the variance for ``"bias_variance"`` and
            ``"constrained"``.
        replacement: whether the negatives were drawn with replacement.
        audit: keep the audit states (:mod:`~torchrec_eval.sampled.audit`) and report the audited queries'
            exact values, estimates and errors.
    """

    depth = 0
    needs_ideal = False
    to_num_relevant = False
    needs_candidates = True
    supports_weights = True
    paired = False

    def __init__(self, requests: Sequence[tuple[str, int | None]], num_items: int, num_negatives: int,
                 estimator: str = "bias_variance", gamma: float = 0.01, replacement: bool = True,
                 audit: bool = False) -> None:
        self.num_items, self.num_negatives = check_sampling(num_items, num_negatives)
        if estimator not in ESTIMATORS:
            raise ValueError(f"`estimator` must be one of {ESTIMATORS}, got {estimator!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"`replacement` must be True or False, got {replacement!r}")
        if not isinstance(audit, bool):
            raise ValueError(f"`audit` must be True or False, got {audit!r}")
        self.estimator, self.gamma, self.replacement, self.audit = estimator, gamma, replacement, audit
        self.requests = list(requests)
        for family, _ in self.requests:
            if family not in FAMILIES:
                raise ValueError(f"Unknown sampled metric {family!r}; known: {list(FAMILIES)}")
        self.metric_keys = [family if k is None else f"{family}@{k}" for family, k in self.requests]
        if len(set(self.metric_keys)) != len(self.metric_keys):
            raise ValueError(f"A metric is requested twice: {self.metric_keys}")
        self.keys = self.metric_keys + (audit_keys(self.metric_keys) if audit else [])
        self.query_keys = [] if estimator == "em" else list(self.metric_keys)  # EM fits the whole histogram
        self.values = self._values()  # [P, m + 1]: each key's value at each sampled rank (linear estimators)

    def _values(self) -> Tensor:
        n, m = self.num_items, self.num_negatives
        if self.estimator == "bias_variance":
            return estimators.bias_variance_rows(self.requests, n, m, self.gamma, self.replacement)
        if self.estimator == "constrained":
            return constrained_rows(self.requests, n, m, self.gamma, self.replacement)
        rows = []
        for family, k in self.requests:
            if self.estimator == "naive":
                rows.append(estimators.naive(family, k, m))
            elif self.estimator == "rank_estimate":
                rows.append(estimators.rank_estimate(family, k, n, m))
            else:  # em fits the histogram at compute; the naive values check the family and k now
                rows.append(torch.zeros_like(estimators.naive(family, k, m)))
        return torch.stack(rows)

    def configuration(self) -> dict[str, Any]:
        return {"kind": "sampled", "requests": [list(r) for r in self.requests], "num_items": self.num_items,
                "num_negatives": self.num_negatives, "estimator": self.estimator, "gamma": self.gamma,
                "replacement": self.replacement, "audit": self.audit}

    # the member interface (torchrec_eval.members.interface) -----------------------------------------
    def add_states(self, metric: Any, num_groups: int) -> None:
        metric.add_state("sampled_ranks", default=torch.zeros(num_groups, self.num_negatives + 1,
                                                              dtype=torch.float64), dist_reduce_fx="sum")
        metric.register_buffer("sampled_values", self.values.clone(), persistent=False)
        if self.audit:
            metric.add_state("audit_sampled_ranks", default=torch.zeros(num_groups, self.num_negatives + 1,
                                                                        dtype=torch.float64), dist_reduce_fx="sum")
            metric.add_state("audit_exact", default=torch.zeros(num_groups, len(self.requests), dtype=torch.float64),
                             dist_reduce_fx="sum")

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        """The batch's histogram [G, m + 1] (:meth:`histogram`), added when every member has succeeded."""
        low, spread, share = self.rank_spans(batch, metric.ties, metric.validate_args)
        weight = share if batch.weights is None else share * batch.weights.unsqueeze(1)
        groups = batch.groups if batch.groups is not None else torch.zeros_like(low[:, 0])
        increment = self.histogram(low, spread, weight, groups, metric.sampled_ranks.shape[0])
        return lambda: metric.sampled_ranks.add_(increment)

    def histogram(self, low: Tensor, spread: Tensor, weight: Tensor, groups: Tensor, num_groups: int) -> Tensor:
        """[G, m + 1] the weighted sampled ranks of a batch's held-out items ([B, P] each), from each one's span
        of ranks without a [B, m + 1] row: +w at the span's first rank and -w past its last in a [G, m + 2]
        buffer, then one cumulative sum."""
        share = (weight / (spread + 1).to(torch.float64)).flatten()
        rows = groups.unsqueeze(1).expand_as(low).flatten()
        edges = torch.zeros(num_groups, self.num_negatives + 2, dtype=torch.float64, device=low.device)
        edges.index_put_((rows, low.flatten()), share, accumulate=True)
        edges.index_put_((rows, (low + spread + 1).flatten()), -share, accumulate=True)
        return edges.cumsum(1)[:, :-1]

    def rank_mass(self, batch: Batch, ties: str, validate_args: bool) -> Tensor:
        """[B, m + 1] each query's sampled ranks as a distribution (a 1, a tie's spread, or its held-out items'
        shares)."""
        low, spread, share = self.rank_spans(batch, ties, validate_args)
        columns = torch.arange(self.num_negatives + 1, device=low.device)
        inside = (columns >= low.unsqueeze(2)) & (columns <= (low + spread).unsqueeze(2))  # [B, P, m + 1]
        return (inside.to(torch.float64) * (share / (spread + 1).to(torch.float64)).unsqueeze(2)).sum(1)

    def rank_spans(self, batch: Batch, ties: str, validate_args: bool) -> tuple[Tensor, Tensor, Tensor]:
        """For each held-out item [B, P] of each query: the first sampled rank it can take (0-based), how many
        more (tied negatives under ``ties="average"``, else 0), and its share of its query (1 / R of the
        query's R held-out items; 0 for padding). Rows of m + 1 columns hold one held-out item (P = 1); wider
        rows hold up to P = width - m, each ranked against the row's m negatives only."""
        candidates = batch.every_candidate()
        if not isinstance(candidates, Candidates):
            raise ValueError("sampled evaluation takes the scores of the m + 1 candidates (dense, ids or flat "
                             f"form), not a catalogue stream; got {type(candidates).__name__}")
        scores, relevant, m = candidates.scores, candidates.relevant, self.num_negatives
        if scores.ndim != 2 or scores.shape[1] < m + 1:
            raise ValueError(f"`preds` must score each query's held-out item(s) and its m = {m} sampled negatives: "
                             f"shape [B, {m + 1}] (or wider for several held-out items), got {describe(scores)}")
        valid = candidates.valid if candidates.valid is not None else torch.ones_like(relevant)
        relevant = relevant & valid
        negative = valid & ~relevant
        if validate_args:
            self._check_rows(relevant, negative, scores.shape[1] == m + 1)
        if scores.shape[1] == m + 1:  # one held-out item per row: its column
            columns = relevant.to(torch.uint8).argmax(1, keepdim=True)
        else:  # the held-out items' columns first, in column order
            columns = torch.argsort((~relevant).to(torch.uint8), dim=1, stable=True)[:, : scores.shape[1] - m]
        held_out = relevant.gather(1, columns)
        low, spread = _spans(scores, scores.gather(1, columns).unsqueeze(2), columns.unsqueeze(2), negative, ties)
        count = held_out.sum(1, keepdim=True).clamp(min=1).to(torch.float64)
        share = torch.where(held_out, 1.0 / count, 0.0)
        return torch.where(held_out, low, 0), torch.where(held_out, spread, 0), share

    def _check_rows(self, relevant: Tensor, negative: Tensor, one: bool) -> None:
        counts, negatives = relevant.sum(1), negative.sum(1)
        if one and bool((counts != 1).any()) or not one and bool((counts < 1).any()):
            raise ValueError(f"`target` must mark {'exactly one relevant item' if one else 'at least one relevant item'}"
                             f" per row, got rows with {sorted(set(counts.tolist()))} relevant items")
        if bool((negatives != self.num_negatives).any()):
            raise ValueError(f"`preds` must hold m = {self.num_negatives} sampled negatives in every row (no mask, "
                             f"no -inf among them), got rows with {sorted(set(negatives.tolist()))}")

    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        """Each query's estimate [B, P] (its sampled rank's value) and a mask of True (every query counts)."""
        values = self.rank_mass(batch, metric.ties, metric.validate_args) @ metric.sampled_values.T
        return values, torch.ones_like(values, dtype=torch.bool)

    def moments(self, metric: Any) -> Moments:
        """(sum, sum of squares, count) of the per-query estimates of the linear estimators, per group. Under
        ``ties="average"`` a query spread over several ranks adds the mixture's second moment, which bounds
        its own square from above: the interval is conservative."""
        if self.estimator == "em":
            return {}
        histogram, values = metric.sampled_ranks, metric.sampled_values
        sums, squares = histogram @ values.T, histogram @ (values * values).T
        counts = histogram.sum(1).round()  # whole queries (a spread query's shares add up to 1)
        return {key: (sums[:, i], squares[:, i], counts) for i, key in enumerate(self.metric_keys)}

    def compute(self, metric: Any) -> dict[str, Tensor]:
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
                fitted = estimators.em_rank_distribution(draws.cpu(), self.num_items, self.num_negatives,
                                                         self.replacement)
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
            fitted = estimators.em_rank_distribution(row, self.num_items, self.num_negatives, self.replacement) \
                if float(row.sum()) > 0 else None
            for (family, k), key in zip(self.requests, self.metric_keys, strict=True):
                value = torch.tensor(float("nan"), dtype=torch.float64) if fitted is None \
                    else estimators.true_value(family, k, fitted)
                out[key].append(value)
        return {key: torch.stack(values).to(histogram.device) for key, values in out.items()}
