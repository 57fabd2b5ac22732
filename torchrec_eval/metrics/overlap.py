r"""The overlap of two models' top-k lists, query by query: :class:`Intersection` (RecTools), :class:`Jaccard` and
:class:`RBO` (LensKit's rank-biased overlap), thin :class:`~torchrec_eval.metrics.base.MemberMetric` classes over
one :class:`~torchrec_eval.beyond.overlap_member.OverlapMember` (definitions: :mod:`torchrec_eval.beyond.overlap`).

Their ``update`` takes two rankings of the same queries instead of a ranking and its targets: each side as
scores (``preds``, ``reference_preds`` [B, N]) or as ranked ids (``ranked_ids``, ``reference_ids`` [B, L]).
They are not suite names (a :class:`~torchrec_eval.RankingMetrics` batch has one ranking), and take no
``target``, ``empty_target_action`` or ``relevance_threshold``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from torch import Tensor

from torchrec_eval.beyond.overlap_inputs import OverlapInputs, ranked_pair
from torchrec_eval.beyond.overlap_member import OverlapMember, RBOVariant
from torchrec_eval.catalogue import CatalogueBatch
from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.metrics.lifecycle import keywords_checked
from torchrec_eval.metrics.per_query import per_query
from torchrec_eval.pipeline import Batch

__all__ = ["RBO", "Intersection", "Jaccard"]

IntOrSeq = int | Sequence[int]


class _Overlap(MemberMetric):
    """A metric of the overlap of two rankings of each query (the model's and a reference's)."""

    family: str
    higher_is_better = None  # agreeing with the reference is the aim of a distillation, not of a diversification

    def __init__(self, k: IntOrSeq, options: dict[str, Any], **kwargs: Unpack[MetricArguments]) -> None:
        for name in ("empty_target_action", "relevance_threshold"):
            if kwargs.get(name) is not None:
                raise ValueError(f"`{name}` is about targets, and {type(self).__name__} compares two rankings with "
                                 f"no target: leave it out, got {name}={kwargs.get(name)!r}")
        ks: list[Any] = list(k) if isinstance(k, (list, tuple)) else [k]
        if not ks:
            raise ValueError(f"`k` must be an int or a non-empty sequence of ints, got {k!r}")
        member = OverlapMember(self.family, ks, options)
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self.member = member
        self._show(**options)

    def update(  # type: ignore[override]  # two rankings, no target: another set of inputs than MemberMetric's
        self, preds: Tensor | None = None, reference_preds: Tensor | None = None, *, groups: Tensor | None = None,
        sample_weight: Tensor | None = None, **inputs: Unpack[OverlapInputs],
    ) -> None:
        """Rank both sides of one batch and add its queries to the state; on any error the state is left unchanged.

        Args:
            preds: [B, N] the model's scores, or pass ``ranked_ids`` [B, L] (item ids in rank order, -1: padding).
            reference_preds: [B, N] the reference's scores, or pass ``reference_ids`` [B, L].
            inputs: the keywords of :class:`~torchrec_eval.beyond.overlap_inputs.OverlapInputs`: ``ranked_ids``,
                ``reference_ids``, ``mask`` ([B, N] bool, False for an item that is not a candidate, for every
                side given as scores) and ``exclude_ids`` ([B, E] ids removed from both sides, -1: padding).
            groups: [B] group of each query, when the metric was built with ``num_groups``.
            sample_weight: [B] weight of each query, when the metric was built with ``weighted=True``.
        """
        self._update_from({"preds": preds, "reference_preds": reference_preds, "groups": groups,
                           "sample_weight": sample_weight, **inputs})

    @keywords_checked
    def per_query(  # type: ignore[override]  # update's inputs, see there
        self, preds: Tensor | None = None, reference_preds: Tensor | None = None, *, groups: Tensor | None = None,
        query_ids: Any = None, as_frame: bool = False, **inputs: Unpack[OverlapInputs],
    ) -> Any:
        """Each query's value for one batch, without touching the state (NaN: a query the metric does not count);
        ``update``'s arguments, see :meth:`~torchrec_eval.metrics.base.MemberMetric.per_query`."""
        return per_query(self, {"preds": preds, "reference_preds": reference_preds, "groups": groups, **inputs},
                         query_ids, as_frame)

    def batch(  # type: ignore[override]  # update's inputs, see there
        self, preds: Tensor | None = None, reference_preds: Tensor | None = None, *, groups: Tensor | None = None,
        indexes: Tensor | None = None, **inputs: Unpack[OverlapInputs],
    ) -> Batch:
        """Both sides of one batch, checked and ranked: the model's top-k view, and the reference's list in
        ``extras["reference_ids"]``."""
        rules = self.member.rules(self.ties, self.validate_args, self.num_groups)  # the groups checked with each side
        own, reference = ranked_pair(preds=preds, reference_preds=reference_preds, **inputs, groups=groups,
                                     depth=self.member.depth, reference_depth=self.member.reference_depth, rules=rules)
        return Batch(own, None, None if groups is None else groups.to(self.device), extras={"reference_ids": reference})

    def catalogue(self, num_items: int, **arguments: Any) -> CatalogueBatch:
        """Not for an overlap metric: a catalogue stream scores one model's chunks."""
        raise ValueError(f"{type(self).__name__} compares two rankings per query; `catalogue` streams one model's "
                         f"scores: call update(preds, reference_preds) instead, got num_items={num_items!r}")


class Intersection(_Overlap):
    r"""Intersection@k: the share of the model's top k found in the reference's top ``ref_k``, averaged over
    queries (RecTools ``Intersection``).

    .. math:: \mathrm{Intersection@k} = \operatorname{mean}_{u : |A_u| > 0}
        \frac{|A_u \cap B_u|}{|A_u|}

    with :math:`A_u` the model's top k and :math:`B_u` the reference's top ``ref_k`` (k by default). As in
    RecTools (the reference's Recall@ref_k with the top k of ``reco`` as the relevant items) it divides by
    the length of the model's list, k unless the list is shorter; a query with an empty list has no value,
    and an empty reference list scores 0. State: ``overlap_stats`` [G, 3] per cut-off.

    Args:
        k: cut-off(s) of the model's list.
        ref_k: the cut-off of the reference's list; None (default): k.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; ``ties`` is
            ``"index"`` or ``"reverse_index"``; no ``empty_target_action`` or ``relevance_threshold``.

    Raises:
        ValueError: on a bad ``k``, ``ref_k`` or ``ties``, and on bad input in ``update`` (a side given both ways
            or neither, sides of different numbers of queries, and the checks of each input form).

    Example:
        >>> import torch
        >>> from torchrec_eval import Intersection
        >>> metric = Intersection(k=3)
        >>> metric.update(ranked_ids=torch.tensor([[1, 2, 3], [4, 5, -1]]),
        ...               reference_ids=torch.tensor([[3, 1, 9], [6, 7, 8]]))
        >>> metric.compute()  # (2/3 + 0/2) / 2
        tensor(0.3333, dtype=torch.float64)
    """

    family = "intersection"

    def __init__(self, k: IntOrSeq = 10, *, ref_k: int | None = None, **kwargs: Unpack[MetricArguments]) -> None:
        super().__init__(k, {"ref_k": ref_k}, **kwargs)


class Jaccard(_Overlap):
    r"""Jaccard@k: the Jaccard index of the model's and the reference's top-k sets, averaged over queries.

    .. math:: \mathrm{Jaccard@k} = \operatorname{mean}_{u : |A_u \cup B_u| > 0}
        \frac{|A_u \cap B_u|}{|A_u \cup B_u|}

    Two empty lists have no value; one empty list scores 0. State: ``overlap_stats`` [G, 3] per cut-off.

    Args:
        k: cut-off(s) of both lists.
        kwargs: as in :class:`Intersection`.

    Raises:
        ValueError: on a bad ``k`` or ``ties``, and on bad input in ``update`` (see :class:`Intersection`).

    Example:
        >>> import torch
        >>> from torchrec_eval import Jaccard
        >>> metric = Jaccard(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[0.9, 0.1, 0.8, 0.3]]))
        >>> metric.compute()  # {0, 1} and {0, 2}
        tensor(0.3333, dtype=torch.float64)
    """

    family = "jaccard"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[MetricArguments]) -> None:
        super().__init__(k, {}, **kwargs)


class RBO(_Overlap):
    r"""RBO@k, rank-biased overlap of the model's and the reference's lists (Webber, Moffat and Zobel 2010),
    averaged over queries; LensKit's ``rank_biased_overlap`` by default.

    .. math:: \mathrm{RBO@k} = \frac{\sum_{d=1}^{k} p^{d-1} X_d / d}{\sum_{d=1}^{k} p^{d-1}}, \qquad
        X_d = |A_{:d} \cap B_{:d}|

    with :math:`A_{:d}` the model's first d items (all of them for a shorter list). ``variant="ext"`` gives
    :math:`\mathrm{RBO_{ext}}` (eq. 32 of the paper) of the two lists cut at k instead, extrapolated from the
    depth the lists reach: identical lists score 1 at any length. Any empty list scores 0, and every query
    counts (LensKit). State: ``overlap_stats`` [G, 3] per cut-off.

    Args:
        k: the depth(s) (LensKit's ``n``, 10 by default).
        patience: p in (0, 1), 0.85 by default (LensKit's ``GeometricRankWeight``).
        variant: ``"lenskit"`` (default) or ``"ext"``.
        kwargs: as in :class:`Intersection`.

    Raises:
        ValueError: on a bad ``k``, ``patience``, ``variant`` or ``ties``, and on bad input in ``update`` (see
            :class:`Intersection`).

    Example:
        >>> import torch
        >>> from torchrec_eval import RBO
        >>> metric = RBO(k=3, patience=0.5)
        >>> metric.update(ranked_ids=torch.tensor([[1, 2, 3]]), reference_ids=torch.tensor([[2, 1, 3]]))
        >>> metric.compute()  # (0 + 0.5 * 2/2 + 0.25 * 3/3) / 1.75
        tensor(0.4286, dtype=torch.float64)
    """

    family = "rbo"

    def __init__(self, k: IntOrSeq = 10, *, patience: float | None = None, variant: RBOVariant | None = None,
                 **kwargs: Unpack[MetricArguments]) -> None:
        super().__init__(k, {"patience": patience, "variant": variant}, **kwargs)
