r"""``ModelComparison``: M models scored on the same queries in one pass, compared pair by pair with a sound
significance test, in fixed memory, exact across batches and processes.

Per compared metric it keeps, over the queries every model counts, each model's sum and the sums of products
of every two models' values (:math:`\sum_q x_{qi}` [K, M], :math:`\sum_q x_{qi} x_{qj}` [K, M, M], the count):
means, paired differences and their variances, so the paired t-test. A randomization or bootstrap test adds
one sum per replicate (:math:`R` of them, [R, K, M]), the replicate's random signs, permutations or weights
being a hash of the query's id (:mod:`~torchrec_eval.comparison.statistics.replicates`): any split of the queries into
batches and ranks gives the same sums. The statistics: :mod:`~torchrec_eval.comparison.statistics.significance`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, Unpack

import torch
from torch import Tensor

from torchrec_eval.comparison.report import ComparisonReport
from torchrec_eval.comparison.statistics import adjusted_p_values
from torchrec_eval.comparison.statistics.multiple_testing import ADJUSTMENTS
from torchrec_eval.comparison.statistics.replicate_sums import (
    bootstrap_sums,
    check_replicates_fit,
    fisher_sums,
    tukey_sums,
)
from torchrec_eval.comparison.statistics.significance import (
    TESTS,
    bootstrap_interval,
    effect_size,
    exceedance,
    student_p_value,
    tukey_p_values,
)
from torchrec_eval.comparison.uncertainty import (
    ComparedArguments,
    ConfiguredComparison,
    compared_values,
    per_query_values,
    split_common,
)
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.lifecycle import Apply
from torchrec_eval.pipeline.arguments import check_int, check_probability
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
        if isinstance(models, str) or len(models) < 2 or len(set(models)) != len(models) \
                or not all(isinstance(name, str) and name for name in models):
            raise ValueError(f"`models` must name 2 or more models, each once, got {models!r}")
        if test not in TESTS:
            raise ValueError(f"`test` must be one of {TESTS}, got {test!r}")
        if correction is not None and correction not in ADJUSTMENTS:
            raise ValueError(f"`correction` must be None or one of {ADJUSTMENTS}, got {correction!r}")
        self.models, self.test, self.correction = list(models), test, correction
        self.replicates = check_int("replicates", replicates, 1)
        self.seed, self.level = check_int("seed", seed, 0), check_probability("level", level)
        if exact and (test != "fisher" or replicates & (replicates - 1) or replicates < 2):
            raise ValueError(f"`exact` enumerates the 2^n sign patterns of Fisher's test: test='fisher' and "
                             f"`replicates` a power of 2 (2^n for queries 0..n-1), got test={test!r}, "
                             f"replicates={replicates!r}")
        tail = self.replicates * (1 - self.level) / 2
        if test == "bootstrap" and tail < 1:  # the interval's bounds would be the extreme replicates themselves
            raise ValueError(f"`replicates` must put at least one replicate in each tail of the bootstrap's "
                             f"{self.level} interval, that is >= {math.ceil(2 / (1 - self.level))} at level="
                             f"{self.level}; got replicates={replicates!r}")
        self.exact = exact
        self.template, self.members, self.keys, self._columns = compared_values(metrics, k, options, common)
        keys, size = len(self.keys), len(self.models)
        check_replicates_fit(test, self.replicates, keys, size)  # before torch tries to allocate them
        self.pairs = list(itertools.combinations(range(size), 2))
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
                                      self.replicates, self.seed, exact])
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
        if self.test != "student":
            increments |= self._replicates(values, counted, inputs.get("query_ids"))

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

    def _replicates(self, values: Tensor, counted: Tensor, query_ids: Tensor | None) -> dict[str, Tensor]:
        """Each replicate's sums [R, K, M] (and the bootstrap's weights [R, K] and products) of this batch,
        drawn in blocks of bounded memory (:mod:`~torchrec_eval.comparison.statistics.replicate_sums`)."""
        rows, device = values.shape[0], values.device
        if not isinstance(query_ids, Tensor) or query_ids.shape != (rows,) or query_ids.is_floating_point() \
                or query_ids.dtype == torch.bool:
            raise ValueError(f"`query_ids` must be an integer tensor [B] ({rows},), one id per query, unique over "
                             f"the evaluation: the {self.test} test draws each query's replicates from it; got "
                             f"{describe_any(query_ids)}")
        ids = query_ids.to(device)
        if self.template.validate_args:  # host reads: checked where the other inputs are
            _check_distinct(ids)
            if self.exact:
                self._check_enumerable(ids)
        if self.test == "fisher":
            return {"replicate_sums": fisher_sums(values, ids, self.replicates, self.seed, self.exact)}
        if self.test == "bootstrap":
            return bootstrap_sums(values, counted, ids, self.replicates, self.seed)
        return {"replicate_sums": tukey_sums(values, ids, self.replicates, self.seed)}

    def _check_enumerable(self, ids: Tensor) -> None:
        """The exact test's query ids lie in 0..n-1 for its 2^n replicates (replicate b flips query q where
        bit q of b is set)."""
        bits = int(math.log2(self.replicates))
        if bool(((ids < 0) | (ids >= bits)).any()):
            raise ValueError(f"`query_ids` must lie in [0, {bits}) for the exact test of replicates = 2^{bits} "
                             f"(2^n for queries 0..n-1), got {ids.tolist()}")

    def compute(self) -> dict[str, Tensor]:
        out: dict[str, Tensor] = {}
        means = self.sums / self.counts.unsqueeze(1)  # [K, M]
        differences, deviations = self._differences()  # [K, P] each
        p_values = self._p_values(means, differences, deviations)  # [K, P]
        for k, key in enumerate(self.keys):
            for m, model in enumerate(self.models):
                out[f"{key}/{model}"] = means[k, m]
            adjusted = adjusted_p_values(p_values[k], self.correction) if self.correction else None
            for p, (i, j) in enumerate(self.pairs):
                name = f"{key}/{self.models[i]}_vs_{self.models[j]}"
                out[f"{name}/diff"] = differences[k, p]
                out[f"{name}/effect_size"] = effect_size(differences[k, p], deviations[k, p])
                out[f"{name}/p_value"] = p_values[k, p]
                if adjusted is not None:
                    out[f"{name}/p_adjusted"] = adjusted[p]
                if self.test == "bootstrap":
                    out[f"{name}/low"], out[f"{name}/high"] = self._bootstrap(k, i, j, deviations[k, p])[:2]
        return out

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
            how = f"{self.test} test" + (f", {self.correction}-adjusted" if self.correction else "")
        note = f"superscripts: significantly better than that model ({how}, p < {alpha})"
        return ComparisonReport.from_results(self.compute(), models=self.models, keys=self.keys, alpha=alpha,
                                             note=note, digits=digits)

    def _differences(self) -> tuple[Tensor, Tensor]:
        """[K, P] the mean and the standard deviation of each pair's per-query differences, from the sums."""
        first = torch.tensor([i for i, _ in self.pairs], device=self.sums.device)
        second = torch.tensor([j for _, j in self.pairs], device=self.sums.device)
        total = self.sums[:, first] - self.sums[:, second]
        squares = self.products[:, first, first] + self.products[:, second, second] \
            - 2 * self.products[:, first, second]
        count = self.counts.unsqueeze(1)
        return total / count, ((squares - total * total / count) / (count - 1)).clamp(min=0).sqrt()

    def _p_values(self, means: Tensor, differences: Tensor, deviations: Tensor) -> Tensor:
        """[K, P] each pair's p-value of ``test`` (NaN below 2 queries)."""
        count = self.counts.unsqueeze(1)
        if self.test == "student":
            p = student_p_value(differences, deviations, count)
        elif self.test == "tukey":
            p = tukey_p_values(means, self.replicate_sums / count, self.pairs)
        elif self.test == "fisher":
            p = torch.stack([exceedance(differences[:, p] * self.counts,
                                        self.replicate_sums[:, :, i] - self.replicate_sums[:, :, j])
                             for p, (i, j) in enumerate(self.pairs)], dim=1)
        else:  # bootstrap
            p = torch.stack([torch.stack([self._bootstrap(k, i, j, deviations[k, p])[2] for k in range(len(self.keys))])
                             for p, (i, j) in enumerate(self.pairs)], dim=1)
        return torch.where(count < 2, torch.nan, p)

    def _bootstrap(self, k: int, i: int, j: int, deviation: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(low, high, p) of models i and j on key k: the percentile interval of the replicates' mean
        differences, and the studentized bootstrap's p (each replicate's t of its difference from the
        observed one against the observed t; ``deviation``: the observed differences' standard deviation)."""
        counts = self.replicate_counts[:, k]
        totals = self.replicate_sums[:, k, i] - self.replicate_sums[:, k, j]
        squares = self.replicate_products[:, k, i, i] + self.replicate_products[:, k, j, j] \
            - 2 * self.replicate_products[:, k, i, j]
        observed = (self.sums[k, i] - self.sums[k, j]) / self.counts[k]
        return bootstrap_interval(totals / counts, observed, self.level, squares, counts,
                                  deviation / self.counts[k].sqrt())


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
