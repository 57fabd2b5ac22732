"""AUC, GAUC, MPR and FCP on the ids form (no dense target) and the memory of one update.

The ids form looks its target items up in the sorted scores; these tests make every rank hinge on
ties at the target positions and on non-candidates (``mask``, ``-inf``, ``exclude_ids``) among and
around them, against independent references:

* ``sklearn.metrics.roc_auc_score`` per query, ``scipy.stats.rankdata`` mid-ranks for MPR and the
  brute-force pair counts of ``tests/reference/pairwise.py`` (or an all-pairs numpy count) for FCP;
* a few relevant items and many (R >> 1, most of them tied);
* the allocations of one update (a ``TorchDispatchMode`` records every op's outputs): besides the
  sort, no [B, N] tensor wider than one byte, so no float64 [B, N] target, ranks or gains.
"""

import math

import numpy as np
import pytest
import torch
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

import torchrec_eval as tre
from tests.reference import pairwise as ref
from torchrec_eval.members.steps import prepare
from torchrec_eval.metrics import pairwise as M
from torchrec_eval.pairwise import functional as P
from torchrec_eval.pairwise.member import PairwiseMember
from torchrec_eval.pairwise.ranks import rank_sums
from torchrec_eval.pairwise.sorted_rows import SortedRows
from torchrec_eval.pipeline import Inputs, Rules

TOL = {"rtol": 1e-9, "atol": 1e-9}
GAINS = torch.tensor([0.0, 0.5, 1.25, 1.25, 3.5])  # float grades, tied grades, a zero gain


def _close(actual, expected):
    actual = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    expected = torch.as_tensor(expected, dtype=torch.float64)
    torch.testing.assert_close(actual, expected.reshape(actual.shape), equal_nan=True, **TOL)


def _ids_batch(seed, mask=True, exclude=True, B=24, N=40, T=9, tie_levels=4):
    """Tied integer scores; target ids in random order with -1 padding anywhere; float gains (0 too);
    -inf scores and (optionally) a mask and exclude_ids that also hit target items. Returns the inputs
    and, for the references, the dense target and the candidate mask built here item by item."""
    g = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, tie_levels, (B, N), generator=g).float()
    target_ids = torch.stack([torch.randperm(N, generator=g)[:T] for _ in range(B)])
    target_ids[torch.rand(B, T, generator=g) < 0.2] = -1
    target_ids[0] = -1  # no target at all
    target_ids[1, :] = -1
    target_ids[1, 0] = 7  # a single target
    gains = GAINS[torch.randint(0, len(GAINS), (B, T), generator=g)].to(torch.float64)
    preds[torch.rand(B, N, generator=g) < 0.05] = float("-inf")
    preds[2, target_ids[2].clamp(min=0)] = float("-inf")  # every target of row 2 is not a candidate
    inputs = {"preds": preds, "target_ids": target_ids, "target_gains": gains}
    valid = preds > float("-inf")
    if mask:
        inputs["mask"] = torch.rand(B, N, generator=g) < 0.85
        valid &= inputs["mask"]
    if exclude:
        inputs["exclude_ids"] = torch.stack([torch.randperm(N, generator=g)[:3] for _ in range(B)])
        inputs["exclude_ids"][3] = target_ids[3, :3]  # excluded targets
        inputs["exclude_ids"][torch.rand(B, 3, generator=g) < 0.3] = -1
        for b in range(B):
            for i in inputs["exclude_ids"][b].tolist():
                if i >= 0:
                    valid[b, i] = False
    dense = torch.zeros(B, N, dtype=torch.float64)
    for b in range(B):
        for i, gain in zip(target_ids[b].tolist(), gains[b].tolist(), strict=True):
            if i >= 0:
                dense[b, i] = gain
    return inputs, dense, valid


def _rows(preds, dense, valid):
    """Per query: numpy scores and gains of its valid candidates."""
    return [(preds[b][valid[b]].numpy(), dense[b][valid[b]].numpy()) for b in range(preds.shape[0])]


def _auc_sklearn(scores, labels):
    return roc_auc_score(labels, scores) if 0 < labels.sum() < len(labels) else math.nan


def _mpr_rankdata(scores, labels):
    """Mean percentile rank of the relevant items from scipy's average ranks (descending scores)."""
    if not labels.any():
        return math.nan
    if len(scores) == 1:
        return 0.0
    # float64 throughout: newer scipy keeps a float32 input's dtype in its ranks (a 1e-7 error, seen on
    # the GPU machine's image)
    ranks = rankdata(-scores.astype(np.float64), method="average").astype(np.float64)
    return float(np.mean(100 * (ranks[labels] - 1) / (len(scores) - 1)))


def _fcp_all_pairs(scores, gains):
    """(concordant, discordant) of every pair with different gains, from an [n, n] numpy comparison."""
    higher = gains[:, None] > gains[None, :]
    order = np.sign(scores[:, None] - scores[None, :])
    return int((higher & (order > 0)).sum()), int((higher & (order < 0)).sum())


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("mask", "exclude"), [(False, False), (True, False), (False, True), (True, True)])
def test_ids_form_with_ties_and_non_candidates(seed, mask, exclude):
    inputs, dense, valid = _ids_batch(seed, mask, exclude)
    rows = _rows(inputs["preds"], dense, valid)
    auc = [_auc_sklearn(s, t > 0) for s, t in rows]
    _close(P.auc(**inputs, reduction="none"), auc)
    counted = [(a, (t > 0).sum()) for a, (_, t) in zip(auc, rows, strict=True) if not math.isnan(a)]
    _close(P.gauc(**inputs), sum(a * r for a, r in counted) / sum(r for _, r in counted))
    _close(P.mpr(**inputs, reduction="none"), [_mpr_rankdata(s, t > 0) for s, t in rows])
    for threshold in (1.0, 2.0):  # relevance from the float gains
        expected = [_auc_sklearn(s, t >= threshold) for s, t in rows]
        _close(P.auc(**inputs, relevance_threshold=threshold, reduction="none"), expected)
    pairs = [ref.fcp_pairs(s, t) for s, t in rows]
    _close(P.fcp(**inputs, reduction="none"), [c / (c + d) if c + d else math.nan for c, d in pairs])
    metric = M.FCP()
    metric.update(**inputs)
    _close(metric.compute(), sum(c for c, _ in pairs) / sum(c + d for c, d in pairs))


def test_ids_form_data_has_what_the_test_needs():
    """The batch above has relevant targets tied with other candidates and relevant targets that are
    not candidates through each of -inf, the mask and exclude_ids."""
    inputs, dense, valid = _ids_batch(0)
    preds, relevant = inputs["preds"], dense > 0
    finite, masked = preds > float("-inf"), inputs["mask"]
    exclude = inputs["exclude_ids"]
    excluded = torch.zeros_like(valid).scatter_(1, exclude.clamp(min=0), exclude >= 0)
    assert (relevant & ~finite).any() and (relevant & finite & ~masked).any()
    assert (relevant & finite & masked & excluded).any()
    same_score = preds.unsqueeze(2) == preds.unsqueeze(1)
    tied = same_score & (valid & relevant).unsqueeze(2) & (valid & ~relevant).unsqueeze(1)
    assert tied.any(2).sum() > 50  # relevant candidates sharing their score with non-relevant ones


def test_many_relevant_items_tied():
    """R >> 1: most items relevant, ten score levels; AUC, MPR and FCP against scikit-learn, scipy and
    all pairs, on the ids form and the dense form alike."""
    g = torch.Generator().manual_seed(3)
    B, N = 4, 1500
    preds = torch.randint(0, 10, (B, N), generator=g).float()
    dense = torch.where(torch.rand(B, N, generator=g) < 0.7, torch.randint(1, 4, (B, N), generator=g), 0)
    dense = dense.to(torch.float64) * 0.5
    target_ids = torch.argsort(torch.rand(B, N, generator=g), dim=1)  # every item, in random order
    target_ids[dense.gather(1, target_ids) == 0] = -1
    gains = torch.where(target_ids >= 0, dense.gather(1, target_ids.clamp(min=0)), 0.0)
    rows = _rows(preds, dense, torch.ones(B, N, dtype=torch.bool))
    auc = [_auc_sklearn(s, t > 0) for s, t in rows]
    mpr = [_mpr_rankdata(s, t > 0) for s, t in rows]
    fcp = [c / (c + d) for c, d in (_fcp_all_pairs(s, t) for s, t in rows)]
    for form in ({"target": dense}, {"target_ids": target_ids, "target_gains": gains}):
        _close(P.auc(preds, **form, reduction="none"), auc)
        _close(P.mpr(preds, **form, reduction="none"), mpr)
        _close(P.fcp(preds, **form, reduction="none"), fcp)


def test_ids_suite_with_top_k_metrics_equals_dense():
    """A suite mixing full-ranking and top-k metrics on the ids form equals the dense form (the top-k
    view then comes from the target ids too)."""
    inputs, dense, valid = _ids_batch(4, exclude=False)
    metrics = ["auc", "gauc", "mpr", "fcp", "ndcg@5", "recall@10", "ctr@3"]
    ids_suite, dense_suite = tre.RankingMetrics(metrics), tre.RankingMetrics(metrics)
    ids_suite.update(**inputs)
    dense_suite.update(inputs["preds"], dense, mask=inputs["mask"])
    got, expected = ids_suite.compute(), dense_suite.compute()
    for key in metrics:
        _close(got[key], expected[key])
    rows = _rows(inputs["preds"], dense, valid)
    _close(got["auc"], np.nanmean([_auc_sklearn(s, t > 0) for s, t in rows]))


# ----------------------------------------------------------------------------------------------
# memory: what one update allocates
# ----------------------------------------------------------------------------------------------
class WideOutputs(TorchDispatchMode):
    """Records (op, shape, dtype) of every newly allocated output (not a view) of at least ``numel``
    elements."""

    def __init__(self, numel):
        super().__init__()
        self.numel, self.seen = numel, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {value.untyped_storage().data_ptr() for value in tree_leaves((args, kwargs))
                  if isinstance(value, torch.Tensor)}
        for value in tree_leaves(out):
            if (isinstance(value, torch.Tensor) and value.numel() >= self.numel
                    and value.untyped_storage().data_ptr() not in inputs):  # not a view of an input
                self.seen.append((str(func), tuple(value.shape), value.dtype))
        return out


def _bench_like(B=8, N=5000, seed=5):
    """The shapes of bench_inputs.py's AUC/FCP cases, smaller: 0.5% relevant, grades 1..4."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, N, generator=g)
    relevant = torch.rand(B, N, generator=g) < 0.005
    graded = torch.where(relevant, torch.randint(1, 5, (B, N), generator=g), 0)
    counts = relevant.sum(1)
    order = torch.argsort((~relevant).to(torch.uint8), dim=1, stable=True)[:, : int(counts.max())]
    target_ids = torch.where(torch.arange(order.shape[1]) < counts.unsqueeze(1), order, -1)
    return scores, graded, target_ids


@pytest.mark.parametrize("case", ["auc_ids", "mpr_ids", "fcp_graded", "fcp_ids"])
def test_update_allocates_no_wide_full_size_tensor(case):
    scores, graded, target_ids = _bench_like()
    metric = (M.MPR if case == "mpr_ids" else M.FCP if case.startswith("fcp") else M.AUC)(validate_args=False)
    inputs = {"target": graded} if case == "fcp_graded" else {"target_ids": target_ids}
    if case == "fcp_ids":
        inputs["target_gains"] = graded.gather(1, target_ids.clamp(min=0))
    metric.update(scores, **inputs)  # the first update may build caches
    recorder = WideOutputs(scores.numel())
    with recorder:
        metric.update(scores, **inputs)
    sorts = [seen for seen in recorder.seen if seen[0] == "aten.sort.default"]
    assert sorts == [("aten.sort.default", tuple(scores.shape), torch.float32),
                     ("aten.sort.default", tuple(scores.shape), torch.int64)]  # the one sort
    others = [seen for seen in recorder.seen if seen[0] != "aten.sort.default"]
    # besides the sort only one-byte flags (the relevance of a dense target), never e.g. float64
    assert all(dtype == torch.bool for _, _, dtype in others), others
    assert len(others) <= (1 if case == "fcp_graded" else 0), others


def test_cumulative_sum_path_allocates_no_float64_full_size_tensor():
    """The dense form's path for accelerators and torch.compile counts in int32 along the sorted rows."""
    scores, graded, _ = _bench_like()
    scores = scores.half().float()  # ties
    candidates = prepare([PairwiseMember([("auc", None)])], Inputs(preds=scores, target=graded > 0),
                         Rules(validate_args=False)).candidates
    rows = SortedRows(candidates)
    expected = rank_sums(rows, candidates.relevant, sparse=True)
    assert rows.order.shape == scores.shape  # sorted again, outside the recording: the CPU freed it
    recorder = WideOutputs(scores.numel())
    with recorder:
        got = rank_sums(rows, candidates.relevant, sparse=False)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    wide = [dtype for _, _, dtype in recorder.seen if dtype.itemsize > 4 and dtype != torch.int64]
    assert recorder.seen and not wide, recorder.seen
    # int64 only for cummax's (unused) indices, never a float64 rank or hit
    assert {op for op, _, dtype in recorder.seen if dtype == torch.int64} == {"aten.cummax.default"}
