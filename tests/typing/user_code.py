# pyright: strict
"""A user's code, as the README writes it, checked with ``mypy --strict`` and pyright's strict mode by
``tests/integration/test_typing.py``: the public API's types must say what the calls return."""

from __future__ import annotations

from typing import assert_type

import torch
from torch import Tensor

import torchrec_eval as tre
from torchrec_eval.functional import (
    alpha_ndcg,
    ap_ia,
    auc,
    bpm,
    compat,
    ctr,
    jaccard,
    mrr,
    ndcg,
    nrbp,
    num_q,
    off_policy_ctr,
    p_ia,
    partial_auc,
    precision,
    rbo,
    rprecision,
    weighted_rbp,
)

preds = torch.tensor([[0.9, 0.1, 0.5]])
target = torch.tensor([[0, 1, 1]])

one: Tensor = ndcg(preds, target, k=2)
many: dict[str, Tensor] = ndcg(preds, target, k=[1, 2], ties="average", gain="exp")
assert_type(precision(preds, target, k=2, denominator="retrieved", reduction="none"), Tensor)
assert_type(precision(preds, target, k=(1, 2)), dict[str, Tensor])
assert_type(rprecision(preds, target), Tensor)
assert_type(mrr(preds, target, k=2, reduction="none"), Tensor)  # a family without options of its own
assert_type(mrr(preds, target_ids=torch.tensor([[1, 2]]), k=[1, 2]), dict[str, Tensor])
intents = torch.tensor([[1, 0], [0, 1], [1, 1]])
assert_type(alpha_ndcg(preds, target, k=2, item_intents=intents, alpha=0.5), Tensor)
assert_type(alpha_ndcg(preds, target, k=[1, 2], item_intents=intents, reduction="none"), dict[str, Tensor])
assert_type(p_ia(preds, target, k=2, item_intents=intents), Tensor)  # the intent counts take no alpha
assert_type(ap_ia(preds, target, k=[1, 2], item_intents=intents), dict[str, Tensor])
assert_type(nrbp(preds, target, k=2, item_intents=intents, alpha=0.5, beta=0.8), Tensor)  # NRBP's patience
assert_type(bpm(preds, target, k=[1, 2], T=2.0), dict[str, Tensor])  # INST, INSQ and BPM: one protocol
assert_type(auc(preds, target_ids=torch.tensor([[1, 2]])), Tensor)
assert_type(ctr(preds, target, k=[1, 3]), dict[str, Tensor])
assert_type(off_policy_ctr(preds, target, k=2, estimator="snips", propensity=preds), Tensor)
assert_type(off_policy_ctr(preds, target, k=[1, 2], estimator="dr"), dict[str, Tensor])
assert_type(num_q(preds, target), Tensor)
assert_type(compat(preds, target, k=2, p=0.9, normalize=False), Tensor)
assert_type(weighted_rbp(preds, target, item_weights=preds, k=[1, 2]), dict[str, Tensor])
assert_type(partial_auc(preds, target, k=2, insufficient_handling="exclude"), Tensor)
assert_type(partial_auc(preds, target, k=[1, 2]), dict[str, Tensor])

suite = tre.RankingMetrics(["ndcg@2", "recall@2", "auc"])
suite.update(preds, target)
suite.update(preds, target_ids=torch.tensor([[1, 2]]), exclude_ids=torch.tensor([[0]]))
results: dict[str, Tensor] = suite.compute()
assert_type(suite.compute(), dict[str, Tensor])
for key, value in results.items():
    print(key, float(value))

metric = tre.NDCG(k=5, gain="exp", ties="average", validate_args=False, sync_on_compute=True)
metric.update(preds, target)
recall = tre.Recall(k=[1, 2], denominator="min_k_r", empty_list_action="skip", num_groups=None)
mpr = tre.MPR(average="query", empty_target_action="neg")
pauc = tre.PartialAUC(k=[5, 10], insufficient_handling="raise", convention="rectools")

reference = torch.tensor([[0.8, 0.3, 0.1]])  # another model's scores: the overlap of the two top-k lists
assert_type(rbo(preds, reference, k=2, patience=0.9, variant="ext"), Tensor)
assert_type(jaccard(ranked_ids=torch.tensor([[2, 0]]), reference_ids=torch.tensor([[0, 1]]), k=[1, 2]), dict[str, Tensor])
overlap = tre.Intersection(k=2, ref_k=3)
overlap.update(preds, reference)
overlap.update(ranked_ids=torch.tensor([[2, 0]]), reference_preds=reference)
