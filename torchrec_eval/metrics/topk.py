"""The base of the top-k classes: one family at one or more cut-offs, over a
:class:`~torchrec_eval.ranking.member.TopKMember`.

The classes themselves live with their families, in :mod:`torchrec_eval.ranking.families`. Every class takes
``k`` (an int, or a sequence of ints for a dict ``{"ndcg@5": ..., "ndcg@10": ...}``) and the common arguments
of :class:`~torchrec_eval.metrics.base.MemberMetric` (``empty_target_action``, ``relevance_threshold``,
``ties``, ``validate_args``, ``num_groups`` and the torchmetrics kwargs). ``update`` takes any input form of
:mod:`torchrec_eval.pipeline`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from torchrec_eval.members.conventions import resolve_options
from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.base import MemberMetric
from torchrec_eval.ranking.entries import make_entry
from torchrec_eval.ranking.member import TopKMember
from torchrec_eval.ranking.registry import REGISTRY

__all__ = ["IntOrSeq", "TopKMetric"]


IntOrSeq = int | Sequence[int]


class TopKMetric(MemberMetric):
    """One metric family at one or more cut-offs.

    Every class also takes ``empty_list_action``: a query whose list is empty (no candidate: a
    ``ranked_ids`` row of padding only, or every score ``-inf`` / masked) scores 0 and counts
    (``"neg"``, default), or is left out of the mean (``"skip"``; the ``"jurity"`` and
    ``"recommenders"`` presets set it where those libraries leave such users out). And ``empty_mean``:
    the value of a mean over no query, ``"nan"`` (default) or ``"zero"`` where no query kept has a
    relevant item in its top k (MS Recommenders' 0.0 when no user has a hit; set by
    ``"recommenders"``). For R-Precision with ``no_hit_action="skip"`` that is narrower than "no query
    counted": hits in the top k but none in the top min(k, R) still give NaN, as MS Recommenders'.
    """

    name: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in vars(cls):  # (a shared base of several families, INST's and BPM's, names none)
            cls.higher_is_better = REGISTRY[cls.name].higher_is_better  # a class constant in torchmetrics

    def __init__(self, k: IntOrSeq | None = 10, options: dict[str, Any] | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        explicit = {**(options or {}), "empty_list_action": kwargs.pop("empty_list_action", None),
                    "empty_mean": kwargs.pop("empty_mean", None)}
        options = resolve_options(kwargs.get("convention"), self.name, explicit, kwargs.get("ties"))
        member = TopKMember([make_entry(self.name, k, options)])
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self._show(**explicit)

