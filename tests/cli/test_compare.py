"""``torchrec-eval compare QRELS RUN RUN ...``: every run evaluated on the same queries, every pair tested.

Oracles: pytrec_eval's per-query values of each run (trec_eval's measures, ``--convention trec``), SciPy's
paired t-test on them, statsmodels' Holm adjustment; ``torchrec-eval evaluate -c`` (another ranking path)
for a run that misses a query. (pytrec_eval, not ranx: ranx's first call compiles its numba functions, 30 s
in a fresh environment.)
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from torchrec_eval.cli import main

METRICS = {"ndcg@10": "ndcg_cut_10", "map@100": "map_cut_100", "recall@20": "recall_20", "precision@10": "P_10"}
RUNS = {"good": 0.5, "fair": 1.2, "noise": 4.0}  # the scores' noise around each document's relevance


def _write(folder: Path, seed: int, missing: str | None = None) -> tuple[Path, list[Path]]:
    """A qrels file (graded, a query without a relevant document) and one run per entry of RUNS."""
    rng = random.Random(seed)
    queries = [f"q{i:02d}" for i in range(40)]
    judged = {(q, f"d{d}"): rng.choice([0, 1, 1, 2, 3]) for q in queries for d in rng.sample(range(60), 8)}
    judged.update({("q07", doc): 0 for q, doc in list(judged) if q == "q07"})  # R = 0
    qrels = folder / "qrels"
    qrels.write_text("".join(f"{q} 0 {doc} {rel}\n" for (q, doc), rel in judged.items()))
    runs = []
    for name, noise in RUNS.items():
        lines = []
        for q in queries:
            if q == missing and name == "fair":
                continue
            scores = {f"d{d}": judged.get((q, f"d{d}"), 0) + rng.gauss(0, noise) for d in range(60)}
            ranked = sorted(scores.items(), key=lambda item: -item[1])[:30]
            lines += [f"{q} Q0 {doc} {rank + 1} {score:.6f} {name}\n" for rank, (doc, score) in enumerate(ranked)]
        runs.append(folder / name)
        runs[-1].write_text("".join(lines))
    return qrels, runs


def _compare(capsys, *args: str) -> dict:
    assert main(["compare", *args, "--format", "json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def _trec_dict(path: Path) -> dict[str, dict[str, float]]:
    """A run (qid Q0 doc rank score tag) or qrels (qid 0 doc rel) file as pytrec_eval's dict."""
    table: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        cells = line.split()
        table.setdefault(cells[0], {})[cells[2]] = float(cells[4]) if len(cells) == 6 else int(cells[3])
    return table


def test_the_values_and_paired_t_tests_equal_pytrec_eval_scipy_and_statsmodels(tmp_path, capsys):
    import pytrec_eval
    from scipy.stats import ttest_rel
    from statsmodels.stats.multitest import multipletests

    qrels_path, run_paths = _write(tmp_path, 0)
    got = _compare(capsys, str(qrels_path), *map(str, run_paths), "-m", *METRICS, "--convention", "trec")
    evaluator = pytrec_eval.RelevanceEvaluator(_trec_dict(qrels_path), {"ndcg_cut.10", "map_cut.100", "recall.20",
                                                                         "P.10"})
    per_query = {}
    for path in run_paths:
        values = evaluator.evaluate(_trec_dict(path))
        per_query[path.name] = {metric: np.array([values[q][measure] for q in sorted(values)])
                                for metric, measure in METRICS.items()}
    names = list(RUNS)
    assert got["models"] == names and got["queries"] == 40
    for metric in METRICS:
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
        p_values = []
        for a, b in pairs:
            x, y = per_query[a][metric], per_query[b][metric]
            stats = got["pairs"][metric][f"{a}_vs_{b}"]
            assert stats["diff"] == pytest.approx(float(np.mean(x - y)), abs=1e-12)
            p_values.append(float(ttest_rel(x, y).pvalue))
            assert stats["p_value"] == pytest.approx(p_values[-1], rel=1e-10, abs=1e-14)
        holm = multipletests(p_values, method="holm")[1]
        for (a, b), adjusted in zip(pairs, holm, strict=True):
            assert got["pairs"][metric][f"{a}_vs_{b}"]["p_adjusted"] == pytest.approx(adjusted, rel=1e-9, abs=1e-14)
        for name in names:
            assert got["values"][metric][name] == pytest.approx(float(per_query[name][metric].mean()), abs=1e-12)
            beaten = {other for a, b in pairs for other in (a, b) if name in (a, b) and other != name
                      and got["pairs"][metric][f"{a}_vs_{b}"]["p_adjusted"] < 0.05
                      and (got["values"][metric][name] > got["values"][metric][other])}
            assert set(got["better_than"][metric][name]) == beaten
    assert got["better_than"]["ndcg@10"]["good"] == ["fair", "noise"]  # the data's order shows


def test_a_run_that_misses_a_query_scores_it_as_an_empty_list(tmp_path, capsys):
    """The queries are those any run retrieves for: ``fair`` lacks q05, so its mean is ``evaluate -c``'s
    (every judged query, a missing one as an empty list)."""
    qrels, runs = _write(tmp_path, 3, missing="q05")
    got = _compare(capsys, str(qrels), *map(str, runs), "-m", "ndcg@10", "map@100")
    assert main(["evaluate", str(runs[1]), str(qrels), "-c", "--json", "-m", "ndcg@10", "map@100"]) == 0
    alone = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for metric in ("ndcg@10", "map@100"):
        assert got["values"][metric]["fair"] == pytest.approx(alone[metric], abs=1e-12)


def test_the_text_markdown_and_latex_tables_show_the_same_comparison(tmp_path, capsys):
    qrels, runs = _write(tmp_path, 0)
    args = [str(qrels), *map(str, runs), "-m", "ndcg@10", "mrr@10", "--test", "fisher", "--replicates", "2000",
            "--names", "good_1", "fair", "noise", "--quiet"]
    got = _compare(capsys, *args)
    label = {"good_1": "a", "fair": "b", "noise": "c"}
    marks = {metric: {model: "".join(label[o] for o in got["better_than"][metric][model]) for model in label}
             for metric in ("ndcg@10", "mrr@10")}
    assert main(["compare", *args, "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out.splitlines()
    assert markdown[0] == "| # | Model | ndcg@10 | mrr@10 |"
    for model, line in zip(label, markdown[2:5], strict=True):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[:2] == [label[model], model]
        for cell, metric in zip(cells[2:], ("ndcg@10", "mrr@10"), strict=True):
            value = f"{got['values'][metric][model]:.3f}"
            if got["values"][metric][model] == max(got["values"][metric].values()):
                value = f"**{value}**"
            assert cell == value + (f"<sup>{marks[metric][model]}</sup>" if marks[metric][model] else "")
    assert main(["compare", *args, "--format", "latex"]) == 0
    latex = capsys.readouterr().out
    assert "a & good\\_1 & \\textbf{" in latex and "\\bottomrule" in latex and "fisher test, holm-adjusted" in latex
    assert main(["compare", *args]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split() == ["#", "Model", "ndcg@10", "mrr@10"] and text[2].split()[:2] == ["a", "good_1"]


@pytest.mark.parametrize(("args", "message"), [
    (["-m", "ndcg@10"], "two or more runs"),
    (["--names", "x"], "one distinct, non-empty name per run"),
    (["--alpha", "1.5"], "expected a number in (0, 1)"),
    (["-m", "nope@3"], "Unknown metric 'nope@3'"),
    # 2 x 8 bytes x 10^11 replicates x 5 default metrics x 3 runs: the allocator's traceback and exit 1 before
    (["--test", "fisher", "--replicates", "100000000000"], "`replicates`=100,000,000,000 needs 24,000,000,000,000 bytes"),
])
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, args, message):
    qrels, runs = _write(tmp_path, 0)
    run_args = [str(runs[0])] if message == "two or more runs" else list(map(str, runs))
    try:
        status = main(["compare", str(qrels), *run_args, *args])
    except SystemExit as stop:  # argparse's own errors exit
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_runs_of_the_same_file_name_need_names(tmp_path, capsys):
    qrels, runs = _write(tmp_path, 0)
    (tmp_path / "other").mkdir()
    copy = tmp_path / "other" / "good"
    copy.write_text(runs[0].read_text())
    assert main(["compare", str(qrels), str(runs[0]), str(copy)]) == 2
    assert "--names" in capsys.readouterr().err
