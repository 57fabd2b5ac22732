"""The top-k plan; the code lives in :mod:`torchrec_eval.ranking` (:mod:`~torchrec_eval.ranking.plan`,
:mod:`~torchrec_eval.ranking.entries`, :mod:`~torchrec_eval.ranking.count_layout`,
:mod:`~torchrec_eval.ranking.member_steps`).

Kept because metrics pickled by older versions name ``torchrec_eval.functional._plan.Plan`` and ``Entry``.
"""

from torchrec_eval.ranking.count_layout import count_layout, zero_kinds
from torchrec_eval.ranking.entries import Entry, make_entry
from torchrec_eval.ranking.member_steps import accumulate, check_common, prepare
from torchrec_eval.ranking.plan import Plan

__all__ = ["Entry", "Plan", "accumulate", "check_common", "count_layout", "make_entry", "prepare", "zero_kinds"]
