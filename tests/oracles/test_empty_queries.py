"""A query with judgments but no relevant item under ``convention="trec"``: every family counts it at the value
trec_eval gives it (0 for a family that reads relevance, the count of listed items for NumRet, which reads
none), in the tensor API, in the command line's trec engine and in pytrec_eval alike (issue 51: NumRet gave 0,
NaN by default, where trec_eval gives the list's length).

Seeded runs with graded judgments, unjudged retrieved documents and several judged queries without a relevant
document; distinct scores, so that no tie rule matters.
"""

from __future__ import annotations

import json

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval import cli
from torchrec_eval import functional as F

pytrec_eval = pytest.importorskip("pytrec_eval")

LENGTH, K = 6, 3
# family -> (trec_eval's measure, its cut-off or option); trec_eval 9 on the command line: pytrec_eval's iprec_at_recall
MEASURES = {"precision": (f"P_{K}", {"k": K}), "recall": (f"recall_{K}", {"k": K}),
            "ndcg": (f"ndcg_cut_{K}", {"k": K}), "map": (f"map_cut_{K}", {"k": K}),
            "num_ret": ("num_ret", {"k": LENGTH}), "num_rel": ("num_rel", {}),
            "num_rel_ret": ("num_rel_ret", {"k": LENGTH}), "rprecision": ("Rprec", {}),
            "bpref": ("bpref", {"k": LENGTH}), "mrr": ("recip_rank", {"k": LENGTH}), "setf": ("set_F", {"k": LENGTH}),
            "set_map": ("set_map", {"k": LENGTH}),
            "infap": ("infAP", {"k": LENGTH}), "iprec": ("iprec_at_recall_0.40", {"k": LENGTH, "recall": 0.4})}


def _queries(seed: int, rows: int = 12, items: int = 15) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ranked ids [B, LENGTH] (best first), judged ids [B, 5] (-1 padded) and their gains (0 to 3)."""
    gen = torch.Generator().manual_seed(seed)
    ranked = torch.stack([torch.randperm(items, generator=gen)[:LENGTH] for _ in range(rows)])
    judged = torch.stack([torch.randperm(items, generator=gen)[:5] for _ in range(rows)])
    gains = torch.randint(0, 4, (rows, 5), generator=gen).double()
    gains[::3] = 0.0  # judged queries without a relevant item
    judged[1::4, 3:] = -1
    gains[1::4, 3:] = 0.0
    return ranked, judged, gains


def _files(ranked, judged, gains, folder):
    run = {f"q{b}": {f"d{int(d)}": float(LENGTH - i) for i, d in enumerate(row)} for b, row in enumerate(ranked)}
    qrels = {f"q{b}": {f"d{int(d)}": int(g) for d, g in zip(ids, grades, strict=True) if d >= 0}
             for b, (ids, grades) in enumerate(zip(judged, gains, strict=True))}
    run_path, qrels_path = folder / "run.txt", folder / "qrels.txt"
    run_path.write_text("".join(f"{q} Q0 {d} {i} {s} r\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items())))
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return run, qrels, run_path, qrels_path


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_family_counts_a_query_without_a_relevant_item_as_trec_eval_does(seed, tmp_path, capsys):
    ranked, judged, gains = _queries(seed)
    run, qrels, run_path, qrels_path = _files(ranked, judged, gains, tmp_path)
    names = {name for name, _ in MEASURES.values()}
    peer = pytrec_eval.RelevanceEvaluator(qrels, {name.rpartition("_")[0] if name.startswith("iprec") else name
                                                  for name in names}).evaluate(run)
    per_query = tmp_path / "per_query.tsv"
    assert cli.main(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "--trec-eval-version", "9",
                     "--json", "--quiet",
                     "--per-query", str(per_query), "-m", *sorted(names)]) == 0
    summary = json.loads(capsys.readouterr().out)
    lines = [line.split("\t") for line in per_query.read_text().splitlines()]
    engine = {cells[0]: dict(zip(lines[0][1:], map(float, cells[1:]), strict=True)) for cells in lines[1:]}
    empty = (gains == 0).all(1)
    assert empty.sum() >= 4
    for family, (name, options) in MEASURES.items():
        ours = getattr(F, family)(ranked_ids=ranked, target_ids=judged, target_gains=gains, convention="trec",
                                  reduction="none", **options)
        theirs = torch.tensor([peer[f"q{b}"][name] for b in range(len(ranked))], dtype=torch.float64)
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12, msg=f"{family} vs pytrec_eval")
        cli_values = torch.tensor([engine[f"q{b}"][name] for b in range(len(ranked))], dtype=torch.float64)
        torch.testing.assert_close(ours, cli_values, rtol=0, atol=1e-12, msg=f"{family} vs the command line")
        mean = getattr(F, family)(ranked_ids=ranked, target_ids=judged, target_gains=gains, convention="trec",
                                  **options)
        total = mean.item() * len(ranked) if name.startswith("num_") else mean.item()  # trec_eval sums the counts
        assert total == pytest.approx(summary[name], abs=1e-12), family
    assert (F.num_ret(ranked_ids=ranked, target_ids=judged, target_gains=gains, k=LENGTH,
                      convention="trec", reduction="none")[empty] == LENGTH).all()


@pytest.mark.parametrize("seed", [0, 1])
def test_num_q_counts_the_judged_queries_as_trec_eval_and_ir_measures_sum_them(seed, tmp_path, capsys):
    """NumQ is a total: the queries of the run with a judgment (a judged query without a relevant item too; a
    row without any is a query missing from the qrels), in the function, the class over two batches and the
    command line's summary, equal to pytrec_eval's ``num_q`` summed and to ir-measures' ``NumQ``."""
    ir_measures = pytest.importorskip("ir_measures")
    ranked, judged, gains = _queries(seed)
    judged[2::5], gains[2::5] = -1, 0.0  # not in the qrels
    run, qrels, run_path, qrels_path = _files(ranked, judged, gains, tmp_path)
    qrels = {query: docs for query, docs in qrels.items() if docs}
    peer = sum(values["num_q"] for values in pytrec_eval.RelevanceEvaluator(qrels, {"num_q"}).evaluate(run).values())
    aggregate = ir_measures.calc_aggregate([ir_measures.NumQ], qrels, run)[ir_measures.NumQ]
    assert peer == aggregate == len(ranked) - len(range(2, len(ranked), 5))
    inputs = {"ranked_ids": ranked, "target_ids": judged, "target_gains": gains}
    for convention in (None, "trec"):
        assert F.num_q(convention=convention, **inputs).item() == peer
    metric = tre.NumQ(convention="trec")
    for half in (slice(0, 5), slice(5, None)):
        metric.update(**{name: value[half] for name, value in inputs.items()})
    assert metric.compute().item() == peer
    assert torch.equal(F.num_q(reduction="none", **inputs).isnan(), (judged < 0).all(1))
    assert cli.main(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "--json", "--quiet",
                     "-m", "num_q"]) == 0
    assert json.loads(capsys.readouterr().out)["num_q"] == peer
