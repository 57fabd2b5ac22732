"""The entry points of a :class:`~torchrec_eval.metrics.base.RankingMetric` beside ``update``: ``catalogue``,
``compile_update`` and ``per_query``.

Each is a thin method over the module that does the work (:mod:`torchrec_eval.catalogue`,
:mod:`torchrec_eval.metrics.compiled`, :mod:`torchrec_eval.metrics.per_query`), so the metric class stays a
coordinator of its members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import Tensor

from torchrec_eval.metrics import compiled
from torchrec_eval.metrics.lifecycle import keywords_checked

if TYPE_CHECKING:
    from torchrec_eval.catalogue import CatalogueBatch

__all__ = ["EntryPoints"]


class EntryPoints:
    """Mixin for a :class:`~torchrec_eval.metrics.base.RankingMetric`: its ``catalogue``,
    ``compile_update`` and ``per_query``."""

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
        """Evaluate one query batch against a catalogue scored in chunks: no [B, N] score matrix.

        Give the batch's targets and exclusions once, then ``add(scores, offset)`` for each chunk of
        items, in any order and of any sizes; ``close()`` (or leaving the ``with`` block) adds to the
        metric exactly what ``update(preds=<all N scores>, target_ids=..., ...)`` would have. Memory
        is O(B·(k + T)) whatever ``num_items``. With ``process_group`` (an item-parallel group whose
        ranks hold the same queries and score one contiguous item range each), ``close`` combines the
        ranks with one ``all_gather`` and the group's first rank adds the batch.

        Args:
            num_items: N, the size of the catalogue (item ids 0..N-1).
            target_ids, target_gains, exclude_ids, groups: as in ``update`` (ids form).
            target_scores: [B, T] the scores of the target items, needed by AUC, GAUC, MPR and FCP
                (which count the items above each target in every chunk); they stand for the chunks'
                entries at the targets, which are then not read.
            process_group: the item-parallel group, or None (one process scores the whole catalogue).

        Returns:
            a :class:`~torchrec_eval.catalogue.CatalogueBatch`, also a context manager.

        Raises:
            ValueError: see :class:`~torchrec_eval.catalogue.CatalogueBatch`; ``ties="average"``.

        Example:
            >>> import torch
            >>> from torchrec_eval import NDCG
            >>> metric = NDCG(k=2)
            >>> scores = torch.tensor([[0.1, 0.9, 0.3, 0.8, 0.2]])
            >>> with metric.catalogue(5, target_ids=torch.tensor([[3, 4]])) as batch:
            ...     batch.add(scores[:, :2], offset=0)
            ...     batch.add(scores[:, 2:], offset=2)
            >>> metric.compute(), NDCG(k=2)(scores, target_ids=torch.tensor([[3, 4]]))
            (tensor(0.3869, dtype=torch.float64), tensor(0.3869, dtype=torch.float64))
        """
        if self.weighted:
            raise ValueError("`catalogue` takes no `sample_weight`: a metric built with `weighted=True` would count "
                             f"every query with weight 1; use `update(..., sample_weight=w)`; got {self!r}")
        # imported here: torchrec_eval.catalogue imports the metrics' modules (a cycle at import time)
        from torchrec_eval.catalogue import CatalogueBatch

        return CatalogueBatch(
            self,
            num_items,
            target_ids=target_ids,
            target_gains=target_gains,
            target_scores=target_scores,
            exclude_ids=exclude_ids,
            groups=groups,
            process_group=process_group,
        )

    def compile_update(self, **compile_kwargs: Any) -> Any:
        """Run every later ``update`` as one ``torch.compile(fullgraph=True)`` graph per batch shape.

        One graph means one launch sequence with no host sync on an accelerator, and no Python per
        operation anywhere. Values equal the eager update's (float64 sums may differ in the last bit).
        Needs ``validate_args=False``; refuses FCP, R-Precision without a cut-off and
        ``empty_target_action="error"``, which read the data on the host (see
        :mod:`torchrec_eval.metrics.compiled`). The flat form stays eager.

        Args:
            compile_kwargs: passed to ``torch.compile`` (``mode=``, ``dynamic=``, ``backend=``).

        Returns:
            the metric itself.

        Raises:
            ValueError: with ``validate_args=True`` or a family that cannot be one graph.

        Example:
            >>> import torch
            >>> from torchrec_eval import RankingMetrics
            >>> suite = RankingMetrics(["ndcg@2"], validate_args=False).compile_update(backend="eager")
            >>> suite.update(torch.tensor([[0.9, 0.1, 0.5]]), torch.tensor([[0, 1, 1]]))
            >>> suite.compute()
            {'ndcg@2': tensor(0.3869, dtype=torch.float64)}
        """
        return compiled.compile_update(self, **compile_kwargs)

    @keywords_checked
    def per_query(
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
        query_ids: Any = None,
        as_frame: bool = False,
    ) -> Any:
        """Every value of the metric for each query of one batch, without touching the state.

        Takes ``update``'s arguments, with the same checks (and ``ValueError`` s). The value of a query is
        the one ``update`` would count for it; NaN marks a query the metric does not count. ``compute()``
        after ``update`` on the same batch is the mean of these values over the counted queries, or for a
        pooled ratio their mean weighted by the query's denominator: see
        :mod:`torchrec_eval.metrics.per_query`, which also says why catalogue metrics (coverage, Gini,
        entropy, inter-list diversity) have no per-query values and are left out.

        Args:
            preds, target, indexes, target_ids, target_gains, ranked_ids, mask, exclude_ids, groups: as
                for ``update``. In the flat form every query of the call is complete (none is held back),
                and the queries come in ascending ``indexes`` order.
            query_ids: labels of the rows of the DataFrame (``as_frame=True`` only), one per query;
                default: the ``indexes`` of the flat form, else 0..B-1.
            as_frame: return a ``pandas.DataFrame`` indexed by ``query_id`` (plus a ``group`` column
                with ``groups``) instead of tensors.

        Returns:
            A dict ``{key: [B] float64 tensor}`` in the order of ``compute()`` (a [B] tensor where
            ``compute()`` returns a tensor), or the DataFrame.

        Raises:
            ValueError: as ``update`` on bad input; if the metric has no per-query value; on
                ``query_ids`` of the wrong length or without ``as_frame``.
            ImportError: with ``as_frame=True`` when pandas is not installed.

        Example:
            >>> import torch
            >>> import torchrec_eval as tre
            >>> suite = tre.RankingMetrics(["ndcg@2", "mrr@2"])
            >>> suite.per_query(torch.tensor([[0.9, 0.8, 0.1], [0.3, 0.2, 0.1]]),
            ...                 torch.tensor([[0, 1, 0], [0, 0, 0]]))  # the second query has no relevant item
            {'ndcg@2': tensor([0.6309,    nan], dtype=torch.float64), 'mrr@2': tensor([0.5000,    nan], dtype=torch.float64)}
        """
        from torchrec_eval.metrics.per_query import per_query

        inputs = {"preds": preds, "target": target, "indexes": indexes, "target_ids": target_ids,
                  "target_gains": target_gains, "ranked_ids": ranked_ids, "mask": mask,
                  "exclude_ids": exclude_ids, "groups": groups}
        return per_query(self, inputs, query_ids, as_frame)
