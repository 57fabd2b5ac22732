"""AUC, GAUC, MPR, FCP, CTR@k and pAUC@k as torchmetrics ``Metric`` classes (public as :mod:`torchrec_eval.metrics`).

``AUC``, ``GAUC``, ``MPR``, ``FCP`` and ``PartialAUC`` rank every candidate of a query (one sort per batch, shared
when several are in a :class:`~torchrec_eval.RankingMetrics` suite), so they need a score for every
candidate: the dense, ids or flat input form, not ``ranked_ids``. ``CTR`` reads the top-k ranking and
works with every form. Each keeps two float64 sums per value (numerator and denominator), per group,
in the state of one :class:`~torchrec_eval.pairwise.member.PairwiseMember`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from torchrec_eval.members.conventions import resolve_options
from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.pairwise.ctr import (
    UNLOGGED_THRESHOLD,
    Unlogged,
    apply_ignore_index,
    check_ignore_index,
    check_unlogged,
    ctr_cutoffs,
    encode_unlogged,
)
from torchrec_eval.pairwise.member import PairwiseMember
from torchrec_eval.pairwise.mpr import MPRAverage
from torchrec_eval.pairwise.pauc import InsufficientHandling, check_insufficient_handling
from torchrec_eval.pairwise.registry import REGISTRY

__all__ = ["AUC", "CTR", "FCP", "GAUC", "MPR", "PartialAUC"]


class AUC(MemberMetric):
    r"""AUC per query, averaged over queries: the share of (relevant, non-relevant) pairs ranked right.

    .. math:: \mathrm{AUC}_q = \frac{1}{R\,(N-R)} \sum_{i\,\mathrm{rel}} \sum_{j\,\mathrm{non\text{-}rel}}
        \left(\mathbb{1}[s_i > s_j] + \tfrac12 \mathbb{1}[s_i = s_j]\right)

    over the N valid candidates of a query, R of them relevant (``sklearn.metrics.roc_auc_score`` of the
    query). Computed from the mean ranks of one sort per row, without [N, N] pairs. A query without a
    relevant or without a non-relevant candidate follows ``empty_target_action``. ``ties`` has no
    effect: a tied pair counts ``tie_credit``, 1/2 by default, 0 as cornac's AUC (``convention="cornac"``).

    ``update`` takes the dense, ids or flat form of :mod:`torchrec_eval.pipeline`, with ``mask`` /
    ``exclude_ids`` for non-candidates; not ``ranked_ids``.

    Args:
        tie_credit: what a tied (relevant, non-relevant) pair counts: 0.5 (default) or 0.0 (cornac).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on bad arguments, with ``ranked_ids``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import AUC
        >>> metric = AUC()
        >>> metric.update(torch.tensor([[0.9, 0.5, 0.5, 0.1]]), torch.tensor([[1, 1, 0, 0]]))
        >>> metric.update(torch.tensor([[0.2, 0.8, 0.4, 0.6]]), torch.tensor([[1, 0, 0, 0]]))
        >>> metric.compute()
        tensor(0.4375, dtype=torch.float64)
    """

    def __init__(self, *, tie_credit: float | None = None, **kwargs: Unpack[MetricArguments]) -> None:
        options = resolve_options(kwargs.get("convention"), "auc", {"tie_credit": tie_credit})
        super().__init__([PairwiseMember([("auc", None)], {"auc": options})], single_key=True, **kwargs)
        self._show(tie_credit=tie_credit)


class GAUC(MemberMetric):
    r"""GAUC: the per-query AUC weighted by the query's number of relevant items R (RecBole).

    .. math:: \mathrm{GAUC} = \sum_q R_q\, \mathrm{AUC}_q \Big/ \sum_q R_q

    With ``empty_target_action="neg"``/``"pos"`` a query without a non-relevant candidate scores 0/1
    with its weight R; a query with R = 0 weighs nothing. See :class:`AUC` for inputs.

    Args:
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on bad arguments, with ``ranked_ids``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import GAUC
        >>> metric = GAUC()
        >>> metric.update(torch.tensor([[0.9, 0.5, 0.5, 0.1], [0.2, 0.8, 0.4, 0.6]]),
        ...               torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]]))
        >>> metric.compute()  # (2 * 0.875 + 1 * 0) / 3
        tensor(0.5833, dtype=torch.float64)
    """

    def __init__(self, **kwargs: Unpack[MetricArguments]) -> None:
        super().__init__([PairwiseMember([("gauc", None)])], single_key=True, **kwargs)


class MPR(MemberMetric):
    r"""MPR: mean percentile rank of the relevant items, 0 = top, 100 = bottom (Hu et al. 2008).

    Lower is better.

    .. math:: \mathrm{pr}_i = 100 \cdot \frac{\mathrm{rank}_i - 1}{N - 1}

    rank: 1-based among the N valid candidates of the query by descending score, the mean rank of the
    tie group for tied scores (constant scores give 50); pr = 0 when N = 1.

    Args:
        average: ``"pooled"`` (default): the mean over every relevant item seen; ``"query"``: the mean
            over queries of each query's mean. With ``"query"``, a query without a relevant item
            follows ``empty_target_action`` (``"neg"`` scores 100, the worst; ``"pos"`` 0, the best);
            pooled, it adds nothing (``"error"`` raises with either).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``average``, with ``ranked_ids``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import MPR
        >>> metric = MPR()
        >>> metric.update(torch.tensor([[0.9, 0.7, 0.5, 0.1, 0.0]]), torch.tensor([[1, 0, 1, 0, 0]]))
        >>> metric.compute()  # ranks 1 and 3 of 5 -> (0 + 50) / 2
        tensor(25., dtype=torch.float64)
    """

    higher_is_better = REGISTRY["mpr"].higher_is_better

    def __init__(self, *, average: MPRAverage = "pooled", **kwargs: Unpack[MetricArguments]) -> None:
        member = PairwiseMember([("mpr", None)], {"mpr": {"average": average}})
        super().__init__([member], single_key=True, **kwargs)
        self._show(average=None if average == "pooled" else average)


class FCP(MemberMetric):
    r"""FCP, the fraction of concordant pairs (Koren & Sill 2011), pooled over queries.

    .. math:: \mathrm{FCP} = \frac{\sum_q n_c(q)}{\sum_q n_c(q) + \sum_q n_d(q)}

    over the pairs of valid candidates of a query with different target values: concordant when the
    higher target has the higher score, discordant when it has the lower score, neither when the scores
    are equal. Target values are used as they are (``relevance_threshold`` and ``empty_target_action``
    do not apply). One sort per row plus one pass per distinct target value; one host sync per batch.

    Args:
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: with ``ranked_ids``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import FCP
        >>> metric = FCP()  # true order A > B > C, predicted order B, A, C
        >>> metric.update(torch.tensor([[0.8, 0.9, 0.1]]), torch.tensor([[3, 2, 1]]))
        >>> metric.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    def __init__(self, **kwargs: Unpack[MetricArguments]) -> None:
        super().__init__([PairwiseMember([("fcp", None)])], single_key=True, **kwargs)


class CTR(MemberMetric):
    r"""CTR@k: clicks over the observed (shown) items among the top k, pooled over queries.

    .. math:: \mathrm{CTR@}k = \frac{\sum_q \sum_{i \le k} c_{q,i}}{\sum_q \min(k, N_q)}

    The target is 1 for a click and 0 for shown-not-clicked; unobserved items are marked with ``mask``
    False (or ``target == ignore_index``): they are not candidates, so the top k are the k best-scored
    observed items and N_q is the number of observed items of query q. ``empty_target_action`` does
    not apply. Works with every input form (with ``ranked_ids``: the list shown, and the clicked ids).

    ``unlogged="rank"`` (set by ``convention="jurity"``) keeps the items with ``target ==
    ignore_index`` in the ranking, as Jurity's CTR@k takes the top k of every recommended item and
    then joins them to the logged responses: the top k are taken over every candidate and only the
    logged items among them count,

    .. math:: \mathrm{CTR@}k = \frac{\sum_q \sum_{i \le k} c_{q,i}}{\sum_q \sum_{i \le k} o_{q,i}}

    with :math:`o_{q,i}` = 1 for a logged item at rank i (NaN when no logged item reaches a top k).

    Args:
        k: cut-off(s): an int, or a sequence of ints for a dict ``{"ctr@5": ..., "ctr@10": ...}``.
        ignore_index: a ``target`` value marking unobserved items (e.g. -1), or None.
        unlogged: how the ``ignore_index`` items count in the cut: ``"drop"`` (default: removed before
            the top k is taken) or ``"rank"`` (ranked with the others, then left out of the counts:
            Jurity). Default: the convention's, else ``"drop"``. ``mask`` False is a non-candidate
            either way.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``ignore_index`` or ``unlogged``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import CTR
        >>> metric = CTR(k=2, ignore_index=-1)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4]]),
        ...               torch.tensor([[1, -1, 0, 1], [-1, -1, 1, -1]]))
        >>> metric.compute()  # (1 + 1) / (2 + 1)
        tensor(0.6667, dtype=torch.float64)
        >>> jurity = CTR(k=2, ignore_index=-1, convention="jurity")  # unlogged="rank"
        >>> jurity.update(torch.tensor([[0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4]]),
        ...               torch.tensor([[1, -1, 0, 1], [-1, -1, 1, -1]]))
        >>> jurity.compute()  # top 2 of every item: (1 + 0) / (1 + 0)
        tensor(1., dtype=torch.float64)
    """

    def __init__(self, k: int | Sequence[int] = 10, *, ignore_index: float | None = None,
                 unlogged: Unlogged | None = None, **kwargs: Unpack[MetricArguments]) -> None:
        ks = ctr_cutoffs(k)
        check_ignore_index(ignore_index)
        if unlogged is not None:
            check_unlogged(unlogged)
        self.ignore_index = ignore_index
        options = resolve_options(kwargs.get("convention"), "ctr", {"unlogged": unlogged})
        self.unlogged = options.get("unlogged", "drop")
        self._ranks_unlogged = self.unlogged == "rank" and ignore_index is not None
        member = PairwiseMember([("ctr", one) for one in ks], {"ctr": options}, marks_unlogged=self._ranks_unlogged)
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self._show(ignore_index=ignore_index, unlogged=unlogged)

    def _inputs(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The inputs with ``target == ignore_index`` turned into ``mask`` False (unobserved items), or,
        with ``unlogged="rank"``, into the encoded target of :func:`~torchrec_eval.pairwise.ctr.encode_unlogged`."""
        if self.ignore_index is None:
            return inputs
        if self._ranks_unlogged:
            target = encode_unlogged(inputs["target"], inputs.get("mask"), self.ignore_index, self.relevance_threshold)
            return {**inputs, "target": target}
        target, mask = apply_ignore_index(inputs["target"], inputs.get("mask"), self.ignore_index)
        return {**inputs, "target": target, "mask": mask}

    def _ranking_threshold(self) -> float | None:
        return UNLOGGED_THRESHOLD if self._ranks_unlogged else self.relevance_threshold


class PartialAUC(MemberMetric):
    r"""pAUC@k, RecTools' partial AUC: each relevant item against the k best-ranked non-relevant candidates,
    averaged over queries.

    .. math:: \mathrm{pAUC@}k_q = \frac{1}{k\,R} \sum_{i\ \mathrm{rel}} \max(k - c_i, 0)

    over the R relevant candidates of a query, :math:`c_i` the non-relevant candidates ranked above the
    relevant item i: the share of the (relevant, top-k non-relevant) pairs ordered right, as RecTools'
    ``PartialAUC(k)`` (``rectools.metrics.auc``) computes it. Tied scores give the expected value over every
    order of the tied items (a tied pair inside the first k non-relevant candidates counts 1/2, as in
    :class:`AUC`); ``ties`` has no effect. Computed from one sort per row (shared with AUC, GAUC, MPR
    and FCP in a suite), without [N, N] pairs. A query without a relevant item follows
    ``empty_target_action`` (skipped by default, as RecTools leaves out users without test items).

    A query with fewer than k non-relevant candidates follows ``insufficient_handling``: RecTools' formula
    divides by k all the same, as if the missing ones were ranked below every relevant item (``"ignore"``,
    default), or the query is left out of the mean (``"exclude"``), or the update raises (``"raise"``,
    which reads the batch on the host). (RecTools calls a user insufficient when its recommendation
    list misses a test positive *and* holds fewer than k negatives; a full ranking misses no relevant
    candidate, and its candidates are all the query's items.)

    ``update`` takes the dense, ids or flat form, with ``mask`` / ``exclude_ids`` for non-candidates; not
    ``ranked_ids``.

    Args:
        k: the number of top non-relevant candidates: an int, or a sequence of ints for a dict
            ``{"pauc@5": ..., "pauc@10": ...}``.
        insufficient_handling: ``"ignore"`` (default), ``"exclude"`` or ``"raise"`` (RecTools' values).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``insufficient_handling``, with ``ranked_ids``, on bad input in
            ``update``, and there with ``insufficient_handling="raise"`` on a query with fewer than k
            non-relevant candidates.

    Example:
        >>> import torch
        >>> from torchrec_eval import PartialAUC
        >>> metric = PartialAUC(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]]), torch.tensor([[0, 1, 0, 1, 0]]))
        >>> metric.update(torch.tensor([[0.5, 0.4, 0.3, 0.2, 0.1]]), torch.tensor([[1, 0, 0, 0, 0]]))
        >>> metric.compute()  # ((2 - 1 + 0) / (2 * 2) + 2 / (2 * 1)) / 2
        tensor(0.6250, dtype=torch.float64)
    """

    def __init__(self, k: int | Sequence[int] = 10, *, insufficient_handling: InsufficientHandling | None = None,
                 **kwargs: Unpack[MetricArguments]) -> None:
        ks = ctr_cutoffs(k)
        if insufficient_handling is not None:
            check_insufficient_handling(insufficient_handling)
        explicit = {"insufficient_handling": insufficient_handling}
        options = resolve_options(kwargs.get("convention"), "pauc", explicit)
        member = PairwiseMember([("pauc", one) for one in ks], {"pauc": options})
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self._show(insufficient_handling=insufficient_handling)
