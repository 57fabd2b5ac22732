"""The scored forms, dense and ids (and the flat form once grouped into rows): ``preds`` [B, N] with a dense
``target`` or ``target_ids``; their candidates, then their target, ranked by the dense form unless the ids
form's top-k view can skip a [B, N] target."""

from __future__ import annotations

from typing import NamedTuple, cast

import torch
from torch import Tensor

from torchrec_eval.pipeline.average_ties import tie_statistics
from torchrec_eval.pipeline.batch import Batch, Candidates, RankedTargets
from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.forms.candidates import (
    CandidateItems,
    candidate_items,
    count_candidates,
    is_relevant,
    ranking_depth,
)
from torchrec_eval.pipeline.forms.ids import candidate_targets, ids_ranked, target_table
from torchrec_eval.pipeline.inputs import Inputs, Needs, Rules
from torchrec_eval.pipeline.syncs import host_reads_free
from torchrec_eval.pipeline.tensor_cache import count_true, hit_dtype, positions
from torchrec_eval.pipeline.topk import ranked_top, top_scores
from torchrec_eval.pipeline.validation import Notes

GAIN_AWARE_TIES = ("pessimistic", "optimistic")  # these order equal scores by every candidate's gain


def scored_batch(inputs: Inputs, needs: Needs, rules: Rules, notes: Notes | None) -> Batch:
    """The batch of a form with scores ``preds`` [B, N] and a dense ``target`` or ``target_ids``, checked
    (:func:`~torchrec_eval.pipeline.validation.checked_inputs`: its ``notes``, None where values were not)."""
    preds, target_ids = cast(Tensor, inputs.preds), inputs.target_ids  # checked: a scored form has scores
    averaging = rules.averaging(needs)
    exclusions = None if inputs.exclude_ids is None else Exclusions.from_ids(inputs.exclude_ids)
    ids_top_k = (target_ids is not None and inputs.mask is None and not (needs.candidates or averaging)
                 and rules.ties not in GAIN_AWARE_TIES and not needs.non_relevant)
    items = candidate_items(preds, inputs.mask, exclusions, notes, ids_top_k, needs.candidates or averaging)
    judgments = None  # the dense form judges (and pools) every candidate
    if target_ids is None:
        target = cast(Tensor, inputs.target)  # checked: the dense form has a target
    else:
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


# The dense form: ``preds`` [B, N] scores and ``target`` [B, N] relevance, ranked once.

class Judgments(NamedTuple):
    """The ids form's judgments scattered over the rows: ``judged`` [B, N] bool, its target ids; ``pooled`` [B, N]
    bool, every target id, judged or not (a gain of -1), where a family reads the pool (None: the judged ones)."""

    judged: Tensor
    pooled: Tensor | None = None


def dense_batch(
    preds: Tensor, target: Tensor, items: CandidateItems, needs: Needs, rules: Rules, judgments: Judgments | None = None
) -> tuple[RankedTargets | None, Candidates | None]:
    """The dense form's top-k view (to depth ``needs.depth``; none for 0) and full candidate view (if
    ``needs.candidates``): one ``torch.topk`` of the scores, the target read at the ranked items.

    With ``needs.judged``, every candidate is judged (and pooled), unless ``judgments`` say which items are (the
    ids form's target ids, scattered over the row for a tie order that reads every candidate's gain)."""
    valid, exclusions, k, ties = items.valid, items.exclusions, needs.depth, rules.ties
    relevance_threshold, averaging = rules.relevance_threshold, rules.averaging(needs)
    num_items = preds.shape[1]
    if valid is not None:
        preds = preds.masked_fill(~valid, float("-inf"))
        target = target.masked_fill(~valid, 0)  # a non-candidate is neither relevant nor ideal
    graded = target.dtype != torch.bool
    # Graded targets with NDCG: the ideal top-k also yields R for every row with fewer than k relevant
    # items, which spares a compare-and-count pass over [B, N] (needs no R-deep ranking, and the
    # relevance flags of every candidate for nothing else).
    from_ideal = k > 0 and graded and needs.ideal and exclusions is None
    from_ideal = from_ideal and not (needs.to_num_relevant or needs.candidates or averaging or needs.relevant_items)
    relevant_all = None if from_ideal else is_relevant(target, relevance_threshold)  # (None: from_ideal)
    candidates = None
    if needs.candidates and relevant_all is not None:
        candidates = Candidates(preds, target, relevant_all, valid)
    if k == 0:
        return None, candidates
    num_candidates = count_candidates(preds, valid, exclusions)
    ideal: Tensor | None
    if relevant_all is None:  # from_ideal
        depth = min(k, num_items)
        top_gains = top_scores(target, depth)[0]
        num_relevant = _relevant_from_ideal(target, top_gains, relevance_threshold)
        ideal = top_gains.to(torch.float64)
    else:
        num_relevant = _relevant_count(relevant_all, exclusions)
        depth = ranking_depth(k, num_items, num_relevant if needs.to_num_relevant else None)
        ideal = _ideal_gains(target, exclusions, depth) if needs.ideal and graded else None
    tie_gains = target if ties in ("pessimistic", "optimistic") else None
    top = ranked_top(preds, depth, ties, tie_gains, exclusions)
    idx = top.indices
    restricted = valid is not None or exclusions is not None
    raw_gains = target.gather(1, idx)
    gains = raw_gains.to(hit_dtype() if target.dtype == torch.bool else torch.float64)
    relevant = is_relevant(raw_gains, relevance_threshold)
    if restricted:
        in_list = positions(depth, preds.device) < num_candidates.unsqueeze(1)
        gains, relevant = gains * in_list, relevant & in_list
    tie_stats = None
    if averaging and relevant_all is not None:  # (averaging never reads R from the ideal list)
        tie_stats = tie_statistics(preds, top, target, relevant_all, (gains, relevant))
    if restricted:
        idx = idx.masked_fill(~in_list, -1)
    binary = target.dtype == torch.bool and relevance_threshold is None  # gains 1.0 exactly where relevant
    # (relevant_all is kept whenever the relevant items are asked for: from_ideal is off then)
    relevant_items = _relevant_items(relevant_all, exclusions) if needs.relevant_items and relevant_all is not None else None
    ranked = RankedTargets(gains, relevant, num_relevant, num_candidates, ideal, idx, num_items, binary=binary,
                           relevant_items=relevant_items,
                           relevant_gains=None if relevant_items is None else target.to(torch.float64))
    if needs.judged:
        judged = None if judgments is None else judgments.judged
        _judge(ranked, judged if judged is None or valid is None else judged & valid, exclusions, top.indices,
               in_list if restricted else None)
        pooled = None if judgments is None else judgments.pooled
        if needs.pooled:
            ranked.pooled = ranked.judged if pooled is None else _listed(pooled, top.indices, in_list if restricted else None)
    return ranked if tie_stats is None else _with_averaged_view(ranked, tie_stats, ties), candidates


def _with_averaged_view(
    ranked: RankedTargets, tie_stats: tuple[Tensor, Tensor, Tensor, Tensor], ties: str
) -> RankedTargets:
    """The view averaged over tie orders, attached as ``averaged`` (and returned itself under
    ``ties="average"``)."""
    averaged = ranked.with_tie_statistics(*tie_stats)
    ranked = averaged if ties == "average" else ranked
    ranked.averaged = averaged
    return ranked


def _relevant_items(relevant_all: Tensor, exclusions: Exclusions | None) -> tuple[Tensor, Tensor]:
    """Every item of the row as (ids [B, N], relevant candidate [B, N]): the column is the item's id."""
    rows, num_items = relevant_all.shape
    ids = torch.arange(num_items, device=relevant_all.device).expand(rows, num_items)
    return ids, relevant_all if exclusions is None else relevant_all & exclusions.keep_mask(num_items)


def _judge(ranked: RankedTargets, judged: Tensor | None, exclusions: Exclusions | None, idx: Tensor,
           in_list: Tensor | None) -> None:
    """Set which ranked items are judged and each query's judged items: every listed candidate, or the items of
    ``judged`` [B, N] (already within the candidates but for ``exclusions``); ``in_list`` [B, K]: the ranks that
    hold a candidate (None: all)."""
    if judged is None:
        ranked.judged = in_list if in_list is not None else torch.ones_like(ranked.relevant)
        ranked.num_judged = ranked.num_candidates
        return
    ranked.judged = _listed(judged, idx, in_list)
    ranked.num_judged = _relevant_count(judged, exclusions)


def _listed(flags: Tensor, idx: Tensor, in_list: Tensor | None) -> Tensor:
    """[B, K] ``flags`` [B, N] read at the ranked items ``idx`` [B, K], False past the list (``in_list``)."""
    listed = flags.gather(1, idx)
    return listed if in_list is None else listed & in_list


def _relevant_count(relevant_all: Tensor, exclusions: Exclusions | None) -> Tensor:
    """[B] float64 R: the relevant candidates of each row (excluded ones left out)."""
    num_relevant = count_true(relevant_all, torch.float64)
    if exclusions is not None:
        num_relevant = num_relevant - exclusions.count_flags(relevant_all)
    return num_relevant


def _ideal_gains(target: Tensor, exclusions: Exclusions | None, depth: int) -> Tensor:
    """[B, depth] float64 best gains of each row's candidates, for a graded target's ideal DCG (a binary
    target needs no ideal list: its ideal DCG is tabulated by R, in the ranking kernels)."""
    if exclusions is not None:
        return exclusions.top_values(target, depth).to(torch.float64)
    return top_scores(target, depth)[0].to(torch.float64)


def _relevant_from_ideal(target: Tensor, ideal: Tensor, relevance_threshold: float | None) -> Tensor:
    """R per row from the sorted top gains; rows whose top list is all relevant are counted in full."""
    relevant_top = is_relevant(ideal, relevance_threshold)
    num_relevant = relevant_top.sum(1)
    full = relevant_top[:, -1]
    if ideal.shape[1] < target.shape[1]:
        rows = full.nonzero().squeeze(1) if host_reads_free(target) else None  # a free check on the CPU
        if rows is None or rows.numel() * 8 > target.shape[0]:  # many rows: one pass over all is cheaper
            num_relevant = torch.where(
                full, count_true(is_relevant(target, relevance_threshold)), num_relevant
            )
        elif rows.numel():
            counted = count_true(is_relevant(target[rows], relevance_threshold))
            num_relevant = num_relevant.index_copy(0, rows, counted)
    return num_relevant.to(torch.float64)
