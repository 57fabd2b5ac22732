"""The peers' top-k families against the peers themselves: ERR against gdeval, SDCG, RBP, NERR, INST, INSQ and BPM
against cwl_eval (both through ir-measures), SetF, SetMAP, NumRet, NumRelRet, IPrec and InterpolatedAP against
trec_eval (pytrec_eval), NCRR against cornac.

Seeded batches with graded gains 0..4, queries without a relevant item, short lists (items scored ``-inf``
are not candidates: the peers see only the candidates) and distinct scores, so that no library's tie rule
matters (ties: the brute-force reference of ``tests/ranking/test_ranking_families.py``).
"""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from torchrec_eval import functional as F

ir_measures = pytest.importorskip("ir_measures")


def _batch(seed: int, rows: int = 24, items: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randperm(rows * items, generator=gen).reshape(rows, items).double()  # distinct
    target = torch.where(torch.rand(rows, items, generator=gen) < 0.35, torch.randint(1, 5, (rows, items), generator=gen), 0)
    target[0] = 0  # no relevant item
    lengths = torch.randint(1, items + 1, (rows,), generator=gen)
    lengths[1] = 2  # a list shorter than every cut-off but 1
    listed = torch.arange(items) < lengths.unsqueeze(1)
    return preds.masked_fill(~listed, float("-inf")), target


def _qrels_and_run(preds: torch.Tensor, target: torch.Tensor, cut: int | None = None) -> tuple[dict, dict]:
    """Each query's candidates judged (0 included) and ranked; ``cut``: the run holds the top ``cut`` only."""
    qrels, run = {}, {}
    for q, (scores, gains) in enumerate(zip(preds.tolist(), target.tolist(), strict=True)):
        listed = [i for i in sorted(range(len(scores)), key=lambda i: -scores[i]) if scores[i] > -math.inf]
        qrels[str(q)] = {f"d{i}": int(gains[i]) for i in listed}
        run[str(q)] = {f"d{i}": float(scores[i]) for i in listed[:cut]}
    return qrels, run


def _peer(measure, preds: torch.Tensor, target: torch.Tensor, cut: int | None = None,
          reads_relevance: bool = True) -> torch.Tensor:
    """The peer's per-query values, NaN for a query without a relevant item (skipped by default here) where the
    measure reads relevance (NumRet counts every judged query: trec_eval's and ir-measures' rule)."""
    qrels, run = _qrels_and_run(preds, target, cut)
    values = {int(m.query_id): m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    relevant = (target.masked_fill(preds == float("-inf"), 0) > 0).any(1) | (not reads_relevance)
    return torch.tensor([values[q] if relevant[q] else math.nan for q in range(len(preds))], dtype=torch.float64)


def _close(ours: torch.Tensor, theirs: torch.Tensor, atol: float = 1e-12) -> None:
    torch.testing.assert_close(ours, theirs, rtol=0, atol=atol, equal_nan=True)


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval is a perl script")
@pytest.mark.parametrize("k", [1, 5, 20])
def test_err_equals_gdeval(k):
    preds, target = _batch(seed=k)
    ours = F.err(preds, target, k=k, reduction="none")
    _close(ours, _peer(ir_measures.ERR @ k, preds, target), atol=5.1e-6)  # gdeval rounds to 5 decimals
    assert ours.isnan()[0] and ours.nan_to_num().gt(0).sum() > 10  # the oracle saw values


@pytest.mark.parametrize("k", [1, 5, 20])
def test_sdcg_equals_cwl_eval(k):
    preds, target = _batch(seed=10 + k)
    graded = F.sdcg(preds, target, k=k, max_grade=4, reduction="none")
    _close(graded, _peer(ir_measures.SDCG(max_rel=4) @ k, preds, target))
    # without a top grade: binary relevance, cwl_eval's max_rel=1 (a grade >= 1 counts 1)
    _close(F.sdcg(preds, target, k=k, reduction="none"), _peer(ir_measures.SDCG(max_rel=1) @ k, preds, target))


@pytest.mark.parametrize("k", [1, 5, 20])
def test_nerr_equals_cwl_eval(k):
    """Equations 8 and 9 truncate at k; 10 and 11 run to cwl_eval's depth of 1000 (a run padded with 0 gains): NERR@1000
    is their value. Graded (max_rel 4) and binary (max_rel 1, our max_grade None)."""
    preds, target = _batch(seed=30 + k)
    for equation, measure in ((8, ir_measures.NERR8), (9, ir_measures.NERR9)):
        _close(F.nerr(preds, target, k=k, equation=equation, max_grade=4, reduction="none"),
               _peer(measure(max_rel=4) @ k, preds, target))
        _close(F.nerr(preds, target, k=k, equation=equation, reduction="none"),
               _peer(measure(max_rel=1) @ k, preds, target))
    _close(F.nerr(preds, target, k=1000, equation=10, phi=0.3 + k / 40, max_grade=4, reduction="none"),
           _peer(ir_measures.NERR10(max_rel=4, p=0.3 + k / 40), preds, target))
    _close(F.nerr(preds, target, k=1000, equation=10, phi=1.0, max_grade=4, reduction="none"),  # phi = 1: the
           F.nerr(preds, target, k=1000, equation=8, max_grade=4, reduction="none"))  # tail of equation 8
    _close(F.nerr(preds, target, k=1000, equation=11, T=k / 4, max_grade=4, reduction="none"),
           _peer(ir_measures.NERR11(max_rel=4, T=k / 4), preds, target))
    ours = F.nerr(preds, target, k=k, max_grade=4, reduction="none")
    assert ours.isnan()[0] and ours.nan_to_num().gt(0).sum() > 10  # the oracle saw values


@pytest.mark.parametrize("T", [0.5, 1.0, 3.0])
def test_inst_and_insq_equal_cwl_eval(T):  # noqa: N803
    """Both run to cwl_eval's depth of 1000 (a run padded with 0 gains): INST@1000 and INSQ@1000, graded and binary;
    at k = 5 the brute-force reference (``tests/ranking/test_ranking_families.py``) stands for the cut."""
    preds, target = _batch(seed=40 + int(T * 2))
    for function, measure in ((F.inst, ir_measures.INST), (F.insq, ir_measures.INSQ)):
        _close(function(preds, target, k=1000, T=T, max_grade=4, reduction="none"),
               _peer(measure(T=T, max_rel=4), preds, target))
        _close(function(preds, target, k=1000, T=T, reduction="none"), _peer(measure(T=T, max_rel=1), preds, target))


@pytest.mark.parametrize("T", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("k", [1, 5, 20])
def test_bpm_equals_cwl_eval(k, T):  # noqa: N803
    preds, target = _batch(seed=50 + k)
    _close(F.bpm(preds, target, k=k, T=T, max_grade=4, reduction="none"),
           _peer(ir_measures.BPM(T=T, max_rel=4) @ k, preds, target))
    _close(F.bpm(preds, target, k=k, T=T, reduction="none"), _peer(ir_measures.BPM(T=T, max_rel=1) @ k, preds, target))


@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
@pytest.mark.parametrize("k", [1, 5, 20])
def test_rbp_equals_cwl_eval(k, p):
    preds, target = _batch(seed=20 + k)
    # cwl_eval's RBP reads the whole run: the run cut at k is RBP@k
    _close(F.rbp(preds, target, k=k, p=p, reduction="none"), _peer(ir_measures.RBP(rel=1, p=p), preds, target, cut=k))


@pytest.mark.parametrize("k", [1, 5, 20])
def test_set_measures_equal_trec_eval(k):
    preds, target = _batch(seed=30 + k)
    for beta in (0.5, 1.0, 2.0):  # trec_eval's set_F.x weighs with x = beta^2
        _close(F.setf(preds, target, k=k, beta=beta, reduction="none"),
               _peer(ir_measures.SetF(rel=1, beta=beta**2), preds, target, cut=k))
    # trec_eval's set_map, ir-measures' SetAP: through both
    _close(F.set_map(preds, target, k=k, reduction="none"), _peer(ir_measures.SetAP(rel=1), preds, target, cut=k))
    qrels, run = _qrels_and_run(preds, target, cut=k)
    pytrec_eval = pytest.importorskip("pytrec_eval")
    direct = pytrec_eval.RelevanceEvaluator(qrels, {"set_map"}).evaluate(run)
    relevant = (target.masked_fill(preds == float("-inf"), 0) > 0).any(1)
    expected = torch.tensor([direct[str(q)]["set_map"] if relevant[q] else math.nan for q in range(len(preds))],
                            dtype=torch.float64)
    _close(F.set_map(preds, target, k=k, reduction="none"), expected)
    assert expected.nan_to_num().gt(0).sum() > 5 and ((expected == 0).any() or k == 20)  # hits, and queries without
    _close(F.num_ret(preds, target, k=k, reduction="none"),
           _peer(ir_measures.NumRet, preds, target, cut=k, reads_relevance=False))
    _close(F.num_rel_ret(preds, target, k=k, reduction="none"), _peer(ir_measures.NumRet(rel=1), preds, target, cut=k))
    _close(F.num_rel(preds, target, reduction="none"), _peer(ir_measures.NumRel(rel=1), preds, target, cut=k))


def test_success_is_hitrate_and_equals_trec_eval():
    preds, target = _batch(seed=60)
    suite = tre.RankingMetrics(["success@1", "success@5"])
    assert suite.order == ["hitrate@1", "hitrate@5"]
    for k in (1, 5):
        _close(F.hitrate(preds, target, k=k, reduction="none"), _peer(ir_measures.Success @ k, preds, target))


@pytest.mark.parametrize("k", [1, 5, 20])
def test_interpolated_precision_equals_trec_eval(k):
    preds, target = _batch(seed=50 + k)
    for level in (0.0, 0.1, 0.3, 0.7, 1.0):  # trec_eval 9 finds the c-th relevant item, c = (long)(p R + 0.9)
        _close(F.iprec(preds, target, k=k, recall=level, reduction="none"),
               _peer(ir_measures.IPrec @ level, preds, target, cut=k))
    qrels, run = _qrels_and_run(preds, target, cut=k)
    pytrec_eval = pytest.importorskip("pytrec_eval")
    eleven = pytrec_eval.RelevanceEvaluator(qrels, {"11pt_avg"}).evaluate(run)
    relevant = (target.masked_fill(preds == float("-inf"), 0) > 0).any(1)
    expected = [eleven[str(q)]["11pt_avg"] if relevant[q] else math.nan for q in range(len(preds))]
    _close(F.interpolated_ap(preds, target, k=k, reduction="none"), torch.tensor(expected, dtype=torch.float64),
           atol=1e-15)


@pytest.mark.parametrize("k", [1, 5, 20])
def test_ncrr_equals_cornac(k):
    cornac_metrics = pytest.importorskip("cornac.metrics")
    preds, target = _batch(seed=40 + k)
    expected = []
    for scores, gains in zip(preds.tolist(), target.tolist(), strict=True):
        listed = [i for i in sorted(range(len(scores)), key=lambda i: -scores[i]) if scores[i] > -math.inf]
        positives = np.array([i for i in listed if gains[i] > 0])
        expected.append(cornac_metrics.NCRR(k=k).compute(positives, np.array(listed)) if len(positives) else math.nan)
    _close(F.ncrr(preds, target, k=k, reduction="none"), torch.tensor(expected, dtype=torch.float64))


def test_cwl_eval_average_precision_divides_by_the_retrieved_relevant_documents():
    """What the conventions page says of ir-measures' cwl_eval AP: it is MAP(normalizer="hits"), not trec_eval's."""
    preds, target = _batch(seed=70)
    k = 3  # the run cut at 3: some relevant documents are not retrieved
    cwl = ir_measures.AP(rel=1)
    qrels, run = _qrels_and_run(preds, target, cut=k)
    theirs = {int(m.query_id): m.value for m in ir_measures.providers.registry["cwl_eval"].evaluator(
        [cwl], [ir_measures.Qrel(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]).iter_calc(
        [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()])}
    found = F.map(preds, target, k=k, normalizer="hits", reduction="none")
    listed = [q for q in range(len(preds)) if not math.isnan(found[q]) and found[q] > 0]
    _close(found[listed], torch.tensor([theirs[q] for q in listed], dtype=torch.float64))
    assert not torch.allclose(found[listed], F.map(preds, target, k=k, normalizer="r", reduction="none")[listed])


def test_err_refuses_averaged_ties_and_a_gain_above_its_top_grade():
    for make in (lambda: tre.ERR(k=5, ties="average"), lambda: tre.IPrec(k=5, ties="average"),
                 lambda: F.interpolated_ap(torch.rand(2, 4), torch.ones(2, 4), k=3, ties="average")):
        with pytest.raises(ValueError, match="has no exact expectation.*ties='average'"):
            make()
    with pytest.raises(ValueError, match="ties='average'"):
        tre.RankingMetrics(["ndcg@5", "err@5"], ties="average")
    metric = tre.RankingMetrics(["ndcg@3", "err@3"])  # gdeval's top grade 4
    metric.update(torch.tensor([[0.3, 0.2, 0.1]]), torch.tensor([[4, 0, 1]]))
    before = {name: value.clone() for name, value in metric.metric_state.items()}
    with pytest.raises(ValueError, match=r"`target` must be <= max_grade=4 .*got a maximum of 5"):
        metric.update(torch.tensor([[0.3, 0.2, 0.1]]), torch.tensor([[5, 0, 1]]))
    with pytest.raises(ValueError, match=r"`target_gains` must be <= max_grade=2"):
        F.sdcg(torch.rand(2, 5), target_ids=torch.tensor([[0, 1], [2, -1]]), target_gains=torch.tensor([[1.0, 3.0], [2.0, 0.0]]),
               k=3, max_grade=2)
    assert all(torch.equal(before[name], value) for name, value in metric.metric_state.items())


@pytest.mark.parametrize(("make", "message"), [
    (lambda: tre.RBP(k=5, p=1.0), r"`p` of rbp must be a number > 0 and < 1, got 1.0"),
    (lambda: tre.RBP(k=5, normalize="yes"), r"`normalize` of rbp must be one of \(True, False\), got 'yes'"),
    (lambda: tre.ERR(k=5, max_grade=0.5), r"`max_grade` of err must be a number >= 1, got 0.5"),
    (lambda: tre.SDCG(k=5, max_grade=True), r"`max_grade` of sdcg must be a number >= 1, got True"),
    (lambda: tre.SetF(k=5, beta=0), r"`beta` of setf must be a number > 0, got 0"),
    (lambda: tre.IPrec(k=5, recall=1.5), r"`recall` of iprec must be a number >= 0 and <= 1, got 1.5"),
    (lambda: tre.NERR(k=5, equation=7), r"`equation` of nerr must be one of \(8, 9, 10, 11\), got 7"),
    (lambda: tre.NERR(k=5, phi=1.5), r"`phi` of nerr must be a number >= 0 and <= 1, got 1.5"),
    (lambda: tre.BPM(k=5, T=0), r"`T` of bpm must be a number > 0, got 0"),
    (lambda: tre.INST(k=5, max_grade=0.5), r"`max_grade` of inst must be a number >= 1, got 0.5"),
    (lambda: tre.INSQ(k=5, ties="average"), r"insq has no exact expectation over the orders of tied scores"),
])
def test_bad_options_name_the_option(make, message):
    with pytest.raises(ValueError, match=message):
        make()
