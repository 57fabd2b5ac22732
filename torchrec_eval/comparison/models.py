r"""``ModelComparison``: M models scored on the same queries in one pass, compared pair by pair with a sound
significance test, in fixed memory, exact across batches and processes.

Per compared metric it keeps, over the queries every model counts, each model's sum and the sums of products
of every two models' values (:math:`\sum_q x_{qi}` [K, M], :math:`\sum_q x_{qi} x_{qj}` [K, M, M], the count):
means, paired differences and their variances, so the paired t-test. A randomization or bootstrap test adds
one sum per replicate (:math:`R` of them, [R, K, M]), the replicate's random signs, permutations or weights
being a hash of the query's id (:mod:`~torchrec_eval.comparison.statistics.replicates`): any split of the queries
into batches and ranks gives the same sums. The statistics: :mod:`~torchrec_eval.comparison.statistics.significance`,
read from the sums by :mod:`~torchrec_eval.comparison.model_pairs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack

import torch
from torch import Tensor

from torchrec_eval.comparison.model_pairs import check_settings, pair_results, replicate_increments
from torchrec_eval.comparison.report import ComparisonReport
from torchrec_eval.comparison.statistics.replicate_sums import check_replicates_fit
from torchrec_eval.comparison.uncertainty import (
    ComparedArguments,
    ConfiguredComparison,
    compared_values,
    per_query_values,
    split_common,
)
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.lifecycle import Apply
from torchrec_eval.pipeline.validation import describe_any

__all__ = ["ModelComparison"]


class ModelComparison(ConfiguredComparison):
    r"""Compare M >= 2 models on the same queries: each model's mean, and for every pair the mean difference,
    its effect size and the p-value of ``test``, adjusted for the pairs by ``correction``.

    ``update(preds=[scores_1, ..., scores_M], target, query_ids=...)`` scores every model on one batch of the
    same queries (shared target and options). ``compute`` returns a flat dict (ready for ``log_dict``):
    ``"<key>/<model>"`` each model's mean, and per pair ``"<key>/<a>_vs_<b>/diff"``, ``.../effect_size``
    (mean difference over its standard deviation), ``.../p_value`` and with ``correction``
    ``.../p_adjusted``; the bootstrap adds ``.../low`` and ``.../high``, the percentile interval at ``level``.

    Tests (:mod:`~torchrec_eval.comparison.statistics.significance`): ``"student"`` (the paired t-test, exact Student t),
    ``"fisher"`` (random sign flips of each query's difference; ``exact=True`` enumerates all 2^n when the
    query ids are 0..n-1 and ``replicates`` is 2^n), ``"bootstrap"`` (Poisson weights per query) and
    ``"tukey"`` (the randomized Tukey HSD: random permutations of the models within each query; it controls
    the error over all pairs by itself, no ``correction`` needed). Sign and Wilcoxon tests are not offered:
    they are not calibrated at recommender scale (Smucker et al. 2007; Ihemelandu & Ekstrand 2023).

    Args:
        metrics: metric names as for :class:`~torchrec_eval.RankingMetrics`, a template
            :class:`~torchrec_eval.metrics.base.MemberMetric`, or a callable returning one.
        models: the M model names (keys of the output), in the order of ``update``'s ``preds``.
        test: one of ``"student"``, ``"fisher"``, ``"bootstrap"``, ``"tukey"``.
        replicates: R, the random replicates of the randomization and bootstrap tests (their p-values' own
            Monte-Carlo error is about sqrt(p (1 - p) / R)). Their state is [R, K, M] float64 (the bootstrap
            adds [R, K] and [R, K, M, M]); an update draws them in blocks of bounded memory (under 64 MB
            beyond the batch and that increment, whatever its size and R).
        seed: the seed of the replicates' hash (the same seed, the same replicates on every process).
        correction: ``None``, ``"bonferroni"``, ``"holm"`` or ``"bh"`` (Benjamini-Hochberg), over the pairs of
            each metric.
        level: the confidence level of the bootstrap interval. The bootstrap's interval and p are those of
            the replicates that draw at least two queries (a replicate of fewer has no variance, so no t):
            the bootstrap conditioned on a resample of size >= 2, which at n queries drops a share
            e^-n (1 + n) of them (4% at n = 5, 0.05% at n = 10).
        exact: with ``test="fisher"``, enumerate every sign pattern of queries 0..n-1 (R = 2^n).
        k, options, kwargs: as for :class:`~torchrec_eval.comparison.uncertainty.PairedComparison`.

    Raises:
        ValueError: on fewer than 2 models, an unknown ``test`` or ``correction``, too few replicates (for
            ``exact``, or fewer than one in each tail of the bootstrap interval at ``level``), more than this
            machine's memory holds (their states and torchmetrics' copy of them; the message gives the
            bytes), and in ``update`` on a number of score tensors other than M, a missing or malformed
            ``query_ids``, and with ``validate_args`` an id repeated within the batch or beyond what
            ``exact`` enumerates; every state unchanged.

    Example:
        >>> import torch
        >>> from torchrec_eval import ModelComparison
        >>> compare = ModelComparison(["hitrate@1"], models=["model", "baseline"])
        >>> target = torch.tensor([[1, 0], [0, 1], [1, 0], [0, 1]])
        >>> model = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4]])
        >>> baseline = torch.tensor([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
        >>> compare.update([model, baseline], target)
        >>> {key: round(value.item(), 4) for key, value in compare.compute().items()}  # doctest: +NORMALIZE_WHITESPACE
        {'hitrate@1/model': 0.75, 'hitrate@1/baseline': 0.25, 'hitrate@1/model_vs_baseline/diff': 0.5,
         'hitrate@1/model_vs_baseline/effect_size': 0.866, 'hitrate@1/model_vs_baseline/p_value': 0.1817}
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    # the states, registered by add_state in __init__
    sums: Tensor
    products: Tensor
    counts: Tensor
    replicate_sums: Tensor
    replicate_counts: Tensor
    replicate_products: Tensor

    def __init__(self, metrics: Sequence[str] | MemberMetric | Callable[[], MemberMetric], *, models: Sequence[str],
                 test: str = "student", replicates: int = 1000, seed: int = 0, correction: str | None = None,
                 level: float = 0.95, exact: bool = False, k: int | Sequence[int] | None = None,
                 options: dict[str, dict[str, Any]] | None = None, **kwargs: Unpack[ComparedArguments]) -> None:
        common, rest = split_common(dict(kwargs), ComparedArguments)
        super().__init__(**rest)
        self.settings = check_settings(models, test, replicates, seed, correction, level, exact)
        self.models, self.test, self.replicates = self.settings.models, test, self.settings.replicates
        self.template, self.members, self.keys, self._columns = compared_values(metrics, k, options, common)
        keys, size = len(self.keys), len(self.models)
        check_replicates_fit(test, self.replicates, keys, size)  # before torch tries to allocate them
        self.add_state("sums", default=torch.zeros(keys, size, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("products", default=torch.zeros(keys, size, size, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("counts", default=torch.zeros(keys, dtype=torch.float64), dist_reduce_fx="sum")
        if test != "student":
            self.add_state("replicate_sums", default=torch.zeros(self.replicates, keys, size, dtype=torch.float64),
                           dist_reduce_fx="sum")
        # the configuration, as the name of an empty state: a checkpoint or merge of another comparison (another
        # test, seed or model list, with states of the same shapes) is refused instead of read as this one's
        self._register_configuration([self.keys, list(self.members), self.template.empty_target_action,
                                      self.template.relevance_threshold, self.template.ties, self.models, test,
                                      self.replicates, self.settings.seed, exact])
        if test == "bootstrap":
            self.add_state("replicate_counts", default=torch.zeros(self.replicates, keys, dtype=torch.float64),
                           dist_reduce_fx="sum")
            self.add_state("replicate_products", dist_reduce_fx="sum",
                           default=torch.zeros(self.replicates, keys, size, size, dtype=torch.float64))

    def update(self, preds: Sequence[Tensor] | None = None, target: Tensor | None = None, *,
               ranked_ids: Sequence[Tensor] | None = None, query_ids: Tensor | None = None,
               target_ids: Tensor | None = None, target_gains: Tensor | None = None, mask: Tensor | None = None,
               exclude_ids: Tensor | None = None) -> None:
        """Score the M models on one batch of the same queries.

        Args:
            preds: the M models' scores (dense or ids form), in the order of ``models``; or
            ranked_ids: their M ranked lists (with ``target_ids``).
            target, target_ids, target_gains, mask, exclude_ids: shared by every model.
            query_ids: [B] int, each query's id, unique over the whole evaluation (every batch and process):
                the randomization and bootstrap tests draw each query's replicates from it. A repeat within
                the batch raises (with ``validate_args``); one across batches or processes is not checked
                (it would take a state per query): it counts as another query with the same draws.
        """
        self._update_from({"preds": preds, "target": target, "ranked_ids": ranked_ids, "query_ids": query_ids,
                           "target_ids": target_ids, "target_gains": target_gains, "mask": mask,
                           "exclude_ids": exclude_ids})

    def _stage(self, inputs: dict[str, Any]) -> Apply:
        values, counted = self._values(inputs)
        sums, products = values.sum(0), torch.einsum("bki,bkj->kij", values, values)
        counts = counted.sum(0)
        increments = {"sums": sums, "products": products, "counts": counts}
        if self.test != "student":  # the ids are read on the host with the other inputs' checks
            increments |= replicate_increments(self.settings, values, counted, inputs.get("query_ids"),
                                               self.template.validate_args)

        def apply() -> None:
            for name, increment in increments.items():
                getattr(self, name).add_(increment.to(getattr(self, name).device))

        return apply

    def _values(self, inputs: dict[str, Any]) -> tuple[Tensor, Tensor]:
        """[B, K, M] every model's per-query values, 0 where any model does not count the query, and [B, K]
        float64: 1 where every model counts it."""
        scores, ranked = inputs.get("preds"), inputs.get("ranked_ids")
        given = scores if scores is not None else ranked
        if given is None or isinstance(given, Tensor) or len(given) != len(self.models) or \
                (scores is not None and ranked is not None):
            raise ValueError(f"`preds` (or `ranked_ids`) must hold one tensor per model, {len(self.models)} "
                             f"({self.models}), got {describe_any(given)}")
        shared = {name: inputs.get(name) for name in ("target", "target_ids", "target_gains", "mask", "exclude_ids")}
        per_model = []
        for one in given:
            form = {"preds": one} if scores is not None else {"ranked_ids": one}
            batch = self.template.batch(**form, **shared)
            per_model.append(per_query_values(self.template, self.members, self._columns, batch))
        rows = {values.shape[0] for values, _ in per_model}
        if len(rows) != 1:
            raise ValueError(f"The models must be scored on the same queries: got {sorted(rows)} rows")
        counted = torch.stack([c for _, c in per_model], dim=2).all(2)  # [B, K]
        values = torch.stack([v for v, _ in per_model], dim=2)  # [B, K, M]
        return torch.where(counted.unsqueeze(2), values.to(torch.float64), 0.0), counted.to(torch.float64)

    def compute(self) -> dict[str, Tensor]:
        states = {name: getattr(self, name) for name in self._defaults}
        return pair_results(self.settings, self.keys, states)

    def report(self, alpha: float = 0.05, digits: int = 3) -> ComparisonReport:
        """The table of :meth:`compute`'s results, as ranx's ``compare`` prints it: each model's value of each
        metric (the best in boldface), with the labels of the models it is significantly better than (a
        pair's p-value, adjusted where ``correction`` is set, below ``alpha``); ``str()`` for text,
        ``.to_markdown()``, ``.to_latex()``, ``.to_dataframe()``.

        Raises:
            ValueError: on an ``alpha`` outside (0, 1) or ``digits`` below 0.

        Example:
            >>> import torch
            >>> from torchrec_eval import ModelComparison
            >>> compare = ModelComparison(["recall@1"], models=["good", "random"], test="fisher", replicates=512)
            >>> target = torch.eye(8)[torch.arange(40) % 8]  # each query's relevant item
            >>> good = target + 0.1 * torch.rand(40, 8, generator=torch.Generator().manual_seed(0))
            >>> random = torch.rand(40, 8, generator=torch.Generator().manual_seed(1))
            >>> compare.update([good, random], target, query_ids=torch.arange(40))
            >>> print(compare.report())
            #  Model   recall@1
            -  ------  --------
            a  good    1.000ᵇ
            b  random  0.150
            superscripts: significantly better than that model (fisher test, p < 0.05)
        """
        if self.test == "tukey":
            how = "randomized Tukey HSD"
        else:
            correction = self.settings.correction
            how = f"{self.test} test" + (f", {correction}-adjusted" if correction else "")
        note = f"superscripts: significantly better than that model ({how}, p < {alpha})"
        return ComparisonReport.from_results(self.compute(), models=self.models, keys=self.keys, alpha=alpha,
                                             note=note, digits=digits)
