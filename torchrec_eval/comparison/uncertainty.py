r"""Confidence intervals and paired model comparisons from running sums (no per-query storage).

Every mean-over-queries metric of the library keeps, per group, the sum ``S1`` of its per-query
values, the sum of their squares ``S2`` and the number ``n`` of counted queries. That is enough for
an interval on the mean:

.. math::
    \bar x = S_1 / n, \qquad s^2 = \frac{S_2 - S_1^2 / n}{n - 1}, \qquad
    \bar x \pm q \, s / \sqrt{n}

with ``q`` the ``(1 + level) / 2`` quantile of Student's t with ``n - 1`` degrees of freedom
(``method="t"``, default) or of the standard normal (``method="normal"``). The queries are
treated as an i.i.d. sample of the population of queries (the usual "significance over topics" of
IR evaluation); the interval is about that population mean, not about the items.

Student-t quantiles are SciPy's (:func:`~torchrec_eval.comparison.statistics.student_t_quantile`). ``n < 2`` gives a
NaN interval.

:class:`PairedComparison` scores two models on the same queries in one pass and keeps the same
three sums for the per-query differences ``d = a - b``: mean difference, its interval, and a
two-sided p-value of "no difference": the paired t-test, ``P(|T_{n-1}| >= |d_bar| / (s_d / sqrt(n)))``
with SciPy's Student t (:func:`~torchrec_eval.comparison.statistics.student_t_two_sided_p`, equal to
``scipy.stats.ttest_rel``), or with ``method="normal"`` the paired z-test ``erfc(|z| / sqrt 2)``. A query
counts when both models count it (for the top-k metrics this depends only on the target, so always both).

Catalogue-level metrics (``coverage``, ``gini``, ``entropy``, ``inter_list_diversity``) are not means
over queries and have no interval here.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any, Unpack

import torch
from torch import Tensor

from torchrec_eval.comparison.statistics import (
    adjusted_p_values,
    check_method,
    interval_from_moments,
    student_t_quantile,
    student_t_two_sided_p,
)
from torchrec_eval.members.steps import EmptyTargetAction, accumulate
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.configuration import check_loaded_configuration, check_same_states, fingerprint
from torchrec_eval.metrics.lifecycle import Apply, StatefulMetric, TorchmetricsArguments
from torchrec_eval.pipeline.arguments import check_probability
from torchrec_eval.pipeline.inputs import Ties
from torchrec_eval.pipeline.tensor_cache import constant
from torchrec_eval.pipeline.validation import describe_any

__all__ = ["PairedComparison", "adjusted_p_values", "confidence_interval", "interval_from_moments", "t_quantile"]

def t_quantile(probability: float, df: Tensor) -> Tensor:
    """The ``probability`` (> 0.5) quantile of Student's t with ``df`` degrees of freedom, elementwise.

    SciPy's (:func:`~torchrec_eval.comparison.statistics.student_t_quantile`); ``df`` holds whole numbers, and
    ``df <= 0`` gives NaN.

    Example:
        >>> import torch
        >>> from torchrec_eval.comparison.uncertainty import t_quantile
        >>> t_quantile(0.975, torch.tensor([1.0, 2.0, 10.0, 1e9]))
        tensor([12.7062,  4.3027,  2.2281,  1.9600], dtype=torch.float64)
    """
    if not 0.5 < probability < 1:
        raise ValueError(f"`probability` must lie in (0.5, 1), got {probability!r}")
    return student_t_quantile(probability, df)


def _moments(metric: MemberMetric) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
    out: dict[str, tuple[Tensor, Tensor, Tensor]] = {}
    for member in metric.members:
        out.update(member.moments(metric))
    return out


def compared_values(metrics: Sequence[str] | MemberMetric | Callable[[], MemberMetric], k: int | Sequence[int] | None,
                    options: dict[str, dict[str, Any]] | None,
                    common: dict[str, Any]) -> tuple[MemberMetric, list[Any], list[str], list[int]]:
    """The metric a comparison scores every model with, from names (with ``k``, ``options`` and the common
    arguments), a template metric or a factory: (template, its members with per-query values, the keys
    compared in the template's order, each key's column among the members' per-query values).

    Raises:
        ValueError: on a factory that returns no MemberMetric, common arguments given beside a template, a
            member without per-query values, catalogue-level metrics, or no mean-over-queries metric.
    """
    if isinstance(metrics, MemberMetric):
        template = metrics
    elif callable(metrics) and not isinstance(metrics, (str, list, tuple)):
        template = metrics()
        if not isinstance(template, MemberMetric):
            raise ValueError(f"`metrics` factory must return a MemberMetric, got {type(template).__name__}")
    else:
        from torchrec_eval.suites.ranking import RankingMetrics

        template = RankingMetrics(metrics, k=k, options=options, **common)
    if common and not isinstance(metrics, (list, tuple, str)):
        raise ValueError(f"Pass {sorted(common)} to the template metric, not to the comparison")
    members: list[Any] = []
    keys: list[str] = []
    for member in template.members:
        if not member.paired:
            raise ValueError(
                f"{member.keys} do not expose per-query values to difference (their member is not "
                "`paired`): a paired comparison takes top-k and per-query beyond-accuracy metrics"
            )
        catalogue = [key for key in member.keys if key not in member.query_keys]
        if catalogue:
            raise ValueError(f"{catalogue} are catalogue-level, not means over queries: a paired comparison "
                             "needs per-query metrics")
        if member.total_keys:
            raise ValueError(f"{list(member.total_keys)} are totals over queries, not means: a paired comparison "
                             "needs per-query means")
        if member.query_keys:
            members.append(member)
            keys.extend(member.query_keys)
    if not keys:
        raise ValueError(f"`metrics` has no mean-over-queries metric to compare, got {metrics!r}")
    order = [key for key in getattr(template, "order", template.value_keys) if key in keys]
    return template, members, order, [keys.index(key) for key in order]


def per_query_values(template: MemberMetric, members: list[Any], columns: list[int], batch: Any) -> tuple[Tensor, Tensor]:
    """[B, K] each compared key's per-query value of one model's batch, and [B, K] whether it counts."""
    values, counted = [], []
    for member in members:
        v, c = member.per_query(template, batch)
        values.append(v)
        counted.append(c)
    values_t, counted_t = torch.cat(values, dim=1), torch.cat(counted, dim=1)
    device, chosen = values_t.device, tuple(columns)
    # a tensor built once per device: a list index would be copied from the host at every batch
    which = constant(("paired_columns", chosen, device), lambda: torch.tensor(chosen, device=device))
    return values_t.index_select(1, which), counted_t.index_select(1, which)


def confidence_interval(
    metric: MemberMetric, level: float = 0.95, method: str = "t"
) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
    r"""Confidence interval of every mean-over-queries value of a metric, from its state.

    ``mean`` is what ``metric.compute()`` returns; ``low``/``high`` bound it at ``level`` (see
    :mod:`torchrec_eval.comparison.uncertainty` for the formula). Reads the running sums of the state, syncing
    them across processes first exactly as ``compute`` does. With ``num_groups`` every tensor is
    ``[num_groups]``, otherwise 0-d. A value with fewer than two counted queries has a NaN interval.
    Catalogue-level values (coverage, gini, entropy, inter-list diversity) are left out.

    Args:
        metric: a :class:`~torchrec_eval.metrics.base.MemberMetric` (any top-k class, a suite, a
            per-query beyond-accuracy metric).
        level: confidence level in (0, 1).
        method: ``"t"`` (Student-t with n - 1 degrees of freedom, default) or ``"normal"``.

    Returns:
        ``{key: (mean, low, high)}`` in the metric's key order.

    Raises:
        ValueError: on a bad ``level`` or ``method``, or a metric without any mean-over-queries value.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> from torchrec_eval.comparison.uncertainty import confidence_interval
        >>> metric = tre.HitRate(k=1)
        >>> metric.update(torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4]]),
        ...               torch.tensor([[1, 0], [1, 0], [1, 0], [0, 1]]))
        >>> mean, low, high = confidence_interval(metric)["hitrate@1"]
        >>> round(mean.item(), 4), round(low.item(), 4), round(high.item(), 4)
        (0.5, -0.4187, 1.4187)
    """
    level, method = check_probability("level", level), check_method(method)
    if not isinstance(metric, MemberMetric):
        raise ValueError(f"`metric` must be a torchrec_eval MemberMetric, got {type(metric).__name__}")
    if getattr(metric, "weighted", False):
        raise ValueError(f"`metric` is weighted (`weighted=True`): its state holds weighted sums, and these "
                         f"intervals assume one unit of weight per query; got {metric!r}")
    with metric.sync_context(
        dist_sync_fn=metric.dist_sync_fn,
        should_sync=metric._to_sync and not metric._is_synced,
        should_unsync=metric._should_unsync,
    ):
        moments = {key: (total.clone(), total_sq.clone(), count.clone())
                   for key, (total, total_sq, count) in _moments(metric).items()}
    if not moments:
        raise ValueError(
            f"{type(metric).__name__} has no mean-over-queries value ({metric.value_keys}): "
            "confidence intervals exist for per-query metrics only"
        )
    order = [key for key in getattr(metric, "order", metric.value_keys) if key in moments]
    out = {}
    for key in order:
        mean, low, high, _ = interval_from_moments(*moments[key], level=level, method=method)
        if metric.num_groups is None:
            mean, low, high = mean[0], low[0], high[0]
        out[key] = (mean, low, high)
    return out


class ComparedArguments(TorchmetricsArguments, total=False):
    """The keyword arguments of a comparison: the compared suite's common arguments, given with metric names
    (``**kwargs: Unpack[...]``), and torchmetrics' ``Metric`` arguments."""

    empty_target_action: EmptyTargetAction | None
    relevance_threshold: float | None
    ties: Ties | None
    validate_args: bool


class PairedArguments(ComparedArguments, total=False):
    """:class:`ComparedArguments` and the groups of a paired comparison's queries."""

    num_groups: int | None


def split_common(kwargs: dict[str, Any], arguments: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the compared suite's common arguments, the rest) of a comparison's ``**kwargs`` typed by ``arguments``
    (the rest: torchmetrics' arguments, and a misspelt one, which the comparison's own check then names)."""
    common = {name: value for name, value in kwargs.items()
              if name in arguments.__annotations__ and name not in TorchmetricsArguments.__annotations__}
    return common, {name: value for name, value in kwargs.items() if name not in common}


class ConfiguredComparison(StatefulMetric):
    """A comparison whose sums meet those of its own configuration only: the configuration, as the name of an
    empty state (``config_<sha>`` of a canonical description, :func:`~torchrec_eval.metrics.configuration.fingerprint`),
    is checked where another comparison's sums come in. ``load_state_dict`` refuses a checkpoint that names
    another configuration (or none), ``merge_state`` the states of another one, and the ranks compare it before
    their first sync, as the suites do (:mod:`~torchrec_eval.metrics.configuration_guard`): two comparisons of
    NDCG@5 and NDCG@10 have sums of the same shapes, which would otherwise add without a word."""

    _config_state: str

    def _register_configuration(self, description: list[Any]) -> None:
        """Add the empty state named after ``description`` (what gives the sums their meaning)."""
        self._config_state = f"config_{hashlib.sha1(fingerprint(description).encode()).hexdigest()[:12]}"
        self.add_state(self._config_state, default=torch.zeros(0, dtype=torch.float64), dist_reduce_fx="sum")

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        """torchmetrics' loading; a checkpoint of another configuration raises first, the metric untouched."""
        check_loaded_configuration(self, state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _check_merge(self, states: dict[str, Any]) -> None:
        check_same_states(list(self._defaults), states)
        super()._check_merge(states)

    def _configuration_key(self) -> str:
        """The configuration as the ranks compare it before a sync: its state's name and the shapes."""
        return f"{self._config_state} {super()._configuration_key()}"


class PairedComparison(ConfiguredComparison):
    r"""Paired comparison of two models on the same queries: mean difference, its interval, a p-value.

    Fed both models' scores for each batch of queries, it accumulates, per metric value, the sums
    of ``a``, ``b``, ``d = a - b``, ``d^2`` and the count of queries counted by both models -- five
    float64 numbers per value and group, one pass, no per-query storage, exact under distributed
    sync. ``compute`` returns a flat dict (ready for ``log_dict``) with, for each key such as
    ``"ndcg@10"``:

    * ``"ndcg@10/a"``, ``"ndcg@10/b"``: each model's mean over the paired queries;
    * ``"ndcg@10/diff"``: mean of ``a - b``; ``"ndcg@10/low"``, ``"ndcg@10/high"``: its interval at ``level``;
    * ``"ndcg@10/p_value"``: two-sided p-value of "no difference" of the paired t-test (``method="t"``,
      Student's t with n - 1 degrees of freedom at ``diff / (s_d / sqrt(n))``, as
      ``scipy.stats.ttest_rel``) or z-test (``method="normal"``); 1 when every difference is 0.

    Args:
        metrics: metric names as for :class:`~torchrec_eval.RankingMetrics` (``["ndcg@10", "mrr@10"]``),
            a :class:`~torchrec_eval.metrics.base.MemberMetric` used as a template (its metrics and
            options), or a callable returning one.
        k, options: as for ``RankingMetrics`` (with names only).
        level: confidence level of the interval.
        method: ``"t"`` (default: Student-t interval and paired t-test) or ``"normal"`` (normal interval
            and z-test), see :func:`confidence_interval`.
        kwargs: with names: the common arguments (``empty_target_action``, ``relevance_threshold``,
            ``ties``, ``validate_args``, ``num_groups``); always: torchmetrics ``Metric`` arguments.

    Raises:
        ValueError: on a bad ``level``/``method``, a metric that is not a mean over queries (coverage,
            gini, entropy, inter-list diversity, ...), and bad input in ``update``; in ``load_state_dict``,
            ``merge_state`` and a sync, on the sums of another configuration (other metrics, cut-offs,
            options or groups; ``level`` and ``method`` read the sums alike and may differ), every state
            unchanged.

    Example:
        >>> import torch
        >>> from torchrec_eval.comparison.uncertainty import PairedComparison
        >>> compare = PairedComparison(["hitrate@1"])
        >>> target = torch.tensor([[1, 0], [0, 1], [1, 0], [0, 1]])
        >>> model = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4]])
        >>> baseline = torch.tensor([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
        >>> compare.update(model, baseline, target)
        >>> for key, value in compare.compute().items():
        ...     print(key, round(value.item(), 4))
        hitrate@1/a 0.75
        hitrate@1/b 0.25
        hitrate@1/diff 0.5
        hitrate@1/low -0.4187
        hitrate@1/high 1.4187
        hitrate@1/p_value 0.1817
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    paired: Tensor  # the metric state, registered by add_state in __init__

    def __init__(
        self,
        metrics: Sequence[str] | MemberMetric | Callable[[], MemberMetric],
        *,
        k: int | Sequence[int] | None = None,
        options: dict[str, dict[str, Any]] | None = None,
        level: float = 0.95,
        method: str = "t",
        **kwargs: Unpack[PairedArguments],
    ) -> None:
        common, rest = split_common(dict(kwargs), PairedArguments)
        super().__init__(**rest)
        self.level, self.method = check_probability("level", level), check_method(method)
        compared = compared_values(metrics, k, options, common)
        self.template, self.members, self.keys, self._columns = compared  # the template: a child module
        self.num_groups = self.template.num_groups
        p = len(self.keys)
        self.add_state(
            "paired",
            default=torch.zeros(self.num_groups or 1, 5 * p, dtype=torch.float64),
            dist_reduce_fx="sum",
        )
        template = self.template
        self._register_configuration([self.keys, list(self.members), template.empty_target_action,
                                      template.relevance_threshold, template.ties, self.num_groups])

    def _per_query(self, batch: Any) -> tuple[Tensor, Tensor]:
        return per_query_values(self.template, self.members, self._columns, batch)

    _FLAT_COLUMNS = ("preds_a", "preds_b", "target", "mask", "groups")

    def update(
        self,
        preds_a: Tensor | None = None,
        preds_b: Tensor | None = None,
        target: Tensor | None = None,
        *,
        ranked_ids_a: Tensor | None = None,
        ranked_ids_b: Tensor | None = None,
        indexes: Tensor | None = None,
        target_ids: Tensor | None = None,
        target_gains: Tensor | None = None,
        mask: Tensor | None = None,
        exclude_ids: Tensor | None = None,
        groups: Tensor | None = None,
    ) -> None:
        """Score both models on one batch of the same queries (any input form, shared target and options).

        Args:
            preds_a, preds_b: the two models' scores (dense, ids or flat form), or
            ranked_ids_a, ranked_ids_b: their ranked lists (ranked form, with ``target_ids``).
            target, indexes, target_ids, target_gains, mask, exclude_ids: shared by both models.
            groups: ``[B]`` group of each query when built with ``num_groups``.
        """
        if (preds_a is None) != (preds_b is None) or (ranked_ids_a is None) != (ranked_ids_b is None):
            pairs = {"preds_a": preds_a, "preds_b": preds_b, "ranked_ids_a": ranked_ids_a, "ranked_ids_b": ranked_ids_b}
            given = {name: describe_any(value) for name, value in pairs.items()}
            raise ValueError(
                f"Pass both models' inputs: `preds_a` and `preds_b`, or `ranked_ids_a` and `ranked_ids_b`; got {given}"
            )
        self._update_from(
            {
                "preds_a": preds_a,
                "preds_b": preds_b,
                "target": target,
                "ranked_ids_a": ranked_ids_a,
                "ranked_ids_b": ranked_ids_b,
                "indexes": indexes,
                "target_ids": target_ids,
                "target_gains": target_gains,
                "mask": mask,
                "exclude_ids": exclude_ids,
                "groups": groups,
            }
        )

    def _check_flat(self, inputs: dict[str, Any]) -> None:
        for model in ("a", "b"):
            shared = {k: v for k, v in inputs.items() if not k.startswith(("preds_", "ranked_ids_"))}
            self.template._check_flat({**shared, "preds": inputs[f"preds_{model}"]})

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        shared = {k: v for k, v in inputs.items() if not k.startswith(("preds_", "ranked_ids_"))}
        batches = [
            self.template.batch(inputs.get(f"preds_{m}"), ranked_ids=inputs.get(f"ranked_ids_{m}"), **shared)
            for m in ("a", "b")
        ]
        a, counted_a = self._per_query(batches[0])
        b, counted_b = self._per_query(batches[1])
        if a.shape != b.shape:
            raise ValueError(
                f"The two models must be scored on the same queries: got {a.shape[0]} and {b.shape[0]}"
            )
        both = counted_a & counted_b
        zero = torch.zeros((), dtype=torch.float64, device=a.device)
        a, b = torch.where(both, a, zero), torch.where(both, b, zero)
        d = a - b
        rows = torch.cat([a, b, d, d * d, both.to(torch.float64)], dim=1)
        group_ids = batches[0].groups
        if group_ids is not None:
            group_ids = group_ids.to(self.paired.device)
        return lambda: accumulate(self.paired, rows.to(self.paired.device), group_ids)

    def compute(self) -> dict[str, Tensor]:
        p = len(self.keys)
        stats = self.paired
        out: dict[str, Tensor] = {}
        for i, key in enumerate(self.keys):
            sum_a, sum_b, sum_d, sum_d2, count = (stats[:, j * p + i] for j in range(5))
            diff, low, high, stderr = interval_from_moments(sum_d, sum_d2, count, self.level, self.method)
            statistic = torch.where(
                stderr > 0,
                diff.abs() / stderr,
                torch.where(diff == 0, torch.zeros_like(diff), torch.full_like(diff, float("inf"))),
            )
            if self.method == "t":  # the paired t-test: Student's t with n - 1 degrees of freedom
                p_value = student_t_two_sided_p(statistic, (count - 1).clamp(min=1))
            else:
                p_value = torch.special.erfc(statistic / math.sqrt(2.0))
            p_value = torch.where(
                torch.isnan(diff) | (count < 2), torch.full_like(p_value, float("nan")), p_value
            )
            values = {
                "a": sum_a / count,
                "b": sum_b / count,
                "diff": diff,
                "low": low,
                "high": high,
                "p_value": p_value,
            }
            for name, value in values.items():
                out[f"{key}/{name}"] = value if self.num_groups is not None else value[0]
        return out
