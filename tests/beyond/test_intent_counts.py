"""P-IA@k and subtopic recall (strec@k), ndeval's intent-aware counts, against TREC's ndeval (pyndeval, directly
and through ir-measures' ``P_IA`` and ``StRecall``) and the plain reference (``tests/reference/intents.py``), in
every input form, with queries without relevant items, relevant items without intents and lists shorter than k;
through the harness; beside the other intent-aware families in one suite; and their refusal of ``alpha``."""

from __future__ import annotations

import math

import pytest
import torch

import torchrec_eval as tre
from tests.beyond.test_intents import ITEMS, _case, _data, _forms, _judgments, _reference
from tests.harness import check_metric

ir_measures = pytest.importorskip("ir_measures")
pyndeval = pytest.importorskip("pyndeval")

FAMILIES = ("p_ia", "strec")
CLASSES = {"p_ia": tre.PrecisionIA, "strec": tre.SubtopicRecall}
PEERS = {"p_ia": "P-IA", "strec": "strec"}


@pytest.mark.parametrize("k", [1, 5, 20])
def test_every_form_equals_pyndeval(k):
    preds, intents, target, mask = _data(seed=40 + k)
    qrels, run = _judgments(intents, target, mask, preds)
    peer = pyndeval.ndeval([(q.query_id, q.iteration, q.doc_id, q.relevance) for q in qrels],
                           [(q, doc, score) for q, docs in run.items() for doc, score in docs.items()],
                           measures=[f"{PEERS[family]}@{k}" for family in FAMILIES])
    through = {family: {} for family in FAMILIES}
    names = {ir_measures.P_IA @ k: "p_ia", ir_measures.StRecall @ k: "strec"}
    for metric in ir_measures.pyndeval.iter_calc(list(names), qrels, run):
        through[names[metric.measure]][int(metric.query_id)] = metric.value
    options = {family: {"item_intents": intents} for family in FAMILIES}
    for family in FAMILIES:
        expected = torch.tensor([peer[str(q)][f"{PEERS[family]}@{k}"] if str(q) in peer else math.nan
                                 for q in range(len(preds))], dtype=torch.float64)
        assert expected.isnan().tolist() == [q == 0 for q in range(len(preds))]  # the query without a relevant item
        assert expected[1] == 0.0 and expected.nan_to_num().gt(0).sum() >= 3  # relevant items without intents: 0
        torch.testing.assert_close(torch.tensor([through[family].get(q, math.nan) for q in range(len(preds))],
                                                dtype=torch.float64), expected, rtol=0, atol=1e-12, equal_nan=True)
        reference = torch.tensor(_reference(family, intents, target, mask, preds, k), dtype=torch.float64)
        torch.testing.assert_close(reference, expected, rtol=0, atol=1e-12, equal_nan=True)  # the reference reads it
        for form, inputs in _forms(preds, target, mask).items():
            values = getattr(tre.functional, family)(k=k, item_intents=intents, reduction="none", **inputs)
            torch.testing.assert_close(values, expected, rtol=0, atol=1e-12, equal_nan=True, msg=(family, form))
            suite = tre.RankingMetrics([f"{family}@{k}", f"alpha_ndcg@{k}"],
                                       options={family: options[family], "alpha_ndcg": {"item_intents": intents}})
            suite.update(**{name: value[:7] for name, value in inputs.items()})
            suite.update(**{name: value[7:] for name, value in inputs.items()})
            assert float(suite.compute()[f"{family}@{k}"]) == pytest.approx(float(expected.nanmean()), abs=1e-12)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_harness(family):
    check_metric(_case(family))


@pytest.mark.parametrize("family", FAMILIES)
def test_no_alpha_and_a_bad_table_are_refused(family):
    intents = torch.eye(ITEMS, 2)
    with pytest.raises(ValueError, match=f"{family} has no option 'alpha'|unexpected keyword argument 'alpha'"):
        tre.RankingMetrics([f"{family}@3"], options={family: {"item_intents": intents, "alpha": 0.3}})
    with pytest.raises(ValueError, match="unexpected keyword argument 'alpha'"):
        getattr(tre.functional, family)(torch.rand(1, ITEMS), torch.ones(1, ITEMS), k=3, item_intents=intents,
                                        alpha=0.3)
    with pytest.raises(ValueError, match="`item_intents` must hold only 0s and 1s .*, got 0.5"):
        CLASSES[family](k=3, item_intents=torch.full((ITEMS, 2), 0.5))
