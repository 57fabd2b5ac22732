"""The scored forms, dense and ids (and the flat form once grouped into rows): ``preds`` [B, N] with a dense
``target`` or ``target_ids``; their candidates, then their target, ranked by the dense form unless the ids
form's top-k view can skip a [B, N] target."""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import Batch, Candidates
from torchrec_eval.pipeline.candidate_mask import candidate_items, checked_exclusions
from torchrec_eval.pipeline.forms.common import check_preds
from torchrec_eval.pipeline.forms.dense import Judgments, check_dense_target, dense_batch
from torchrec_eval.pipeline.forms.ids import candidate_targets, check_target_ids, ids_ranked, target_table
from torchrec_eval.pipeline.inputs import Inputs, Needs, Rules
from torchrec_eval.pipeline.validation import Checks, required

GAIN_AWARE_TIES = ("pessimistic", "optimistic")  # these order equal scores by every candidate's gain


def scored_batch(inputs: Inputs, needs: Needs, rules: Rules, checks: Checks | None) -> Batch:
    """The batch of a form with scores ``preds`` [B, N] and a dense ``target`` or ``target_ids``."""
    preds, target_ids = required("preds", inputs.preds, "scored"), inputs.target_ids
    check_preds(preds, inputs.groups, checks)
    averaging = rules.averaging(needs)
    exclusions = None if inputs.exclude_ids is None else checked_exclusions(inputs.exclude_ids, preds, checks)
    ids_top_k = (target_ids is not None and inputs.mask is None and not (needs.candidates or averaging)
                 and rules.ties not in GAIN_AWARE_TIES and not needs.non_relevant)
    items = candidate_items(preds, inputs.mask, exclusions, checks, ids_top_k, needs.candidates or averaging)
    judgments = None  # the dense form judges (and pools) every candidate
    if target_ids is None:
        target = required("target", inputs.target, "dense")
        check_dense_target(preds, target, inputs.target_gains, checks)
    else:
        check_target_ids(target_ids, inputs.target_gains, (preds.shape[0], preds.shape[1]), checks,
                         unjudged=needs.judged)
        if checks is not None:  # before any read at the target ids (a mask's, the scores'): one id past N raises
            checks.run()        # its ValueError, not an index error
        # the targets' own scores tell which are -inf (no mask says it), and rank them in a distinct list
        target_scores = preds.gather(1, target_ids.clamp(min=0)) if items.neg_inf else None
        valid_target = candidate_targets(target_ids, items, target_scores)
        table = target_table(target_ids, inputs.target_gains, valid_target, rules.relevance_threshold, target_scores,
                             unjudged=needs.judged)
        if not (averaging or rules.ties in GAIN_AWARE_TIES):  # the ids keep their form: no [B, N] target
            candidates = Candidates.from_ids(preds, items.valid, table.ids, table.gains, table.relevant) \
                if needs.candidates else None
            return Batch(ids_ranked(preds, items, table, needs, rules), candidates, inputs.groups)
        target = _scattered_target(preds, table.ids, table.gains)
        if needs.judged and table.judged is not None:  # the target ids are the judged items, not every candidate
            pooled = None
            if needs.pooled and table.pooled is not None:  # and the pooled ones (judged or not)
                pooled = _scattered_target(preds, table.ids, table.pooled.to(torch.float64)) > 0
            judgments = Judgments(_scattered_target(preds, table.ids, table.judged.to(torch.float64)) > 0, pooled)
    ranked, candidates = dense_batch(preds, target, items, needs, rules, judgments)
    return Batch(ranked, candidates, inputs.groups)


def _scattered_target(preds: Tensor, target_ids: Tensor, gains: Tensor) -> Tensor:
    """The ids form's gains (or any float64 value of its targets) as a dense [B, N] float64 target: gain-aware
    tie orders need every candidate's gain."""
    target = torch.zeros(preds.shape, dtype=torch.float64, device=preds.device)
    return target.scatter_add_(1, target_ids.clamp(min=0), gains)  # padding adds a gain of 0
