"""alpha-nDCG, alpha-DCG, ERR-IA, nERR-IA, and P-IA and subtopic recall (the counts, below) against TREC's ndeval
(pyndeval, through ir-measures and directly for an alpha other than 0.5), with each relevant item judged relevant
to exactly its intents; in every input form, with queries without relevant items, relevant items without intents
and lists shorter than k; against the plain reference (``tests/reference/intents.py``); through the harness; and
their option checks."""

from __future__ import annotations

import math

import pytest
import torch

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric
from tests.reference import intents as ref
from torchrec_eval.beyond.intents import greedy_ideal_gains

ir_measures = pytest.importorskip("ir_measures")
pyndeval = pytest.importorskip("pyndeval")

ITEMS, INTENTS = 16, 4
FAMILIES = ("alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia")
CLASSES = {"alpha_ndcg": tre.AlphaNDCG, "alpha_dcg": tre.AlphaDCG, "err_ia": tre.ERRIA, "nerr_ia": tre.NERRIA,
           "p_ia": tre.PrecisionIA, "strec": tre.SubtopicRecall,
           "ap_ia": tre.AveragePrecisionIA, "nrbp": tre.NRBP, "nnrbp": tre.NNRBP}
PEERS = {"alpha_ndcg": "alpha-nDCG", "alpha_dcg": "alpha-DCG", "err_ia": "ERR-IA", "nerr_ia": "nERR-IA"}


@pytest.fixture(autouse=True)
def _one_thread():
    """The greedy ideal is a few small reductions per rank: on a busy 2-core machine a second intra-op thread only
    adds wake-ups (each of them 100x slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _data(seed: int, rows: int = 12) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Distinct scores, multi-hot intents, relevant candidates (target & mask), the candidate mask."""
    gen = torch.Generator().manual_seed(seed)
    preds = torch.rand(rows, ITEMS, generator=gen).argsort(1).double()
    intents = (torch.rand(ITEMS, INTENTS, generator=gen) < 0.4).long()
    intents[0], intents[1] = 0, 1  # an item without an intent, one with all
    mask = torch.rand(rows, ITEMS, generator=gen) < 0.85
    target = torch.rand(rows, ITEMS, generator=gen) < 0.35
    target[0] = False  # no relevant item: skipped, as a query without qrels
    target[1] = False
    target[1, 0] = mask[1, 0] = True  # relevant items that cover no intent: 0, as ndeval's S = 0
    mask[2] = False
    mask[2, 3:6] = target[2, 4] = True  # three candidates: a list shorter than k
    return preds, intents, target & mask, mask


def _forms(preds: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> dict[str, dict[str, torch.Tensor]]:
    ids = torch.where(target, torch.arange(ITEMS), -1)
    order = preds.masked_fill(~mask, -math.inf).argsort(1, descending=True)
    ranked = torch.where(mask.gather(1, order), order, -1)
    return {"dense": {"preds": preds, "target": target, "mask": mask},
            "ids": {"preds": preds, "target_ids": ids, "mask": mask},
            "ranked": {"ranked_ids": ranked, "target_ids": ids}}


def _judgments(intents: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, preds: torch.Tensor):
    """ndeval's subtopic qrels (each relevant item relevant to exactly its intents; one with none judged 0 on a
    subtopic) and the run (the candidates and their scores); docnos sorted as the item ids."""
    qrels, run = [], {}
    for q in range(len(target)):
        for item in target[q].nonzero().flatten().tolist():
            covered = intents[item].nonzero().flatten().tolist()
            qrels += [ir_measures.Qrel(str(q), f"d{item:03d}", 1, f"s{s}") for s in covered]
            qrels += [] if covered else [ir_measures.Qrel(str(q), f"d{item:03d}", 0, "s0")]
        run[str(q)] = {f"d{item:03d}": float(preds[q, item]) for item in mask[q].nonzero().flatten().tolist()}
    return qrels, run


def _reference(family: str, intents, target, mask, preds, k: int, alpha: float = 0.5, **patience) -> list[float]:
    lists = [preds[q].masked_fill(~mask[q], -math.inf).argsort(descending=True)[: int(mask[q].sum())].tolist()
             for q in range(len(preds))]
    table = {item: set(intents[item].nonzero().flatten().tolist()) for item in range(ITEMS)}
    relevant = [set(row.nonzero().flatten().tolist()) for row in target]
    return [ref.MEASURES[family](ranked, rel, table, k, alpha, **patience) if rel else math.nan
            for ranked, rel in zip(lists, relevant, strict=True)]


@pytest.mark.parametrize("k", [1, 5, 20])
def test_every_form_equals_pyndeval_through_ir_measures(k):
    preds, intents, target, mask = _data(seed=k)
    qrels, run = _judgments(intents, target, mask, preds)
    measures = {"alpha_ndcg": ir_measures.alpha_nDCG @ k, "alpha_dcg": ir_measures.alpha_DCG @ k,
                "err_ia": ir_measures.ERR_IA @ k, "nerr_ia": ir_measures.nERR_IA @ k}
    peer = {family: {} for family in FAMILIES}
    names = {measure: family for family, measure in measures.items()}
    for metric in ir_measures.pyndeval.iter_calc(list(measures.values()), qrels, run):
        peer[names[metric.measure]][int(metric.query_id)] = metric.value
    names = [f"{family}@{k}" for family in FAMILIES]
    # the greedy reads its marginal gains off the catalogue's table, or (a catalogue larger than the relevant
    # items' intents) off the relevant items' own intents
    for table in (intents, torch.cat([intents, torch.zeros(100, INTENTS, dtype=intents.dtype)])):
        options = {family: {"item_intents": table} for family in FAMILIES}
        for form, inputs in _forms(preds, target, mask).items():
            suite = tre.RankingMetrics(names, options=options)
            suite.update(**{name: value[:7] for name, value in inputs.items()})
            suite.update(**{name: value[7:] for name, value in inputs.items()})
            out = suite.compute()
            for family in FAMILIES:
                mean = sum(peer[family].values()) / len(peer[family])
                assert float(out[f"{family}@{k}"]) == pytest.approx(mean, abs=1e-12), (form, len(table), family)
    options = {family: {"item_intents": intents} for family in FAMILIES}
    per_query = tre.RankingMetrics(names, options=options).per_query(preds, target, mask=mask)
    for family in FAMILIES:
        expected = _reference(family, intents, target, mask, preds, k)
        assert math.isnan(per_query[f"{family}@{k}"][0]) and sorted(peer[family]) == list(range(1, len(preds)))
        for q, value in peer[family].items():
            assert float(per_query[f"{family}@{k}"][q]) == pytest.approx(value, abs=1e-12), (family, q)
            assert expected[q] == pytest.approx(value, abs=1e-12), (family, q)  # the reference reads ndeval right
    assert float(per_query[f"err_ia@{k}"][1]) == 0.0  # relevant items without intents
    if k == 1:  # ndeval leaves ERR-IA@1 and alpha-DCG@1 undivided: the intents of the first item
        assert float(per_query["err_ia@1"].nan_to_num().max()) > 1
        torch.testing.assert_close(per_query["alpha_dcg@1"], per_query["err_ia@1"], rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_alpha_equals_pyndevals(alpha):
    preds, intents, target, mask = _data(seed=11)
    qrels, run = _judgments(intents, target, mask, preds)
    k = 5
    measures = [f"{PEERS[family]}@{k}" for family in FAMILIES]
    peer = pyndeval.ndeval([(q.query_id, q.iteration, q.doc_id, q.relevance) for q in qrels],
                           [(q, doc, score) for q, docs in run.items() for doc, score in docs.items()],
                           measures=measures, alpha=alpha)
    for family in FAMILIES:
        metric = CLASSES[family](k=k, item_intents=intents.bool(), alpha=alpha)
        values = metric.per_query(preds, target, mask=mask)
        for q, row in peer.items():
            assert float(values[int(q)]) == pytest.approx(row[f"{PEERS[family]}@{k}"], abs=1e-12), (family, q)


def test_a_tie_in_the_greedy_ideal_goes_to_the_larger_id_as_ndevals_larger_docno():
    """Items 0 and 3 share their intents: the tie at the second rank decides the ideal's later gains."""
    intents = torch.tensor([[1, 0, 0, 1], [0, 0, 1, 1], [0, 1, 1, 0], [1, 0, 0, 1], [1, 0, 1, 0]])
    preds, target = torch.tensor([[0.5, 0.4, 0.3, 0.2, 0.1]]), torch.ones(1, 5, dtype=torch.bool)
    gains, _ = greedy_ideal_gains(torch.arange(5).unsqueeze(0), target, intents.double(), 0.5, 5)
    assert gains.tolist() == [[2.0, 1.5, 1.5, 0.75, 0.5]]  # items 3, 2, 0, 4, 1 (item 0 first: 2, 2, 1, ...)
    qrels, run = _judgments(intents, target, target, preds)
    peer = {metric.measure: metric.value for metric in ir_measures.pyndeval.iter_calc(
        [ir_measures.alpha_nDCG @ 5, ir_measures.nERR_IA @ 5], qrels, run)}
    ids = torch.arange(5).unsqueeze(0)
    for inputs in ({"preds": preds, "target": target}, {"ranked_ids": ids, "target_ids": ids}):
        assert float(tre.AlphaNDCG(k=5, item_intents=intents)(**inputs)) == pytest.approx(
            peer[ir_measures.alpha_nDCG @ 5], abs=1e-12)
        assert float(tre.NERRIA(k=5, item_intents=intents)(**inputs)) == pytest.approx(
            peer[ir_measures.nERR_IA @ 5], abs=1e-12)


def test_families_share_the_ideal_of_an_equal_table_only():
    """A suite builds one greedy ideal per intents table (by content) and alpha, deepened for its deepest cut-off:
    the values are each class's own, with equal or different tables."""
    preds, intents, target, mask = _data(seed=2)
    other = 1 - intents  # other intents: another ideal
    suite = tre.RankingMetrics(["alpha_ndcg@3", "alpha_ndcg@8", "nerr_ia@5", "err_ia@8"],
                               options={"alpha_ndcg": {"item_intents": intents}, "nerr_ia": {"item_intents": other},
                                        "err_ia": {"item_intents": intents.clone(), "alpha": 0.3}})
    out = suite(preds, target, mask=mask)
    for name, metric in (("alpha_ndcg@3", tre.AlphaNDCG(k=3, item_intents=intents)),
                         ("alpha_ndcg@8", tre.AlphaNDCG(k=8, item_intents=intents)),
                         ("nerr_ia@5", tre.NERRIA(k=5, item_intents=other)),
                         ("err_ia@8", tre.ERRIA(k=8, item_intents=intents, alpha=0.3))):
        assert float(out[name]) == pytest.approx(float(metric(preds, target, mask=mask)), abs=1e-12), name


def test_the_greedy_ideal_reads_the_table_or_the_intents_alike():
    """Both ways of reading the marginal gains (the catalogue row, the relevant items' intents) give the plain
    greedy's gains, ties to the larger id, and the intents covered."""
    gen = torch.Generator().manual_seed(4)
    table = (torch.rand(30, 5, generator=gen) < 0.4).double()
    items = torch.stack([torch.randperm(30, generator=gen)[:9] for _ in range(6)])
    items[0, 5:] = -1
    relevant = torch.rand(6, 9, generator=gen) < 0.7
    intents = {item: set(table[item].nonzero().flatten().tolist()) for item in range(30)}
    for via_table in (True, False):
        gains, subtopics = greedy_ideal_gains(items, relevant, table, 0.5, 6, via_table=via_table)
        for q in range(6):
            chosen = {int(i) for i, r in zip(items[q], relevant[q], strict=True) if r and i >= 0}
            want = ref.ideal(chosen, intents, 0.5, 6)
            assert gains[q].tolist() == want + [0.0] * (6 - len(want))
            assert int(subtopics[q]) == len({s for item in chosen for s in intents[item]})


def test_excluded_items_and_a_chunked_catalogue_give_the_masked_value():
    """An excluded item is not a candidate, a relevant one included (it leaves the ideal); a catalogue streamed in
    chunks reads the targets as the relevant items."""
    preds, intents, target, mask = _data(seed=9)
    expected = tre.NERRIA(k=[2, 5], item_intents=intents)
    expected.update(preds, target, mask=mask)
    excluded = torch.where(~mask, torch.arange(ITEMS), -1)
    noise = torch.rand(target.shape, generator=torch.Generator().manual_seed(0)) < 0.3
    relevant_or_excluded = torch.where(noise & ~mask | target, torch.arange(ITEMS), -1)
    metric = tre.NERRIA(k=[2, 5], item_intents=intents)
    metric.update(preds, target_ids=relevant_or_excluded, exclude_ids=excluded)
    streamed = tre.NERRIA(k=[2, 5], item_intents=intents)
    with streamed.catalogue(num_items=ITEMS, target_ids=torch.where(target, torch.arange(ITEMS), -1)) as chunks:
        for start, stop in ((6, ITEMS), (0, 6)):
            chunks.add(preds.masked_fill(~mask, -math.inf)[:, start:stop], start)
    for other in (metric, streamed):
        for key, value in expected.compute().items():
            assert float(other.compute()[key]) == pytest.approx(float(value), abs=1e-12), key


def _case(family: str) -> MetricCase:
    preds, intents, target, mask = _data(seed=3, rows=10)
    batches = [{"preds": preds[part], "target": target[part], "mask": mask[part]}
               for part in (slice(0, 4), slice(4, 5), slice(5, None))]
    values = [v for v in _reference(family, intents, target, mask, preds, 4) if not math.isnan(v)]
    return MetricCase(name=family, make=lambda: CLASSES[family](k=4, item_intents=intents), batches=batches,
                      expected={f"{family}@4": sum(values) / len(values)},
                      functional=lambda **inputs: getattr(tre.functional, family)(k=4, item_intents=intents, **inputs))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_harness(family):
    check_metric(_case(family))


def test_empty_target_action_and_groups():
    preds, intents, target, mask = _data(seed=6)
    metric = tre.AlphaNDCG(k=[3, 5], item_intents=intents, empty_target_action="neg", num_groups=2)
    groups = torch.arange(len(preds)) % 2
    metric.update(preds, target, mask=mask, groups=groups)
    out = metric.compute()
    for k in (3, 5):
        values = torch.tensor(_reference("alpha_ndcg", intents, target, mask, preds, k), dtype=torch.float64)
        values = values.nan_to_num(0.0)  # "neg": the query without a relevant item counts 0
        for group in (0, 1):
            assert float(out[f"alpha_ndcg@{k}"][group]) == pytest.approx(float(values[groups == group].mean()),
                                                                         abs=1e-12)


def test_bad_options_and_ids_out_of_range_leave_the_state():
    intents = torch.eye(4, 2)
    with pytest.raises(ValueError, match="alpha_ndcg needs `item_intents`"):
        tre.RankingMetrics(["alpha_ndcg@3"])
    for alpha in (-0.1, 1.5, "0.5", True):
        with pytest.raises(ValueError, match=f"err_ia: `alpha` must be a number in \\[0, 1\\], got {alpha!r}"):
            tre.ERRIA(k=3, item_intents=intents, alpha=alpha)
    with pytest.raises(ValueError, match="`item_intents` must hold only 0s and 1s .*, got 0.5"):
        tre.NERRIA(k=3, item_intents=torch.full((4, 2), 0.5))
    with pytest.raises(ValueError, match="`item_intents` must be a non-empty 2-D tensor .*, got \\(4,\\)"):
        tre.AlphaNDCG(k=3, item_intents=torch.ones(4))
    with pytest.raises(ValueError, match="`item_intents` must be a non-empty 2-D tensor .*, got list"):
        tre.AlphaNDCG(k=3, item_intents=[[1, 0]])
    metric = tre.AlphaNDCG(k=2, item_intents=intents)
    metric.update(torch.rand(2, 4), torch.tensor([[1, 0, 0, 0], [0, 1, 0, 0]]))
    before = metric.beyond_stats.clone()
    with pytest.raises(ValueError, match="out of range for alpha_ndcg: `item_intents` rows=4"):
        metric.update(ranked_ids=torch.tensor([[0, 1]]), target_ids=torch.tensor([[7]]))
    assert torch.equal(metric.beyond_stats, before)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_functions_equal_the_classes_and_pyndeval(family):
    """``functional.<family>`` evaluates its class on one batch: the mean, each query's value (NaN: not counted),
    several cut-offs at once, every input form, ``empty_target_action`` and ``alpha``; against pyndeval too."""
    preds, intents, target, mask = _data(seed=12)
    function = getattr(tre.functional, family)
    qrels, run = _judgments(intents, target, mask, preds)
    peer = pyndeval.ndeval([(q.query_id, q.iteration, q.doc_id, q.relevance) for q in qrels],
                           [(q, doc, score) for q, docs in run.items() for doc, score in docs.items()],
                           measures=[f"{PEERS[family]}@5"], alpha=0.3)
    expected = torch.tensor([peer[str(q)][f"{PEERS[family]}@5"] if str(q) in peer else math.nan
                             for q in range(len(preds))], dtype=torch.float64)
    assert expected.isnan().tolist() == [q == 0 for q in range(len(preds))]
    for form, inputs in _forms(preds, target, mask).items():
        values = function(k=5, item_intents=intents, alpha=0.3, reduction="none", **inputs)
        torch.testing.assert_close(values, expected, rtol=0, atol=1e-12, equal_nan=True, msg=form)
        assert float(function(k=5, item_intents=intents, alpha=0.3, **inputs)) == pytest.approx(
            float(expected.nanmean()), abs=1e-12)
    inputs = _forms(preds, target, mask)["dense"]
    metric = CLASSES[family](k=[1, 5], item_intents=intents, empty_target_action="neg")
    metric.update(**inputs)
    assert function(k=[1, 5], item_intents=intents, empty_target_action="neg", **inputs) == metric.compute()
    with pytest.raises(ValueError, match="`reduction` must be 'mean' or 'none', got 'sum'"):
        function(k=5, item_intents=intents, reduction="sum", **inputs)
    with pytest.raises(ValueError, match=f"{family}\\(\\) got an unexpected keyword argument 'num_groups'"):
        function(k=5, item_intents=intents, num_groups=2, **inputs)


# ndeval's intent-aware counts, P-IA@k, subtopic recall (strec@k) and MAP-IA: no alpha, no ideal list
COUNTS = ("p_ia", "strec", "ap_ia")
COUNT_PEERS = {"p_ia": "P-IA@{k}", "strec": "strec@{k}", "ap_ia": "MAP-IA"}


@pytest.mark.parametrize("k", [1, 5, 20])
def test_the_counts_in_every_form_equal_pyndeval(k):
    """ndeval's MAP-IA ranks the whole run (16 items): AP-IA@20 is it; at k 1 and 5 the top-k reference, which
    reads MAP-IA at k = 20, stands for it."""
    preds, intents, target, mask = _data(seed=40 + k)
    qrels, run = _judgments(intents, target, mask, preds)
    peer_names = {family: COUNT_PEERS[family].format(k=k) for family in COUNTS}
    peer = pyndeval.ndeval([(q.query_id, q.iteration, q.doc_id, q.relevance) for q in qrels],
                           [(q, doc, score) for q, docs in run.items() for doc, score in docs.items()],
                           measures=list(peer_names.values()))
    through = {family: {} for family in COUNTS}
    names = {ir_measures.P_IA @ k: "p_ia", ir_measures.StRecall @ k: "strec", ir_measures.AP_IA: "ap_ia"}
    for metric in ir_measures.pyndeval.iter_calc(list(names), qrels, run):
        through[names[metric.measure]][int(metric.query_id)] = metric.value
    options = {family: {"item_intents": intents} for family in COUNTS}
    for family in COUNTS:
        expected = torch.tensor([peer[str(q)][peer_names[family]] if str(q) in peer else math.nan
                                 for q in range(len(preds))], dtype=torch.float64)
        whole = expected
        torch.testing.assert_close(torch.tensor([through[family].get(q, math.nan) for q in range(len(preds))],
                                                dtype=torch.float64), whole, rtol=0, atol=1e-12, equal_nan=True)
        if family == "ap_ia" and k < ITEMS:  # MAP-IA ranks the whole run
            torch.testing.assert_close(torch.tensor(_reference(family, intents, target, mask, preds, ITEMS),
                                                    dtype=torch.float64), whole, rtol=0, atol=1e-12, equal_nan=True)
            expected = torch.tensor(_reference(family, intents, target, mask, preds, k), dtype=torch.float64)
        assert expected.isnan().tolist() == [q == 0 for q in range(len(preds))]  # the query without a relevant item
        assert expected[1] == 0.0 and expected.nan_to_num().gt(0).sum() >= 3  # relevant items without intents: 0
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


@pytest.mark.parametrize("family", COUNTS)
def test_the_harness_of_the_counts(family):
    check_metric(_case(family))


@pytest.mark.parametrize("family", COUNTS)
def test_the_counts_refuse_alpha_and_a_bad_table(family):
    intents = torch.eye(ITEMS, 2)
    with pytest.raises(ValueError, match=f"{family} has no option 'alpha'|unexpected keyword argument 'alpha'"):
        tre.RankingMetrics([f"{family}@3"], options={family: {"item_intents": intents, "alpha": 0.3}})
    with pytest.raises(ValueError, match="unexpected keyword argument 'alpha'"):
        getattr(tre.functional, family)(torch.rand(1, ITEMS), torch.ones(1, ITEMS), k=3, item_intents=intents,
                                        alpha=0.3)
    with pytest.raises(ValueError, match="`item_intents` must hold only 0s and 1s .*, got 0.5"):
        CLASSES[family](k=3, item_intents=torch.full((ITEMS, 2), 0.5))


# ndeval's novelty- and rank-biased precision: NRBP and nNRBP, with alpha and the patience beta
PATIENT = ("nrbp", "nnrbp")


@pytest.mark.parametrize(("alpha", "beta"), [(0.5, 0.5), (0.3, 0.8), (1.0, 0.2)])
def test_nrbp_in_every_form_equals_pyndeval(alpha, beta):
    """ndeval sums NRBP over the whole run (16 items): k = 16 is it, directly and through ir-measures; at k = 1
    and 5 the top-k reference, which reads ndeval's at k = 16, stands for it. A list whose relevant items cover no
    intent: NRBP 0 as ndeval, nNRBP 0 (ndeval divides 0 by its ideal's 0)."""
    preds, intents, target, mask = _data(seed=21)
    qrels, run = _judgments(intents, target, mask, preds)
    peer = pyndeval.ndeval([(q.query_id, q.iteration, q.doc_id, q.relevance) for q in qrels],
                           [(q, doc, score) for q, docs in run.items() for doc, score in docs.items()],
                           measures=["NRBP", "nNRBP"], alpha=alpha, beta=beta)
    names = {ir_measures.NRBP(alpha=alpha, beta=beta): "nrbp", ir_measures.nNRBP(alpha=alpha, beta=beta): "nnrbp"}
    through = {family: {} for family in PATIENT}
    for metric in ir_measures.pyndeval.iter_calc(list(names), qrels, run):
        through[names[metric.measure]][int(metric.query_id)] = metric.value
    for family, peer_name in (("nrbp", "NRBP"), ("nnrbp", "nNRBP")):
        whole = torch.tensor([peer[str(q)][peer_name] if str(q) in peer else math.nan for q in range(len(preds))],
                             dtype=torch.float64)
        whole[1] = whole[1].nan_to_num()  # ndeval's nNRBP of S = 0 is 0 / 0
        assert whole.isnan().tolist() == [q == 0 for q in range(len(preds))] and whole[1] == 0.0
        torch.testing.assert_close(torch.tensor([through[family].get(q, math.nan) for q in range(len(preds))],
                                                dtype=torch.float64).nan_to_num(), whole.nan_to_num(), rtol=0,
                                   atol=1e-12)
        for k in (1, 5, ITEMS):
            expected = torch.tensor(_reference(family, intents, target, mask, preds, k, alpha, beta=beta),
                                    dtype=torch.float64)
            if k == ITEMS:
                torch.testing.assert_close(expected, whole, rtol=0, atol=1e-12, equal_nan=True)
            for form, inputs in _forms(preds, target, mask).items():
                values = getattr(tre.functional, family)(k=k, item_intents=intents, alpha=alpha, beta=beta,
                                                         reduction="none", **inputs)
                torch.testing.assert_close(values, expected, rtol=0, atol=1e-12, equal_nan=True, msg=(family, form))
            suite = tre.RankingMetrics([f"{family}@{k}", f"alpha_ndcg@{k}"], options={
                family: {"item_intents": intents, "alpha": alpha, "beta": beta}, "alpha_ndcg": {"item_intents": intents}})
            suite.update(preds[:7], target[:7], mask=mask[:7])
            suite.update(preds[7:], target[7:], mask=mask[7:])
            assert float(suite.compute()[f"{family}@{k}"]) == pytest.approx(float(expected.nanmean()), abs=1e-12)


@pytest.mark.parametrize("family", PATIENT)
def test_the_harness_of_nrbp(family):
    check_metric(_case(family))


def test_beta_is_nrbps_alone_and_checked():
    intents = torch.eye(ITEMS, 2)
    with pytest.raises(ValueError, match="alpha_ndcg has no option 'beta'|unexpected keyword argument 'beta'"):
        tre.RankingMetrics(["alpha_ndcg@3"], options={"alpha_ndcg": {"item_intents": intents, "beta": 0.3}})
    for bad in (-0.1, 1.5, "0.5", math.nan):
        with pytest.raises(ValueError, match=r"nrbp: `beta` must be a number in \[0, 1\]"):
            tre.NRBP(k=3, item_intents=intents, beta=bad)

