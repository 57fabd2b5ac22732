"""The beyond-accuracy state member: every requested family of a metric or suite over one pair of states.

The member reads each family's :class:`~torchrec_eval.beyond.registry.BeyondFamily` (options, state layout,
formula) from :data:`~torchrec_eval.beyond.registry.REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.beyond.registry import REGISTRY
from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import accumulate
from torchrec_eval.pipeline.arguments import check_k
from torchrec_eval.pipeline.batch import Batch
from torchrec_eval.pipeline.tensor_cache import constant, geometric


def _check_options(family: str, options: dict[str, Any]) -> None:
    known = REGISTRY[family].options
    for option in options:
        if option not in known:
            raise ValueError(f"{family} has no option {option!r}; its options are {sorted(known)}")
    for option, required in known.items():
        if required and options.get(option) is None:
            raise ValueError(
                f"{family} needs `{option}`: pass it to the class, or in a suite "
                f"options={{{family!r}: {{{option!r}: ...}}}}"
            )


class BeyondMember(Member):
    """All requested beyond-accuracy metrics of a suite, sharing one count state (member protocol).

    States (float64, ``dist_reduce_fx="sum"``):
        ``beyond_items`` [G, S, num_items]: per cut-off of a catalogue metric, the item counts
        ``c_i``; for inter-list diversity also ``s_i`` and ``t_i`` (see :mod:`torchrec_eval.beyond`).
        ``beyond_stats`` [G, 3Q + D]: per per-query value the sum, the sum of squares and the number
        of counted queries (blocks of Q columns), then the number of non-empty lists per
        inter-list-diversity cut-off.

    Args:
        requests: ``(family, k)`` pairs, families from :data:`~torchrec_eval.beyond.REGISTRY`.
        options: per family, its constructor data (``num_items``, ``item_popularity``, ...).

    Raises:
        ValueError: on an unknown family, a missing or bad option, a missing cut-off, or
            catalogue metrics that disagree on ``num_items``.
    """

    needs_ideal = False
    to_num_relevant = False
    needs_candidates = False
    needs_relevant_items = False
    needs_listed_ids = True  # every value reads the ids of the listed items

    def __init__(
        self, requests: Sequence[tuple[str, int | None]], options: dict[str, dict[str, Any]]
    ) -> None:
        self.requests = []
        for family, k in requests:
            if family not in REGISTRY:
                raise ValueError(f"Unknown beyond-accuracy metric {family!r}; known: {sorted(REGISTRY)}")
            if k is None:
                raise ValueError(f"Metric {family!r} needs a cut-off: write '{family}@10' or pass `k`")
            self.requests.append((family, check_k(k)))
        self.keys = [f"{family}@{k}" for family, k in self.requests]
        if len(set(self.keys)) != len(self.keys):
            raise ValueError(f"A metric is requested twice: {self.keys}")
        self.depth = max(k for _, k in self.requests)
        self.buffers: dict[str, Tensor] = {}
        self.settings: dict[str, dict[str, Any]] = {}
        self.limits: list[tuple[str, int]] = []  # (what, number of items) to check ids against
        for family in dict.fromkeys(family for family, _ in self.requests):
            self._configure(family, dict(options.get(family, {})))
        self._lay_out()

    def configuration(self) -> dict[str, Any]:
        return {"kind": "beyond", "requests": [list(request) for request in self.requests], "settings": self.settings,
                "tables": self.buffers, "limits": [list(limit) for limit in self.limits]}

    def _configure(self, family: str, options: dict[str, Any]) -> None:
        _check_options(family, options)
        configured = REGISTRY[family].configure(family, options)
        if configured.limit is not None:
            self.limits.append(configured.limit)
        if configured.table is not None:
            self.buffers[f"beyond_{family}_table"] = configured.table
        self.settings[family] = configured.settings

    def _lay_out(self) -> None:
        """Rows of ``beyond_items`` and columns of ``beyond_stats`` (see the class docstring)."""
        catalogue = [(family, k) for family, k in self.requests if REGISTRY[family].catalogue]
        catalogue_sizes = {self.settings[family]["num_items"] for family, _ in catalogue}
        if len(catalogue_sizes) > 1:
            names = ", ".join(family for family, spec in REGISTRY.items() if spec.catalogue)
            names = " and ".join(names.rsplit(", ", 1))
            raise ValueError(f"{names} must share one `num_items`, got {sorted(catalogue_sizes)}")
        self.num_items = catalogue_sizes.pop() if catalogue_sizes else 0
        self.item_rows: dict[tuple[int, str], int] = {}  # (k, channel) -> row
        self.patience = 1.0  # the rank weight p^(i - 1) of the "exposure" channel (its family's setting)
        for family, k in catalogue:
            for channel in REGISTRY[family].item_rows:
                self.item_rows.setdefault((k, channel), len(self.item_rows))
                if channel == "exposure":
                    self.patience = self.settings[family]["patience"]
        self.query_requests = [(f, k) for f, k in self.requests if REGISTRY[f].per_query is not None]
        self.query_keys = [f"{f}@{k}" for f, k in self.query_requests]
        self.pooled = [REGISTRY[f].pooled for f, _ in self.query_requests]  # ratio of sums, not a mean
        self.needs_relevant_items = any(REGISTRY[f].reads_relevant_items for f, _ in self.query_requests)
        list_ks = [k for family, k in catalogue if REGISTRY[family].counts_lists]
        self.list_cols = {k: 3 * len(self.query_requests) + i for i, k in enumerate(list_ks)}
        self.num_stats = 3 * len(self.query_requests) + len(list_ks)

    # the member interface (torchrec_eval.members.interface) -----------------------------------------
    def add_states(self, metric: Any, num_groups: int) -> None:
        for name, table in self.buffers.items():
            metric.register_buffer(name, table.clone(), persistent=False)
        if self.item_rows:
            default = torch.zeros(num_groups, len(self.item_rows), self.num_items, dtype=torch.float64)
            metric.add_state("beyond_items", default=default, dist_reduce_fx="sum")
        if self.num_stats:
            metric.add_state(
                "beyond_stats",
                default=torch.zeros(num_groups, self.num_stats, dtype=torch.float64),
                dist_reduce_fx="sum",
            )

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        """Compute the batch's contribution (may raise); the returned call adds it to the states."""
        ids_all = batch.top_k().listed_ids()
        if not self.query_requests:  # per_query checks the ids otherwise
            self._check_ids(metric, ids_all)
        groups = batch.groups
        columns: list[Tensor] = []
        if self.query_requests:
            values, weights = self._query_columns(metric, batch)
            columns = [values, values * values, weights]
        lists = {k: (ids_all[:, :k] >= 0).sum(1) for k in {k for k, _ in self.item_rows}}
        if self.list_cols:
            columns.append(torch.stack([(lists[k] > 0).to(torch.float64) for k in self.list_cols], dim=1))
        rows = None
        if columns:
            rows = torch.cat(columns, dim=1) if len(columns) > 1 else columns[0]
            rows = rows.reshape(ids_all.shape[0], self.num_stats)

        def apply() -> None:
            if self.item_rows:
                self._add_counts(metric, ids_all, lists, groups)
            if rows is not None:
                accumulate(metric.beyond_stats, rows, groups)

        return apply

    def _add_counts(
        self, metric: Any, ids_all: Tensor, lists: dict[int, Tensor], groups: Tensor | None
    ) -> None:
        state = metric.beyond_items
        num_rows_state, num_items = state.shape[1], state.shape[2]
        flat = state.view(-1)
        group_base = 0 if groups is None else groups.to(ids_all.device).unsqueeze(1) * num_rows_state
        for (k, channel), row in self.item_rows.items():
            ids = ids_all[:, :k]
            present = ids >= 0
            weights = present.to(torch.float64)
            if channel == "exposure":  # the attention rank i gets, p^(i - 1) (LensKit's GeometricRankWeight)
                weights = weights * geometric(ids.shape[1], self.patience, ids.device)
            elif channel != "count":  # a_u = 1 / sqrt(m_u) ("weight") or a_u^2 ("weight2")
                length = lists[k].to(torch.float64).clamp(min=1).unsqueeze(1)
                weights = weights / (length.sqrt() if channel == "weight" else length)
            index = (group_base + row) * num_items + ids.clamp(min=0)
            flat.index_add_(0, index.reshape(-1), weights.reshape(-1))

    def _check_ids(self, metric: Any, ids: Tensor) -> None:
        if metric.validate_args and self.limits:
            high = int(ids.max())  # host sync, skipped with validate_args=False
            for what, size in self.limits:
                if high >= size:
                    raise ValueError(
                        f"Recommended item id {high} is out of range for {what}={size}: "
                        "item ids must be < num_items"
                    )

    def _query_columns(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        """What the state sums per query, [B, Q] each: the values and their weights in the mean (1 or 0 where
        counted or not), or a pooled family's numerators and denominators."""
        ranked = batch.top_k()
        self._check_ids(metric, ranked.listed_ids())
        if self.needs_relevant_items:
            self._check_ids(metric, ranked.relevant_item_table()[0])
        values, weights = [], []
        for family, k in self.query_requests:
            table = getattr(metric, f"beyond_{family}_table")
            per_query = REGISTRY[family].per_query  # set: query_requests holds the per-query families only
            value, weight = per_query(ranked, k, table, self.settings[family], metric.empty_target_action)  # type: ignore[misc]
            values.append(value)
            weights.append(weight.to(torch.float64))
        return torch.stack(values, dim=1), torch.stack(weights, dim=1)

    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        """Per-query values [B, Q] (0 where not counted) and counted flags [B, Q] of the per-query metrics (a
        pooled family's value is the query's own ratio, counted where its denominator is not 0)."""
        values, weights = self._query_columns(metric, batch)
        if any(self.pooled):
            flags = tuple(self.pooled)
            pooled = constant(("pooled_values", flags, values.device), lambda: torch.tensor(flags, device=values.device))
            ratios = values / weights.clamp(min=1e-300)
            values, weights = torch.where(pooled, ratios, values), torch.where(pooled, (weights > 0).to(weights), weights)
        return values, weights > 0

    def moments(self, metric: Any) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        """Per-query metrics: key -> (sum [G], sum of squares [G], count [G]) for confidence intervals."""
        q = len(self.query_requests)
        if not q:
            return {}
        stats = metric.beyond_stats
        return {key: (stats[:, i], stats[:, q + i], stats[:, 2 * q + i])
                for i, key in enumerate(self.query_keys) if not self.pooled[i]}

    def compute(self, metric: Any) -> dict[str, Tensor]:
        results: dict[str, Tensor] = {}
        if self.query_requests:  # a mean over counted queries, or a pooled family's sums' ratio
            q, stats = len(self.query_requests), metric.beyond_stats
            results = {key: stats[:, i] / stats[:, 2 * q + i] for i, key in enumerate(self.query_keys)}
        for family, k in self.requests:
            spec = REGISTRY[family]
            if spec.from_counts is None:
                continue
            rows = {channel: metric.beyond_items[:, self.item_rows[(k, channel)]] for channel in spec.item_rows}
            if spec.counts_lists:
                rows["lists"] = metric.beyond_stats[:, self.list_cols[k]]
            results[f"{family}@{k}"] = spec.from_counts(rows, self.settings[family])
        return results


def build_member(requests: list[tuple[str, int | None]], options: dict[str, dict[str, Any]]) -> BeyondMember:
    """One member for every requested beyond-accuracy metric of a suite (:mod:`torchrec_eval.suites.ranking`)."""
    return BeyondMember(requests, options)
