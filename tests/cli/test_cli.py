"""The torchrec-eval command, driven for real in a subprocess (plus a few in-process error cases).

The TREC checks compare ``--convention trec`` with pytrec_eval (trec_eval 9) on generated run and
qrels files with many tied scores, docids whose string order differs from their numeric order,
graded and negative judgements, judged queries without a relevant document, and queries that are
only in the run or only in the qrels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from tests.trec_files import make_trec
from torchrec_eval import cli
from torchrec_eval.cli.progress import LineBar
from torchrec_eval.trec import read_qrels, read_run, to_ranked

ROOT = Path(__file__).resolve().parents[2]

# our name -> pytrec_eval's measure key
TREC_NAMES = {
    "precision@5": "P_5", "precision@10": "P_10", "precision@20": "P_20",
    "recall@5": "recall_5", "recall@20": "recall_20", "recall@100": "recall_100",
    "map@10": "map_cut_10", "map@100": "map_cut_100",
    "ndcg@5": "ndcg_cut_5", "ndcg@10": "ndcg_cut_10", "ndcg@100": "ndcg_cut_100",
    "mrr": "recip_rank", "map": "map", "ndcg": "ndcg", "rprecision": "Rprec",
}
PYTREC_MEASURES = {"P.5,10,20", "recall.5,20,100", "map_cut.10,100", "ndcg_cut.5,10,100", "recip_rank", "map",
                   "ndcg", "Rprec"}


def _env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["MPLBACKEND"] = "Agg"
    env["OMP_NUM_THREADS"] = "1"  # small tensors: avoid oversubscribing the CPU when tests run in parallel
    env.update(extra)
    return env


def run_cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchrec_eval", *map(str, args)], cwd=ROOT,
                          env=env or _env(), capture_output=True, text=True, timeout=timeout)


def evaluate_here(capsys, *args) -> tuple[int, str, str]:
    """``torchrec-eval evaluate ARGS`` in this process (exit code, stdout, stderr): for tests of what the command
    reads and names, where a subprocess would only add 2-3 s of imports."""
    code = cli.main(["evaluate", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc




def pytrec_per_query(run: dict, qrels: dict) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    return pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)


def read_per_query(path: Path) -> dict[str, dict[str, float]]:
    lines = path.read_text().splitlines()
    header = lines[0].split("\t")
    assert header[0] == "qid"
    rows = [line.split("\t") for line in lines[1:]]
    return {cells[0]: dict(zip(header[1:], map(float, cells[1:]), strict=True)) for cells in rows}


@pytest.fixture(scope="module")
def trec_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trec")
    return make_trec(folder)


def test_trec_convention_equals_pytrec_eval(trec_files, tmp_path):
    run_path, qrels_path, run, qrels = trec_files
    per_query_path = tmp_path / "per_query.tsv"
    proc = _ok(run_cli("evaluate", run_path, qrels_path, "-m", *TREC_NAMES, "--convention", "trec", "--json",
                       "--per-query", per_query_path, "--progress"))
    assert "reading run" in proc.stderr  # the forced progress bar
    got = json.loads(proc.stdout)
    expected_q = pytrec_per_query(run, qrels)
    # the generated data covers what it should
    assert set(expected_q) == set(run) & set(qrels)
    assert any(not any(r > 0 for r in qrels[q].values()) for q in expected_q), "judged, nothing relevant"
    assert set(run) - set(qrels) and set(qrels) - set(run)

    assert list(got) == list(TREC_NAMES)
    for ours, theirs in TREC_NAMES.items():
        expected = sum(v[theirs] for v in expected_q.values()) / len(expected_q)
        assert got[ours] == pytest.approx(expected, abs=1e-12), (ours, theirs)

    per_query = read_per_query(per_query_path)
    assert set(per_query) == set(expected_q)
    for qid, values in per_query.items():
        for ours, theirs in TREC_NAMES.items():
            assert values[ours] == pytest.approx(expected_q[qid][theirs], abs=1e-12), (qid, ours)
    assert "queries evaluated" in proc.stderr


def test_ties_follow_trec_eval_docid_order(tmp_path, capsys):
    """All scores equal: trec_eval ranks by docid descending as strings (d9 > d10 > d1)."""
    run = {"q": {"d1": 1.0, "d10": 1.0, "d9": 1.0, "d2": 1.0}}
    qrels = {"q": {"d9": 1, "d2": 1}}
    (tmp_path / "run").write_text("".join(f"q Q0 {d} 1 {s} t\n" for d, s in run["q"].items()))
    (tmp_path / "qrels").write_text("".join(f"q 0 {d} {r}\n" for d, r in qrels["q"].items()))
    assert cli.main(["evaluate", str(tmp_path / "run"), str(tmp_path / "qrels"), "-m", "precision@1",
                     "precision@2", "ndcg@5", "--convention", "trec", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == {"precision@1": 1.0, "precision@2": 1.0, "ndcg@5": 1.0}  # d9, d2 first
    expected = pytrec_per_query(run, qrels)["q"]
    assert (expected["P_5"], expected["ndcg_cut_5"]) == (0.4, 1.0)


def test_default_convention_skips_queries_without_relevant(trec_files):
    run_path, qrels_path, run, qrels = trec_files
    names = ["precision@5", "ndcg@10", "recall@20", "map@10"]
    proc = _ok(run_cli("evaluate", run_path, qrels_path, "-m", ",".join(names)))
    assert "evaluating" not in proc.stderr  # not a terminal: no bar unless forced
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["metric", "value"]
    table = {line.split()[0]: float(line.split()[1]) for line in lines[1:]}
    assert list(table) == names
    assert len({len(line) for line in lines}) == 1, "columns are aligned"
    expected_q = pytrec_per_query(run, qrels)
    counted = [q for q in expected_q if any(r > 0 for r in qrels[q].values())]
    assert 0 < len(counted) < len(expected_q)
    for ours in ("precision@5", "ndcg@10", "recall@20"):  # same per-query definitions, empty queries skipped
        expected = sum(expected_q[q][TREC_NAMES[ours]] for q in counted) / len(counted)
        assert table[ours] == pytest.approx(expected, abs=6e-5)  # the table prints 4 decimals
    # the library default divides AP@k by min(k, R), not by R as trec_eval's map_cut does
    by_r = sum(expected_q[q]["map_cut_10"] for q in counted) / len(counted)
    assert table["map@10"] > by_r + 1e-3


def test_complete_counts_judged_queries_missing_from_the_run(trec_files, capsys):
    run_path, qrels_path, run, qrels = trec_files
    assert cli.main(["evaluate", str(run_path), str(qrels_path), "-m", "ndcg@10", "--convention", "trec",
                     "--complete", "--json", "--quiet"]) == 0
    got = json.loads(capsys.readouterr().out)
    expected_q = pytrec_per_query(run, qrels)
    expected = sum(v["ndcg_cut_10"] for v in expected_q.values()) / len(qrels)  # missing queries score 0
    assert got["ndcg@10"] == pytest.approx(expected, abs=1e-12)


def test_tensor_inputs_pt_and_npz(tmp_path, capsys):
    gen = torch.Generator().manual_seed(0)
    preds = torch.randint(0, 4, (50, 30), generator=gen).double()  # ties
    target = torch.randint(0, 3, (50, 30), generator=gen) * (torch.rand(50, 30, generator=gen) < 0.2)
    torch.save({"scores": preds, "relevance": target}, tmp_path / "dense.pt")
    ranked = torch.argsort(torch.rand(50, 30, generator=gen), dim=1)[:, :12]
    ranked[::5, 8:] = -1  # short lists
    target_ids = torch.argsort(torch.rand(50, 30, generator=gen), dim=1)[:, :4]
    target_ids[::3, 2:] = -1
    np.savez(tmp_path / "ranked.npz", ranked_ids=ranked.numpy().astype(np.int32))
    np.savez(tmp_path / "targets.npz", target_ids=target_ids.numpy())

    assert cli.main(["evaluate", str(tmp_path / "dense.pt"), "-m", "ndcg@5", "recall@10", "--json",
                     "--batch-size", "7"]) == 0
    dense = json.loads(capsys.readouterr().out)
    assert dense["ndcg@5"] == pytest.approx(float(tre.functional.ndcg(preds, target, k=5)), abs=1e-12)
    assert dense["recall@10"] == pytest.approx(float(tre.functional.recall(preds, target, k=10)), abs=1e-12)

    proc = _ok(run_cli("evaluate", tmp_path / "ranked.npz", tmp_path / "targets.npz", "-m", "precision@10",
                       "mrr", "--json", "--per-query", "-"))
    *per_query_lines, json_line = proc.stdout.strip().splitlines()
    got = json.loads(json_line)
    inputs = {"ranked_ids": ranked, "target_ids": target_ids}
    assert got["precision@10"] == pytest.approx(float(tre.functional.precision(k=10, **inputs)), abs=1e-12)
    assert got["mrr"] == pytest.approx(float(tre.functional.mrr(k=12, **inputs)), abs=1e-12)
    assert per_query_lines[0] == "qid\tprecision@10\tmrr" and len(per_query_lines) == 51


def test_malformed_line_names_file_and_line(tmp_path, capsys):
    run_path = tmp_path / "bad.run"
    run_path.write_text("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4\n")  # blank lines are skipped, but counted
    qrels_path = tmp_path / "qrels"
    qrels_path.write_text("q1 0 d1 1\n")
    assert cli.main(["evaluate", str(run_path), str(qrels_path), "-m", "ndcg@10"]) == 2
    err = capsys.readouterr().err
    assert f"{run_path}:3:" in err and "6 columns" in err, err


@pytest.mark.parametrize(
    ("which", "text", "line", "words"),
    [
        ("run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n", 2, "score"),
        ("run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 nan t\n", 2, "finite"),
        ("run", "q1 Q0 d1 1 0.5 t\nq2 Q0 d1 1 0.5 t\nq1 Q0 d1 3 0.2 t\n", 3, "twice"),
        ("qrels", "q1 0 d1 1\nq1 0 d2\n", 2, "4 columns"),
        ("qrels", "q1 0 d1 1\nq1 0 d2 yes\n", 2, "rel"),
        ("qrels", "q1 0 d1 1\nq1 0 d1 2\n", 2, "twice"),
    ],
)
def test_malformed_inputs_in_process(tmp_path, capsys, which, text, line, words):
    files = {"run": "q1 Q0 d1 1 0.5 t\n", "qrels": "q1 0 d1 1\n"}
    files[which] = text
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    assert cli.main(["evaluate", str(tmp_path / "run"), str(tmp_path / "qrels"), "-m", "ndcg@10"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / which}:{line}:" in err and words in err, err


def test_user_errors_in_process(tmp_path, capsys):
    (tmp_path / "run").write_text("q1 Q0 d1 1 0.5 t\n")
    (tmp_path / "qrels").write_text("q2 0 d1 1\n")
    base = ["evaluate", str(tmp_path / "run"), str(tmp_path / "qrels")]
    assert cli.main(base + ["-m", "ndcg@10"]) == 2
    assert "no query of the run" in capsys.readouterr().err
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    assert cli.main(base + ["-m", "nonsense@3"]) == 2
    assert "Unknown metric" in capsys.readouterr().err
    assert cli.main(base + ["-m", "precision"]) == 2
    assert "needs a cut-off" in capsys.readouterr().err
    assert cli.main(["evaluate", str(tmp_path / "run")]) == 2
    assert "QRELS" in capsys.readouterr().err
    assert cli.main(["evaluate", str(tmp_path / "missing"), str(tmp_path / "qrels")]) == 2
    assert "no such" in capsys.readouterr().err


def test_reader_is_vectorised_and_matches_pytrec_order(trec_files):
    run_path, qrels_path, run, _ = trec_files
    data = to_ranked(read_run(run_path), read_qrels(qrels_path))
    for row, qid in enumerate(data.qids):
        expected = sorted(run[qid], key=lambda d: (run[qid][d], d), reverse=True)
        ranked = data.docids[data.ranked_ids[row][data.ranked_ids[row] >= 0].numpy()].tolist()
        assert ranked == expected


def test_progress_line_without_tqdm(capsys):
    bar = LineBar(total=4, desc="evaluating", unit="queries")
    bar.update(4)
    bar.close()
    assert "evaluating: 100% (4/4 queries" in capsys.readouterr().err


def test_demo_writes_plot(tmp_path):
    plot = tmp_path / "demo.png"
    proc = _ok(run_cli("demo", "--epochs", "2", "--users", "60", "--items", "80", "--dim", "8",
                       "--plot", plot, "--progress"))
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["epoch"])
    assert [line.split()[0] for line in lines[header + 1 : header + 4]] == ["pop", "1", "2"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "epoch 1/2" in proc.stderr  # the forced progress bar


def test_demo_without_matplotlib_still_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    plot = tmp_path / "demo.png"
    assert cli.main(["demo", "--epochs", "1", "--users", "30", "--items", "40", "--dim", "4",
                     "--plot", str(plot), "--threads", "0"]) == 0
    captured = capsys.readouterr()
    assert "pip install" in captured.err
    assert not plot.exists()
    assert any(line.split()[:1] == ["1"] for line in captured.out.splitlines())


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "evaluate" in out and "demo" in out


def test_comment_lines_and_extra_run_columns_as_trec_eval_10(trec_files, tmp_path, capsys):
    """trec_eval 10 skips '#' comments (run: first non-blank character; qrels: column 0 only, a docid
    may hold '#') and ignores run columns after the tag. The same numbers as the plain files."""

    def evaluate(*args) -> tuple[int, str, str]:
        return evaluate_here(capsys, *args)

    run_path, qrels_path, run, qrels = trec_files
    commented_run, commented_qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run_lines = run_path.read_text().splitlines()
    commented_run.write_text("\n".join(
        ["# a run comment", "   # an indented comment", *(f"{line} extra columns 1.5" for line in run_lines[:5]),
         *run_lines[5:], "#last"]) + "\n")
    qrels_lines = qrels_path.read_text().splitlines()
    commented_qrels.write_text("\n".join(["#qid iter docid rel", *qrels_lines]) + "\n")
    names = ["ndcg@10", "map", "precision@5"]
    code, plain, _ = evaluate(run_path, qrels_path, "-m", *names, "--json")
    assert code == 0
    code, got, _ = evaluate(commented_run, commented_qrels, "-m", *names, "--json")
    assert code == 0 and json.loads(got) == json.loads(plain)
    # in qrels, '#' past column 0 is data: a document id with '#' is judged like any other
    hashed_qrels = tmp_path / "hashed_qrels.txt"
    hashed_run = tmp_path / "hashed_run.txt"
    hashed_qrels.write_text("q1 0 doc#1 1\nq1 0 doc2 0\n")
    hashed_run.write_text("q1 Q0 doc#1 1 2.0 tag\nq1 Q0 doc2 2 1.0 tag\n")
    code, out, _ = evaluate(hashed_run, hashed_qrels, "-m", "mrr", "--json")
    assert code == 0 and json.loads(out) == {"mrr": 1.0}
    # a run line with fewer than 6 columns is still an error, naming the line
    short = tmp_path / "short.txt"
    short.write_text("q1 Q0 doc1 1 2.0\n")
    code, _, err = evaluate(short, hashed_qrels, "-m", "mrr")
    assert code != 0 and "short.txt:1" in err


def test_map_and_map_at_the_full_depth_together(trec_files, capsys):
    """``-m map map@1000`` was refused as "requested twice" when the lists are 1,000 long or shorter."""
    run_path, qrels_path, run, qrels = trec_files
    depth = max(len(docs) for docs in run.values())
    code, out, _ = evaluate_here(capsys, run_path, qrels_path, "-m", "map", f"map@{depth}", "--convention", "trec",
                                 "--json")
    assert code == 0
    got = json.loads(out)
    expected_q = pytrec_per_query(run, qrels)
    expected = sum(v["map"] for v in expected_q.values()) / len(expected_q)
    assert got == {"map": pytest.approx(expected, abs=1e-12), f"map@{depth}": pytest.approx(expected, abs=1e-12)}
    code, _, err = evaluate_here(capsys, run_path, qrels_path, "-m", "map", "map")
    assert code != 0 and "requested twice" in err


TREC_EVAL_NAMES = {"P_5": "P_5", "P_10": "P_10", "recall_20": "recall_20", "ndcg_cut_10": "ndcg_cut_10",
                   "map_cut_100": "map_cut_100", "success_1": "success_1", "Rprec": "Rprec",
                   "recip_rank": "recip_rank", "map": "map", "ndcg": "ndcg", "set_recall": "set_recall"}


def test_trec_eval_measure_names_equal_pytrec_eval(trec_files, capsys):
    """A trec_eval user's names work as they are: P_10, ndcg_cut_10, map_cut_100, success_1, Rprec, ..."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run_path, qrels_path, run, qrels = trec_files
    code, out, _ = evaluate_here(capsys, run_path, qrels_path, "-m", *TREC_EVAL_NAMES, "--convention", "trec",
                                 "--json")
    assert code == 0
    got = json.loads(out)
    measures = {"P.5,10", "recall.20", "ndcg_cut.10", "map_cut.100", "success.1", "Rprec", "recip_rank", "map",
                "ndcg", "set_recall"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert list(got) == list(TREC_EVAL_NAMES)
    for ours, theirs in TREC_EVAL_NAMES.items():
        expected = sum(v[theirs] for v in per_query.values()) / len(per_query)
        assert got[ours] == pytest.approx(expected, abs=1e-12), ours
