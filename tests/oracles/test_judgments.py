"""bpref and Judged@k, the families of incomplete judgments, against trec_eval's ``bpref`` (pytrec_eval) and
ir-measures' ``Judged@k``, and against the brute-force reference of ``tests/reference/ranking.py``.

A target id is a judgment (gain 0: judged non-relevant, as a qrels line of 0), an item outside the target ids is
unjudged. Seeded batches with unjudged ranked items, judged non-relevant ones (retrieved or not), queries
without a relevant item, without a judged non-relevant item, without any judgment, lists shorter than k and
distinct scores (so that no library's tie rule matters). The ranked, ids and dense forms agree where they
describe the same judgments.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

import torchrec_eval as tre
from tests.reference import ranking as ref
from torchrec_eval import functional as F

pytrec_eval = pytest.importorskip("pytrec_eval")
ir_measures = pytest.importorskip("ir_measures")

KS = (1, 5, 16)  # 16: as long as every list (trec_eval's value on the whole run)


def _judgments(seed: int, rows: int = 24, items: int = 16) -> dict[str, torch.Tensor]:
    """Distinct scores over ``items`` items, each query's ranked list (short ones padded with -1) and its target
    ids (judged items: about 60%, gains 0..3, -1 padding in place)."""
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randperm(rows * items, generator=gen).reshape(rows, items).double()
    order = scores.argsort(1, descending=True)
    lengths = torch.randint(1, items + 1, (rows,), generator=gen)
    lengths[1], lengths[2] = 2, items  # shorter than most cut-offs; the whole catalogue
    judged = torch.rand(rows, items, generator=gen) < 0.6
    gains = torch.where(torch.rand(rows, items, generator=gen) < 0.5, 0, torch.randint(1, 4, (rows, items), generator=gen))
    gains[0] = 0  # judgments, but no relevant item (trec_eval: bpref 0)
    judged[2] = True  # every item judged
    gains[3] = gains[3].clamp(min=1)  # no judged non-relevant item (N = 0)
    judged[4], gains[4, order[4, 1]] = False, 2
    judged[4, order[4, 1]] = True  # one judgment: a relevant item at rank 2
    judged[5] = False  # no judgment at all (no target id)
    listed = torch.arange(items) < lengths.unsqueeze(1)
    ranked_ids = order.masked_fill(~listed, -1)
    target_ids = torch.where(judged, torch.arange(items), -1)
    return {"scores": scores, "ranked_ids": ranked_ids, "target_ids": target_ids,
            "target_gains": torch.where(judged, gains, 0)}


def _ranked(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: batch[name] for name in ("ranked_ids", "target_ids", "target_gains")}


def _qrels_and_run(batch: dict[str, torch.Tensor], k: int) -> tuple[dict, dict]:
    """Each query's judgments (a query without any is not in the qrels) and its list cut at k."""
    qrels, run = {}, {}
    rows = zip(batch["ranked_ids"].tolist(), batch["target_ids"].tolist(), batch["target_gains"].tolist(), strict=True)
    for q, (ranked, ids, gains) in enumerate(rows):
        judged = {f"d{i}": int(g) for i, g in zip(ids, gains, strict=True) if i >= 0}
        if judged:
            qrels[str(q)] = judged
        listed = [i for i in ranked if i >= 0][:k]
        run[str(q)] = {f"d{i}": float(len(listed) - rank) for rank, i in enumerate(listed)}
    return qrels, run


def _trec_bpref(batch: dict[str, torch.Tensor], k: int, level: int = 1) -> torch.Tensor:
    """trec_eval's bpref of each query on its run cut at k (NaN where the query has no judgment)."""
    qrels, run = _qrels_and_run(batch, k)
    values = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}, relevance_level=level).evaluate(run)
    return torch.tensor([values[str(q)]["bpref"] if str(q) in values else math.nan
                         for q in range(len(batch["ranked_ids"]))], dtype=torch.float64)


def _close(ours: torch.Tensor, theirs: torch.Tensor, atol: float = 1e-12, msg: str = "") -> None:
    torch.testing.assert_close(ours, theirs, rtol=0, atol=atol, equal_nan=True, msg=lambda m: f"{msg}\n{m}")


@pytest.mark.parametrize("level", [1, 2])
def test_bpref_equals_trec_eval(level):
    batch = _judgments(seed=level)
    relevant = (batch["target_gains"] >= level).any(1)
    assert not relevant[0] and relevant[3] and batch["target_ids"][5].lt(0).all()
    for k in KS:
        trec = _trec_bpref(batch, k, level)
        threshold = {"relevance_threshold": level} if level > 1 else {}
        # trec_eval's 0 for a query without a relevant item: "neg"; a query without any judgment is not in
        # trec_eval's qrels (no value), and has no relevant item here
        ours = F.bpref(k=k, reduction="none", empty_target_action="neg", **threshold, **_ranked(batch))
        _close(ours, trec.nan_to_num(0.0), msg=f"bpref@{k}, level {level}")
        skipped = F.bpref(k=k, reduction="none", **threshold, **_ranked(batch))  # default: R = 0 is skipped
        _close(skipped, ours.masked_fill(~relevant, math.nan))
        reference = ref.evaluate_queries("bpref", ref.ids_queries(**_ranked(batch)), k, threshold=level)
        _close(ours, torch.tensor(reference, dtype=torch.float64).nan_to_num(0.0))
    assert 0 < trec[relevant].mean() < 1 and (trec[relevant] == 1).any()  # the oracle saw values


def test_judged_equals_ir_measures():
    batch = _judgments(seed=3)
    for k in KS:
        qrels, run = _qrels_and_run(batch, k)
        theirs = {int(m.query_id): m.value for m in ir_measures.iter_calc([ir_measures.Judged @ k], qrels, run)}
        expected = torch.tensor([theirs.get(q, math.nan) for q in range(len(batch["ranked_ids"]))], dtype=torch.float64)
        assert expected.isnan().tolist() == [q == 5 for q in range(len(expected))]  # no judgment: not evaluated
        ours = F.judged(k=k, reduction="none", **_ranked(batch))  # a query without a relevant item counts
        _close(ours, expected, msg=f"judged@{k}")
        reference = ref.evaluate_queries("judged", ref.ids_queries(**_ranked(batch)), k)
        _close(ours, torch.tensor(reference, dtype=torch.float64))
        assert 0 < float(ours.nanmean()) < 1
    # "neg" scores the query without a judgment 0 (its value is 0 anyway), "pos" 1; an empty list scores 0
    assert float(F.judged(k=5, reduction="none", empty_target_action="pos", **_ranked(batch))[5]) == 1.0
    empty = {"ranked_ids": torch.tensor([[-1, -1]]), "target_ids": torch.tensor([[3]])}
    assert float(F.judged(k=5, **empty)) == 0.0
    assert math.isnan(float(F.judged(k=5, empty_list_action="skip", **empty)))


def test_scored_forms_equal_the_ranked_form():
    """The ids form over every item (the same list, to any depth), with a tie order that reads every candidate's
    gain (the targets scattered over the row), a mask, excluded ids, unchecked, a chunked catalogue; the dense form
    where every candidate is judged."""
    batch = _judgments(seed=4)
    scores, target_ids, gains = batch["scores"], batch["target_ids"], batch["target_gains"]
    full = {"ranked_ids": scores.argsort(1, descending=True), "target_ids": target_ids, "target_gains": gains}
    ids = {"target_ids": target_ids, "target_gains": gains}
    keep = torch.ones_like(scores, dtype=torch.bool)
    keep[:, 0] = False  # item 0 is no candidate: masked, excluded or -inf, it leaves the list and the judgments
    dropped = {"ranked_ids": full["ranked_ids"].masked_fill(full["ranked_ids"] == 0, -1),
               "target_ids": target_ids.masked_fill(target_ids == 0, -1), "target_gains": gains}
    for name in ("bpref", "judged"):
        fn = getattr(F, name)
        expected = fn(k=list(KS), reduction="none", **full)
        variants = {
            "ids": fn(scores, k=list(KS), reduction="none", **ids),
            "ids, pessimistic": fn(scores, k=list(KS), reduction="none", ties="pessimistic", **ids),
            "ids, unchecked": fn(scores, k=list(KS), reduction="none", validate_args=False, **ids),
        }
        for variant, values in variants.items():
            for key in expected:
                _close(values[key], expected[key], msg=f"{variant}: {key}")
        without = fn(k=list(KS), reduction="none", **dropped)
        variants = {
            "mask": fn(scores, k=list(KS), reduction="none", mask=keep, **ids),
            "-inf": fn(scores.masked_fill(~keep, -math.inf), k=list(KS), reduction="none", **ids),
            "exclude_ids": fn(scores, k=list(KS), reduction="none", exclude_ids=torch.zeros(len(scores), 1).long(), **ids),
            "ranked, exclude_ids": fn(k=list(KS), reduction="none", exclude_ids=torch.zeros(len(scores), 1).long(), **full),
            "mask, pessimistic": fn(scores, k=list(KS), reduction="none", mask=keep, ties="pessimistic", **ids),
        }
        for variant, values in variants.items():
            for key in without:
                _close(values[key], without[key], msg=f"{variant}: {key}")
        metric = getattr(tre, {"bpref": "Bpref", "judged": "Judged"}[name])(k=list(KS))
        with metric.catalogue(num_items=scores.shape[1], target_ids=target_ids, target_gains=gains) as catalogue:
            for start, stop in ((6, 11), (0, 6), (11, 16)):
                catalogue.add(scores[:, start:stop], start)
        for key, value in metric.compute().items():
            _close(value, fn(scores, k=list(KS), **ids)[key], msg=f"catalogue: {key}")
        # every candidate judged: the dense target is the ids form with a target id for every item
        dense = torch.zeros_like(gains).scatter_(1, target_ids.clamp(min=0), gains)
        every = {"target_ids": torch.arange(scores.shape[1]).expand_as(scores), "target_gains": dense}
        for key, value in fn(scores, dense, k=list(KS), reduction="none").items():
            _close(value, fn(scores, k=list(KS), reduction="none", **every)[key], msg=f"dense: {key}")


def test_each_family_counts_its_own_queries_in_a_suite():
    """Judged counts the queries with a judgment, bpref and NDCG those with a relevant item, FallOut those with a
    non-relevant candidate: one state, their own count columns, the same values as each function alone."""
    batch = _judgments(seed=5)
    scores, ids = batch["scores"], {"target_ids": batch["target_ids"], "target_gains": batch["target_gains"]}
    names = ["bpref@5", "judged@5", "ndcg@5", "fallout@5"]
    suite = tre.RankingMetrics(names)
    for half in (slice(0, 9), slice(9, None)):
        suite.update(scores[half], **{name: value[half] for name, value in ids.items()})
    out, per_query = suite.compute(), suite.per_query(scores, **ids)
    for key in names:
        family, _, k = key.partition("@")
        expected = getattr(F, family)(scores, k=int(k), reduction="none", **ids)
        _close(per_query[key], expected, msg=key)
        _close(out[key], expected.nanmean(), msg=key)
    assert per_query["judged@5"].isnan().tolist() == [q == 5 for q in range(len(scores))]
    assert per_query["bpref@5"].isnan()[[0, 5]].all() and not per_query["bpref@5"].isnan()[1:5].any()
    assert suite.stats.shape[1] == 2 * len(names) + 3  # the kept queries of R, of non-relevant candidates, of judgments
    with pytest.raises(ValueError, match=r"Query 0 of the batch has no relevant item and"):
        F.bpref(scores, k=5, empty_target_action="error", **ids)
    with pytest.raises(ValueError,
                       match=r"Query 4 of the batch has no relevant item \(for Judged, NumRet and NumQ: no judged item\)"):
        F.judged(scores[1:], k=5, empty_target_action="error", **{name: value[1:] for name, value in ids.items()})
    for name in ("bpref", "judged"):  # one order of the tied scores: refused over all orders
        with pytest.raises(ValueError, match=f"{name} has no exact expectation over the orders of tied scores"):
            getattr(F, name)(scores, k=5, ties="average", **ids)


def test_presets_and_repeated_ids():
    """``convention="trec"`` is trec_eval's bpref (a query without a relevant item scores 0); ranx's counting of
    repeated ids judges a repeated id at each of its ranks, and changes nothing without repeats."""
    batch = _judgments(seed=6)
    _close(F.bpref(k=16, reduction="none", convention="trec", **_ranked(batch)), _trec_bpref(batch, 16).nan_to_num(0.0))
    for name in ("bpref", "judged"):
        fn = getattr(F, name)
        _close(fn(k=5, reduction="none", convention="ranx", **_ranked(batch)),
               fn(k=5, reduction="none", empty_target_action="neg", **_ranked(batch)), msg=name)
    # item 3 judged non-relevant twice in the list, item 9 unjudged, item 4 relevant, excluded id 8
    repeated = {"ranked_ids": torch.tensor([[3, 9, 3, 4, 8]]), "target_ids": torch.tensor([[4, 3, 8]]),
                "target_gains": torch.tensor([[1, 0, 0]]), "exclude_ids": torch.tensor([[8]])}
    assert float(F.judged(k=4, convention="ranx", **repeated)) == pytest.approx(3 / 4)
    assert float(F.bpref(k=4, convention="ranx", **repeated)) == 0.0  # 1 - min(2, 1) / min(1, 1)
    assert float(F.judged(k=5, convention="ranx", **repeated)) == pytest.approx(3 / 4)  # 8 is not listed


def test_the_command_reads_the_judged_non_relevant_documents_of_trec_files(tmp_path, capsys):
    """``torchrec-eval evaluate RUN QRELS -m bpref@k judged@k``: the judged non-relevant documents (qrels lines of
    0) become targets of gain 0 for them, a qrels line of -1 (trec_eval's pooled but unjudged) stays unjudged;
    the other metrics' values do not move."""
    from torchrec_eval.cli import command

    batch = _judgments(seed=7)
    qrels, run = _qrels_and_run(batch, 16)
    top = next(iter(run["2"]))  # the first document of a query whose every document is judged
    qrels["2"][top] = -1  # now pooled but unjudged: skipped by trec_eval's bpref
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} 0 {s} sys\n" for q, docs in run.items() for d, s in docs.items()))
    names = ["bpref@16", "judged@5", "ndcg@5"]
    assert command.main(["evaluate", str(tmp_path / "run"), str(tmp_path / "qrels"), "-m", *names, "--json",
                         "--convention", "trec"]) == 0
    got = json.loads(capsys.readouterr().out)
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"bpref", "ndcg_cut_5"}).evaluate(run)
    assert got["bpref@16"] == pytest.approx(sum(v["bpref"] for v in trec.values()) / len(trec), abs=1e-12)
    assert got["ndcg@5"] == pytest.approx(sum(v["ndcg_cut_5"] for v in trec.values()) / len(trec), abs=1e-12)
    del qrels["2"][top]  # ir-measures counts any qrels line as judged, -1 too
    judged = [m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 5], qrels, {q: run[q] for q in qrels})]
    assert got["judged@5"] == pytest.approx(sum(judged) / len(judged), abs=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# infAP: a target gain of -1 is pooled but not judged (a qrels line of -1), an item outside the target ids unpooled
# ---------------------------------------------------------------------------------------------------------------
def _pooled(seed: int, rows: int = 30, items: int = 20, ties: bool = False) -> dict[str, torch.Tensor]:
    """Scores over ``items`` items (integers 0..5 with ``ties``: trec_eval orders equal scores by the larger docno,
    the larger id here), the lists they rank (short ones padded), and each query's pool: about 70% of the items,
    each pooled item judged with probability 0.6 (gains 0..3) or left unjudged (gain -1)."""
    gen = torch.Generator().manual_seed(seed)
    if ties:
        scores = torch.randint(0, 6, (rows, items), generator=gen).double()
    else:
        scores = torch.randperm(rows * items, generator=gen).reshape(rows, items).double()
    order = _trec_order(scores)
    lengths = torch.randint(1, items + 1, (rows,), generator=gen)
    lengths[1], lengths[2] = 2, items  # shorter than most cut-offs; the whole catalogue
    pooled = torch.rand(rows, items, generator=gen) < 0.7
    gains = torch.where(torch.rand(rows, items, generator=gen) < 0.5, 0, torch.randint(1, 4, (rows, items), generator=gen))
    gains = torch.where(torch.rand(rows, items, generator=gen) < 0.6, gains, -1)
    gains[0] = gains[0].clamp(max=0)  # a pool, but no relevant item (trec_eval: infAP 0)
    pooled[2] = True  # every item pooled
    gains[3] = torch.where(gains[3] > 0, gains[3], -1)  # no judged non-relevant item
    pooled[4], gains[4, order[4, 0]], gains[4, order[4, 3]] = True, 2, 1  # rank 1 relevant (infAP's special case)
    pooled[5] = False  # no pool at all (no target id)
    gains[6] = torch.where(gains[6] >= 0, 0, -1)
    gains[6, order[6, 5]] = 1  # one relevant item, below pooled unjudged ones
    pooled[6, order[6, 5]] = True
    listed = torch.arange(items) < lengths.unsqueeze(1)
    return {"scores": scores, "ranked_ids": order.masked_fill(~listed, -1),
            "target_ids": torch.where(pooled, torch.arange(items), -1), "target_gains": torch.where(pooled, gains, 0)}


def _trec_order(scores: torch.Tensor) -> torch.Tensor:
    """Each row's items in trec_eval's order: by score, then by the larger docno (the larger id)."""
    flipped = torch.argsort(scores.flip(1), dim=1, descending=True, stable=True)  # stable on the reversed row: larger id first
    return scores.shape[1] - 1 - flipped


def _trec_infap(batch: dict[str, torch.Tensor], k: int, level: int = 1, drop_unjudged: bool = False,
                tied: bool = False) -> torch.Tensor:
    """pytrec_eval's infAP of each query on its run cut at k (NaN where the query has no qrels line); documents
    named d000, d001, ... so that trec_eval's docno order is the id order. ``tied``: the run holds every item with
    its own score (``batch["scores"]``), and trec_eval orders the ties."""
    qrels, run = {}, {}
    rows = zip(batch["ranked_ids"].tolist(), batch["target_ids"].tolist(), batch["target_gains"].tolist(), strict=True)
    for q, (ranked, ids, gains) in enumerate(rows):
        lines = {f"d{i:03d}": int(g) for i, g in zip(ids, gains, strict=True) if i >= 0 and not (drop_unjudged and g < 0)}
        if lines:
            qrels[str(q)] = lines
        listed = [i for i in ranked if i >= 0][:k]
        run[str(q)] = {f"d{i:03d}": float(len(listed) - rank) for rank, i in enumerate(listed)}
        if tied:
            run[str(q)] = {f"d{i:03d}": score for i, score in enumerate(batch["scores"][q].tolist())}
    values = pytrec_eval.RelevanceEvaluator(qrels, {"infAP"}, relevance_level=level).evaluate(run)
    return torch.tensor([values[str(q)]["infAP"] if str(q) in values else math.nan
                         for q in range(len(batch["ranked_ids"]))], dtype=torch.float64)


INFAP_KS = (1, 3, 10, 20)  # 20: as long as every list


@pytest.mark.parametrize("level", [1, 2])
def test_infap_equals_trec_eval(level):
    """The ranked form (lists cut at k, as trec_eval -M k), pools sampled at random, relevance levels 1 and 2,
    against pytrec_eval's infAP and the transcription of m_infAP.c's loop."""
    batch = _pooled(seed=20 + level)
    threshold = {"relevance_threshold": level} if level > 1 else {}
    relevant = (batch["target_gains"] >= level).any(1)
    assert not relevant[0] and relevant[3] and not relevant[5] and (batch["target_gains"] == -1).any(1)[:5].all()
    for k in INFAP_KS:
        trec = _trec_infap(batch, k, level)
        ours = F.infap(k=k, reduction="none", empty_target_action="neg", **threshold, **_ranked(batch))
        _close(ours, trec.nan_to_num(0.0), msg=f"infap@{k}, level {level}")
        skipped = F.infap(k=k, reduction="none", **threshold, **_ranked(batch))  # default: R = 0 is skipped
        _close(skipped, ours.masked_fill(~relevant, math.nan))
        reference = ref.evaluate_queries("infap", ref.ids_queries(**_ranked(batch), pooled=True), k, threshold=level)
        _close(ours, torch.tensor(reference, dtype=torch.float64).nan_to_num(0.0), msg=f"reference infap@{k}")
    assert 0 < trec[relevant].mean() < 1  # the oracle saw values


def test_infap_reads_the_unjudged_lines():
    """Dropping the qrels lines of -1 (the target ids of gain -1) changes infAP: they leave the pooled items above
    each relevant one (trec_eval agrees both ways); and without any pooled unjudged item infAP is AP but for its
    epsilon terms."""
    batch = _pooled(seed=23)
    unjudged = batch["target_gains"] == -1
    dropped = dict(batch, target_ids=batch["target_ids"].masked_fill(unjudged, -1),
                   target_gains=batch["target_gains"].masked_fill(unjudged, 0))
    with_lines = F.infap(k=20, reduction="none", convention="trec", **_ranked(batch))
    without = F.infap(k=20, reduction="none", convention="trec", **_ranked(dropped))
    _close(with_lines, _trec_infap(batch, 20).nan_to_num(0.0))
    _close(without, _trec_infap(batch, 20, drop_unjudged=True).nan_to_num(0.0))
    assert (with_lines - without).abs().max() > 0.05  # the -1 lines are read
    assert ((with_lines - without).abs() > 1e-9).sum() >= 10
    ap = F.map(k=20, reduction="none", normalizer="r", convention="trec", **_ranked(dropped))
    _close(without, ap, atol=1e-4)  # AP, but for the epsilon terms


def test_infap_with_ties_in_every_scored_form():
    """Tied integer scores: trec_eval orders them by the larger docno, ``convention="trec"`` by the larger id;
    the ids form, the pessimistic order, a mask, -inf, excluded ids, unchecked and a chunked catalogue agree with
    the ranked form of the same lists; the dense form pools and judges every candidate."""
    batch = _pooled(seed=24, ties=True)
    scores, target_ids, gains = batch["scores"], batch["target_ids"], batch["target_gains"]
    assert (scores[:, :, None] == scores[:, None, :]).sum() > 3 * scores.numel()  # many ties
    ids = {"target_ids": target_ids, "target_gains": gains}
    full = {"ranked_ids": _trec_order(scores), **ids}
    expected = F.infap(k=list(INFAP_KS), reduction="none", convention="trec", **full)
    _close(expected["infap@20"], _trec_infap(batch, 20, tied=True).nan_to_num(0.0), msg="trec_eval's own tie order")
    for k in INFAP_KS:
        _close(expected[f"infap@{k}"], _trec_infap(dict(batch, ranked_ids=full["ranked_ids"]), k).nan_to_num(0.0),
               msg=f"infap@{k}")
        _close(F.infap(scores, k=k, reduction="none", convention="trec", **ids), expected[f"infap@{k}"])
        _close(F.infap(scores, k=k, reduction="none", convention="trec", validate_args=False, **ids),
               expected[f"infap@{k}"])
    by_index = {"ranked_ids": torch.argsort(scores, dim=1, descending=True, stable=True), **ids}  # ties: the lower id first
    keep = torch.ones_like(scores, dtype=torch.bool)
    keep[:, 0] = False  # item 0 is no candidate: it leaves the list and the pool
    dropped = {"ranked_ids": by_index["ranked_ids"].masked_fill(by_index["ranked_ids"] == 0, -1),
               "target_ids": target_ids.masked_fill(target_ids == 0, -1), "target_gains": gains}
    without = F.infap(k=list(INFAP_KS), reduction="none", **dropped)
    variants = {
        "mask": F.infap(scores, k=list(INFAP_KS), reduction="none", mask=keep, **ids),
        "-inf": F.infap(scores.masked_fill(~keep, -math.inf), k=list(INFAP_KS), reduction="none", **ids),
        "exclude_ids": F.infap(scores, k=list(INFAP_KS), reduction="none", exclude_ids=torch.zeros(len(scores), 1).long(),
                               **ids),
        "ranked, exclude_ids": F.infap(k=list(INFAP_KS), reduction="none", exclude_ids=torch.zeros(len(scores), 1).long(),
                                       **by_index),
    }
    for variant, values in variants.items():
        for key in without:
            _close(values[key], without[key], msg=f"{variant}: {key}")
    # the pessimistic order ranks each tie group by gain (a pooled unjudged item: gain 0), then by id
    gain_of = torch.zeros_like(scores).scatter_(1, target_ids.clamp(min=0), gains.clamp(min=0).double() * (target_ids >= 0))
    pessimistic_order = torch.stack([torch.tensor(sorted(range(scores.shape[1]), key=lambda i, s=s, g=g: (-s[i], g[i], i)))
                                     for s, g in zip(scores.tolist(), gain_of.tolist(), strict=True)])
    ranked_pessimistic = F.infap(k=list(INFAP_KS), reduction="none", ranked_ids=pessimistic_order, **ids)
    for key, value in F.infap(scores, k=list(INFAP_KS), reduction="none", ties="pessimistic", **ids).items():
        _close(value, ranked_pessimistic[key], msg=f"pessimistic: {key}")
    metric = tre.InfAP(k=list(INFAP_KS))
    with metric.catalogue(num_items=scores.shape[1], target_ids=target_ids, target_gains=gains) as catalogue:
        for start, stop in ((7, 13), (0, 7), (13, 20)):
            catalogue.add(scores[:, start:stop], start)
    for key, value in metric.compute().items():
        _close(value, F.infap(scores, k=list(INFAP_KS), **ids)[key], msg=f"catalogue: {key}")
    # every candidate pooled and judged: the dense target is the ids form with a target id for every item
    dense = torch.zeros_like(scores).scatter_(1, target_ids.clamp(min=0), gains.clamp(min=0).double())
    every = {"target_ids": torch.arange(scores.shape[1]).expand_as(scores), "target_gains": dense}
    for key, value in F.infap(scores, dense, k=list(INFAP_KS), reduction="none").items():
        _close(value, F.infap(scores, k=list(INFAP_KS), reduction="none", **every)[key], msg=f"dense: {key}")


def test_infap_through_ir_measures():
    """ir-measures' ``infAP`` (its pytrec_eval provider) on the whole lists."""
    batch = _pooled(seed=25)
    qrels = [ir_measures.Qrel(str(q), f"d{i:03d}", int(g))
             for q, (ids, gains) in enumerate(zip(batch["target_ids"].tolist(), batch["target_gains"].tolist(), strict=True))
             for i, g in zip(ids, gains, strict=True) if i >= 0]
    run = [ir_measures.ScoredDoc(str(q), f"d{i:03d}", float(-rank))
           for q, ranked in enumerate(batch["ranked_ids"].tolist()) for rank, i in enumerate(r for r in ranked if r >= 0)]
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.infAP], qrels, run)}
    ours = F.infap(k=20, reduction="none", convention="trec", **_ranked(batch))
    expected = torch.tensor([theirs.get(str(q), math.nan) for q in range(len(ours))], dtype=torch.float64)
    assert expected.isnan().tolist() == [q == 5 for q in range(len(ours))]  # no qrels line: not evaluated
    _close(ours, expected.nan_to_num(0.0))


def test_the_unjudged_gain_is_taken_where_the_judgments_are_read():
    """A gain of -1 is a pooled unjudged item to infAP, an unjudged one to bpref and Judged (as trec_eval's bpref),
    a gain of 0 to the other metrics of their suite; alone, those others refuse it, and any other negative gain
    is refused everywhere: a ValueError naming the argument and the value, the state unchanged."""
    batch = _pooled(seed=26)
    scores, ids = batch["scores"], {"target_ids": batch["target_ids"], "target_gains": batch["target_gains"]}
    unjudged = batch["target_gains"] == -1
    as_zero = {"target_ids": batch["target_ids"], "target_gains": batch["target_gains"].clamp(min=0)}
    dropped = {"target_ids": batch["target_ids"].masked_fill(unjudged, -1), "target_gains": as_zero["target_gains"]}
    suite = tre.RankingMetrics(["infap@10", "bpref@10", "judged@5", "ndcg@10", "map@10", "auc"])
    suite.update(scores, **ids)
    out = suite.compute()
    _close(out["infap@10"], F.infap(scores, k=10, **ids))
    for name in ("bpref@10", "judged@5"):  # unjudged: as if the line were not there
        family, _, k = name.partition("@")
        _close(out[name], getattr(F, family)(scores, k=int(k), **dropped), msg=name)
    for name in ("ndcg@10", "map@10"):
        family, _, k = name.partition("@")
        _close(out[name], getattr(F, family)(scores, k=int(k), **as_zero), msg=name)
    _close(out["auc"], F.auc(scores, **as_zero))
    for name in ("bpref", "judged"):  # alone, with the ranked form too
        _close(getattr(F, name)(k=10, reduction="none", **_ranked(batch)),
               getattr(F, name)(k=10, reduction="none", ranked_ids=batch["ranked_ids"], **dropped), msg=name)
    with pytest.raises(ValueError, match=r"`target_gains` must be >= 0 \(relevance\), got a minimum of -1 \(a gain "
                                         r"of -1, a pooled item that is not judged, is taken where a metric reads"):
        F.ndcg(scores, k=10, **ids)
    metric = tre.InfAP(k=[3, 10])
    metric.update(scores[:10], **{name: value[:10] for name, value in ids.items()})
    before = {name: value.clone() for name, value in metric.metric_state.items()}
    bad = dict(ids, target_gains=ids["target_gains"].double().masked_fill(unjudged & (torch.arange(30) == 7)[:, None], -2.5))
    for form in ({"preds": scores}, {"ranked_ids": batch["ranked_ids"]}):
        with pytest.raises(ValueError, match=r"`target_gains` must be >= 0 \(relevance\) or -1 \(pooled, not judged\), "
                                             r"got a minimum of -2.5 besides -1"):
            metric.update(**form, **bad)
        with pytest.raises(ValueError, match="-2.5"):
            with metric.catalogue(num_items=scores.shape[1], **bad) as catalogue:
                catalogue.add(scores, 0)
    for name, value in metric.metric_state.items():
        assert torch.equal(value, before[name]), name
    with pytest.raises(ValueError, match=r"`target` must be >= 0 \(relevance\), got a minimum of -1"):
        F.infap(scores, torch.full_like(scores, -1.0), k=5)  # the dense form has no pool to tell apart
    with pytest.raises(ValueError, match="infap has no exact expectation over the orders of tied scores"):
        F.infap(scores, k=5, ties="average", **ids)


def test_the_command_gives_infap_the_pool_of_trec_files(tmp_path, capsys):
    """``torchrec-eval evaluate RUN QRELS -m infap@k``: the tensor metric over the qrels' pool (a line of -1 is a
    target of gain -1, one of -2 too: trec_eval reads any negative judgement as pooled, not judged) equals the
    command's trec_eval engine (``-m infAP``) and pytrec_eval, with tied scores in the run; cut at k, it is
    trec_eval's infAP on the run cut at k (-M k). bpref and NDCG beside it do not move."""
    from torchrec_eval.cli import command

    batch = _pooled(seed=27, ties=True)
    qrels, run = {}, {}
    for q in range(len(batch["scores"])):
        ids, gains = batch["target_ids"][q].tolist(), batch["target_gains"][q].tolist()
        lines = {f"d{i:03d}": (-2 if q == 3 and g < 0 else int(g)) for i, g in zip(ids, gains, strict=True) if i >= 0}
        if lines:
            qrels[str(q)] = lines
        listed = [i for i in batch["ranked_ids"][q].tolist() if i >= 0]
        run[str(q)] = {f"d{i:03d}": float(batch["scores"][q, i]) for i in listed}
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} 0 {s} sys\n" for q, docs in run.items() for d, s in docs.items()))

    def evaluate(*names: str, qrels_file: str = "qrels", extra: tuple[str, ...] = ()) -> dict[str, float]:
        assert command.main(["evaluate", str(tmp_path / "run"), str(tmp_path / qrels_file), "-m", *names, "--json",
                             "--convention", "trec", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    def trec_mean(values: dict, measure: str) -> float:
        return sum(v[measure] for v in values.values()) / len(values)

    got = evaluate("infap@1000", "bpref@1000", "ndcg@5")
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"infAP", "bpref", "ndcg_cut_5"}).evaluate(run)
    assert got["infap@1000"] == pytest.approx(trec_mean(trec, "infAP"), abs=1e-12)
    assert got["bpref@1000"] == pytest.approx(trec_mean(trec, "bpref"), abs=1e-12)
    assert got["ndcg@5"] == pytest.approx(trec_mean(trec, "ndcg_cut_5"), abs=1e-12)
    assert evaluate("infAP")["infAP"] == pytest.approx(got["infap@1000"], abs=1e-12)  # the trec_eval engine
    cut = evaluate("infap@5")["infap@5"]
    assert evaluate("infAP", extra=("-M", "5"))["infAP"] == pytest.approx(cut, abs=1e-12)
    assert cut != pytest.approx(got["infap@1000"])
    # the -1 lines are read: without them trec_eval and the command agree on another value
    pooled_only = {q: {d: r for d, r in docs.items() if r >= 0} for q, docs in qrels.items()}
    (tmp_path / "judged").write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in pooled_only.items() for d, r in docs.items()))
    without = evaluate("infap@1000", qrels_file="judged")["infap@1000"]
    trec_without = pytrec_eval.RelevanceEvaluator(pooled_only, {"infAP"}).evaluate(run)
    assert without == pytest.approx(trec_mean(trec_without, "infAP"), abs=1e-12)
    assert abs(without - got["infap@1000"]) > 1e-3
