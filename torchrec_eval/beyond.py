r"""Beyond-accuracy metrics: coverage, concentration, diversity, novelty and serendipity of top-k lists.

Every metric reads the ids of each query's top ``k`` items (``batch.ranked.item_ids``, ``-1`` past a
short list) and keeps float64 sufficient statistics on the metric's device, reduced by a sum under
distributed sync, so the synced value equals the single-process value exactly:

* *catalogue metrics* (``coverage``, ``gini``, ``entropy``, ``inter_list_diversity``) keep item
  recommendation counts ``c_i`` -- how many lists of the group contain item ``i`` -- in a
  ``[G, S, num_items]`` state (``S`` = one row per cut-off, plus two weighted rows per cut-off for
  inter-list diversity). With ``num_groups=G`` this is O(G * num_items) memory: one count vector per group.
* *per-query metrics* (``intra_list_diversity``, ``novelty``, ``serendipity``,
  ``average_popularity``) keep, per group, the sum, the sum of squares and the count of the
  per-query values, like the top-k metrics, so :func:`torchrec_eval.uncertainty.confidence_interval`
  applies to them.

Notation: ``L_u`` is the set of (at most ``k``) items recommended to query ``u``, ``m_u = |L_u|``,
``n`` the number of queries with a non-empty list, ``N`` = ``num_items``, ``c_i`` the number of lists
containing item ``i`` and ``C = sum_i c_i``.

Definitions (and the library each follows):

* ``coverage@k`` = ``|{i : c_i > 0}| / N`` (RecBole ItemCoverage; RecTools with the catalogue size).
* ``gini@k`` = ``sum_j (2j - N - 1) c_(j) / (N C)`` over the counts sorted ascending, unrecommended
  items counting 0 (RecBole GiniIndex); 0 = even spread, ``1 - 1/N`` = one item only.
* ``entropy@k`` = ``-sum_i p_i log_b p_i`` with ``p_i = c_i / C`` and base ``b = 2`` (MS Recommenders'
  distributional coverage); ``base=math.e, normalization="distinct"`` is RecBole's ShannonEntropy.
* ``inter_list_diversity@k`` = mean over pairs ``u < v`` of ``1 - |L_u & L_v| / sqrt(m_u m_v)``
  (Jurity's cosine distance between binary top-k vectors, here exact instead of sampled).
* ``intra_list_diversity@k`` = mean over queries with ``m_u >= 2`` of the mean over pairs ``i < j``
  of ``L_u`` of ``1 - cos(f_i, f_j)``, or ``1 - sim_ij`` (Jurity, MS Recommenders).
* ``novelty@k`` = mean over queries of ``mean_{i in L_u} -log2 p_i`` (RecTools, MS Recommenders).
* ``serendipity@k`` = mean over queries of ``|{i in L_u : relevant, not in Pop_b}| / k``
  (Ge, Delgado-Battenfeld and Jannach 2010).
* ``average_popularity@k`` = mean over queries of ``mean_{i in L_u} pop_i`` (RecBole AveragePopularity).

Inter-list diversity is exact, without sampling pairs of users: with ``a_u = 1 / sqrt(m_u)``,

.. math::
    \sum_{u<v} \frac{|L_u \cap L_v|}{\sqrt{m_u m_v}} = \frac12 \sum_i \Big[\big(\sum_{u \ni i} a_u\big)^2
    - \sum_{u \ni i} a_u^2\Big],

so two weighted count vectors ``s_i = sum_{u ∋ i} a_u`` and ``t_i = sum_{u ∋ i} a_u^2`` plus ``n``
give the mean over the ``n (n - 1) / 2`` pairs. When every list has ``k`` items this is the mean
pairwise ``1 - overlap / k`` = ``1 - sum_i c_i (c_i - 1) / (k n (n - 1))``. Queries with an empty
list are left out (a cosine with an empty vector is undefined); with fewer than two lists the value
is NaN. With groups, pairs are formed within a group.

Intra-list diversity from item features uses the identity ``2 sum_{i<j} cos(f_i, f_j) =
||sum_i f^_i||^2 - sum_i ||f^_i||^2`` (``f^`` the unit-normalised features; a zero feature vector has
similarity 0 to everything), O(k d) per query. With ``item_similarity`` (for instance
:func:`cooccurrence_similarity` of a training interaction matrix, the MS Recommenders definition)
it reads the ``k x k`` block of the matrix. Lists of fewer than two items are not counted.

Novelty: ``p_i = pop_i / num_users`` when ``num_users`` is given (RecTools: the share of users who
interacted with the item) and ``p_i = pop_i / sum(pop)`` otherwise (MS Recommenders: the share of
training interactions; also right for ``item_popularity`` given as probabilities). An item with
popularity 0 is given the self-information of the least popular observed item (finite, documented
choice). Average popularity uses ``item_popularity`` as given (RecBole: training interaction counts).
Novelty and average popularity are averaged per query, then over queries with a non-empty list
(RecTools); when all lists have the same length this equals the pooled mean over all recommended
items (MS Recommenders, RecBole).

Serendipity: ``Pop_b`` is the list of the ``b`` most popular items (``baseline_size``, default ``k``;
ties: lower item id first) -- the "primitive" most-popular recommender of Ge, Delgado-Battenfeld and
Jannach (RecSys 2010). An item is serendipitous if it is relevant (the library's relevance rule,
``relevance_threshold``) and not in ``Pop_b``; the per-query value divides by ``k`` like Precision@k,
and queries with no relevant item follow ``empty_target_action``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.conventions import resolve_options
from torchrec_eval.functional._kernels import apply_empty_target_action, check_k
from torchrec_eval.functional._plan import accumulate
from torchrec_eval.inputs import Batch
from torchrec_eval.metrics.base import RankingMetric

__all__ = [
    "AveragePopularity",
    "BeyondMember",
    "Coverage",
    "Entropy",
    "FAMILIES",
    "GiniIndex",
    "InterListDiversity",
    "IntraListDiversity",
    "Novelty",
    "Serendipity",
    "build_member",
    "cooccurrence_similarity",
]

FAMILIES: dict[str, str] = {
    "coverage": "k",
    "gini": "k",
    "entropy": "k",
    "inter_list_diversity": "k",
    "intra_list_diversity": "k",
    "novelty": "k",
    "serendipity": "k",
    "average_popularity": "k",
}
CATALOGUE = ("coverage", "gini", "entropy", "inter_list_diversity")
PER_QUERY = ("intra_list_diversity", "novelty", "serendipity", "average_popularity")
OPTIONS: dict[str, dict[str, bool]] = {  # option -> required
    "coverage": {"num_items": True},
    "gini": {"num_items": True},
    "entropy": {"num_items": True, "base": False, "normalization": False},
    "inter_list_diversity": {"num_items": True},
    "intra_list_diversity": {"item_features": False, "item_similarity": False, "single_item": False,
                             "featureless": False},
    "novelty": {"item_popularity": True, "num_users": False, "cold_items": False},
    "serendipity": {"item_popularity": True, "baseline_size": False},
    "average_popularity": {"item_popularity": True, "all_zero": False},
}
ENTROPY_NORMALIZATIONS = ("none", "log_num_items", "distinct")
COLD_ITEMS = ("least_popular", "one_user")
SINGLE_ITEM = ("skip", "zero")
FEATURELESS = ("error", "nan")
ALL_ZERO = ("error", "zero")
# options newer than the configuration state's name: kept in `settings` only when not the default, and
# dropped to name the state of a checkpoint saved before them (see BeyondMember.legacy)
_NEWER_SETTINGS = ("featureless", "all_zero")


# ----------------------------------------------------------------------------------------------
# option validation
# ----------------------------------------------------------------------------------------------
def _check_int(name: str, value: object, family: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{family}: `{name}` must be an int >= {minimum}, got {value!r}")
    return value


def _check_vector(name: str, value: object, family: str, all_zero: bool = False) -> Tensor:
    if not isinstance(value, Tensor):
        raise ValueError(
            f"{family}: `{name}` must be a 1-D torch.Tensor [num_items], got {type(value).__name__}"
        )
    if value.ndim != 1 or value.numel() == 0 or value.is_complex() or value.dtype == torch.bool:
        raise ValueError(
            f"{family}: `{name}` must be a non-empty 1-D real tensor [num_items], "
            f"got shape {tuple(value.shape)} and dtype {value.dtype}"
        )
    value = value.detach().to(torch.float64)
    low = float(value.min())
    if not bool(torch.isfinite(value).all()) or low < 0 or (float(value.sum()) <= 0 and not all_zero):
        hint = " (all_zero='zero' accepts all 0s)" if family == "average_popularity" else ""
        raise ValueError(
            f"{family}: `{name}` must be finite, >= 0 and not all 0 (counts or probabilities){hint}, "
            f"got min={low} sum={float(value.sum())}"
        )
    return value


def _check_matrix(name: str, value: object, family: str, square: bool, nan: bool = False) -> Tensor:
    if not isinstance(value, Tensor):
        raise ValueError(f"{family}: `{name}` must be a 2-D torch.Tensor, got {type(value).__name__}")
    shape = tuple(value.shape)
    if (
        value.ndim != 2
        or value.numel() == 0
        or not value.is_floating_point()
        or (square and shape[0] != shape[1])
    ):
        want = "[num_items, num_items]" if square else "[num_items, d]"
        raise ValueError(
            f"{family}: `{name}` must be a floating point tensor {want}, "
            f"got shape {shape} and dtype {value.dtype}"
        )
    if not bool((torch.isfinite(value) | (torch.isnan(value) if nan else False)).all()):
        allowed = "finite or NaN (featureless='nan')" if nan else "finite (featureless='nan' accepts NaN)"
        raise ValueError(f"{family}: `{name}` must be {allowed}, got {int((~torch.isfinite(value)).sum())} "
                         f"values that are not (first: {value[~torch.isfinite(value)][0].item()})")
    return value.detach()


def _information(popularity: Tensor, num_users: int | None, cold_items: str = "least_popular") -> Tensor:
    """Self-information -log2 p_i. A popularity-0 (cold) item counts as the least popular observed item,
    or (``cold_items="one_user"``, RecTools) as an item one user interacted with."""
    denominator = float(num_users) if num_users is not None else float(popularity.sum())
    floor = popularity[popularity > 0].min() if cold_items == "least_popular" else popularity.new_ones(())
    return -torch.log2(torch.where(popularity > 0, popularity, floor) / denominator)


def _popularity_rank(popularity: Tensor) -> Tensor:
    """Position [num_items] of each item in the most-popular list (0 = most popular; ties: lower id first)."""
    order = torch.sort(-popularity, stable=True).indices
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel())
    return rank


def cooccurrence_similarity(interactions: Tensor) -> Tensor:
    r"""Item-item cosine similarity of co-occurrence in a training interaction matrix.

    .. math:: \mathrm{sim}(i, j) = \frac{\mathrm{count}(i, j)}{\sqrt{c_i \, c_j}}

    where ``count(i, j)`` is the number of users who interacted with both items and ``c_i`` the
    number who interacted with ``i`` (MS Recommenders' diversity similarity). Items nobody
    interacted with have similarity 0 to every item. Pass the result to
    :class:`IntraListDiversity` as ``item_similarity``.

    Args:
        interactions: ``[num_users, num_items]`` bool or 0/1 tensor (e.g.
            :func:`torchrec_eval.datasets.interaction_matrix` of the training split); other
            non-negative values are used as weights.

    Returns:
        ``[num_items, num_items]`` float64 similarity, 1 on the diagonal of interacted items.

    Raises:
        ValueError: if ``interactions`` is not a 2-D tensor of non-negative values.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import cooccurrence_similarity
        >>> train = torch.tensor([[1, 1, 0], [1, 0, 1], [1, 1, 0]], dtype=torch.bool)
        >>> cooccurrence_similarity(train)
        tensor([[1.0000, 0.8165, 0.5774],
                [0.8165, 1.0000, 0.0000],
                [0.5774, 0.0000, 1.0000]], dtype=torch.float64)
    """
    if not isinstance(interactions, Tensor) or interactions.ndim != 2 or interactions.is_complex():
        got = (
            f"shape {tuple(interactions.shape)}"
            if isinstance(interactions, Tensor)
            else type(interactions).__name__
        )
        raise ValueError(f"`interactions` must be a 2-D tensor [num_users, num_items], got {got}")
    matrix = interactions.to(torch.float64)
    if bool((matrix < 0).any()):
        raise ValueError(f"`interactions` must be >= 0, got a minimum of {float(matrix.min())}")
    counts = matrix.T @ matrix
    norm = counts.diagonal().sqrt()
    norm = torch.where(norm > 0, norm, torch.ones_like(norm))
    return counts / norm.unsqueeze(0) / norm.unsqueeze(1)


# ----------------------------------------------------------------------------------------------
# the member
# ----------------------------------------------------------------------------------------------
class BeyondMember:
    """All requested beyond-accuracy metrics of a suite, sharing one count state (member protocol).

    States (float64, ``dist_reduce_fx="sum"``):
        ``beyond_items`` [G, S, num_items]: per cut-off of a catalogue metric, the item counts
        ``c_i``; for inter-list diversity also ``s_i`` and ``t_i`` (see the module docstring).
        ``beyond_stats`` [G, 3Q + D]: per per-query value the sum, the sum of squares and the number
        of counted queries (blocks of Q columns), then the number of non-empty lists per
        inter-list-diversity cut-off.

    Args:
        requests: ``(family, k)`` pairs, families from :data:`FAMILIES`.
        options: per family, its constructor data (``num_items``, ``item_popularity``, ...).

    Raises:
        ValueError: on an unknown family, a missing or bad option, a missing cut-off, or
            catalogue metrics that disagree on ``num_items``.
    """

    needs_ideal = False
    to_num_relevant = False
    needs_candidates = False

    def __init__(
        self, requests: Sequence[tuple[str, int | None]], options: dict[str, dict[str, Any]]
    ) -> None:
        self.requests = []
        for family, k in requests:
            if family not in FAMILIES:
                raise ValueError(f"Unknown beyond-accuracy metric {family!r}; known: {sorted(FAMILIES)}")
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

        catalogue_sizes = {self.settings[f]["num_items"] for f, _ in self.requests if f in CATALOGUE}
        if len(catalogue_sizes) > 1:
            raise ValueError(
                f"coverage, gini, entropy and inter_list_diversity must share one `num_items`, "
                f"got {sorted(catalogue_sizes)}"
            )
        self.num_items = catalogue_sizes.pop() if catalogue_sizes else 0
        # rows of beyond_items: (k, channel)
        self.item_rows: dict[tuple[int, str], int] = {}
        inter_ks: list[int] = []
        for family, k in self.requests:
            if family in CATALOGUE:
                self.item_rows.setdefault((k, "count"), len(self.item_rows))
            if family == "inter_list_diversity":
                inter_ks.append(k)
                self.item_rows[(k, "weight")] = len(self.item_rows)
                self.item_rows[(k, "weight2")] = len(self.item_rows)
        self.query_requests = [(f, k) for f, k in self.requests if f in PER_QUERY]
        self.query_keys = [f"{f}@{k}" for f, k in self.query_requests]
        self.list_cols = {k: 3 * len(self.query_requests) + i for i, k in enumerate(inter_ks)}
        self.num_stats = 3 * len(self.query_requests) + len(inter_ks)

    def _configure(self, family: str, options: dict[str, Any]) -> None:
        known = OPTIONS[family]
        for option in options:
            if option not in known:
                raise ValueError(f"{family} has no option {option!r}; its options are {sorted(known)}")
        for option, required in known.items():
            if required and options.get(option) is None:
                raise ValueError(
                    f"{family} needs `{option}`: pass it to the class, or in a suite "
                    f"options={{{family!r}: {{{option!r}: ...}}}}"
                )
        settings: dict[str, Any] = {}
        if "num_items" in known:
            settings["num_items"] = _check_int("num_items", options["num_items"], family)
            self.limits.append((f"{family}: `num_items`", settings["num_items"]))
        if family == "entropy":
            base = options.get("base", 2.0)
            if isinstance(base, bool) or not isinstance(base, (int, float)) or not base > 0 or base == 1:
                raise ValueError(f"entropy: `base` must be a number > 0 other than 1, got {base!r}")
            normalization = options.get("normalization", "none")
            if normalization not in ENTROPY_NORMALIZATIONS:
                raise ValueError(
                    f"entropy: `normalization` must be one of {ENTROPY_NORMALIZATIONS}, got {normalization!r}"
                )
            settings.update(base=float(base), normalization=normalization)
        if family == "intra_list_diversity":
            features, similarity = options.get("item_features"), options.get("item_similarity")
            if (features is None) == (similarity is None):
                raise ValueError(
                    "intra_list_diversity needs exactly one of `item_features` [num_items, d] and "
                    f"`item_similarity` [num_items, num_items], got "
                    f"{'both' if features is not None else 'neither'}"
                )
            featureless = options.get("featureless") or "error"
            if featureless not in FEATURELESS:
                raise ValueError(
                    f"intra_list_diversity: `featureless` must be one of {FEATURELESS}, got {featureless!r}"
                )
            nan = featureless == "nan"
            if nan:
                settings["featureless"] = featureless
            if features is not None:
                features = _check_matrix("item_features", features, family, square=False, nan=nan)
                features = features.to(torch.float64)
                norm = features.norm(dim=1, keepdim=True)
                table = features / torch.where(norm > 0, norm, torch.ones_like(norm))
                if nan:  # an item with a NaN feature has none (RecTools): its whole row is NaN
                    table[torch.isnan(table).any(1)] = float("nan")
                settings["mode"] = "features"
            else:
                table = _check_matrix("item_similarity", similarity, family, square=True, nan=nan)
                table = table.to(torch.float64)
                settings["mode"] = "similarity"
            self.buffers[f"beyond_{family}_table"] = table
            settings["single_item"] = options.get("single_item") or "skip"
            if settings["single_item"] not in SINGLE_ITEM:
                raise ValueError(
                    f"intra_list_diversity: `single_item` must be one of {SINGLE_ITEM}, got {settings['single_item']!r}"
                )
            self.limits.append((f"{family}: `item_{settings['mode']}` rows", table.shape[0]))
        if "item_popularity" in known:
            all_zero = options.get("all_zero") or "error"
            if all_zero not in ALL_ZERO:
                raise ValueError(f"average_popularity: `all_zero` must be one of {ALL_ZERO}, got {all_zero!r}")
            if all_zero != "error":
                settings["all_zero"] = all_zero
            popularity = _check_vector("item_popularity", options["item_popularity"], family, all_zero == "zero")
            self.limits.append((f"{family}: `item_popularity` length", popularity.numel()))
            if family == "novelty":
                num_users = options.get("num_users")
                if num_users is not None:
                    _check_int("num_users", num_users, family)
                    if float(popularity.max()) > num_users:
                        raise ValueError(
                            f"novelty: `item_popularity` counts users, so it cannot exceed "
                            f"`num_users`={num_users}; got a maximum of {float(popularity.max())}"
                        )
                cold_items = options.get("cold_items") or "least_popular"
                if cold_items not in COLD_ITEMS:
                    raise ValueError(f"novelty: `cold_items` must be one of {COLD_ITEMS}, got {cold_items!r}")
                self.buffers["beyond_novelty_table"] = _information(popularity, num_users, cold_items)
            elif family == "average_popularity":
                self.buffers["beyond_average_popularity_table"] = popularity
            else:
                baseline = options.get("baseline_size")
                if baseline is not None:
                    _check_int("baseline_size", baseline, family, minimum=0)
                settings["baseline_size"] = baseline
                self.buffers["beyond_serendipity_table"] = _popularity_rank(popularity)
        self.settings[family] = settings

    # member protocol ------------------------------------------------------------------------------
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
        ranked = batch.ranked
        ids_all = ranked.item_ids
        if not self.query_requests:  # per_query checks the ids otherwise
            self._check_ids(metric, ids_all)
        groups = batch.groups
        num_rows = ids_all.shape[0]
        columns: list[Tensor] = []
        if self.query_requests:
            values, counted = self.per_query(metric, batch)
            columns = [values, values * values, counted.to(torch.float64)]
        lists = {k: (ids_all[:, :k] >= 0).sum(1) for k in {k for k, _ in self.item_rows}}
        if self.list_cols:
            columns.append(torch.stack([(lists[k] > 0).to(torch.float64) for k in self.list_cols], dim=1))
        rows = None
        if columns:
            rows = torch.cat(columns, dim=1) if len(columns) > 1 else columns[0]
            rows = rows.reshape(num_rows, self.num_stats)

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
            if channel != "count":
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

    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        """Per-query values [B, Q] (0 where not counted) and counted flags [B, Q] of the per-query metrics."""
        ranked = batch.ranked
        self._check_ids(metric, ranked.item_ids)
        values, counted = [], []
        for family, k in self.query_requests:
            ids = ranked.item_ids[:, :k]
            present = ids >= 0
            safe = ids.clamp(min=0)
            length = present.sum(1).to(torch.float64)
            if family in ("novelty", "average_popularity"):
                table = getattr(metric, f"beyond_{family}_table").to(torch.float64)
                total = (table[safe] * present).sum(1)
                ok = length > 0
                value = total / length.clamp(min=1)
            elif family == "intra_list_diversity" and "featureless" in self.settings[family]:
                value, pairs = self._diversity_of_known(metric, safe, present)
                if self.settings[family]["single_item"] == "zero":  # RecTools: a one-item list scores 0
                    ok = (length == 1) | (pairs > 0)
                    value = torch.where(length >= 2, value, torch.zeros_like(value))
                else:
                    ok = pairs > 0
            elif family == "intra_list_diversity":
                table = metric.beyond_intra_list_diversity_table.to(torch.float64)
                if self.settings[family]["mode"] == "features":
                    vectors = table[safe] * present.unsqueeze(2)
                    summed = vectors.sum(1)
                    pair_sum = (summed * summed).sum(1) - (vectors * vectors).sum((1, 2))
                else:
                    block = table[safe.unsqueeze(2), safe.unsqueeze(1)]
                    both = present.unsqueeze(2) & present.unsqueeze(1)
                    both &= ~torch.eye(ids.shape[1], dtype=torch.bool, device=ids.device)
                    pair_sum = (block * both).sum((1, 2))
                value = 1.0 - pair_sum / (length * (length - 1)).clamp(min=1)
                if self.settings[family]["single_item"] == "zero":  # RecTools: a one-item list scores 0
                    ok, value = length >= 1, torch.where(length >= 2, value, torch.zeros_like(value))
                else:
                    ok = length >= 2
            else:  # serendipity
                rank = metric.beyond_serendipity_table
                baseline = self.settings[family]["baseline_size"]
                unexpected = rank[safe] >= (k if baseline is None else baseline)
                hits = (ranked.relevant[:, :k] & unexpected & present).sum(1).to(torch.float64) / k
                value, flag = apply_empty_target_action(
                    hits.unsqueeze(1), ranked.num_relevant, metric.empty_target_action
                )
                values.append(value.squeeze(1))
                counted.append(flag)
                continue
            values.append(torch.where(ok, value, torch.zeros((), dtype=torch.float64, device=value.device)))
            counted.append(ok)
        return torch.stack(values, dim=1), torch.stack(counted, dim=1)

    def _diversity_of_known(self, metric: Any, safe: Tensor, present: Tensor) -> tuple[Tensor, Tensor]:
        """``featureless="nan"``: the mean distance over the pairs of a list whose distance is known (no
        NaN feature row, no NaN similarity), and the number of those pairs, per query. RecTools sets a
        pair's distance to NaN when an item lacks features, and pandas' mean leaves it out."""
        table = metric.beyond_intra_list_diversity_table.to(torch.float64)
        if self.settings["intra_list_diversity"]["mode"] == "features":
            rows = table[safe]
            known = present & ~torch.isnan(rows).any(2)
            vectors = torch.where(known.unsqueeze(2), rows, torch.zeros((), dtype=rows.dtype, device=rows.device))
            summed = vectors.sum(1)
            pair_sum = (summed * summed).sum(1) - (vectors * vectors).sum((1, 2))
            m = known.sum(1).to(torch.float64)
            pairs = m * (m - 1)  # ordered pairs, as pair_sum counts each pair twice
        else:
            block = table[safe.unsqueeze(2), safe.unsqueeze(1)]
            both = present.unsqueeze(2) & present.unsqueeze(1)
            both &= ~torch.eye(safe.shape[1], dtype=torch.bool, device=safe.device)
            known = both & ~torch.isnan(block)
            pair_sum = torch.where(known, block, torch.zeros((), dtype=block.dtype, device=block.device)).sum((1, 2))
            pairs = known.sum((1, 2)).to(torch.float64)
        return 1.0 - pair_sum / pairs.clamp(min=1), pairs

    def legacy(self) -> BeyondMember:
        """The member as it was before the options of ``_NEWER_SETTINGS`` (self if it has none of them)."""
        if not any(name in settings for settings in self.settings.values() for name in _NEWER_SETTINGS):
            return self
        older = copy.copy(self)
        older.settings = {family: {name: value for name, value in settings.items() if name not in _NEWER_SETTINGS}
                          for family, settings in self.settings.items()}
        return older

    def moments(self, metric: Any) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        """Per-query metrics: key -> (sum [G], sum of squares [G], count [G]) for confidence intervals."""
        q = len(self.query_requests)
        if not q:
            return {}
        stats = metric.beyond_stats
        return {
            key: (stats[:, i], stats[:, q + i], stats[:, 2 * q + i]) for i, key in enumerate(self.query_keys)
        }

    def compute(self, metric: Any) -> dict[str, Tensor]:
        results = {key: total / count for key, (total, _, count) in self.moments(metric).items()}
        for family, k in self.requests:
            if family not in CATALOGUE:
                continue
            counts = metric.beyond_items[:, self.item_rows[(k, "count")]]  # [G, N]
            num_items = counts.shape[1]
            total = counts.sum(1)
            if family == "coverage":
                value = (counts > 0).sum(1).to(torch.float64) / num_items
                value = torch.where(total > 0, value, torch.full_like(value, float("nan")))
            elif family == "gini":
                ascending = counts.sort(dim=1).values
                j = torch.arange(1, num_items + 1, dtype=torch.float64, device=counts.device)
                value = ((2 * j - num_items - 1) * ascending).sum(1) / (num_items * total)
            elif family == "entropy":
                p = counts / total.unsqueeze(1)
                value = -torch.special.xlogy(p, p).sum(1)  # nats
                settings = self.settings[family]
                if settings["normalization"] == "log_num_items":
                    value = value / math.log(num_items) if num_items > 1 else value * 0
                elif settings["normalization"] == "distinct":
                    value = value / (counts > 0).sum(1)
                    value = value / math.log(settings["base"])
                else:
                    value = value / math.log(settings["base"])
            else:  # inter_list_diversity
                s = metric.beyond_items[:, self.item_rows[(k, "weight")]]
                t = metric.beyond_items[:, self.item_rows[(k, "weight2")]]
                n = metric.beyond_stats[:, self.list_cols[k]]
                pairs = n * (n - 1)
                value = 1.0 - (s * s - t).sum(1) / pairs
                value = torch.where(n >= 2, value, torch.full_like(value, float("nan")))
            results[f"{family}@{k}"] = value
        return results


def build_member(requests: list[tuple[str, int | None]], options: dict[str, dict[str, Any]]) -> BeyondMember:
    """One member for every requested beyond-accuracy metric of a suite (:mod:`torchrec_eval.collection`)."""
    return BeyondMember(requests, options)


# ----------------------------------------------------------------------------------------------
# classes
# ----------------------------------------------------------------------------------------------
IntOrSeq = int | Sequence[int]


class _Beyond(RankingMetric):
    family: str

    def __init__(self, k: IntOrSeq, options: dict[str, Any], **kwargs: Any) -> None:
        ks = list(k) if isinstance(k, (list, tuple)) else [k]
        if not ks:
            raise ValueError(f"`k` must be an int or a non-empty sequence of ints, got {k!r}")
        options = resolve_options(kwargs.get("convention"), self.family, options)
        member = BeyondMember([(self.family, one) for one in ks], {self.family: options})
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self._show(**options)


class Coverage(_Beyond):
    r"""Catalogue coverage@k: the share of the catalogue recommended (in some top k) to anyone.

    .. math:: \mathrm{Coverage@k} = \frac{|\{i : c_i > 0\}|}{N}

    ``c_i``: number of top-k lists containing item ``i``; ``N`` = ``num_items`` (RecBole
    ItemCoverage; RecTools with the catalogue size). For MS Recommenders' ``catalog_coverage`` pass
    the number of distinct training items as ``num_items``. State: ``[G, num_items]`` item counts.
    NaN before any item is recommended (as for a group without queries).

    Args:
        k: cut-off(s).
        num_items: catalogue size ``N``; recommended ids must be ``< num_items``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``num_items``, an item id ``>= num_items``, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import Coverage
        >>> metric = Coverage(k=2, num_items=5)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [1, 3]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(0.6000, dtype=torch.float64)
    """

    family = "coverage"
    higher_is_better = True

    def __init__(self, k: IntOrSeq = 10, *, num_items: int, **kwargs: Any) -> None:
        super().__init__(k, {"num_items": num_items}, **kwargs)


class GiniIndex(_Beyond):
    r"""Gini index@k of how often each catalogue item is recommended (0 = evenly; lower is better).

    .. math:: \mathrm{Gini@k} = \frac{\sum_{j=1}^{N} (2j - N - 1)\, c_{(j)}}{N \sum_i c_i}

    with ``c_(1) <= ... <= c_(N)`` the item recommendation counts sorted ascending, items never
    recommended counting 0 (RecBole GiniIndex). Ranges from 0 (every item equally often) to
    ``1 - 1/N`` (one item only). NaN before any recommendation.

    Args:
        k: cut-off(s).
        num_items: catalogue size ``N``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``num_items``, an item id ``>= num_items``, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import GiniIndex
        >>> metric = GiniIndex(k=2, num_items=4)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [0, 2]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(0.3750, dtype=torch.float64)
    """

    family = "gini"
    higher_is_better = False

    def __init__(self, k: IntOrSeq = 10, *, num_items: int, **kwargs: Any) -> None:
        super().__init__(k, {"num_items": num_items}, **kwargs)


class Entropy(_Beyond):
    r"""Shannon entropy@k of the distribution of recommendations over the catalogue.

    .. math:: H@k = -\sum_i p_i \log_b p_i, \qquad p_i = c_i / \sum_j c_j

    Base ``b`` = 2 by default (bits; MS Recommenders' distributional coverage).
    ``normalization="log_num_items"`` divides by ``ln N`` (1 = uniform over the catalogue);
    ``normalization="distinct"`` divides by the number of distinct recommended items (RecBole
    ShannonEntropy, which uses ``base=math.e``).

    Args:
        k: cut-off(s).
        num_items: catalogue size ``N``.
        base: logarithm base (ignored with ``"log_num_items"``).
        normalization: ``"none"`` (default), ``"log_num_items"`` or ``"distinct"``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Raises:
        ValueError: on a bad ``k``, ``num_items``, ``base`` or ``normalization``, an item id
            ``>= num_items``, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import Entropy
        >>> metric = Entropy(k=2, num_items=4)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [2, 3]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """

    family = "entropy"
    higher_is_better = True

    def __init__(
        self,
        k: IntOrSeq = 10,
        *,
        num_items: int,
        base: float = 2.0,
        normalization: str = "none",
        **kwargs: Any,
    ) -> None:
        super().__init__(k, {"num_items": num_items, "base": base, "normalization": normalization}, **kwargs)


class InterListDiversity(_Beyond):
    r"""Inter-list diversity@k: mean pairwise cosine distance between the top-k lists of queries.

    .. math::
        \mathrm{ILD_{inter}@k} = 1 - \frac{2}{n(n-1)} \sum_{u<v} \frac{|L_u \cap L_v|}{\sqrt{|L_u|\,|L_v|}}

    over the ``n`` queries with a non-empty list (Jurity's definition, computed exactly rather than
    by sampling users): with full lists, ``1 - sum_i c_i (c_i - 1) / (k n (n - 1))``. Exact for
    short lists from two weighted item-count vectors (see :mod:`torchrec_eval.beyond`). NaN with
    fewer than two lists; with groups, pairs are formed within each group.

    Args:
        k: cut-off(s).
        num_items: catalogue size ``N``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``num_items``, an item id ``>= num_items``, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import InterListDiversity
        >>> metric = InterListDiversity(k=2, num_items=5)
        >>> ranked = torch.tensor([[0, 1], [1, 2], [3, 4]])
        >>> metric.update(ranked_ids=ranked, target_ids=torch.tensor([[0], [1], [2]]))
        >>> metric.compute()
        tensor(0.8333, dtype=torch.float64)
    """

    family = "inter_list_diversity"
    higher_is_better = True

    def __init__(self, k: IntOrSeq = 10, *, num_items: int, **kwargs: Any) -> None:
        super().__init__(k, {"num_items": num_items}, **kwargs)


class IntraListDiversity(_Beyond):
    r"""Intra-list diversity@k: mean pairwise distance between the items of each top-k list.

    .. math:: \mathrm{ILD@k} = \operatorname{mean}_{u : |L_u| \ge 2}\;
        \frac{2}{|L_u|(|L_u|-1)} \sum_{i<j \in L_u} \big(1 - \mathrm{sim}(i, j)\big)

    ``sim`` is the cosine of ``item_features`` rows (a zero row has similarity 0), or read from
    ``item_similarity`` (e.g. :func:`cooccurrence_similarity` of the training interactions, as in
    MS Recommenders). Lists with fewer than two items are not counted (Jurity, MS Recommenders);
    with ``single_item="zero"`` (RecTools, and its preset) a one-item list counts as 0.

    ``featureless="nan"`` (RecTools, and its preset) accepts NaN: an item whose ``item_features`` row
    holds a NaN has no features, and a NaN similarity an unknown one; a pair with such a distance is
    left out of its list's mean (RecTools' distance is NaN there and pandas' mean skips it), and a list
    of two or more items without any known pair is not counted (RecTools' per-user NaN, left out of
    its mean). RecTools' own distance is Hamming's: pass ``item_similarity = 1 - D`` for a distance
    matrix ``D``.

    Args:
        k: cut-off(s).
        item_features: ``[num_items, d]`` float item vectors, or
        item_similarity: ``[num_items, num_items]`` float similarity matrix (exactly one of the two).
        single_item: ``"skip"`` (default) or ``"zero"``: how a one-item list counts.
        featureless: ``"error"`` (default: NaN in the table raises) or ``"nan"`` (above).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Raises:
        ValueError: unless exactly one of ``item_features``/``item_similarity`` is a finite float
            matrix of the right shape (NaN allowed with ``featureless="nan"``); on a bad
            ``single_item`` or ``featureless``, an item id out of its range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import IntraListDiversity
        >>> features = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> metric = IntraListDiversity(k=3, item_features=features)
        >>> ranked = torch.tensor([[0, 1, 2], [0, 2, -1]])
        >>> metric.update(ranked_ids=ranked, target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(0.4107, dtype=torch.float64)
    """

    family = "intra_list_diversity"
    higher_is_better = True

    def __init__(
        self,
        k: IntOrSeq = 10,
        *,
        item_features: Tensor | None = None,
        item_similarity: Tensor | None = None,
        single_item: str | None = None,
        featureless: str | None = None,
        **kwargs: Any,
    ) -> None:
        options = {"item_features": item_features, "item_similarity": item_similarity, "single_item": single_item,
                   "featureless": featureless}
        super().__init__(k, options, **kwargs)


class Novelty(_Beyond):
    r"""Novelty@k: mean self-information of the recommended items, in bits.

    .. math:: \mathrm{Novelty@k} = \operatorname{mean}_{u : |L_u| > 0}\;
        \frac{1}{|L_u|} \sum_{i \in L_u} -\log_2 p_i

    ``p_i = pop_i / num_users`` with ``num_users`` (RecTools), else ``pop_i / sum(pop)`` (MS
    Recommenders; also right for ``item_popularity`` given as probabilities). Items with
    popularity 0 (cold items) get the self-information of the least popular observed item, or with
    ``cold_items="one_user"`` (RecTools, and its preset) that of an item one user interacted with.

    Args:
        k: cut-off(s).
        item_popularity: ``[num_items]`` training counts (e.g.
            :func:`torchrec_eval.datasets.item_popularity`) or probabilities.
        num_users: number of training users when ``item_popularity`` counts users per item.
        cold_items: ``"least_popular"`` (default) or ``"one_user"``; ``convention="rectools"`` sets it.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_popularity`` (not 1-D, negative, all 0) or
            ``num_users``, an item id out of range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import Novelty
        >>> metric = Novelty(k=2, item_popularity=torch.tensor([4.0, 2.0, 1.0, 1.0]))
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [2, 3]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(2.2500, dtype=torch.float64)
    """

    family = "novelty"
    higher_is_better = True

    def __init__(
        self,
        k: IntOrSeq = 10,
        *,
        item_popularity: Tensor,
        num_users: int | None = None,
        cold_items: str | None = None,
        **kwargs: Any,
    ) -> None:
        options = {"item_popularity": item_popularity, "num_users": num_users, "cold_items": cold_items}
        super().__init__(k, options, **kwargs)


class Serendipity(_Beyond):
    r"""Serendipity@k: share of the top k that is relevant and not recommended by a popularity baseline.

    .. math:: \mathrm{Serendipity@k} = \frac{1}{k} \sum_{i \le k} r_i \, \mathbb{1}[\mathrm{item}_i \notin
        \mathrm{Pop}_b]

    ``Pop_b``: the ``b`` most popular items by ``item_popularity`` (``baseline_size``, default ``k``;
    ties: lower id first), the primitive recommender of Ge, Delgado-Battenfeld and Jannach (2010).
    Relevance follows ``relevance_threshold``; queries with no relevant item follow
    ``empty_target_action`` (as Precision@k).

    Args:
        k: cut-off(s).
        item_popularity: ``[num_items]`` training counts or probabilities.
        baseline_size: size ``b`` of the popular list (default: ``k``).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_popularity`` or ``baseline_size``, an item id out of
            range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import Serendipity
        >>> metric = Serendipity(k=2, item_popularity=torch.tensor([9.0, 5.0, 1.0, 1.0]))
        >>> metric.update(torch.tensor([[0.9, 0.1, 0.8, 0.0]]), torch.tensor([[1, 0, 1, 0]]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    family = "serendipity"
    higher_is_better = True

    def __init__(
        self, k: IntOrSeq = 10, *, item_popularity: Tensor, baseline_size: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(k, {"item_popularity": item_popularity, "baseline_size": baseline_size}, **kwargs)


class AveragePopularity(_Beyond):
    r"""Average popularity@k of the recommended items (RecBole AveragePopularity; popularity bias).

    .. math::
        \mathrm{ARP@k} = \operatorname{mean}_{u : |L_u| > 0}\; \frac{1}{|L_u|} \sum_{i \in L_u} \mathrm{pop}_i

    Args:
        k: cut-off(s).
        item_popularity: ``[num_items]`` training counts (or any popularity score), used as given.
        all_zero: ``"error"`` (default): an ``item_popularity`` of only 0s raises (it is most often an
            empty or misaligned training split); ``"zero"``: accepted, every value is then 0, as
            RecTools' ``AvgRecPopularity`` gives without previous interactions (its preset sets it).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.RankingMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_popularity`` or ``all_zero``, an item id out of range, and
            bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import AveragePopularity
        >>> metric = AveragePopularity(k=2, item_popularity=torch.tensor([4.0, 2.0, 1.0, 1.0]))
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [2, -1]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """

    family = "average_popularity"
    higher_is_better = None

    def __init__(
        self, k: IntOrSeq = 10, *, item_popularity: Tensor, all_zero: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(k, {"item_popularity": item_popularity, "all_zero": all_zero}, **kwargs)
