"""trec_eval's ``-D LEVEL`` printouts of its qrels measures (``torchrec_eval.trec.debug``).

Always run: a few lines checked against values computed here from the reference loops
(``tests/reference/trec_eval.py``) and by hand. With a trec_eval 10 binary (``TREC_EVAL``): byte for
byte on generated files at ``-D 1, 2, 3``, with and without ``-q``, ``-m all_trec`` and single measures
with parameters, and ``-D LEVEL.QID``.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from reference import trec_eval as ref

from tests.trec_files import make_trec
from torchrec_eval import cli

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import fuzz_trec_eval  # noqa: E402

# q1 ranks d3 (rel 2), d2 (unjudged), d1 (rel 1); d4 (rel 3) is judged but not retrieved
QRELS = "q1 0 d1 1\nq1 0 d3 2\nq1 0 d4 3\nq1 0 d5 0\nq2 0 d9 1\n"
RUN = "q1 Q0 d1 1 0.2 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d3 3 0.9 t\nq2 Q0 d8 1 0.3 t\nq2 Q0 d9 2 0.1 t\n"


def _files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return str(tmp_path / "qrels"), str(tmp_path / "run")


def _ours(capsys, *arguments: str) -> str:
    assert cli.main(["evaluate", "--quiet", *arguments]) == 0
    return capsys.readouterr().out


def test_bin_g_and_ndcg_lines_equal_reference_values(tmp_path, capsys):
    qrels, run = _files(tmp_path)
    out = _ours(capsys, "-D", "1", "-m", "binG", "-m", "ndcg", qrels, run).splitlines()
    rels = ref.ranking({"d1": 0.2, "d2": 0.5, "d3": 0.9}, {"d1": 1, "d3": 2, "d4": 3, "d5": 0})
    assert rels == [2, -1, 1]
    # binG: 1 / log2(3 + i - relevant so far) at each relevant document
    first, second = 1 / math.log2(3 + 0 - 1), 1 / math.log2(3 + 2 - 2)
    assert out[:2] == [f"binG: 0 1 {first:6.4f}", f"binG: 2 2 {first + second:6.4f}"]
    # ndcg: i, sorted-gain place, gain, dcg so far, ideal gain, ideal dcg so far; the ideal runs 3, 2, 1
    # (places 3, 2, 1 of the gains 0..3), then one line where it drops to gain 0 (place 0)
    ideal = [3 / math.log2(2), 3 / math.log2(2) + 2 / math.log2(3)]
    ideal.append(ideal[-1] + 1 / math.log2(4))
    dcg1 = 2 / math.log2(2)
    assert ref.dcg(rels, {}) == pytest.approx(dcg1 + 1 / math.log2(4))
    assert ref.ideal_dcg({"d1": 1, "d3": 2, "d4": 3, "d5": 0}, {}) == pytest.approx(ideal[-1])
    assert out[2:6] == [f"ndcg: 0 3 2.0 {dcg1:6.4f} 3.0 {ideal[0]:6.4f}",
                        f"ndcg: 1 2 0.0 {dcg1:6.4f} 2.0 {ideal[1]:6.4f}",
                        f"ndcg: 2 1 1.0 {ref.dcg(rels, {}):6.4f} 1.0 {ideal[2]:6.4f}",
                        f"ndcg: 3 0 0.0 {ref.dcg(rels, {}):6.4f} 0.0 {ideal[2]:6.4f}"]
    assert out[6].startswith("binG: 1 1 ")  # then q2 (d9 at rank 2)
    assert out[-2:] == ["binG                  \tall\t" + f"{(1.0 / 3 * (first + second) + 1 / math.log2(3)) / 2:6.4f}",
                        out[-1]] and out[-1].startswith("ndcg ")


def test_printouts_come_before_each_querys_lines_and_gm_bpref_has_no_newline(tmp_path, capsys):
    qrels, run = _files(tmp_path)
    out = _ours(capsys, "-D", "2", "-q", "-m", "gm_bpref", "-m", "ndcg_cut.1,2", qrels, run)
    # q1: bpref: d3 (relevant) and d1 (relevant) above the judged non-relevant d5: 2/3
    # ndcg_cut at -D 2: the run's documents of gain > 0 and the cut-offs reached, but not the last one
    # (ranks 0, 1: cut-off 1 is printed before rank 1; its loop stops at rank 2, the last cut-off)
    assert out.startswith(f"gm_bpref: bpref {2 / 3:6.4f}, gm_bpref {math.log(2 / 3):6.4f}ndcg_cut:0 2.0 2.0000\n"
                          "ndcg_cut: cutoff 1 dcg 2.0000\nndcg_cut:0 3 3.0 3.0000\nndcg_cut: cutoff 1 idcg 3.0000\n")
    lines = out.splitlines()
    q1 = [i for i, line in enumerate(lines) if "\tq1\t" in line]
    q2_debug = [i for i, line in enumerate(lines) if line.startswith("gm_bpref: bpref 1.0000")]
    assert q1 and q2_debug and max(q1) < min(q2_debug)  # q1's -q lines before q2's printouts
    assert not any(line.startswith("ndcg_cut: cutoff 2 dcg") for line in lines[:8])


def test_levels_and_one_query(tmp_path, capsys):
    qrels, run = _files(tmp_path)
    plain = _ours(capsys, "-q", "-m", "all_trec", qrels, run)
    assert _ours(capsys, "-D", "0", "-q", "-m", "all_trec", qrels, run) == plain
    level1 = _ours(capsys, "-D", "1", "-m", "all_trec", qrels, run)
    assert "gm_bpref: bpref" not in level1 and "ndcg_cut:0 2.0" not in level1  # level 2 and above
    assert "gm_bpref: bpref" in _ours(capsys, "-D", "2", "-m", "all_trec", qrels, run)
    one = _ours(capsys, "-D", "1.q2", "-q", "-m", "binG", qrels, run)
    assert one.splitlines()[0] == f"binG: 1 1 {1 / math.log2(3):6.4f}"
    assert "\tq1\t" not in one


def _binary() -> str:
    return fuzz_trec_eval.binary_path() or pytest.skip("no trec_eval binary (set TREC_EVAL)")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    run_path, qrels_path, _, _ = make_trec(tmp_path_factory.mktemp("debug"), 7, 12, deep=True,
                                           every_judged_query_retrieves=True)
    return str(qrels_path), str(run_path)


OPTIONS = [
    ["-D", "1", "-q", "-m", "all_trec"], ["-D", "2", "-m", "all_trec"], ["-D3", "-q", "-c", "-m", "all_trec"],
    ["-D", "2", "-q", "-l", "2", "-M", "30", "-m", "all_trec"], ["-D", "2", "-q", "-J", "-m", "all_trec"],
    ["-D", "1", "-q", "-m", "ndcg.1=3,2=0.5,4=2"], ["-D", "1", "-m", "G.0=1,1=0.3,3=-1"],
    ["-D", "1", "-q", "-m", "Rndcg.1=5,2=5"], ["-D", "1", "-q", "-m", "ndcg_rel.1=-1,2=3"],
    ["-D", "2", "-q", "-m", "ndcg_cut.1,3,2000"], ["-D", "1", "-q", "-m", "rbp.p=0.5"],
    ["-D", "2", "-q", "-n", "-m", "gm_bpref"], ["-D", "1", "-q", "-m", "dcg.1=0.5,1=3"],
    ["-D", "1", "-q", "-m", "ideal_dcg.0=2"], ["-D", "1", "-q", "-m", "G.1=0,2=0"],
]


@pytest.mark.parametrize("options", OPTIONS, ids=" ".join)
def test_printouts_equal_trec_eval_binary(generated, capsys, options):
    binary = _binary()
    qrels, run = generated
    expected = subprocess.run([binary, *options, qrels, run], capture_output=True, check=True).stdout.decode()
    assert _ours(capsys, *options, qrels, run) == expected


def test_one_query_equals_trec_eval_binary(generated, capsys):
    binary = _binary()
    qrels, run = generated
    qid = Path(qrels).read_text().split()[0]
    options = ["-D", f"2.{qid}", "-q", "-m", "all_trec"]
    expected = subprocess.run([binary, *options, qrels, run], capture_output=True, check=True).stdout.decode()
    assert expected.count("ndcg:") > 1
    assert _ours(capsys, *options, qrels, run) == expected
