"""The member interface: what a :class:`~torchrec_eval.metrics.base.MemberMetric` asks of each family it holds.

A *member* owns the float64 states of one family of metrics (the top-k
:class:`~torchrec_eval.ranking.member.TopKMember`, the :class:`~torchrec_eval.pairwise.member.PairwiseMember`, the
:class:`~torchrec_eval.beyond.member.BeyondMember`) and turns one ranked batch into increments of them.
Suites, per-query output (:mod:`torchrec_eval.metrics.per_query`), intervals and paired comparisons
(:mod:`torchrec_eval.comparison.uncertainty`) and catalogue streams (:mod:`torchrec_eval.catalogue`) talk to every
member through :class:`Member` alone, never by its type.

The members subclass :class:`Member` to inherit the defaults of its optional parts (no tie rule, every
per-query key paired). A member declares what names its states in checkpoints (:meth:`Member.configuration`,
hashed by :func:`~torchrec_eval.metrics.configuration.fingerprint`): renaming a class or adding an
attribute changes no checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from torch import Tensor

#: per key: (sum of the per-query values [G], sum of their squares [G], number of counted queries [G])
Moments = dict[str, tuple[Tensor, Tensor, Tensor]]


@runtime_checkable
class Member(Protocol):
    """One family of metrics inside a :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Attributes:
        keys: its value keys, in ``compute`` order (``"ndcg@10"``, ``"auc"``, ``"coverage@5"``).
        depth: the top-k ranking it reads (0: none).
        needs_ideal, to_num_relevant, needs_candidates, needs_average: what the shared ranking of a
            batch must hold for it (the ideal gains, a ranking down to R, every candidate's score, the
            view averaged over tied scores).
        max_gain: the largest gain it takes (checked with the other values), or None.
        needs_non_relevant: it reads each query's non-relevant candidates (FallOut), counted exactly.
        needs_relevant_items: it reads every relevant candidate of each query, ranked or not (PSP's best sum).
        needs_judged: it reads which ranked items are judged and each query's judged items (bpref, Judged@k).
        needs_pooled: it reads which ranked items are pooled, judged or not (infAP); with ``needs_judged``.
        needs_listed_ids: it reads the ids of the ranked items (beyond-accuracy and overlap families).
        supports_weights: whether every value is a mean or a ratio of sums over queries, so that a
            per-query weight applies (``weighted=True``).
        query_keys: the keys with a value per query (the columns of :meth:`per_query`); catalogue-level
            keys are left out.
        total_keys: those of :attr:`query_keys` whose value is a sum over queries, not a mean (NumQ): no
            confidence interval, no paired comparison.
        paired: whether a :class:`~torchrec_eval.comparison.uncertainty.PairedComparison` may difference its
            per-query values query by query.
        raises_on_data: it raises on some values of a batch (pAUC@k's ``insufficient_handling="raise"``),
            which reads them on the host: no compiled update.
    """

    keys: list[str]
    query_keys: list[str]
    total_keys: tuple[str, ...] = ()
    depth: int
    needs_ideal: bool
    to_num_relevant: bool
    needs_candidates: bool
    needs_average: bool = False
    max_gain: float | None = None
    needs_non_relevant: bool = False
    needs_relevant_items: bool = False
    needs_judged: bool = False
    needs_pooled: bool = False
    needs_listed_ids: bool = False
    supports_weights: bool = False
    paired: bool = True
    raises_on_data: bool = False

    def add_states(self, metric: Any, num_groups: int) -> None:
        """Add its float64 states ([num_groups, ...], reduced with ``"sum"``) to ``metric``."""
        ...

    def stage(self, metric: Any, batch: Any) -> Callable[[], None]:
        """Compute a batch's increments (may raise); the returned call adds them to the states."""
        ...

    def per_query(self, metric: Any, batch: Any) -> tuple[Tensor, Tensor]:
        """Per-query values [B, Q] and the counted mask [B, Q] (bool) of :attr:`query_keys` for one batch,
        the values ``stage`` counts; a value where the mask is False is not counted."""
        ...

    def moments(self, metric: Any) -> Moments:
        """The keys whose value is a mean over queries -> their moments, for confidence intervals."""
        ...

    def compute(self, metric: Any) -> dict[str, Tensor]:
        """key -> its value per group [G], from the (synced) states."""
        ...

    def configuration(self) -> dict[str, Any]:
        """What names its states in checkpoints: its kind, keys and options as plain values (str, numbers,
        bools, None, lists, dicts) and tensors; two members with equal configurations have the same states
        (:func:`~torchrec_eval.metrics.configuration.fingerprint` hashes this, never a class name)."""
        ...

    def check_ties(self, ties: str) -> None:
        """Raise a ValueError if the metric's ``ties`` rule cannot give its values (default: any can)."""
        return None
