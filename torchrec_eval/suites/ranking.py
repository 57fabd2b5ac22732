"""RankingMetrics: a whole suite of top-k metrics from one ranking per batch and one state tensor."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack, cast

from torch import Tensor, nn
from torchmetrics import Metric

from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.families import build_members, canonical, families, find_family, upper_bound
from torchrec_eval.metrics.item_inputs import check_item_inputs, item_extras, reads_item_inputs
from torchrec_eval.metrics.lifecycle import keywords_checked
from torchrec_eval.metrics.per_query import per_query
from torchrec_eval.pipeline import Batch, FormInputs
from torchrec_eval.pipeline.arguments import check_k
from torchrec_eval.ranking import families as _registered  # noqa: F401  (enters every top-k family)


def _parse(name: str) -> tuple[str, int | None]:
    if not isinstance(name, str):
        raise ValueError(f"Metric names must be strings such as 'ndcg@10', got {name!r}")
    family, _, cutoff = name.strip().lower().partition("@")
    family = canonical(family)
    if find_family(family) is None:
        raise ValueError(f"Unknown metric {name!r}; known metrics: {sorted(families())} (with '@k', e.g. 'ndcg@10')")
    if not cutoff:
        return family, None
    if not cutoff.isdigit() or int(cutoff) < 1:
        raise ValueError(f"The cut-off in {name!r} must be an int >= 1, as in 'ndcg@10'")
    return family, int(cutoff)


def _direction(key: str) -> bool | None:
    """``higher_is_better`` of a value key (``"mpr"``, ``"ndcg@10"``)."""
    return families()[key.partition("@")[0]].higher_is_better


class RankingMetrics(MemberMetric):
    """A suite of top-k metrics: one ``torch.topk`` per batch for all of them, one flat state.

    ``compute`` returns a flat dict ``{"ndcg@10": t, "map@10": t, ...}`` in the order requested,
    ready for Lightning's ``log_dict``; with ``prefix="val/"`` its keys are ``"val/ndcg@10"``, ... (as in
    torchmetrics' ``MetricCollection``), and so are those of ``forward``, ``per_query``, ``keys`` and
    ``items``.

    Args:
        metrics: names with cut-offs (``["ndcg@10", "map@10", "recall@20", "rprecision"]``), or bare
            family names combined with ``k``. Aliases: ``hr``/``hit_rate``, ``r_precision``, ``ap``.
        k: cut-offs applied to every bare name in ``metrics`` (an int or a sequence of ints).
        options: per-family options, e.g. ``{"ndcg": {"gain": "exp"}, "map": {"normalizer": "r"}}``.
        prefix, postfix: strings put before / after every result key (``"val/"``, ``"_epoch"``).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on an unknown metric name (the message lists the known ones), a bad cut-off, an
            option for a family that is not in the suite, a ``prefix``/``postfix`` that is not a string,
            and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> suite = tre.RankingMetrics(["ndcg@2", "precision@2", "mrr@2"])
        >>> suite.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[0, 1, 0, 1]]))
        >>> {key: round(value.item(), 4) for key, value in suite.compute().items()}
        {'ndcg@2': 0.3869, 'precision@2': 0.5, 'mrr@2': 0.5}
        >>> tre.RankingMetrics(["ndcg@10", "mpr"], ties="average", prefix="val/")
        RankingMetrics(ndcg@10, mpr, ties='average', prefix='val/')
    """

    def __init__(
        self,
        metrics: Sequence[str],
        k: int | Sequence[int] | None = None,
        *,
        options: dict[str, dict[str, Any]] | None = None,
        prefix: str | None = None,
        postfix: str | None = None,
        **kwargs: Unpack[MetricArguments],
    ) -> None:
        for name, value in (("prefix", prefix), ("postfix", postfix)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"`{name}` must be a string or None, got {value!r}")
        if isinstance(metrics, str) or not metrics:
            raise ValueError(
                f"`metrics` must be a non-empty list of names such as ['ndcg@10'], got {metrics!r}"
            )
        given = [] if k is None else list(k) if isinstance(k, (list, tuple)) else [k]
        extra_ks: list[int | None] = [check_k(one) for one in given]
        requested: dict[str, list[int | None]] = {}
        order: list[str] = []
        for name in metrics:
            family, cutoff = _parse(name)
            spec = families()[family]
            cutoffs = [cutoff] if cutoff is not None or not extra_ks or spec.cutoff == "none" else extra_ks
            if cutoff is None and not extra_ks and spec.checks_cutoff:
                raise ValueError(f"Metric {name!r} needs a cut-off: write '{family}@10' or pass `k`")
            for one in cutoffs:
                key = family if one is None else f"{family}@{one}"
                if key in order:
                    raise ValueError(f"Metric {key!r} is requested twice in {list(metrics)}")
                order.append(key)
                requested.setdefault(family, []).append(one)
        options = options or {}
        for family in options:
            if canonical(family) not in requested:
                raise ValueError(f"`options` names {family!r}, which is not in the suite {sorted(requested)}")
        options = {canonical(family): value for family, value in options.items()}
        members = build_members(requested, options, kwargs.get("convention"), kwargs.get("ties"))
        super().__init__(members, **kwargs)
        self._reads_item_inputs = reads_item_inputs(members)
        self.order = order
        # strings, never None: torchmetrics' MetricCollection strips them from its keys with str.replace
        self.prefix, self.postfix = prefix or "", postfix or ""
        directions = {_direction(key) for key in order}
        # a class constant in torchmetrics; a suite is better when higher only if each of its values is
        self.__dict__["higher_is_better"] = directions.pop() if len(directions) == 1 else None
        self._show(options=options or None, prefix=prefix, postfix=postfix)
        # One Metric view per key, as submodules so that Lightning finds them on the LightningModule.
        self._views = nn.ModuleDict({str(i): SuiteValue(self, key) for i, key in enumerate(order)})
        self._round: _Round | None = None

    def update(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
               sample_weight: Tensor | None = None, item_weights: Tensor | None = None,
               propensity: Tensor | None = None, reward_estimate: Tensor | None = None,
               **inputs: Unpack[FormInputs]) -> None:
        """:meth:`~torchrec_eval.metrics.base.MemberMetric.update`, with the per-item inputs of the families that
        read them (:mod:`~torchrec_eval.metrics.item_inputs`): ``item_weights`` (``weighted_rbp``), ``propensity``
        and ``reward_estimate`` (the off-policy CTR estimates)."""
        given = {name: value for name, value in (("item_weights", item_weights), ("propensity", propensity),
                                                  ("reward_estimate", reward_estimate)) if value is not None}
        if given:
            check_item_inputs(self.members, given, inputs)
        self._update_from({"preds": preds, "target": target, "groups": groups, "sample_weight": sample_weight,
                           **given, **inputs})

    @keywords_checked
    def per_query(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
                  query_ids: Any = None, as_frame: bool = False, item_weights: Tensor | None = None,
                  propensity: Tensor | None = None, reward_estimate: Tensor | None = None,
                  **inputs: Unpack[FormInputs]) -> Any:
        """:meth:`~torchrec_eval.metrics.base.MemberMetric.per_query`, with :meth:`update`'s per-item inputs."""
        given = {"item_weights": item_weights, "propensity": propensity, "reward_estimate": reward_estimate}
        check_item_inputs(self.members, given, inputs)
        return per_query(self, {"preds": preds, "target": target, "groups": groups,
                                **{name: value for name, value in given.items() if value is not None}, **inputs},
                         query_ids, as_frame)

    def batch(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
              item_weights: Tensor | None = None, propensity: Tensor | None = None,
              reward_estimate: Tensor | None = None, **inputs: Tensor | None) -> Batch:
        """The validated, ranked batch, with the per-rank values of the per-item inputs in ``extras``."""
        batch = super().batch(preds, target, groups=groups, **inputs)
        if self._reads_item_inputs:
            given = {"item_weights": item_weights, "propensity": propensity, "reward_estimate": reward_estimate}
            batch.extras = item_extras(self.members, batch, preds, target, inputs, given, self.validate_args)
        return batch

    def compute(self) -> dict[str, Tensor]:
        """``{result key: value}`` in the order of the suite (a [num_groups] tensor per value with groups)."""
        results = super().compute()
        return results if isinstance(results, dict) else {self.result_key(self.order[0]): results}

    def view_value(self, key: str) -> Tensor:
        """The value of ``key`` for its :class:`SuiteValue`: the keys read in one round share one compute.

        A round starts with a synced ``compute`` and lasts while each key is read at most once and the
        suite is not updated, so ``log_dict(suite)`` syncs once per epoch whatever the number of keys.
        Every process reads the same keys in the same order at the epoch's end, so all of them start
        each round, and join its collective, together.
        """
        done = self._round
        if done is None or key in done.read or done.update_count != self._update_count:
            done = self._round = _Round(self.compute(), self._update_count)
        done.read.add(key)
        return done.result[self.result_key(key)]

    def reset(self) -> None:
        super().reset()
        self._round = None

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        super().merge_state(incoming_state)
        self._round = None

    @classmethod
    def from_config(cls, config: str | os.PathLike[str] | dict[str, Any]) -> RankingMetrics:
        """Build a suite from a YAML file, a ready-made suite by name (``"recsys"``, ``"trec"``, ``"beyond"``)
        or a dict (see :mod:`torchrec_eval.suites.config`)."""
        from torchrec_eval.suites.config import suite_kwargs

        return cls(**suite_kwargs(config))

    def result_key(self, key: str) -> str:
        """The result key of a metric: ``prefix + key + postfix``."""
        return f"{self.prefix}{key}{self.postfix}"

    def _ordered_keys(self) -> list[str]:
        return self.order

    def _output(self, results: dict[str, Tensor]) -> dict[str, Tensor]:
        ordered = {key: results[key] for key in self._ordered_keys() if key in results}
        return {self.result_key(key): value for key, value in ordered.items()}

    def keys(self, keep_base: bool = False) -> list[str]:
        """The result keys, in the order of ``compute``; ``keep_base``: without prefix and postfix."""
        return list(self.order) if keep_base else [self.result_key(key) for key in self.order]

    def __repr__(self) -> str:  # the names, not the SuiteValue submodules of Lightning's logging
        return f"{type(self).__name__}({self.extra_repr()})"

    def values(self) -> list[SuiteValue]:
        return [cast(SuiteValue, view) for view in self._views.values()]

    def items(self) -> list[tuple[str, SuiteValue]]:
        """``(key, metric)`` pairs, one :class:`SuiteValue` per result, for ``LightningModule.log_dict(suite)``.

        Logging the suite object (rather than ``suite.compute()``) lets Lightning compute it at the end of
        the epoch (each value syncs the suite's few state tensors under DDP) and reset it.
        """
        return list(zip(self.keys(), self.values(), strict=True))


@dataclass
class _Round:
    """One synced result of a suite, and the keys its views have read from it."""

    result: dict[str, Tensor]
    update_count: int
    read: set[str] = field(default_factory=set)


class SuiteValue(Metric):
    """One value of a :class:`RankingMetrics` suite as a ``Metric``: ``compute`` and ``reset`` are the suite's.

    It holds no state of its own: the suite is updated once per batch and computed (and synced) once per
    epoch however many of its values are logged (:meth:`RankingMetrics.view_value`); ``reset`` resets
    the whole suite.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, suite: RankingMetrics, key: str) -> None:
        super().__init__()
        self.__dict__["_suite"] = suite  # not registered as a submodule: the suite is the parent
        self.key = key
        self.__dict__["higher_is_better"] = _direction(key)  # a class constant in torchmetrics

    def update(self, *args: Any, **kwargs: Unpack[MetricArguments]) -> None:
        raise RuntimeError(f"Update the suite, not its value {self.key!r}: call suite.update(...)")

    def _wrap_compute(self, compute: Any) -> Any:
        return compute  # the suite's compute does the sync and caching

    @property
    def suite(self) -> RankingMetrics:
        """The suite this value reads."""
        return cast(RankingMetrics, self.__dict__["_suite"])

    def compute(self) -> Tensor:
        return self.suite.view_value(self.key)

    def plot(self, val: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """The value over the epoch (or ``val``, or a list of values) as torchmetrics' ``Metric.plot``."""
        from torchrec_eval.plotting import plot_values

        return plot_values(self.compute() if val is None else val, ax, title=self.key, label=self.key,
                           higher_is_better=self.higher_is_better, upper_bound=upper_bound([self.key]))

    def reset(self) -> None:
        super().reset()
        self.suite.reset()

    @property
    def _forward_cache(self) -> Any:
        suite = self.__dict__.get("_suite")  # None while Metric.__init__ sets the attribute
        if suite is None:
            return None
        cache = suite._forward_cache
        return cache[suite.result_key(self.key)] if isinstance(cache, dict) else None

    @_forward_cache.setter
    def _forward_cache(self, value: Any) -> None:
        pass
