"""The registry of pairwise families: how each takes a cut-off, its options, which way is better.

:data:`REGISTRY` maps a family name to a :class:`PairwiseFamily`; the member
(:class:`~torchrec_eval.pairwise.member.PairwiseMember`), the classes and a suite
(:mod:`torchrec_eval.metrics.families`) read it, and nothing else names these facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchrec_eval.pairwise.ctr import UNLOGGED_MODES
from torchrec_eval.pairwise.mpr import AVERAGES
from torchrec_eval.pairwise.pauc import INSUFFICIENT_HANDLINGS

#: what a tied (relevant, non-relevant) pair counts in AUC: 1/2 (the default, scikit-learn's), 0 (cornac's)
TIE_CREDITS = (0.5, 0.0)


@dataclass(frozen=True)
class PairwiseFamily:
    """One pairwise family.

    Attributes:
        cutoff: ``"none"``: it takes no cut-off; ``"k"``: it needs one.
        options: option name -> its allowed values.
        higher_is_better: for tools that read it.
        host_reads: its batch shape depends on the data, read on the host (FCP's grade levels): no
            compiled update.
        full_ranking: it ranks every candidate (one shared sort per batch, a cut-off or not); False: it
            reads the shared top-k ranking (CTR@k).
        upper_bound: the most its value can be (a plot's y axis reaches it).
        aliases: other names a suite takes for it.
    """

    cutoff: str = "none"
    options: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    higher_is_better: bool = True
    host_reads: bool = False
    full_ranking: bool = True
    upper_bound: float = 1.0
    aliases: tuple[str, ...] = ()


REGISTRY: dict[str, PairwiseFamily] = {
    "auc": PairwiseFamily(options={"tie_credit": TIE_CREDITS}),
    "gauc": PairwiseFamily(),
    "mpr": PairwiseFamily(options={"average": AVERAGES}, higher_is_better=False, upper_bound=100.0),  # a percentile
    "fcp": PairwiseFamily(host_reads=True),
    "ctr": PairwiseFamily("k", {"unlogged": UNLOGGED_MODES}, full_ranking=False),
    # RecTools' PartialAUC: every relevant item against the first k non-relevant candidates
    "pauc": PairwiseFamily("k", {"insufficient_handling": INSUFFICIENT_HANDLINGS}, aliases=("partial_auc",)),
}
