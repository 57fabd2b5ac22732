"""``SampledMetrics``: top-k metrics of items ranked against sampled negatives, estimated for the whole
catalogue (the member: :mod:`torchrec_eval.sampled.member`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Unpack

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import MetricArguments, checked_weights
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.per_query import per_query
from torchrec_eval.pipeline import Batch, FormInputs
from torchrec_eval.pipeline.arguments import check_int, check_probability
from torchrec_eval.pipeline.validation import describe, describe_any
from torchrec_eval.sampled.audit import AuditBatch
from torchrec_eval.sampled.member import SampledMember
from torchrec_eval.sampled.settings import Estimator, Sampling
from torchrec_eval.suites.config import load_yaml, sampled_suite_kwargs

__all__ = ["SampledMetrics"]


def _request(name: str) -> tuple[str, int | None]:
    if not isinstance(name, str):
        raise ValueError(f"`metrics` must hold names such as 'ndcg@10', got {name!r}")
    family, _, cutoff = name.strip().lower().partition("@")
    if cutoff and (not cutoff.isdigit() or int(cutoff) < 1):
        raise ValueError(f"The cut-off in {name!r} must be an int >= 1, as in 'ndcg@10'")
    return family, int(cutoff) if cutoff else None


class SampledMetrics(MemberMetric):
    r"""Metrics of one relevant item per query ranked against m sampled negatives (RecBole's ``uni100``,
    NCF, SASRec), estimated for the full ranking of n items.

    ``update(preds, target)`` takes ``preds`` [B, m + 1], the scores of each query's relevant item and of
    its m sampled negatives (in any column order), and ``target`` [B, m + 1] marking the relevant one; the
    state is the histogram of sampled ranks. Rows may hold several held-out items (``preds`` [B, R + m],
    ``mask`` or ``-inf`` for the slots a row does not use): each is ranked against the row's m negatives
    alone and weighs 1 / R, so that every query counts once. ``compute`` estimates each metric with ``estimator``:

    * ``"naive"``: the metric of the sampled rank, what sampled evaluation reports (biased: it can order
      models the wrong way, Krichene & Rendle, KDD 2020);
    * ``"rank_estimate"``: the metric at the rank 1 + (n - 1)(s - 1) / m;
    * ``"bias_variance"`` (default): K&R's correction with weight ``gamma`` on its variance (0: the
      least-squares minimum of the bias, as far as float64 resolves it, with corrections too large to use,
      see :func:`~torchrec_eval.sampled.estimators.least_bias_rows`; 1: the posterior mean under a uniform prior);
    * ``"constrained"``: the same objective with corrected values that never grow with the sampled rank
      and stay >= 0 (K&R's constrained least squares when ``gamma=0``);
    * ``"em"``: the distribution of true ranks fitted to the histogram (Jin et al., AAAI 2021).

    Args:
        metrics: ``"ndcg@10"``, ``"recall@10"``, ``"hitrate@10"``, ``"precision@10"``, ``"mrr"``, ``"map@10"``,
            ``"auc"``, ...: families of the rank of one relevant item, with or without a cut-off.
        num_items: n, the candidates of the full ranking, the relevant item included; ``None``: a size per
            query, given to each ``update`` as ``num_items`` [B] (the items a user has not interacted with,
            say), estimated by ``"naive"``, ``"bias_variance"`` or ``"constrained"`` (the correction of each
            query's own size: :mod:`~torchrec_eval.sampled.size_corrections`) or ``"rank_estimate"`` (per query).
        num_negatives: m, the sampled negatives of each query.
        estimator, gamma: how the full-catalogue value is estimated (above).
        replacement: whether the negatives were drawn with replacement (RecBole: yes); popularity draws need it.
        sampling: ``"uniform"`` (default), or ``"popularity"`` (RecBole's ``popNNN``): each ``update`` gives
            ``negative_probabilities``, and ``"rank_estimate"`` takes Horvitz-Thompson's estimate of each
            query's rank (:mod:`~torchrec_eval.sampled.rank_estimates`); the other corrections assume uniform
            draws and refuse it.
        audit: keep the audit states: on the batches you choose, :meth:`audit` ranks the held-out items in
            the whole catalogue and ``compute`` reports the estimator's error on them.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric` (``ties``: the
            order of a negative tied with the relevant item).

    Raises:
        ValueError: on a bad argument, m >= n, and in ``update`` on a row without exactly one relevant item
            (at least one in a wider row), without m negatives, or narrower than m + 1.

    Example:
        >>> import torch
        >>> from torchrec_eval import SampledMetrics
        >>> preds = torch.randn(4, 101, generator=torch.Generator().manual_seed(0))
        >>> preds[:, 0] += 2.0  # column 0: the relevant item, scored above most negatives
        >>> target = torch.zeros(4, 101, dtype=torch.bool)
        >>> target[:, 0] = True
        >>> naive = SampledMetrics(["recall@10", "ndcg@10"], num_items=10_000, num_negatives=100, estimator="naive")
        >>> corrected = SampledMetrics(["recall@10", "ndcg@10"], num_items=10_000, num_negatives=100)
        >>> for metric in (naive, corrected):
        ...     metric.update(preds, target)
        >>> {key: round(value.item(), 4) for key, value in naive.compute().items()}
        {'recall@10': 0.5, 'ndcg@10': 0.3253}
        >>> {key: round(value.item(), 4) for key, value in corrected.compute().items()}  # for 10,000 items
        {'recall@10': 0.1069, 'ndcg@10': 0.0502}
    """

    def __init__(self, metrics: Sequence[str], *, num_items: int | None, num_negatives: int,
                 estimator: Estimator = "bias_variance", gamma: float = 0.01, replacement: bool = True,
                 sampling: Sampling = "uniform", audit: bool = False, **kwargs: Unpack[MetricArguments]) -> None:
        if isinstance(metrics, str) or not isinstance(metrics, Sequence) or not metrics:
            raise ValueError(f"`metrics` must be a non-empty list of names such as ['ndcg@10'], got {metrics!r}")
        member = SampledMember([_request(name) for name in metrics], num_items, num_negatives, estimator, gamma,
                               replacement, audit, sampling)
        super().__init__([member], **kwargs)
        self.member = member
        self._show(num_items=num_items, num_negatives=num_negatives, estimator=estimator,
                   gamma=gamma if estimator in ("bias_variance", "constrained") else None,
                   replacement=None if replacement else False, sampling=None if sampling == "uniform" else sampling,
                   audit=audit or None)

    def update(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
               sample_weight: Tensor | None = None, num_items: Tensor | None = None,
               negative_probabilities: Tensor | None = None, **inputs: Unpack[FormInputs]) -> None:
        """Add one batch of sampled rows; on any error the state is left unchanged.

        The rows come in any scored form, with the same values: dense (``preds`` [B, W] and ``target`` [B, W]
        marking the held-out items), ids (``preds`` [B, W] and ``target_ids`` [B, T], the held-out items'
        columns, -1 for padding) or flat (1-D ``preds``, ``target`` and ``indexes``: a query's candidates as
        consecutive entries); W = m + 1, or R + m for several held-out items per row.

        Args:
            preds, target, groups, sample_weight, inputs: as in
                :meth:`~torchrec_eval.metrics.base.MemberMetric.update`; ``ranked_ids`` is refused: a ranked list has
                no scores to rank a held-out item against its negatives.
            num_items: [B] int, each query's catalogue size, for a metric built with ``num_items=None``.
            negative_probabilities: [B, W] float, the probability with which each negative was drawn, for a
                metric built with ``sampling="popularity"`` (the held-out items' entries are not read).

        Raises:
            ValueError: on ``ranked_ids``, on a row without its held-out item(s) or m negatives, and as
                :meth:`~torchrec_eval.metrics.base.MemberMetric.update` does.
        """
        self._update_from(self._with_extras({
            "preds": preds, "target": target, "groups": groups, "sample_weight": sample_weight,
            "num_items": num_items, "negative_probabilities": negative_probabilities, **inputs}))

    def per_query(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
                  query_ids: Any = None, as_frame: bool = False, num_items: Tensor | None = None,
                  negative_probabilities: Tensor | None = None, **inputs: Unpack[FormInputs]) -> Any:
        """Each query's estimate for one batch, without touching the state (``update``'s arguments, see
        :meth:`~torchrec_eval.metrics.base.MemberMetric.per_query`)."""
        extras = self._with_extras({"preds": preds, "target": target, "groups": groups, "num_items": num_items,
                                    "negative_probabilities": negative_probabilities, **inputs})
        return per_query(self, extras, query_ids, as_frame)

    def _with_extras(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """``update``'s arguments, checked: the ranked form is refused (no scores to rank against the negatives),
        the per-query inputs with the flat form (whose queries span calls) and where the metric does not take
        them."""
        inputs = arguments
        if inputs.get("ranked_ids") is not None:  # the pipeline's own refusal names AUC and the other families
            raise ValueError("`ranked_ids`: sampled evaluation ranks each held-out item against its row's m "
                             "negatives by score (ties by `ties=`), which a ranked list does not give: pass `preds` "
                             "with `target`, `target_ids` or `indexes`, got `ranked_ids` of "
                             f"{describe_any(inputs['ranked_ids'])}")
        for name, wanted in (("num_items", self.member.num_items is None),
                             ("negative_probabilities", self.member.sampling == "popularity")):
            if inputs.get(name) is not None and (not wanted or inputs.get("indexes") is not None):
                why = "the flat form (indexes)" if wanted else "this metric (see num_items= and sampling=)"
                raise ValueError(f"`{name}` is not taken by {why}, got {describe(inputs[name])}")
        return inputs

    def batch(self, preds: Tensor | None = None, target: Tensor | None = None, *, groups: Tensor | None = None,
              num_items: Tensor | None = None, negative_probabilities: Tensor | None = None,
              **inputs: Tensor | None) -> Batch:
        """The validated batch (:meth:`~torchrec_eval.metrics.base.MemberMetric.batch`) with its per-query
        inputs (``batch.extras``) on the metric's device."""
        batch = super().batch(preds, target, groups=groups, **inputs)
        extras = {name: value.to(self.device) if isinstance(value, Tensor) else value
                  for name, value in (("num_items", num_items), ("negative_probabilities", negative_probabilities))
                  if value is not None}
        batch.extras = extras or None
        return batch

    @classmethod
    def from_config(cls, config: str | os.PathLike[str] | dict[str, Any], **overrides: Any) -> SampledMetrics:
        """A sampled suite from a YAML file, a ready-made suite by name (``"uni100"``) or a dict, see
        :func:`~torchrec_eval.suites.config.sampled_suite_kwargs`; ``overrides`` replace the config's keys (the
        catalogue size, usually: ``from_config("uni100", num_items=dataset.num_items)``).

        Example:
            >>> from torchrec_eval import SampledMetrics
            >>> SampledMetrics.from_config("uni100", num_items=5000).value_keys
            ['ndcg@10', 'recall@10', 'hitrate@10', 'mrr']
        """
        if overrides:
            raw = load_yaml(config) if isinstance(config, (str, os.PathLike)) else config
            config = {**raw, **overrides} if isinstance(raw, dict) else raw
        kwargs = sampled_suite_kwargs(config)
        for key in ("num_items", "num_negatives"):
            if key not in kwargs:
                raise ValueError(f"`{key}`: the sampled suite config does not set it; give it in the config or "
                                 f"as from_config(..., {key}=...)")
        return cls(**kwargs)

    def bootstrap_interval(self, level: float = 0.95, replicates: int = 200,
                           seed: int = 0) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        """The estimate of each metric and its percentile bootstrap interval: the queries resampled with
        replacement ``replicates`` times, as multinomial redraws of the histogram of sampled ranks, and the
        estimator run on each (:mod:`~torchrec_eval.sampled.bootstrap`). It holds for every estimator, EM
        included (R fits at once); it syncs the state across processes first, as ``compute`` does.

        Args:
            level: the confidence level in (0, 1).
            replicates: R, the number of redraws (the interval's own Monte-Carlo error shrinks as 1 / sqrt(R)).
            seed: the seed of the redraws (the same seed, the same interval on every process).

        Returns:
            ``{key: (estimate, low, high)}``, each a [num_groups] tensor with groups, else 0-d.

        Raises:
            ValueError: on a bad ``level``, ``replicates`` or ``seed``.

        Example:
            >>> import torch
            >>> from torchrec_eval import SampledMetrics
            >>> preds = torch.randn(200, 11, generator=torch.Generator().manual_seed(0))
            >>> target = torch.zeros(200, 11, dtype=torch.bool)
            >>> target[:, 0] = True
            >>> metric = SampledMetrics(["recall@10"], num_items=100, num_negatives=10, estimator="naive")
            >>> metric.update(preds, target)
            >>> estimate, low, high = metric.bootstrap_interval(replicates=500)["recall@10"]
            >>> bool(low < estimate < high), round(estimate.item(), 3)
            (True, 0.94)
        """
        level = check_probability("level", level)
        seed = check_int("seed", seed, 0)
        generator = torch.Generator().manual_seed(seed)
        with self.sync_context(dist_sync_fn=self.dist_sync_fn, should_sync=self._to_sync and not self._is_synced,
                               should_unsync=self._should_unsync):
            results = self.member.bootstrap(self, level, replicates, generator)
        if self.num_groups is None:
            return {key: (mean[0], low[0], high[0]) for key, (mean, low, high) in results.items()}
        return results

    def audit(self, preds: Tensor, target: Tensor, *, positive_ids: Tensor, mask: Tensor | None = None,
              groups: Tensor | None = None, sample_weight: Tensor | None = None) -> AuditBatch:
        """Audit one batch against the whole catalogue, scored in chunks (for a metric built with ``audit=True``).

        Give the batch's sampled rows as to ``update`` (which adds them to the estimate; the audit does not)
        and the catalogue id of each held-out item, then ``add(scores, offset)`` for each chunk of the
        n items' scores and ``close()`` (or leave the ``with`` block). ``compute`` then reports, over the
        audited queries, ``audit/<key>/exact``, ``audit/<key>/estimate`` (the estimator run on their sampled
        ranks alone), ``audit/<key>/error`` (their difference) and ``audit/queries``.

        Args:
            preds, target: the sampled rows [B, m + 1] (or [B, R + m] with several held-out items), as given
                to ``update``.
            positive_ids: [B] int, the catalogue id (0..n-1) of each query's held-out item; for rows of R
                held-out slots [B, R], their ids in column order and -1 in a row's unused slots. Each held-out
                item ranks among the catalogue without the row's other held-out items (as among the negatives
                without them) and weighs 1 / (the row's held-out items).
            mask, groups, sample_weight: as in ``update``.

        Returns:
            an :class:`~torchrec_eval.sampled.AuditBatch`, also a context manager.

        Raises:
            ValueError: on a metric without ``audit=True``, bad rows (as ``update``), ``positive_ids`` out of
                range, chunks that are not [B, C] floats, contain NaN or do not cover the items once.

        Example:
            >>> import torch
            >>> from torchrec_eval import SampledMetrics
            >>> full = torch.tensor([[0.9, 0.1, 0.8, 0.3, 0.2, 0.7]])  # one user's scores of all 6 items
            >>> preds, target = full[:, [2, 1, 4]], torch.tensor([[True, False, False]])  # item 2 vs items 1, 4
            >>> metric = SampledMetrics(["mrr"], num_items=6, num_negatives=2, estimator="naive", audit=True)
            >>> metric.update(preds, target)
            >>> with metric.audit(preds, target, positive_ids=torch.tensor([2])) as catalogue:
            ...     catalogue.add(full[:, :4], offset=0)
            ...     catalogue.add(full[:, 4:], offset=4)
            >>> {key: round(value.item(), 3) for key, value in metric.compute().items()}
            {'mrr': 1.0, 'audit/mrr/exact': 0.5, 'audit/mrr/estimate': 1.0, 'audit/mrr/error': 0.5, 'audit/queries': 1.0}
        """
        if not self.member.audit:
            raise ValueError(f"`audit`: this metric keeps no audit states; build it with audit=True, got {self!r}")
        batch = self.batch(preds, target, groups=groups, mask=mask)
        batch.weights = checked_weights(sample_weight, batch.num_queries, self.weighted, self.device,
                                        self.validate_args)
        return AuditBatch(self, self.member, batch, positive_ids)

    def compute(self) -> dict[str, Tensor]:
        """``{key: estimate}`` (a [num_groups] tensor per key with groups; NaN for a group without queries)."""
        results = super().compute()
        return results if isinstance(results, dict) else {self.value_keys[0]: results}
