"""The stateful base of every top-k, pairwise and beyond-accuracy metric: a few float64 sufficient
statistics per group, from members that share one ranking of each batch.

:class:`MemberMetric` is readable here in one class: the constructor, the update path (``update`` ->
``_stage`` -> one :meth:`batch` for every member -> their increments, written only when all succeeded),
``compute``, the entry points ``catalogue``, ``compile_update`` and ``per_query``, the checks of the
arguments it adds to the input forms, and the configuration its checkpoints carry. Each job it delegates
is a function in its own module: :mod:`~torchrec_eval.metrics.arguments` (``groups``, ``sample_weight``),
:mod:`~torchrec_eval.metrics.configuration` (the ``config_<sha>`` state, checkpoints of another
configuration), :mod:`~torchrec_eval.metrics.compiled`, :mod:`~torchrec_eval.metrics.per_query`,
:mod:`~torchrec_eval.metrics.shown_arguments` (the repr), and below it
:class:`~torchrec_eval.metrics.lifecycle.StatefulMetric` (all-or-nothing updates, the flat stream,
states that keep float64).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Unpack

import torch
from torch import Tensor

from torchrec_eval.catalogue import CatalogueBatch
from torchrec_eval.members.conventions import preset, resolve_common
from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import check_common, needs_of
from torchrec_eval.metrics.arguments import (
    check_weighted,
    checked_groups,
    checked_weights,
    refuse_flat_weights,
)
from torchrec_eval.metrics.compiled import compile_update, compiled_increments, give_up_compiling
from torchrec_eval.metrics.configuration import (
    check_loaded_configuration,
    check_same_states,
    config_state_name,
    fingerprint,
)
from torchrec_eval.metrics.configuration_guard import fixed_shapes
from torchrec_eval.metrics.lifecycle import Apply, StatefulMetric, keywords_checked
from torchrec_eval.metrics.per_query import per_query
from torchrec_eval.metrics.shown_arguments import given_arguments, shown, shown_repr
from torchrec_eval.pipeline import INPUT_NAMES, TIES, Batch, FormInputs, Inputs, Rules, prepare_batch
from torchrec_eval.pipeline.arguments import check_optional_int
from torchrec_eval.pipeline.validation import checked_inputs

__all__ = ["MemberMetric", "fingerprint"]


class MemberMetric(StatefulMetric):
    """Accumulates one or more metric *members* from one validated, ranked view of each batch.

    A member is a family of metrics with its own float64 sufficient-statistic states: the top-k
    :class:`~torchrec_eval.ranking.member.TopKMember` (state ``stats`` [G, 2P + C]: the sum of each value,
    the sum of its square, the numbers of counted queries), or a full-ranking or beyond-accuracy member.
    States never grow with the number of queries, and the torchmetrics sync reduces each with one
    collective. Subclasses only choose the members; see :class:`torchrec_eval.RankingMetrics` for a suite.

    Args:
        members: what to evaluate (:class:`~torchrec_eval.members.interface.Member` s); every member reads
            the same ranking of each batch.
        convention: reproduce another library's numbers: ``"trec"``, ``"ranx"``, ``"torchmetrics"``,
            ``"recbole"``, ``"jurity"``, ``"recommenders"``, ``"spark"``, ``"rectools"``, ``"lenskit"`` or ``"cornac"`` (see
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
    higher_is_better: bool | None = True
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
        self._compile_options: dict[str, Any] | None = None  # set by compile_update()
        self._compiled_step: Any = None  # the compiled graph, built at the first update after it
        given = {"convention": convention, "empty_target_action": empty_target_action,
                 "relevance_threshold": relevance_threshold, "ties": ties, "num_groups": num_groups}
        self._shown_arguments = given_arguments(given, validate_args, weighted)  # for repr
        empty_target_action, ties = resolve_common(convention, empty_target_action, ties)
        self.duplicates = preset(convention).duplicates
        check_common(empty_target_action, relevance_threshold)
        if ties not in TIES:
            raise ValueError(f"`ties` must be one of {TIES}, got {ties!r}")
        num_groups = check_optional_int("num_groups", num_groups, 1)
        self.members = list(members)
        self._needs = needs_of(self.members)  # what every batch's ranking must hold, worked out once
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
        self._config_state = config_state_name(self, self.members)  # after the members' states
        self.add_state(self._config_state, default=torch.zeros(0, dtype=torch.float64), dist_reduce_fx="sum")

    _FLAT_COLUMNS = ("preds", "target", "mask", "groups")

    def update(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
               sample_weight: Tensor | None = None, **inputs: Unpack[FormInputs]) -> None:
        """Rank one batch and add its queries to the state; on any error the state is left unchanged.

        Args:
            preds, target, inputs: one input form of :mod:`torchrec_eval.pipeline.prepare` (dense, ids, ranked
                or flat): ``inputs`` are the keywords of :class:`~torchrec_eval.pipeline.FormInputs`
                (``indexes``, ``target_ids``, ``target_gains``, ``ranked_ids``, ``mask``, ``exclude_ids``).
            groups: [B] group of each query, when the metric was built with ``num_groups``.
            sample_weight: [B] weight of each query, when the metric was built with ``weighted=True``.
        """
        self._update_from({"preds": preds, "target": target, "groups": groups, "sample_weight": sample_weight,
                           **inputs})

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

    # the update path --------------------------------------------------------------------------------
    def batch(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
              **inputs: Tensor | None) -> Batch:
        """Validate and rank one batch once for every member, with this metric's settings and groups (their values
        checked with the batch's, in its one host sync)."""
        inputs = {**inputs, "preds": preds, "target": target, "groups": groups}
        batch = prepare_batch(Inputs.of(inputs), self._needs, self._rules())
        if batch.groups is not None:
            batch.groups = batch.groups.to(self.device)
        return batch

    def _rules(self) -> Rules:
        """How this metric reads a batch (after :meth:`_inputs`)."""
        return Rules(self.ties, self._ranking_threshold(), self.validate_args, self.duplicates, self.num_groups)

    def _checked_groups(self, groups: Tensor | None) -> Tensor | None:
        """``groups`` given exactly when the metric has ``num_groups``, integers in range, on its device (for the
        batches that are not prepared from an input form: a catalogue's, two rankings' overlap)."""
        return checked_groups(groups, self.num_groups, self.device, self.validate_args)

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        """Every member's increments of one batch (any may raise: nothing is written yet), and the call that
        writes them. After ``compile_update`` they come from one compiled graph (the flat form stays eager)."""
        weight = inputs.get("sample_weight")
        inputs = self._inputs({name: value for name, value in inputs.items() if name != "sample_weight"})
        failure = None
        if self._compile_options is not None and inputs.get("indexes") is None:
            try:  # pure: nothing is touched yet
                return functools.partial(self._add, compiled_increments(self, inputs, weight))
            except Exception as error:  # noqa: BLE001 - bad input raises its named ValueError just below
                failure = error
        batch = self.batch(**inputs)
        if weight is not None:
            batch.weights = checked_weights(weight, batch.num_queries, self.weighted, self.device, self.validate_args)
        if failure is not None:  # the eager path takes this input: the graph itself failed
            give_up_compiling(self, failure)
        return self._stage_batch(batch)

    def _stage_batch(self, batch: Batch) -> Apply:
        applies = [member.stage(self, batch) for member in self.members]  # any error: nothing applied yet

        def apply() -> None:
            for one in applies:
                one()

        return apply

    def _add(self, increments: dict[str, Tensor]) -> None:
        for name, increment in increments.items():
            getattr(self, name).add_(increment)

    def _inputs(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The caller's arguments as an input form of :mod:`torchrec_eval.pipeline.prepare` (a subclass may
        rewrite them)."""
        return inputs

    def _ranking_threshold(self) -> float | None:
        """The relevance threshold of the inputs after :meth:`_inputs` (a subclass that encodes them may change
        it)."""
        return self.relevance_threshold

    def _check_flat(self, inputs: dict[str, Any]) -> None:
        """The checks of a whole flat-form call (before the stream holds any of its rows back)."""
        refuse_flat_weights(inputs.get("sample_weight"))
        form_inputs = {name: value for name, value in self._inputs(inputs).items() if name in INPUT_NAMES}
        checked_inputs(Inputs.of(form_inputs), self._needs, self._rules())

    # entry points beside update ----------------------------------------------------------------------
    def catalogue(
        self,
        num_items: int,
        *,
        target_ids: Tensor,
        target_gains: Tensor | None = None,
        target_scores: Tensor | None = None,
        exclude_ids: Tensor | None = None,
        groups: Tensor | None = None,
        process_group: Any = None,
    ) -> CatalogueBatch:
        """Evaluate one query batch against a catalogue scored in chunks, with no [B, N] score matrix: a
        :class:`~torchrec_eval.catalogue.CatalogueBatch` (its arguments, errors and an example there)."""
        return CatalogueBatch(self, num_items, target_ids=target_ids, target_gains=target_gains,
                              target_scores=target_scores, exclude_ids=exclude_ids, groups=groups,
                              process_group=process_group)

    def compile_update(self, **compile_kwargs: Any) -> Any:
        """Run every later ``update`` as one ``torch.compile(fullgraph=True)`` graph per batch shape; returns the
        metric (:func:`~torchrec_eval.metrics.compiled.compile_update`: what it refuses, and an example)."""
        return compile_update(self, **compile_kwargs)

    @keywords_checked
    def per_query(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
                  query_ids: Any = None, as_frame: bool = False, **inputs: Unpack[FormInputs]) -> Any:
        """Every value of the metric for each query of one batch, without touching the state: ``update``'s
        arguments and checks (:func:`~torchrec_eval.metrics.per_query.per_query`: the returns and an example)."""
        return per_query(self, {"preds": preds, "target": target, "groups": groups, **inputs}, query_ids, as_frame)

    # configuration: checkpoints, merges, syncs, pickles, repr -----------------------------------------
    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        """torchmetrics' loading; a checkpoint of another configuration raises first, with the metric untouched."""
        check_loaded_configuration(self, state_dict, prefix)
        loads_sums = any(prefix + name in state_dict for name in self._defaults)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        if loads_sums:  # loaded sums are data: compute() need not warn that nothing was updated
            self._update_count = max(self._update_count, 1)

    def _check_merge(self, states: dict[str, Any]) -> None:
        check_same_states(list(self._defaults), states)
        super()._check_merge(states)

    def _configuration_key(self) -> str:
        """The configuration as the ranks compare it before a sync: its state's name and the shapes."""
        return f"{self._config_state} {fixed_shapes(self)}"

    def __getstate__(self) -> dict[str, Any]:
        """torchmetrics' pickled state, without the compiled graph (it does not pickle; the copy builds its own
        at its first update)."""
        state = super().__getstate__()
        if state.get("_compiled_step") is not None:
            state["_compiled_step"] = None
        return state

    def _show(self, **arguments: Any) -> None:
        """Show these constructor arguments in repr, those that are not None (tensors by dtype and shape)."""
        self._shown_arguments.update({name: shown(value) for name, value in arguments.items() if value is not None})

    def extra_repr(self) -> str:
        """The value keys and the arguments that differ from the defaults: ``ndcg@5, ndcg@10, ties='average'``."""
        return shown_repr(self._ordered_keys(), self._shown_arguments)
