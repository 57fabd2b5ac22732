"""``-m all_trec``: every measure trec_eval 10 prints with its standard files, its measure parameters
and its command lines (``trec_eval [options] QRELS RUN``), through ``torchrec-eval evaluate``.

Oracles: pytrec_eval (trec_eval 9's measure code) for the measures it has, per query, at several
relevance levels; brute-force loops written from trec_eval's source (``tests/reference/trec_eval.py``)
for the others and for parameters; trec_eval 10 itself, byte for byte, when at hand (``TREC_EVAL``, or
its source in ``TREC_EVAL_SRC``, whose ``make quicktest`` commands and expected outputs are replayed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from reference import trec_eval as ref

from tests.trec_files import make_trec
from torchrec_eval import cli
from torchrec_eval.cli.parser import TREC_EVAL_VERSION

pytrec_eval = pytest.importorskip("pytrec_eval")

PYTREC = ["infAP", "Rprec_mult", "utility", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "relative_P",
          "set_relative_P", "set_map", "set_F", "set_P", "num_nonrel_judged_ret"]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return [make_trec(tmp_path_factory.mktemp(f"all_trec{seed}"), seed, 30, deep=True,
                      every_judged_query_retrieves=True) for seed in (3, 4)]


def per_query(capsys, tmp_path: Path, run_path: Path, qrels_path: Path, *options: str) -> dict:
    """{qid: {name: value}} at full precision (--per-query), in our argument order."""
    table = tmp_path / "per_query.tsv"
    assert cli.main(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "--quiet", "--json",
                     "--per-query", str(table), *options]) == 0
    capsys.readouterr()
    lines = [line.split("\t") for line in table.read_text().splitlines()]
    return {cells[0]: {name: float(v) for name, v in zip(lines[0][1:], cells[1:], strict=True)} for cells in lines[1:]}


@pytest.mark.parametrize("level", [1, 2, 3])
def test_measures_equal_pytrec_eval(cases, capsys, tmp_path, level):
    for run_path, qrels_path, run, qrels in cases:
        ours = per_query(capsys, tmp_path, run_path, qrels_path, "-l", str(level), "-m", *PYTREC)
        expected = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC), relevance_level=level).evaluate(run)
        for qid, values in expected.items():
            for name, value in values.items():
                assert ours[qid][name] == pytest.approx(value, abs=1e-12), (level, qid, name)


def test_gm_bpref_equals_pytrec_eval(cases, capsys):
    run_path, qrels_path, run, qrels = cases[0]
    assert cli.main(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "--json", "--quiet", "-m",
                     "gm_bpref", "11pt_avg"]) == 0
    ours = json.loads(capsys.readouterr().out)
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"gm_bpref"}).evaluate(run)
    logs = [values["gm_bpref"] for values in expected.values()]  # pytrec_eval's per-query logs
    assert ours["gm_bpref"] == pytest.approx(2.718281828459045 ** (sum(logs) / len(logs)), rel=1e-12)


@pytest.mark.parametrize("level", [1, 2])
def test_measures_equal_reference_loops(cases, capsys, tmp_path, level):
    """The measures pytrec_eval lacks (or has no parameters for) against trec_eval's loops."""
    pairs = {1: 3.0, 2: 9.0, 4: 4.5}
    options = ["-l", str(level), "-m", "dcg", "ideal_dcg", "ndcg.1=3,2=9,4=4.5", "rbp", "rbp_resid", "unj.3,10",
               "yaap", "11pt_avg.0,.25,.5,.75", "relstring.7"]
    for run_path, qrels_path, run, qrels in cases:
        ours = per_query(capsys, tmp_path, run_path, qrels_path, *options)
        for qid, judged in qrels.items():
            rels = ref.ranking(run[qid], judged)
            num_rel = sum(1 for rel in judged.values() if rel >= level)
            expected = {"dcg": ref.dcg(rels, {}), "ideal_dcg": ref.ideal_dcg(judged, {}),
                        "ndcg_1=3,2=9,4=4.5": ref.ndcg(rels, judged, pairs), "rbp": ref.rbp(rels, judged),
                        "rbp_resid": ref.rbp_resid(rels), "unj_3": ref.unj(rels, 3), "unj_10": ref.unj(rels, 10),
                        "yaap": ref.yaap(rels, num_rel, level),
                        "11pt_avg_0,.25,.5,.75": ref.eleven_point(rels, num_rel, level, [0.0, 0.25, 0.5, 0.75])}
            for name, value in expected.items():
                assert ours[qid][name] == pytest.approx(value, abs=1e-12), (qid, name)
        assert cli.main(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "--quiet", "-q",
                         "-n", "-m", "relstring.7"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines == [f"{'relstring_7':<22}\t{q}\t'{ref.relstring(ref.ranking(run[q], qrels[q]), 7)}'"
                         for q in sorted(qrels)]


def test_measure_parameters_as_trec_eval_reads_them(cases, capsys):
    """Cut-offs sorted, '23.4' read as 23, the first parameters of a family win, a family marked twice
    and parameters of a family without any are accepted, NAME.PARAMS names the one output."""
    run_path, qrels_path, _, _ = cases[0]

    def names(*measures: str) -> list[str]:
        assert cli.main(["evaluate", str(run_path), str(qrels_path), "--convention", "trec", "--quiet",
                         *[arg for m in measures for arg in ("-m", m)]]) == 0
        return [line.split("\t")[0].rstrip() for line in capsys.readouterr().out.splitlines()]

    assert names("P.5,7,3") == ["P_3", "P_5", "P_7"]
    assert names("ndcg_cut.10,20,23.4") == ["ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]
    assert names("P.5", "P.10", "P") == ["P_5"]
    assert names("map", "map", "map.3") == ["map"]
    assert names("Rprec_mult.5.0,0.2") == ["Rprec_mult_0.20", "Rprec_mult_5.00"]
    assert names("utility.2,-1,0,0", "rbp.p=0.5") == ["utility_2,-1,0,0", "rbp_p=0.5"]
    assert names("set") == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
                            "set_relative_P", "set_recall", "set_map", "set_F"]


# ---------------------------------------------------------------------------------------------
# trec_eval itself
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def binary() -> str:
    given = os.environ.get("TREC_EVAL") or shutil.which("trec_eval")
    if not given:
        pytest.skip("no trec_eval binary (set TREC_EVAL)")
    return given


@pytest.fixture(scope="module")
def partial(tmp_path_factory):
    """Judged queries missing from the run (for -c)."""
    return make_trec(tmp_path_factory.mktemp("all_trec_partial"), 5, 30, deep=True)


BINARY_OPTIONS = {
    "all_trec": ["-m", "all_trec"],
    "all_trec_q": ["-m", "all_trec", "-q"],
    "all_trec_q_l2_M9": ["-q", "-l2", "-M9", "-m", "all_trec"],
    "all_trec_l0": ["-q", "-l", "0", "-m", "all_trec", "-m", "11pt_avg.0.5,0,1,0.25"],
    "all_trec_J": ["-q", "-J", "-m", "all_trec", "-m", "relstring.30"],
    "params": ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "Rprec_mult.5.0,0.2,0.35",
               "-mutility.2,-1,0.5,0.001", "-N", "5000", "-m", "11pt_avg..25,.5,.75", "-mndcg.1=3,2=9,4=4.5",
               "-m", "Rndcg.0=1,3=0.5", "-m", "G.2=5", "-m", "ndcg_rel.4=1", "-m", "rbp.p=0.7,1=3",
               "-msuccess.2,5,20", "-m", "relative_P.2,40"],
    # dcg, ideal_dcg and ndcg share their parameters in trec_eval (and it frees them twice): one at a time
    "params_dcg": ["-q", "-m", "dcg.1=2,3=7", "-m", "rbp_resid.p=0.5", "-m", "unj.1,2,50",
                   "-m", "set_F.0.25", "-m", "yaap", "-m", "ndcg_cut.3,20.7"],
    "set_n": ["-q", "-n", "-m", "set"],
}


@pytest.mark.parametrize("options", list(BINARY_OPTIONS.values()), ids=list(BINARY_OPTIONS))
def test_equals_trec_eval_binary(binary, cases, capsys, options):
    """Byte for byte, trec_eval's own command line (QRELS RUN, options first)."""
    for run_path, qrels_path, _, _ in cases:
        expected = subprocess.run([binary, *options, str(qrels_path), str(run_path)], capture_output=True,
                                  text=True, timeout=60)
        assert expected.returncode == 0, expected.stderr
        assert cli.main(["evaluate", "--quiet", *options, str(qrels_path), str(run_path)]) == 0
        assert capsys.readouterr().out == expected.stdout, options


def test_complete_equals_trec_eval_binary(binary, partial, capsys):
    run_path, qrels_path, _, _ = partial
    for options in (["-q", "-c", "-m", "all_trec", "-mutility.1,-1,2,0"], ["-c", "-M", "3", "-m", "all_trec"],
                    ["-q", "-c", "-J", "-m", "all_trec", "-m", "relstring.5", "-m", "rbp_resid.p=0.5", "-m", "unj.2"],
                    ["-Jc", "-q", "-N", "-5", "-m", "utility.1,2,3,4", "-m", "11pt_avg.0,1"],
                    ["-qn", "-c", "-M3", "-l2", "-m", "official", "-m", "P.3", "-m", "map", "-m", "map"]):
        expected = subprocess.run([binary, *options, str(qrels_path), str(run_path)], capture_output=True,
                                  text=True, timeout=60)
        assert cli.main(["evaluate", "--quiet", *options, str(qrels_path), str(run_path)]) == 0
        assert capsys.readouterr().out == expected.stdout, options


def _quicktest_commands(source: Path) -> list[tuple[list[str], str]]:
    """(trec_eval's arguments, expected output file) of every line of its Makefile's quicktest."""
    commands = []
    target = (source / "Makefile").read_text().split("\nquicktest:", 1)[1].split("\n\n", 1)[0]
    for line in target.splitlines():
        line = line.strip()
        if line.startswith("./trec_eval ") and "| diff - " in line:
            command, _, expected = line.partition("| diff - ")
            commands.append((command.split()[1:], expected.strip()))
    return commands


def test_trec_eval_quicktest(capsys, monkeypatch):
    """trec_eval's own ``make quicktest`` commands and expected outputs, byte for byte."""
    source = os.environ.get("TREC_EVAL_SRC")
    if not source or not (Path(source) / "test" / "out.test").is_file():
        pytest.skip("trec_eval's source (TREC_EVAL_SRC) is not at hand")
    monkeypatch.chdir(source)
    commands = _quicktest_commands(Path(source))
    assert len(commands) == 15  # in trec_eval's argument order: QRELS (or PREFS) first, then RUN
    for arguments, expected in commands:
        assert cli.main(["evaluate", "--quiet", *arguments]) == 0, arguments
        assert capsys.readouterr().out == Path(expected).read_text(), arguments


# ---------------------------------------------------------------------------------------------
# every trec_eval command line: option combinations, -v, -h -m, '-' (stdin)
# ---------------------------------------------------------------------------------------------
def _tiny(tmp_path: Path) -> tuple[Path, Path]:
    """Two judged queries, q2 missing from the run."""
    qrels, run = tmp_path / "tiny.qrels", tmp_path / "tiny.run"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    return qrels, run


def test_complete_with_judged_only_drops_the_stand_in_document(tmp_path, capsys):
    """-c -J: trec_eval's stand-in ranking of a missing query (one unjudged document) is removed by -J,
    so the query retrieves nothing: iprec_at_recall at 0 relevant documents is 0 / 0 (printed -nan)."""
    qrels, run = _tiny(tmp_path)
    assert cli.main(["evaluate", "--quiet", "-c", "-J", "-q", "-m", "iprec_at_recall.0,1", "-m", "relstring.3",
                     "-m", "num_ret", str(qrels), str(run)]) == 0
    assert capsys.readouterr().out.splitlines()[4:] == [
        "num_ret               \tq2\t0", "iprec_at_recall_0.00  \tq2\t  -nan", "iprec_at_recall_1.00  \tq2\t0.0000",
        "relstring_3           \tq2\t''", "num_ret               \tall\t1", "iprec_at_recall_0.00  \tall\t  -nan",
        "iprec_at_recall_1.00  \tall\t0.5000"]


def test_negative_collection_size(tmp_path, capsys):
    """-N is read as trec_eval reads it, any integer (utility's fourth coefficient)."""
    qrels, run = _tiny(tmp_path)
    assert cli.main(["evaluate", "--quiet", "-c", "-q", "-N", "-5", "-m", "utility.1,-1,0,1", str(qrels),
                     str(run)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "utility_1,-1,0,1      \tq1\t-5.0000"


def test_version(capsys):
    """trec_eval -v: the trec_eval version reproduced, and ours, on stderr (as trec_eval), exit 0."""
    from torchrec_eval import __version__

    for option in ("-v", "--version"):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["evaluate", option])
        assert exit_.value.code == 0
        assert capsys.readouterr().err == (f"torchrec-eval {__version__}: trec_eval version {TREC_EVAL_VERSION}, "
                                           "reproduced (--trec-eval-version 9: trec_eval 9 / pytrec_eval)\n")


def test_version_is_the_binary_version(binary):
    told = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=60).stderr
    assert told == f"trec_eval version {TREC_EVAL_VERSION}\n"


def test_help_describes_the_measures_asked_for(capsys, tmp_path):
    qrels, run = _tiny(tmp_path)
    for argv in (["-h"], ["--help"], ["-h", "-q"]):  # argparse's help, whatever comes with it
        assert cli.main(["evaluate", *argv]) == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: torchrec-eval evaluate") and "Measures asked for" not in out
    # trec_eval -h -m P -m ndcg_cut QRELS RUN: the files are skipped, output names are their family
    assert cli.main(["evaluate", "-h", "-m", "P_10", "-m", "ndcg_cut.5", "iprec_at_recall_0.10", str(qrels),
                     str(run)]) == 0
    text = capsys.readouterr().out.split("Measures asked for with -m (P_10 ndcg_cut.5 iprec_at_recall_0.10):\n")[1]
    assert [line for line in text.splitlines() if not line.startswith(" ")] == ["iprec_at_recall", "P", "ndcg_cut"]
    assert "    Default: -m P.5,10,15,20,30,100,200,500,1000" in text
    for nickname, count in (("all_trec", 37), ("official", 12), ("all_prefs", 16), ("qrels_jg", 5)):
        assert cli.main(["evaluate", "-h", "-m", nickname]) == 0
        text = capsys.readouterr().out.split("Measures asked for")[1]
        assert sum(not line.startswith(" ") for line in text.splitlines()[1:]) == count, nickname
    assert cli.main(["evaluate", "-h", "-m", "P", "bogus"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "unknown measure 'bogus'" in captured.err


def _stdin(monkeypatch, path: Path) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))


def test_results_from_stdin(cases, capsys, monkeypatch):
    """trec_eval QRELS -: the results file is read from stdin, in either argument order."""
    run_path, qrels_path, _, _ = cases[0]
    assert cli.main(["evaluate", "--quiet", "-q", "-m", "all_trec", str(qrels_path), str(run_path)]) == 0
    expected = capsys.readouterr().out
    for argv in (["-q", "-m", "all_trec", str(qrels_path), "-"], ["-q", str(qrels_path), "-", "-m", "all_trec"],
                 ["-", str(qrels_path), "--convention", "trec", "-q", "-m", "all_trec"]):
        _stdin(monkeypatch, run_path)
        assert cli.main(["evaluate", "--quiet", *argv]) == 0
        assert capsys.readouterr().out == expected, argv
    assert cli.main(["evaluate", "-", "-"]) == 2
    assert "'-' (stdin) is given twice" in capsys.readouterr().err


def test_results_from_stdin_equals_trec_eval_binary(binary, cases, capsys, monkeypatch):
    run_path, qrels_path, _, _ = cases[1]
    options = ["-q", "-m", "official", "-m", "ndcg_cut.3"]
    expected = subprocess.run([binary, *options, str(qrels_path), "-"], input=run_path.read_bytes(),
                              capture_output=True, timeout=60)
    _stdin(monkeypatch, run_path)
    assert cli.main(["evaluate", "--quiet", *options, str(qrels_path), "-"]) == 0
    assert capsys.readouterr().out == expected.stdout.decode()


def test_judged_queries_missing_from_the_run(binary, partial, capsys, tmp_path):
    """Without -c, trec_eval 10 stops at the first judged query (in its order) missing from the run
    (exit 4, 'result qid ... not found in qrels'); we evaluate the others, which is what trec_eval
    prints on qrels without the missing queries (and what trec_eval 9 and pytrec_eval do)."""
    run_path, qrels_path, run, _ = partial
    failed = subprocess.run([binary, "-q", str(qrels_path), str(run_path)], capture_output=True, text=True, timeout=60)
    assert failed.returncode == 4 and "not found in qrels" in failed.stderr
    kept = tmp_path / "qrels.kept"
    kept.write_text("".join(line for line in qrels_path.open() if line.split()[0] in run))
    expected = subprocess.run([binary, "-q", "-m", "all_trec", str(kept), str(run_path)], capture_output=True,
                              text=True, timeout=60)
    assert cli.main(["evaluate", "-q", "-m", "all_trec", str(qrels_path), str(run_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == expected.stdout
    assert "judged queries not in the run ignored" in captured.err
