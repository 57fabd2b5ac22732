"""``torchrec-eval evaluate --sampled NUM_ITEMS`` on TREC files and tensors, against a brute force written
from the files: each relevant document's sampled rank counted among its query's non-relevant documents in the
run's order, its metric from ``tests/reference/sampled.py`` (the naive value, or numpy's least-squares
correction), averaged per query and then over queries; and every refusal named."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.reference import sampled as ref
from torchrec_eval import cli

NUM_ITEMS, M = 500, 12


def _write(tmp_path: Path, negatives=lambda q: M, unjudged: int = 0) -> tuple[Path, Path, dict[str, list[int]]]:
    """A run of 1 or 2 relevant documents and ``negatives(q)`` sampled ones per query, and each query's sampled
    ranks, counted from the file's own order (scores descending)."""
    rng = random.Random(0)
    run, qrels, ranks = [], [], {}
    for q in range(25):
        relevant = [f"r{q}_{i}" for i in range(1 + q % 2)] if q >= unjudged else []
        docs = relevant + [f"n{q}_{i}" for i in range(negatives(q))]
        scores = {doc: rng.random() + (0.4 if doc in relevant else 0.0) for doc in docs}
        ordered = sorted(docs, key=lambda doc: -scores[doc])
        run += [f"q{q} Q0 {doc} {i + 1} {scores[doc]:.6f} tag" for i, doc in enumerate(ordered)]
        qrels += [f"q{q} 0 {doc} 1" for doc in relevant] + [f"q{q} 0 {ordered[-1]} 0"]  # a judged negative
        if relevant:
            ranks[f"q{q}"] = [1 + sum(1 for doc in ordered[:ordered.index(r)] if doc not in relevant) for r in relevant]
    (tmp_path / "run").write_text("\n".join(run) + "\n")
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    return tmp_path / "run", tmp_path / "qrels", ranks


def _expected(ranks: dict[str, list[int]], estimator: str) -> dict[str, dict[str, float]]:
    """Per query and metric: the mean over its relevant documents of c[s]."""
    out: dict[str, dict[str, float]] = {}
    for family, k, name in (("ndcg", 10, "ndcg@10"), ("recall", 5, "recall@5"), ("mrr", None, "mrr")):
        if estimator == "naive":
            c = ref.metric(family, np.arange(1, M + 2), k, M + 1)
        else:
            c = ref.bias_variance_lstsq(ref.transition(NUM_ITEMS, M, True),
                                        ref.metric(family, np.arange(1, NUM_ITEMS + 1), k, NUM_ITEMS), 0.01)
        for qid, sampled in ranks.items():
            out.setdefault(qid, {})[name] = float(np.mean([c[s - 1] for s in sampled]))
    return out


@pytest.mark.parametrize("estimator", ["naive", "bias_variance"])
def test_a_trec_run_of_sampled_candidates_against_a_brute_force(tmp_path, capsys, estimator):
    run, qrels, ranks = _write(tmp_path)
    status = cli.main(["evaluate", str(run), str(qrels), "--sampled", str(NUM_ITEMS), "--estimator", estimator,
                       "-m", "ndcg@10", "recall@5", "mrr", "--json", "--per-query", str(tmp_path / "per_query")])
    assert status == 0
    out = capsys.readouterr()
    got = json.loads(out.out)
    expected = _expected(ranks, estimator)
    for name in ("ndcg@10", "recall@5", "mrr"):
        assert got[name] == pytest.approx(np.mean([values[name] for values in expected.values()]), abs=1e-9)
    lines = (tmp_path / "per_query").read_text().splitlines()
    assert lines[0].split("\t") == ["qid", "ndcg@10", "recall@5", "mrr"]
    for line in lines[1:]:
        qid, *values = line.split("\t")
        assert [float(v) for v in values] == pytest.approx([expected[qid][n] for n in ("ndcg@10", "recall@5", "mrr")],
                                                           abs=1e-9)
    assert f"25 queries estimated for {NUM_ITEMS} items with {M} sampled negatives" in out.err


def test_tensors_of_sampled_rows(tmp_path, capsys):
    gen = torch.Generator().manual_seed(1)
    preds = torch.randn(40, M + 1, generator=gen)
    target = torch.zeros(40, M + 1, dtype=torch.bool)
    target[torch.arange(40), torch.randint(0, M + 1, (40,), generator=gen)] = True
    torch.save({"preds": preds, "target": target}, tmp_path / "rows.pt")
    assert cli.main(["evaluate", str(tmp_path / "rows.pt"), "--sampled", str(NUM_ITEMS), "--estimator", "naive",
                     "-m", "mrr", "--json"]) == 0
    ranks = [1 + int((row[~t] > row[t]).sum()) for row, t in zip(preds, target, strict=True)]
    assert json.loads(capsys.readouterr().out)["mrr"] == pytest.approx(float(np.mean([1 / r for r in ranks])),
                                                                       abs=1e-12)


@pytest.mark.parametrize("estimator", ["bias_variance", "em"])
def test_a_catalogue_of_a_trillion_items_is_estimated_at_once(tmp_path, capsys, estimator):
    """``--sampled 1000000000000`` ran for minutes without a word (a sum over every rank): the rank axis sums
    10^12 ranks from a few thousand. At sampled rank 1 every correction puts the item among the top
    10^12 / (m + 1) of the catalogue, where 1/r averages about 3e-10 (the correction reads 1.4e-9); EM's 200
    iterations concentrate the fit on the top 10^12 / (200 m) ranks: about ln(n / 200 m) 200 m / n = 5e-8."""
    preds = torch.zeros(8, M + 1)
    preds[:, 0] = 1.0
    target = torch.zeros(8, M + 1, dtype=torch.bool)
    target[:, 0] = True
    torch.save({"preds": preds, "target": target}, tmp_path / "rows.pt")
    assert cli.main(["evaluate", str(tmp_path / "rows.pt"), "--sampled", str(10**12), "--estimator", estimator,
                     "-m", "mrr", "--json"]) == 0
    assert 0 < json.loads(capsys.readouterr().out)["mrr"] < {"bias_variance": 1e-8, "em": 1e-7}[estimator]


def test_a_query_without_a_relevant_candidate_is_left_out_and_said(tmp_path, capsys):
    run, qrels, ranks = _write(tmp_path, unjudged=3)
    assert cli.main(["evaluate", str(run), str(qrels), "--sampled", str(NUM_ITEMS), "--estimator", "naive",
                     "-m", "mrr", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["mrr"] == pytest.approx(
        np.mean([values["mrr"] for values in _expected(ranks, "naive").values()]), abs=1e-9)
    assert "22 queries estimated" in out.err and "3 without a relevant candidate left out" in out.err


@pytest.mark.parametrize(("extra", "negatives", "match"), [
    ([], lambda q: M + (q == 4), "same number m of sampled negatives"),
    (["--sampled", "5"], lambda q: M, "num_negatives"),  # m = 12 negatives cannot come from 5 items
    (["--estimator", "em", "--per-query", "-"], lambda q: M, "per-query values"),
    (["--convention", "trec"], lambda q: M, "no --convention"),
    (["-m", "coverage@10"], lambda q: M, "coverage"),
])
def test_refusals_are_named(tmp_path, capsys, extra, negatives, match):
    run, qrels, _ = _write(tmp_path, negatives=negatives)
    sampled = [] if "--sampled" in extra else ["--sampled", str(NUM_ITEMS)]
    assert cli.main(["evaluate", str(run), str(qrels), *sampled, *extra]) == 2
    assert match in capsys.readouterr().err


def test_a_row_without_a_relevant_item_is_left_out_before_m_is_counted(tmp_path, capsys):
    """A row whose m + 1 candidates are all negatives (no held-out item) listed 101 negatives against the
    others' 100, and the count check refused the file before the row was dropped: it is left out first, said
    on stderr, and the values are those of the file without it."""
    gen = torch.Generator().manual_seed(2)
    preds = torch.randn(30, 101, generator=gen)
    target = torch.zeros(30, 101, dtype=torch.bool)
    target[torch.arange(30), torch.randint(0, 101, (30,), generator=gen)] = True
    target[[4, 17]] = False
    kept = target.any(1)
    torch.save({"preds": preds, "target": target}, tmp_path / "rows.pt")
    torch.save({"preds": preds[kept], "target": target[kept]}, tmp_path / "kept.pt")
    results = {}
    for name in ("rows", "kept"):
        assert cli.main(["evaluate", str(tmp_path / f"{name}.pt"), "--sampled", "5000", "-m", "mrr", "ndcg@10",
                         "--json"]) == 0
        out = capsys.readouterr()
        results[name] = json.loads(out.out)
        if name == "rows":
            assert "28 queries estimated" in out.err and "2 without a relevant candidate left out" in out.err
    assert results["rows"] == results["kept"]
    ranks = [1 + int((row[~t] > row[t]).sum()) for row, t in zip(preds[kept], target[kept], strict=True)]
    c = ref.bias_variance_lstsq(ref.transition(5000, 100, True), ref.metric("mrr", np.arange(1, 5001), None, 5000),
                                0.01)
    assert results["rows"]["mrr"] == pytest.approx(float(np.mean([c[s - 1] for s in ranks])), abs=1e-6)


def test_a_trec_query_without_a_relevant_document_may_list_more_candidates(tmp_path, capsys):
    """The same in a TREC run: 3 queries without a judged-relevant document list M + 1 documents."""
    run, qrels, ranks = _write(tmp_path, negatives=lambda q: M + (q < 3), unjudged=3)
    assert cli.main(["evaluate", str(run), str(qrels), "--sampled", str(NUM_ITEMS), "--estimator", "naive",
                     "-m", "ndcg@10", "recall@5", "mrr", "--json", "--per-query", str(tmp_path / "per_query")]) == 0
    out = capsys.readouterr()
    expected = _expected(ranks, "naive")
    got = json.loads(out.out)
    for name in ("ndcg@10", "recall@5", "mrr"):
        assert got[name] == pytest.approx(np.mean([values[name] for values in expected.values()]), abs=1e-12)
    listed = [line.split("\t")[0] for line in (tmp_path / "per_query").read_text().splitlines()[1:]]
    assert sorted(listed) == sorted(expected) and "q0" not in listed
    assert "22 queries estimated" in out.err and "3 without a relevant candidate left out" in out.err
