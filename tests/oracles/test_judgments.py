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
    with pytest.raises(ValueError, match=r"Query 4 of the batch has no relevant item \(for Judged: no judged item\)"):
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
