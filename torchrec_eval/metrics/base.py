"""The stateful base of every top-k metric: a few float64 sufficient statistics per group.

:class:`RankingMetric` coordinates its members; each job around it lives in its own module, mixed in:
the configuration state and the checkpoints it refuses (:mod:`~torchrec_eval.metrics.state_names`, with
:func:`fingerprint`), the inputs of a batch (:mod:`~torchrec_eval.metrics.batch_inputs`), the members'
increments of a batch (:mod:`~torchrec_eval.metrics.staging`), ``catalogue``,
``compile_update`` and ``per_query`` (:mod:`~torchrec_eval.metrics.entry_points`), the repr
(:mod:`~torchrec_eval.metrics.settings`), all-or-nothing updates (:mod:`~torchrec_eval.metrics.lifecycle`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from torchrec_eval.members.conventions import preset, resolve_common
from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import check_common
from torchrec_eval.metrics.batch_inputs import BatchInputs, check_weighted
from torchrec_eval.metrics.entry_points import EntryPoints
from torchrec_eval.metrics.move_only import MoveOnly
from torchrec_eval.metrics.settings import Settings, given_settings
from torchrec_eval.metrics.staging import Staging
from torchrec_eval.metrics.state_names import ConfigState, fingerprint
from torchrec_eval.pipeline import TIES
from torchrec_eval.pipeline.arguments import check_optional_int

__all__ = ["RankingMetric", "fingerprint"]


class RankingMetric(ConfigState, BatchInputs, Staging, EntryPoints, Settings, MoveOnly):
    """Accumulates one or more metric *members* from one validated, ranked view of each batch.

    A member is a family of metrics with its own float64 sufficient-statistic states: the top-k
    :class:`~torchrec_eval.ranking.plan.Plan` (state ``stats`` [G, 2P + C]: the sum of each value,
    the sum of its square, the numbers of counted queries), or a full-ranking or beyond-accuracy member.
    States never grow with the number of queries, and the torchmetrics sync reduces each with one
    collective. Subclasses only choose the members; see :class:`torchrec_eval.RankingMetrics` for a suite.

    Args:
        members: what to evaluate (:class:`~torchrec_eval.members.interface.Member` s); every member reads
            the same ranking of each batch.
        convention: reproduce another library's numbers: ``"trec"``, ``"ranx"``, ``"torchmetrics"``,
            ``"recbole"``, ``"jurity"``, ``"recommenders"``, ``"spark"`` or ``"rectools"`` (see
            :mod:`torchrec_eval.conventions`); explicit arguments override it.
        empty_target_action: queries with no relevant item are ``"skip"``-ped (default), score
            ``"neg"`` (0) or ``"pos"`` (1), or raise (``"error"``).
        relevance_threshold: a target >= this is relevant for binary metrics; default: target > 0.
        ties: order of equal scores: ``"index"`` (default, lower item index first),
            ``"reverse_index"``, ``"pessimistic"`` (lower gain first), ``"optimistic"``, or
            ``"average"``: the expected value over all orderings of tied items (exact).
        validate_args: check input values; ``False`` skips every check that needs a host sync.
        num_groups: if set, ``update`` takes ``groups`` [B] in [0, num_groups) and ``compute``
            returns a [num_groups] tensor per value (NaN for a group with no counted query).
        single_key: return a tensor rather than a one-entry dict from ``compute``.
        weighted: ``update`` takes ``sample_weight`` [B] >= 0, the weight of each query (the importance
            of a user or a session; default 1): every mean over queries becomes a weighted mean, and
            every pooled ratio (GAUC, pooled MPR, FCP, CTR) weighs each query's numerator and
            denominator, in the state and so in the sync. Not for catalogue metrics (coverage, ...);
            no confidence intervals (they assume unit weights). Not with the flat form.
        kwargs: torchmetrics ``Metric`` arguments (``sync_on_compute``, ``dist_sync_fn``, ...).
            ``compute_with_cache`` defaults to False here: see :mod:`torchrec_eval.metrics.lifecycle`.

    States are left out of ``state_dict`` as in torchmetrics (a checkpoint loads into a model whose
    suite changed); ``metric.persistent(True)`` puts them in, for a mid-epoch resume.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False


    def __init__(
        self,
        members: Sequence[Member],
        *,
        convention: str | None = None,
        empty_target_action: str | None = None,
        relevance_threshold: float | None = None,
        ties: str | None = None,
        validate_args: bool = True,
        num_groups: int | None = None,
        single_key: bool = False,
        weighted: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        given = {"convention": convention, "empty_target_action": empty_target_action,
                 "relevance_threshold": relevance_threshold, "ties": ties, "num_groups": num_groups}
        self._settings = given_settings(given, validate_args, weighted)  # for repr
        empty_target_action, ties = resolve_common(convention, empty_target_action, ties)
        self.duplicates = preset(convention).duplicates
        check_common(empty_target_action, relevance_threshold)
        if ties not in TIES:
            raise ValueError(f"`ties` must be one of {TIES}, got {ties!r}")
        num_groups = check_optional_int("num_groups", num_groups, 1)
        self.members = list(members)
        self.value_keys = [key for member in self.members for key in member.keys]
        if len(set(self.value_keys)) != len(self.value_keys):
            raise ValueError(f"A metric is requested twice: {self.value_keys}")
        self.weighted = check_weighted(weighted, self.members)
        self.empty_target_action = empty_target_action
        self.relevance_threshold = relevance_threshold
        self.ties = ties
        self.validate_args = validate_args
        self.num_groups = num_groups
        self.single_key = single_key
        for member in self.members:
            member.check_ties(ties)
            member.add_states(self, num_groups or 1)
        self._add_config_state()

    _FLAT_COLUMNS = ("preds", "target", "mask", "groups")

    def update(
        self,
        preds: Tensor | None = None,
        target: Tensor | None = None,
        *,
        indexes: Tensor | None = None,
        target_ids: Tensor | None = None,
        target_gains: Tensor | None = None,
        ranked_ids: Tensor | None = None,
        mask: Tensor | None = None,
        exclude_ids: Tensor | None = None,
        groups: Tensor | None = None,
        sample_weight: Tensor | None = None,
    ) -> None:
        """Rank one batch and add its queries to the state; on any error the state is left unchanged.

        Args:
            preds, target, indexes, target_ids, target_gains, ranked_ids, mask, exclude_ids: one input
                form of :mod:`torchrec_eval.pipeline.prepare` (dense, ids, ranked or flat).
            groups: [B] group of each query, when the metric was built with ``num_groups``.
            sample_weight: [B] weight of each query, when the metric was built with ``weighted=True``.
        """
        self._update_from(
            {
                "preds": preds,
                "target": target,
                "indexes": indexes,
                "target_ids": target_ids,
                "target_gains": target_gains,
                "ranked_ids": ranked_ids,
                "mask": mask,
                "exclude_ids": exclude_ids,
                "groups": groups,
                "sample_weight": sample_weight,
            }
        )

    def compute(self) -> Tensor | dict[str, Tensor]:
        """Mean over counted queries of each value (a [num_groups] tensor per value with groups)."""
        results: dict[str, Tensor] = {}
        for member in self.members:
            results.update(member.compute(self))
        if self.num_groups is None:
            results = {key: value[0] for key, value in results.items()}
        return self._output(results)

    def _output(self, results: dict[str, Tensor]) -> Tensor | dict[str, Tensor]:
        """Values in the order of the metric's keys (keys absent from ``results`` left out), or the only one."""
        ordered = {key: results[key] for key in self._ordered_keys() if key in results}
        return next(iter(ordered.values())) if self.single_key else ordered

    def _ordered_keys(self) -> list[str]:
        """The value keys in the order of ``compute``."""
        return self.value_keys
