"""``torchrec-eval evaluate --convention trec``: trec_eval's measures, options and output.

Oracles: pytrec_eval (trec_eval 9's measure code, so ``--trec-eval-version 9`` for
``iprec_at_recall``) on every measure, per query and averaged, at several relevance levels; a
brute-force ``-M`` (the run cut to its first M documents in trec_eval's order, then pytrec_eval);
and, when a trec_eval binary is at hand (``TREC_EVAL``, ``trec_eval`` on the PATH, or its source in
``TREC_EVAL_SRC`` to build), trec_eval 10 itself, byte for byte.

The generated files have tied scores (at the cut-offs too), document ids whose string order is not
their numeric order, ids longer than 8 and 16 bytes, graded, zero and negative (unjudged)
judgements, retrieved documents without a judgement, judged queries without a relevant document,
and queries only in the run or only in the qrels.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.trec_files import make_trec
from torchrec_eval import cli

pytrec_eval = pytest.importorskip("pytrec_eval")

ROOT = Path(__file__).resolve().parents[2]
CUTS = "1,3,5,10,30,100"
# every measure, as -m arguments, and the pytrec_eval measures that give the same values
MEASURES = [f"P.{CUTS}", f"recall.{CUTS}", f"ndcg_cut.{CUTS}", f"map_cut.{CUTS}", "success.1,5,10", "ndcg", "map",
            "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "set_recall", "set_P", "set_F",
            "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "num_q"]
PYTREC = {f"P.{CUTS}", f"recall.{CUTS}", f"ndcg_cut.{CUTS}", f"map_cut.{CUTS}", "success.1,5,10", "ndcg", "map",
          "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "set_recall", "set_P", "set_F", "num_ret",
          "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}
COUNTS = ("num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret")


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return [make_trec(tmp_path_factory.mktemp(f"trec_eval{seed}"), seed, 36, deep=True) for seed in range(3)]


def evaluate(capsys, *args: str) -> str:
    assert cli.main(["evaluate", *map(str, args)]) == 0
    return capsys.readouterr().out


def ours(capsys, tmp_path: Path, run_path: Path, qrels_path: Path, *options: str):
    """(summary, per-query values) of every measure, at full precision (--json and --per-query)."""
    per_query = tmp_path / "per_query.tsv"
    out = evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--trec-eval-version", "9", "--json",
                   "--per-query", per_query, "--quiet", "-m", *MEASURES, *options)
    lines = [line.split("\t") for line in per_query.read_text().splitlines()]
    header = lines[0]
    rows = {cells[0]: {name: float(value) for name, value in zip(header[1:], cells[1:], strict=True)}
            for cells in lines[1:]}
    return json.loads(out), rows


def trec_order(docs: dict[str, float]) -> list[str]:
    return sorted(docs, key=lambda doc: (docs[doc], doc.encode()), reverse=True)


def pytrec_summary(per_query: dict[str, dict[str, float]], names: list[str], num_queries: int) -> dict:
    """trec_eval's summary of pytrec_eval's per-query values, over ``num_queries`` (more with -c)."""
    out = {}
    for name in names:
        values = [v[name] for v in per_query.values()]
        if name in COUNTS:
            out[name] = sum(values)
        elif name == "gm_map":  # per-query values are logs; a query missing under -c counts log(1e-5)
            values += [math.log(1e-5)] * (num_queries - len(values))
            out[name] = math.exp(sum(values) / num_queries)
        else:
            out[name] = sum(values) / num_queries
    return out


def assert_same(summary, per_query, expected_q, num_queries, level_note=""):
    names = [name for name in next(iter(expected_q.values())) if name not in ("runid", "num_q")]
    assert set(summary) == set(names) | {"num_q"}, set(summary) ^ (set(names) | {"num_q"})
    for qid, expected in expected_q.items():
        for name in names:
            if name == "gm_map":  # not printed per query, as in trec_eval
                continue
            assert per_query[qid][name] == pytest.approx(expected[name], abs=1e-12), (level_note, qid, name)
    for name, value in pytrec_summary(expected_q, names, num_queries).items():
        assert summary[name] == pytest.approx(value, abs=1e-12), (level_note, name)
    assert summary["num_q"] == num_queries


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_every_measure_equals_pytrec_eval(cases, capsys, tmp_path, level):
    for run_path, qrels_path, run, qrels in cases:
        options = [] if level == 1 else ["-l", str(level)]
        summary, per_query = ours(capsys, tmp_path, run_path, qrels_path, *options)
        expected = pytrec_eval.RelevanceEvaluator(qrels, PYTREC, relevance_level=level).evaluate(run)
        assert set(per_query) == set(expected) == set(run) & set(qrels)
        assert_same(summary, per_query, expected, len(expected), f"-l {level}")


@pytest.mark.parametrize("max_docs", [1, 5, 12])
def test_max_docs_cuts_each_ranking(cases, capsys, tmp_path, max_docs):
    """-M: only the first M documents of each ranking, in trec_eval's order (ties by docid descending)."""
    for run_path, qrels_path, run, qrels in cases:
        summary, per_query = ours(capsys, tmp_path, run_path, qrels_path, "-M", str(max_docs))
        cut = {qid: {doc: docs[doc] for doc in trec_order(docs)[:max_docs]} for qid, docs in run.items()}
        expected = pytrec_eval.RelevanceEvaluator(qrels, PYTREC).evaluate(cut)
        assert max(v["num_ret"] for v in expected.values()) == max_docs
        assert_same(summary, per_query, expected, len(expected), f"-M {max_docs}")


def test_complete_scores_missing_queries_zero(cases, capsys, tmp_path):
    """-c: judged queries absent from the run count, with 0 (and log(1e-5) in gm_map); num_rel sums
    every judgement > 0 of the qrels (trec_eval's -c summary, whatever -l)."""
    for run_path, qrels_path, run, qrels in cases:
        summary, per_query = ours(capsys, tmp_path, run_path, qrels_path, "-c", "-l", "2")
        expected = pytrec_eval.RelevanceEvaluator(qrels, PYTREC, relevance_level=2).evaluate(run)
        missing = set(qrels) - set(run)
        assert missing and set(per_query) == set(qrels)
        for qid in missing:
            assert all(value == 0 for name, value in per_query[qid].items() if name != "num_rel")
            assert per_query[qid]["num_rel"] == sum(rel >= 2 for rel in qrels[qid].values())
        names = [name for name in next(iter(expected.values())) if name not in COUNTS]
        for name, value in pytrec_summary(expected, names, len(qrels)).items():
            assert summary[name] == pytest.approx(value, abs=1e-12), name
        assert summary["num_rel"] == sum(rel > 0 for docs in qrels.values() for rel in docs.values())
        assert summary["num_q"] == len(qrels)


def test_iprec_at_recall_versions(tmp_path, capsys):
    """trec_eval 10 rounds p * R to the nearest rank (lround); 9 (pytrec_eval) used (long)(p * R + 0.9).
    R = 3, relevant at ranks 1, 4, 8: the 2nd relevant document is the cut-off from p = 0.5 (v10: 1.5 ->
    2) but from p = 0.4 already in v9 (1.2 + 0.9 -> 2)."""
    run = {"q": {"d1": 3.0, "x1": 2.9, "x2": 2.8, "d2": 2.7, "x3": 2.6, "x4": 2.5, "x5": 2.4, "d3": 2.3}}
    qrels = {"q": {"d1": 1, "d2": 1, "d3": 1}}
    (tmp_path / "run").write_text("".join(f"q Q0 {d} 1 {s} t\n" for d, s in run["q"].items()))
    (tmp_path / "qrels").write_text("".join(f"q 0 {d} {r}\n" for d, r in qrels["q"].items()))
    v9 = json.loads(evaluate(capsys, tmp_path / "run", tmp_path / "qrels", "--convention", "trec", "-m",
                             "iprec_at_recall", "--json", "--trec-eval-version", "9", "--quiet"))
    v10 = json.loads(evaluate(capsys, tmp_path / "run", tmp_path / "qrels", "--convention", "trec", "-m",
                              "iprec_at_recall", "--json", "--quiet"))
    assert v9 == pytest.approx(pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(run)["q"])
    # precision at the relevant documents: 1/1, 2/4, 3/8; interpolated: the best at or after each
    cut_v10 = {p: round(p * 3 + 1e-9) for p in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)}
    best_from = {0: 1.0, 1: 1.0, 2: 0.5, 3: 0.375}
    assert v10 == {f"iprec_at_recall_{p:3.2f}": best_from[c] for p, c in cut_v10.items()}
    assert v10["iprec_at_recall_0.40"] == 1.0 and v9["iprec_at_recall_0.40"] == 0.5


def test_default_output_is_trec_eval_official_set(cases, capsys):
    """No -m under --convention trec: trec_eval's default ("official") measures, in its order and
    layout (``%-22s\\t%s\\t%6.4f``, counts as integers), with pytrec_eval's values (version 9)."""
    run_path, qrels_path, run, qrels = cases[0]
    out = evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--trec-eval-version", "9", "--quiet")
    lines = out.splitlines()
    names = [line[:22].rstrip() for line in lines]
    points = [f"iprec_at_recall_{p / 10:3.2f}" for p in range(11)]
    cuts = [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    assert names == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                     "recip_rank", *points, *cuts]
    expected_q = pytrec_eval.RelevanceEvaluator(qrels, {"official"}).evaluate(run)
    expected = pytrec_summary(expected_q, [n for n in names if n not in ("runid", "num_q")], len(expected_q))
    for line in lines:
        name, qid, value = line.split("\t")
        assert len(name) == 22 and qid == "all"
        if name.rstrip() == "runid":
            assert value == "tag0"
        elif name.rstrip() == "num_q":
            assert value == str(len(expected_q))
        elif name.rstrip() in COUNTS:
            assert value == str(int(expected[name.rstrip()]))
        else:
            assert value == f"{expected[name.rstrip()]:6.4f}", name


def test_query_lines_then_summary(cases, capsys):
    """-q: each query's lines (queries in qid string order, measures in trec_eval's order, no line for
    runid, num_q, gm_map), then the 'all' lines; -n drops the 'all' lines."""
    run_path, qrels_path, run, qrels = cases[1]
    out = evaluate(capsys, run_path, qrels_path, "--convention", "trec", "-q", "-m", "P.5", "map", "num_ret",
                   "gm_map", "runid", "--quiet")
    rows = [line.split("\t") for line in out.splitlines()]
    evaluated = sorted(set(run) & set(qrels))
    per_query = [row for row in rows if row[1] != "all"]
    assert [row[1] for row in per_query] == [q for q in evaluated for _ in range(3)]
    assert [row[0].rstrip() for row in per_query[:3]] == ["num_ret", "map", "P_5"]
    assert [row[0].rstrip() for row in rows[len(per_query):]] == ["runid", "num_ret", "map", "gm_map", "P_5"]
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"P.5", "map", "num_ret"}).evaluate(run)
    for name, qid, value in per_query:
        key = name.rstrip()
        assert value == (str(int(expected[qid][key])) if key == "num_ret" else f"{expected[qid][key]:6.4f}")
    quiet = evaluate(capsys, run_path, qrels_path, "--convention", "trec", "-q", "-n", "-m", "P.5", "--quiet")
    assert quiet.splitlines() == [f"{'P_5':<22}\t{row[1]}\t{row[2]}" for row in per_query if row[0].startswith("P_5")]


def test_measure_name_forms(cases, capsys):
    """trec_eval's -m forms (P.5,10, bare P with its default cut-offs, output names, official) and the
    library's names that equal a trec_eval measure give the same values."""
    run_path, qrels_path, _, _ = cases[2]
    forms = {
        ("-m", "P.10,5"): {"P_5", "P_10"},
        ("-m", "P_5", "P_10"): {"P_5", "P_10"},
        ("-m", "precision@5", "precision@10"): {"precision@5", "precision@10"},
    }
    values = {}
    for args, names in forms.items():
        got = json.loads(evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--json", "--quiet", *args))
        assert set(got) == names
        values[args] = sorted(got.values())
    assert len({tuple(v) for v in values.values()}) == 1
    library = json.loads(evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--json", "--quiet", "-m",
                                  "ndcg@10", "map@100", "recall@30", "hitrate@5", "mrr", "rprecision", "ndcg", "map"))
    trec = json.loads(evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--json", "--quiet", "-m",
                               "ndcg_cut_10", "map_cut_100", "recall_30", "success_5", "recip_rank", "Rprec", "ndcg",
                               "map"))
    assert list(library.values()) == list(trec.values())
    default_cuts = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
    for family in ("P", "recall"):  # a bare trec_eval family: its default cut-offs
        bare = json.loads(evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--json", "--quiet", "-m",
                                   family))
        assert list(bare) == [f"{family}_{k}" for k in default_cuts]
    # the library's whole-list recall, without --convention trec, is trec_eval's set_recall
    whole = json.loads(evaluate(capsys, run_path, qrels_path, "--json", "--quiet", "--convention", "ranx", "-m",
                                "recall"))
    trec = json.loads(evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--json", "--quiet", "-m",
                               "set_recall"))
    assert whole["recall"] == pytest.approx(trec["set_recall"], abs=1e-12)
    assert _status(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "-m", "bpref", "mrr@10"]) == 2
    assert "['bpref'] are trec_eval measures and ['mrr@10'] are not" in capsys.readouterr().err


def test_library_engine_takes_l_and_m(cases, capsys):
    """A metric trec_eval has no measure for (mrr@10) sends --convention trec through the library's
    metrics; -l and -M mean the same there: mrr@10 with -M 10 is recip_rank with -M 10."""
    run_path, qrels_path, _, _ = cases[0]
    library = json.loads(evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--json", "--quiet",
                                  "-m", "mrr@10", "ndcg@5", "-l", "2", "-M", "10"))
    trec = json.loads(evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--json", "--quiet",
                               "-m", "recip_rank", "ndcg_cut_5", "-l", "2", "-M", "10"))
    assert library["mrr@10"] == pytest.approx(trec["recip_rank"], abs=1e-12)
    # trec_eval's ndcg_cut keeps every judged grade as gain whatever -l; the library's gains are those
    # of the relevant documents (>= 2): pytrec_eval's ndcg_cut on qrels without the grades below 2
    _, _, run, qrels = cases[0]
    high = {q: {d: (r if r >= 2 else 0) for d, r in docs.items()} for q, docs in qrels.items()}
    expected = pytrec_eval.RelevanceEvaluator(high, {"ndcg_cut.5"}).evaluate(run)
    assert library["ndcg@5"] == pytest.approx(np.mean([v["ndcg_cut_5"] for v in expected.values()]), abs=1e-12)
    assert library["ndcg@5"] != pytest.approx(trec["ndcg_cut_5"], abs=1e-6)


def test_library_engine_query_lines(cases, capsys):
    """-q without --convention trec: the library's per-query values in trec_eval's layout."""
    run_path, qrels_path, run, qrels = cases[0]
    out = evaluate(capsys, run_path, qrels_path, "-q", "-m", "ndcg@10", "--quiet")
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[-1][:2] == [f"{'ndcg@10':<22}", "all"]
    judged = {q for q in set(run) & set(qrels) if any(r > 0 for r in qrels[q].values())}
    values = {row[1]: row[2].strip() for row in rows[:-1]}
    assert set(values) == set(run) & set(qrels)
    assert {q for q, value in values.items() if value != "nan"} == judged  # the default skips the others
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    for qid in judged:
        assert values[qid] == f"{expected[qid]['ndcg_cut_10']:6.4f}"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-q", "--json"], "--per-query"),
        (["-l", "-1"], "int >= 0"),
        (["-M", "0"], "int >= 1"),
        (["-m", "P.0"], "positive"),
        (["-m", "P.5,5"], "twice"),
        (["-m", "P.x"], "integers"),
        (["-m", "P."], "nothing after the '.'"),
        (["-m", "ndcg.1"], "'level=gain' pairs"),
        (["-m", "utility.1,2"], "4 coefficients"),
        (["-m", "iprec_at_recall.0.5,.50"], "twice"),
        (["-m", "ndcg.-1=2"], "unjudged documents"),
        (["-m", "foo"], "Unknown metric 'foo'"),
        (["-m", "all_trecs"], "Unknown metric 'all_trecs'"),
    ],
)
def test_option_errors(cases, capsys, args, words):
    run_path, qrels_path, _, _ = cases[0]
    assert _status(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", *args]) == 2
    assert words in capsys.readouterr().err


def test_trec_only_measures_need_the_trec_convention(cases, capsys, tmp_path):
    run_path, qrels_path, _, _ = cases[0]
    for name in ("bpref", "P.5,10", "official", "num_q"):
        assert _status(["evaluate", str(run_path), str(qrels_path), "-m", name]) == 2
        assert "needs --convention trec" in capsys.readouterr().err
    scores = tmp_path / "scores.npz"
    np.savez(scores, preds=np.ones((2, 3)), target=np.ones((2, 3)))
    assert _status(["evaluate", str(scores), "-l", "2"]) == 2
    assert "-l applies to TREC runs only" in capsys.readouterr().err


def _status(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exit_info:  # argparse's own errors
        return int(exit_info.code)


def test_trec_path_does_not_import_torch(cases):
    """The numpy-only path: torch (most of the start-up time and memory) is never imported."""
    run_path, qrels_path, _, _ = cases[0]
    code = ("import sys; from torchrec_eval import cli; "
            f"assert cli.main(['evaluate', {str(run_path)!r}, {str(qrels_path)!r}, '--convention', 'trec', "
            "'--quiet']) == 0; assert 'torch' not in sys.modules, 'torch was imported'")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("runid")


# ---------------------------------------------------------------------------------------------
# trec_eval itself, when at hand
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def trec_eval_binary(tmp_path_factory) -> str:
    """trec_eval: $TREC_EVAL, else ``trec_eval`` on the PATH, else built from $TREC_EVAL_SRC (its
    public source, usnistgov/trec_eval, with the machine's C compiler); skip when none is there."""
    given = os.environ.get("TREC_EVAL") or shutil.which("trec_eval")
    if given:
        return given
    source = os.environ.get("TREC_EVAL_SRC")
    if not source or not (Path(source) / "Makefile").is_file() or not shutil.which("make"):
        pytest.skip("no trec_eval binary (set TREC_EVAL, or TREC_EVAL_SRC to its source)")
    build = tmp_path_factory.mktemp("trec_eval_build")
    shutil.copytree(source, build / "src")
    proc = subprocess.run(["make", "-C", str(build / "src")], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"trec_eval did not build: {proc.stderr[-500:]}")
    return str(build / "src" / "trec_eval")


@pytest.fixture(scope="module")
def judged_cases(tmp_path_factory):
    """Every judged query is in the run: trec_eval 10 stops ("result qid not found in qrels", exit 4)
    on a judged query missing from the run unless -c is given (version 9 and pytrec_eval skip it)."""
    return [make_trec(tmp_path_factory.mktemp(f"trec_eval_judged{seed}"), seed, 36, deep=True,
                      every_judged_query_retrieves=True) for seed in (7, 8)]


SUPPORTED = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
             "iprec_at_recall", "P", "recall", "ndcg", "ndcg_cut", "map_cut", "success", "set_P", "set_recall",
             "set_F", "num_nonrel_judged_ret"]


@pytest.mark.parametrize(
    "options",
    [[], ["-q"], ["-l", "2"], ["-l", "0", "-q"], ["-M", "7"], ["-q", "-c"], ["-l", "3", "-M", "20", "-q"]],
    ids=["default", "q", "l2", "l0q", "M7", "qc", "l3M20q"],
)
def test_output_equals_trec_eval_binary(trec_eval_binary, judged_cases, cases, capsys, options):
    """Byte for byte: the default measures, then every supported measure, with -q, -l, -M, -c."""
    for run_path, qrels_path, _, _ in judged_cases + (cases if "-c" in options else []):
        for measures in ([], [arg for name in SUPPORTED for arg in ("-m", name)]):
            expected = subprocess.run([trec_eval_binary, *options, *measures, str(qrels_path), str(run_path)],
                                      capture_output=True, text=True, timeout=60)
            assert expected.returncode == 0, expected.stderr
            ours = evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--quiet", *options,
                            *(["-m", *SUPPORTED] if measures else []))
            assert ours == expected.stdout, (options, measures[:2])


def test_trec_eval_own_test_files(capsys):
    """trec_eval's own test files and expected outputs (its ``make quicktest``), for the measures
    supported here, when its source is at hand."""
    source = os.environ.get("TREC_EVAL_SRC")
    if not source or not (Path(source) / "test" / "out.test").is_file():
        pytest.skip("trec_eval's source (TREC_EVAL_SRC) is not at hand")
    test = Path(source) / "test"
    supported = [line for line in (test / "out.test").read_text().splitlines()]
    assert evaluate(capsys, test / "results.test", test / "qrels.test", "--convention", "trec",
                    "--quiet").splitlines() == supported
    families = {"P", "recall", "ndcg_cut", "map_cut", "success", "iprec_at_recall"}
    for out_file, options in (("out.test.aq", ["-q"]), ("out.test.aqcM", ["-q", "-c", "-M", "100"]),
                              ("out.test.aql", ["-q", "-l", "2"])):
        results = "results.trunc" if "c" in out_file[9:] else "results.test"
        qrels = "qrels.rel_level" if out_file.endswith("l") else "qrels.test"
        expected = [line for line in (test / out_file).read_text().splitlines()
                    if line.split()[0] in SUPPORTED or line.split()[0].rpartition("_")[0] in families]
        got = evaluate(capsys, test / results, test / qrels, "--convention", "trec", "--quiet", *options,
                       "-m", *SUPPORTED).splitlines()
        assert got == expected, out_file


def test_readme_commands_run(cases, capsys, monkeypatch, tmp_path):
    """The ``torchrec-eval evaluate run.trec qrels.trec ...`` lines of the README's command-line section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
    commands = [line.split("#")[0].split() for block in section.split("```bash\n")[1:]
                for line in block.split("```")[0].splitlines() if line.startswith("torchrec-eval evaluate run.trec")]
    assert len(commands) >= 3
    run_path, qrels_path, _, _ = cases[0]
    shutil.copy(run_path, tmp_path / "run.trec")
    shutil.copy(qrels_path, tmp_path / "qrels.trec")
    monkeypatch.chdir(tmp_path)
    for command in commands:
        assert cli.main(command[1:]) == 0, command
        out = capsys.readouterr().out
        assert out.strip(), command
        if "--convention" in command and "-m" not in command:
            assert out.startswith("runid")
