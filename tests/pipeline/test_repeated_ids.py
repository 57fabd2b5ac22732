"""Repeated ids in the ranked form: each convention as its library does (verified against ranx itself).

ranx's metrics count repeats as its arrays hold them (a repeated ranked id is a hit at each of its
ranks, a repeated target id counts in R and in the ideal DCG); trec_eval refuses repeats, naming the
document, and so does every other convention (RecTools multiplies rows in a join, which its own
tracker calls a bug: MobileTeleSystems/RecTools#164).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numba.typed import List
from ranx import metrics as ranx_metrics

import torchrec_eval as tre

F = tre.functional
pytestmark = pytest.mark.xdist_group("ranx")  # every test that runs ranx on one xdist worker: tests/ranx_ids.py
RANX = {"precision": "precision", "recall": "recall", "map": "average_precision", "ndcg": "ndcg",
        "mrr": "reciprocal_rank", "hitrate": "hit_rate"}


def _ranx(ranked: torch.Tensor, targets: torch.Tensor, gains: torch.Tensor, metric: str, k: int) -> np.ndarray:
    """ranx on its arrays: one [n, 2] (id, relevance) array per query and one (id, score) array."""
    qrels, run = List(), List()
    for items, relevant, grades in zip(ranked.tolist(), targets.tolist(), gains.tolist(), strict=True):
        qrels.append(np.array([[t, g] for t, g in zip(relevant, grades, strict=True) if t >= 0], dtype=np.float64))
        kept = [item for item in items if item >= 0]
        run.append(np.array([[item, len(kept) - i] for i, item in enumerate(kept)], dtype=np.float64))
    return getattr(ranx_metrics, metric)(qrels, run, k)


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_ranx_convention_counts_repeats_as_ranx_does(seed, graded):
    gen = torch.Generator().manual_seed(seed)
    rows, width, depth = 12, 6, 8
    ranked = torch.randint(0, 9, (rows, depth), generator=gen)  # ids 0..8, many repeats
    targets = torch.randint(0, 9, (rows, width), generator=gen)
    gains = targets % 3 + 1 if graded else torch.ones(rows, width, dtype=torch.long)  # one grade per id
    # ranx takes its ideal list in row order: rows by grade descending, as ranx's own Qrels hand them over
    order = torch.sort(gains, dim=1, descending=True, stable=True).indices
    targets, gains = targets.gather(1, order), gains.gather(1, order)
    for k in (3, 8):
        for ours, theirs in RANX.items():
            fn = getattr(F, ours)
            got = fn(ranked_ids=ranked, target_ids=targets, target_gains=gains.float(), k=k, convention="ranx",
                     reduction="none")
            want = _ranx(ranked, targets, gains, theirs, k)
            np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-12, err_msg=f"{ours}@{k}")
    repeated = lambda ids: (ids.sort(dim=1).values.diff(dim=1) == 0).any()  # noqa: E731
    assert repeated(ranked) and repeated(targets)  # the case really has repeats on both sides


def test_ranx_own_test_cases_with_repeats():
    # ranx tests/unit/ranx/metrics_test.py: test_hit_rate (a repeated qrels id) and test_reciprocal_rank
    # (a repeated run id); both expect a mean of 0.5 at k=5
    hit = F.hitrate(ranked_ids=torch.tensor([[1, 2, 3, 4, 5, 7], [1, 2, 4, 3, 5, 7]]),
                    target_ids=torch.tensor([[9, 6, 8, 6], [1, 2, 4, -1]]), k=5, convention="ranx")
    assert hit.item() == pytest.approx(0.5)
    rr = F.mrr(ranked_ids=torch.tensor([[3, 1, 2, 4, 5], [1, 2, 3, 4, 5], [1, 1, 1, 4, 5]]),
               target_ids=torch.tensor([[1], [1], [3]]), k=5, convention="ranx")
    assert rr.item() == pytest.approx(0.5)


@pytest.mark.parametrize("convention", [None, "trec", "rectools", "recbole"])
def test_other_conventions_refuse_repeats_naming_the_id(convention):
    metric = tre.NDCG(k=3, convention=convention)
    with pytest.raises(ValueError, match=r"`ranked_ids` has an item id repeated within a row.*\b7\b"):
        metric.update(ranked_ids=torch.tensor([[7, 1, 7]]), target_ids=torch.tensor([[1]]))
    with pytest.raises(ValueError, match=r"`target_ids` has an item id repeated within a row.*\b4\b"):
        metric.update(ranked_ids=torch.tensor([[7, 1, 2]]), target_ids=torch.tensor([[4, 4]]))
    assert metric.metric_state["stats"].abs().sum() == 0


def test_ranx_suite_class_counts_repeats_too():
    suite = tre.RankingMetrics(["recall@3", "map@3"], convention="ranx")
    suite.update(ranked_ids=torch.tensor([[1, 1, 2]]), target_ids=torch.tensor([[1, 2]]))
    assert {key: float(value) for key, value in suite.compute().items()} == {"recall@3": 1.5, "map@3": 1.5}


def _write_trec(tmp_path, seed: int):
    gen = torch.Generator().manual_seed(seed)
    run_lines, qrels_lines = [], []
    for q in range(6):
        for _ in range(25):  # repeats on purpose: 25 draws from 12 documents
            doc = int(torch.randint(0, 12, (1,), generator=gen))
            score = float(torch.randint(0, 6, (1,), generator=gen)) / 2  # ties too
            run_lines.append(f"q{q} Q0 d{doc} 0 {score} tag\n")
        for _ in range(6):
            doc = int(torch.randint(0, 12, (1,), generator=gen))
            qrels_lines.append(f"q{q} 0 d{doc} {int(torch.randint(0, 3, (1,), generator=gen))}\n")
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.trec"
    run.write_text("".join(run_lines))
    qrels.write_text("".join(qrels_lines))
    return run, qrels


@pytest.mark.parametrize("seed", range(3))
def test_command_line_ranx_reads_repeats_as_ranx_files_do(tmp_path, capsys, seed):
    """--convention ranx: a repeated document keeps its last line, as ranx's Run/Qrels.from_file."""
    import json

    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    from torchrec_eval.cli import main

    run, qrels = _write_trec(tmp_path, seed)
    metrics = ["ndcg@5", "precision@5", "recall@10", "map@10", "mrr"]
    assert main(["evaluate", str(run), str(qrels), "--convention", "ranx", "--json", "-m", *metrics]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    want = ranx_evaluate(Qrels.from_file(str(qrels), kind="trec"), Run.from_file(str(run), kind="trec"), metrics,
                         make_comparable=True)
    for key in metrics:
        assert got[key] == pytest.approx(float(want[key]), abs=1e-9), key


def test_command_line_trec_refuses_a_repeat_naming_the_document(tmp_path, capsys):
    from torchrec_eval.cli import main

    run, qrels = _write_trec(tmp_path, 0)
    assert main(["evaluate", str(run), str(qrels), "--convention", "trec", "-m", "map"]) == 2
    assert "is listed twice for query" in capsys.readouterr().err
