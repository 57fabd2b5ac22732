"""The batch pipeline: from the user's input tensors to one validated, ranked :class:`Batch`.

:func:`prepare_batch` is the only entry that ranks and the only one that validates a metric's input,
so a whole suite of metrics costs one top-k (or, where rows hold few target ids, one count of their ranks).
Its steps, one job per module:

* :mod:`~torchrec_eval.pipeline.arguments` -- checks of plain arguments (ints, probabilities), package-wide;
* :mod:`~torchrec_eval.pipeline.validation` -- tensor checks, gathered so that they cost one host sync;
* :mod:`~torchrec_eval.pipeline.inputs` -- the records passed down: the call's tensors, what the members
  need of the ranking, how to rank;
* :mod:`~torchrec_eval.pipeline.prepare` -- which input form a call uses (a table), and the call handed to it;
* :mod:`~torchrec_eval.pipeline.forms` -- the four input forms (dense, ids, ranked, flat), one module each;
* :mod:`~torchrec_eval.pipeline.forms.candidates` -- which items are candidates (``mask``, ``-inf``, exclusions);
* :mod:`~torchrec_eval.pipeline.exclusion` -- ``exclude_ids`` kept as sorted ids, not a [B, N] mask;
* :mod:`~torchrec_eval.pipeline.topk` -- the top k of each row, exact at the cut-off, with the help of
  :mod:`~torchrec_eval.pipeline.tie_order` (the tie keys) and :mod:`~torchrec_eval.pipeline.boundary_scan`
  (the items tied at the cut-off), reading long CPU rows through the maxima of blocks first (cheaper than
  ``torch.topk``'s branches), and a custom operator inside a compiled update;
* :mod:`~torchrec_eval.pipeline.counted_ranks` -- the ids form's target ranks counted over each row, no top-k,
  where that is cheaper (few targets a row: sampled evaluation, and a compiled update's one loop);
* :mod:`~torchrec_eval.pipeline.average_ties` -- the tie-group statistics of ``ties="average"``;
* :mod:`~torchrec_eval.pipeline.batch` -- what comes out: the ranked view, the candidate view, the groups;
* :mod:`~torchrec_eval.pipeline.syncs` -- where a host read is free and where it must not happen
  (public as :mod:`torchrec_eval.syncs`);
* :mod:`~torchrec_eval.pipeline.tensor_cache` -- small constant tensors built once per device, and
  ``count_true``, the row counts of bool tensors.
"""

from torchrec_eval.pipeline.batch import Batch, Candidates, RankedTargets
from torchrec_eval.pipeline.forms import FORMS
from torchrec_eval.pipeline.inputs import (
    INPUT_KEYWORDS,
    INPUT_NAMES,
    TIES,
    CandidateInputs,
    FormInputs,
    Inputs,
    Needs,
    RankedInputs,
    Rules,
    Ties,
)
from torchrec_eval.pipeline.prepare import input_keywords_checked, keywords_checked_by, prepare_batch
from torchrec_eval.pipeline.tensor_cache import count_true

__all__ = [
    "FORMS",
    "INPUT_KEYWORDS",
    "INPUT_NAMES",
    "TIES",
    "Batch",
    "CandidateInputs",
    "Candidates",
    "FormInputs",
    "Inputs",
    "Needs",
    "RankedInputs",
    "RankedTargets",
    "Rules",
    "Ties",
    "count_true",
    "input_keywords_checked",
    "keywords_checked_by",
    "prepare_batch",
]
