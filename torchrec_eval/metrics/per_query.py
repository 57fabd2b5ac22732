r"""Per-query values of a metric for one batch: for error analysis and for significance tests across runs.

:meth:`~torchrec_eval.metrics.base.MemberMetric.per_query` validates and ranks a batch exactly as
``update`` does and returns, for each query, the value ``update`` counts for it, read from the same
per-query tensors the state sums (no second implementation), with NaN for a query the metric does not
count. How ``compute()`` follows from these values, after ``update`` on the same queries:

* **means over queries** (every top-k metric, AUC, MPR with ``average="query"``,
  intra-list diversity, novelty, serendipity, average popularity): the mean of the values that are not
  NaN. NaN marks a query that is skipped: no relevant item under ``empty_target_action="skip"``
  (under ``"neg"``/``"pos"`` it scores 0/1 and counts), AUC without a non-relevant candidate, an
  empty list (novelty, average popularity) or one of fewer than two items (intra-list diversity).
* **pooled ratios** :math:`\sum_q n_q / \sum_q d_q` (GAUC, pooled MPR, FCP, CTR@k): the query's own
  ratio :math:`n_q / d_q` -- its AUC, the mean percentile rank of its relevant items, its FCP, its
  click-through rate -- and ``compute()`` is their mean weighted by :math:`d_q`: R (GAUC, MPR), the
  number of concordant plus discordant pairs (FCP), the number of items shown in the top k (CTR).
  NaN where :math:`d_q = 0` (the query weighs nothing).
* **catalogue metrics** (coverage, Gini index, entropy, inter-list diversity) are properties of the set
  of all lists, not a mean of anything per query: they have no per-query value and are left out.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import Batch

__all__ = ["per_query", "query_values", "to_frame"]


def _nan_where_not(counted: Tensor, values: Tensor) -> Tensor:
    return values.masked_fill(~counted, float("nan"))


def query_values(metric: Any, batch: Batch) -> dict[str, Tensor]:
    """``{key: [B] float64}`` per-query values of every member of ``metric`` that has them (NaN: not counted).

    Raises:
        ValueError: as ``update`` would on the batch (``empty_target_action="error"``, ids out of range).
    """
    out: dict[str, Tensor] = {}
    for member in metric.members:  # a member of catalogue-level keys only has no column
        if member.query_keys:
            values, counted = member.per_query(metric, batch)
            out.update(zip(member.query_keys, _nan_where_not(counted, values).unbind(1), strict=True))
    return out


def to_frame(columns: dict[str, Tensor], query_ids: Any, indexes: Tensor | None, groups: Tensor | None) -> Any:
    """A ``pandas.DataFrame`` of per-query values, indexed by ``query_id`` (the flat form's ``indexes`` by
    default, else 0..B-1), with a ``group`` column first when ``groups`` is given.

    Raises:
        ImportError: if pandas is not installed.
        ValueError: if ``query_ids`` does not have one label per query.
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            "per_query(..., as_frame=True) needs pandas, which is not installed: `pip install pandas`, "
            "or call per_query without as_frame for a dict of tensors"
        ) from None
    num_queries = next(iter(columns.values())).shape[0]
    if query_ids is None:
        query_ids = torch.unique(indexes) if indexes is not None else torch.arange(num_queries)
    if isinstance(query_ids, Tensor):
        query_ids = query_ids.detach().cpu().numpy()
    if isinstance(query_ids, (str, bytes)) or not hasattr(query_ids, "__len__") or len(query_ids) != num_queries:
        raise ValueError(f"`query_ids` must be a sequence of one label per query ({num_queries}), got {query_ids!r:.80}")
    data = {} if groups is None else {"group": groups.detach().cpu().numpy()}
    data.update({key: value.detach().cpu().numpy() for key, value in columns.items()})
    return pd.DataFrame(data, index=pd.Index(query_ids, name="query_id"))


def per_query(metric: Any, inputs: dict[str, Any], query_ids: Any, as_frame: bool) -> Any:
    """Every value of ``metric`` for each query of one batch, without touching the state (``metric.per_query``).

    Takes ``update``'s arguments, with the same checks (and ``ValueError`` s). The value of a query is the one
    ``update`` would count for it; NaN marks a query the metric does not count. ``compute()`` after ``update`` on
    the same batch is the mean of these values over the counted queries, or for a pooled ratio their mean
    weighted by the query's denominator (the module's docstring).

    Args:
        metric: a :class:`~torchrec_eval.metrics.base.MemberMetric`.
        inputs: ``update``'s arguments. In the flat form every query of the call is complete (none is held
            back), and the queries come in ascending ``indexes`` order.
        query_ids: labels of the rows of the DataFrame (``as_frame=True`` only), one per query; default: the
            ``indexes`` of the flat form, else 0..B-1.
        as_frame: return a ``pandas.DataFrame`` indexed by ``query_id`` (plus a ``group`` column with
            ``groups``) instead of tensors.

    Returns:
        A dict ``{key: [B] float64 tensor}`` in the order of ``compute()`` (a [B] tensor where ``compute()``
        returns a tensor), or the DataFrame.

    Raises:
        ValueError: as ``update`` on bad input; if the metric has no per-query value; on ``query_ids`` of the
            wrong length or without ``as_frame``.
        ImportError: with ``as_frame=True`` when pandas is not installed.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> suite = tre.RankingMetrics(["ndcg@2", "mrr@2"])
        >>> suite.per_query(torch.tensor([[0.9, 0.8, 0.1], [0.3, 0.2, 0.1]]),
        ...                 torch.tensor([[0, 1, 0], [0, 0, 0]]))  # the second query has no relevant item
        {'ndcg@2': tensor([0.6309,    nan], dtype=torch.float64), 'mrr@2': tensor([0.5000,    nan], dtype=torch.float64)}
    """
    if query_ids is not None and not as_frame:
        raise ValueError("`query_ids` label the rows of the DataFrame: pass `as_frame=True` with them; got "
                         f"as_frame={as_frame!r}")
    if inputs.get("indexes") is not None:
        metric._check_flat(inputs)  # the checks of update's flat form
    batch = metric.batch(**metric._inputs(inputs))
    values = query_values(metric, batch)
    if not values:
        raise ValueError(
            f"{type(metric).__name__} ({', '.join(metric.value_keys)}) has no per-query values: catalogue "
            "metrics describe the set of all lists, not one query"
        )
    output = metric._output(values)
    if not as_frame:
        return output
    columns = output if isinstance(output, dict) else {metric.value_keys[0]: output}
    return to_frame(columns, query_ids, inputs.get("indexes"), batch.groups)
