"""WeightedRBP / ``functional.weighted_rbp`` (issue 55): LensKit's ``RBP(weight_field=...)``, each listed item's
weight read from the list, against a re-implementation of LensKit's ``RBP.measure_list``
(``tests/reference/conventions.py``) in the dense, ids and ranked forms through the harness (2 processes too), and
bad input refused with every state unchanged."""

from __future__ import annotations

import math

import pytest
import torch
import torch._dynamo

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import conventions as lenskit
from torchrec_eval import functional as F

ITEMS, K = 10, 4


def _batch(seed: int, rows: int) -> tuple[dict, list]:
    """Dense scores (distinct), 0/1 relevance (a query without a relevant item), candidates masked out, weights
    (a zero-weight list where every candidate weighs 0); and its queries for the reference."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randperm(rows * ITEMS, generator=gen).reshape(rows, ITEMS).double() / (rows * ITEMS)
    target = (torch.rand(rows, ITEMS, generator=gen) < 0.3).long()
    mask = torch.rand(rows, ITEMS, generator=gen) < 0.8
    weights = torch.rand(rows, ITEMS, generator=gen, dtype=torch.float64) * 2
    if rows >= 3:
        target[0] = 0
        weights[1] = 0.0
    queries = []
    for b in range(rows):
        candidates = [i for i in range(ITEMS) if mask[b, i]]
        ranked = sorted(candidates, key=lambda i: -float(preds[b, i]))
        truth = {i for i in candidates if target[b, i] > 0}
        queries.append((ranked, truth, {i: float(weights[b, i]) for i in range(ITEMS)}))
    return {"preds": preds, "target": target, "mask": mask, "item_weights": weights}, queries


def _ids_form(dense: dict) -> dict:
    relevant = (dense["target"] > 0) & dense["mask"]  # the relevant candidates
    order = relevant.to(torch.int8).argsort(dim=1, descending=True, stable=True)
    return {"preds": dense["preds"], "mask": dense["mask"], "item_weights": dense["item_weights"],
            "target_ids": torch.where(relevant.gather(1, order), order, -1)}


def _ranked_form(dense: dict) -> dict:
    scores = dense["preds"].masked_fill(~dense["mask"], -math.inf)
    order = scores.argsort(dim=1, descending=True)
    listed = dense["mask"].gather(1, order)
    return {"ranked_ids": torch.where(listed, order, -1), "target_ids": _ids_form(dense)["target_ids"],
            "item_weights": dense["item_weights"].gather(1, order)}


FORMS = {"dense": lambda dense: dense, "ids": _ids_form, "ranked": _ranked_form}


def build(form: str) -> MetricCase:
    batches, queries = [], []
    for seed, rows in ((1, 7), (2, 1), (3, 5)):
        dense, q = _batch(seed, rows)
        batches.append(FORMS[form](dense))
        queries += q
    expected = {}
    for k in (1, K):
        values = [lenskit.lenskit_rbp_field(ranked, truth, k, weights) for ranked, truth, weights in queries]
        counted = [v for v in values if v is not None]
        expected[f"weighted_rbp@{k}"] = sum(counted) / len(counted)
    return MetricCase(name=form, make=lambda: tre.WeightedRBP(k=[1, K]), batches=batches, expected=expected,
                      functional=lambda **inputs: F.weighted_rbp(**inputs, k=[1, K]), atol=1e-12)


@pytest.mark.parametrize("form", list(FORMS))
def test_metric(form):
    check_metric(build(form))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, list(FORMS), str(tmp_path))


def test_each_query_and_the_empty_ones():
    dense, queries = _batch(4, 8)
    got = F.weighted_rbp(**dense, k=K, reduction="none")
    want = [lenskit.lenskit_rbp_field(ranked, truth, K, weights) for ranked, truth, weights in queries]
    torch.testing.assert_close(got, torch.tensor([math.nan if v is None else v for v in want], dtype=torch.float64),
                               rtol=0, atol=1e-12, equal_nan=True)
    assert got[:2].isnan().all()  # no relevant item; weights summing to 0
    neg = F.weighted_rbp(**dense, k=K, reduction="none", empty_target_action="neg")
    assert neg[0] == 0 and neg[1].isnan()  # a query without a relevant item scores 0; 0 / 0 stays out


def test_bad_input_is_refused_and_leaves_every_state():
    dense, _ = _batch(5, 6)
    metric = tre.WeightedRBP(k=K)
    metric.update(**dense)
    before = metric.list_weight_stats.clone()
    bad = dense["item_weights"].clone()
    bad[0, 0] = math.inf
    cases = [({**dense, "item_weights": bad}, "`item_weights` must be finite"),
             ({**dense, "item_weights": dense["item_weights"][:, :3]},
              r"`item_weights` must be a real tensor of the shape of `preds` \(6, 10\)"),
             ({**dense, "item_weights": None}, "`item_weights`: RBP with list weights needs each item's weight"),
             ({"preds": dense["preds"].flatten(), "target": dense["target"].flatten(), "item_weights": bad.flatten(),
               "indexes": torch.arange(6).repeat_interleave(ITEMS)}, "`indexes`: the flat form is not taken")]
    for inputs, message in cases:
        with pytest.raises(ValueError, match=message):
            metric.update(**inputs)
        assert torch.equal(metric.list_weight_stats, before)
    with pytest.raises(ValueError, match="`ties`: the weights belong to the listed items"):
        tre.WeightedRBP(ties="average")


@pytest.mark.parametrize("form", list(FORMS))
def test_no_host_read_and_a_compiled_update_equal_eager(form):
    """With ``validate_args=False`` on the accelerator path an update reads nothing on the host, and
    ``compile_update`` gives one graph (no eager fallback) with the eager values."""
    import warnings

    from tests.reference.host_reads import NoHostReads
    from torchrec_eval.syncs import simulate_accelerator

    batches = [FORMS[form](_batch(seed, 6)[0]) for seed in (6, 7)]
    eager, compiled = (tre.WeightedRBP(k=[1, K], validate_args=False) for _ in range(2))
    torch._dynamo.reset()  # a fresh cache: earlier graphs of this process count towards dynamo's recompile limit
    compiled.compile_update(backend="aot_eager")
    with simulate_accelerator():
        eager.update(**batches[0])  # first-call constants (the cut-off columns) are built from the host once
        with NoHostReads():
            eager.update(**batches[1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a graph, never the eager fallback
        for batch in batches:
            compiled.update(**batch)
    for key, value in eager.compute().items():
        torch.testing.assert_close(compiled.compute()[key], value, rtol=1e-12, atol=1e-12, msg=key)


def build_suite(form: str) -> MetricCase:
    """WeightedRBP in a suite beside NDCG and RBP (one top-k), as the class computes it alone."""
    case = build(form)
    keys = list(case.expected)
    return MetricCase(name=f"suite-{form}", make=lambda: tre.RankingMetrics(["ndcg@2", "rbp@4", *keys]),
                      batches=case.batches, expected=case.expected,
                      flatten=lambda result: {key: float(result[key]) for key in keys}, atol=1e-12)


@pytest.mark.parametrize("form", list(FORMS))
def test_in_a_suite_beside_ndcg(form):
    check_metric(build_suite(form))
