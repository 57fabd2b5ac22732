"""trec_eval's ``-D LEVEL`` printouts of the preference formats (``torchrec_eval.trec.debug_prefs``).

Oracles: a tiny case worked out by hand from trec_eval's form_prefs_counts.c (always), and trec_eval 10
itself byte for byte (``TREC_EVAL``) on its own test files (``TREC_EVAL_SRC``) and on generated data
(tied scores, partial-order JGs, several JGs per query, unretrieved judged documents, queries without
a ranking for ``-c``). Two columns trec_eval prints before writing them (the ranks of the first
``Docno_results`` dump and of the ``Input, before ranks`` dump) hold whatever ``malloc`` returned when
its array was just allocated (0, a pointer, what a freed array left): there this prints 0, and the
comparison accepts any value in that place (everywhere else, those columns must equal what the
previous query left).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_trec_prefs import make_prefs

from torchrec_eval import cli

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import fuzz_trec_prefs  # noqa: E402

TREC_EVAL = os.environ.get("TREC_EVAL")
SOURCE = os.environ.get("TREC_EVAL_SRC")
needs_binary = pytest.mark.skipif(not TREC_EVAL, reason="no trec_eval binary (set TREC_EVAL)")

# both worked-out cases have the same counters and counts (the same preferences by docid rank)
SP = " "  # trec_eval ends its lines of ranks and levels with a space
COUNTERS = """\
    num_prefs_fulfilled_ret 0
    num_prefs_possible_ret 1
    num_prefs_fulfilled_imp 2
    num_prefs_possible_imp 2
    num_prefs_possible_notoccur 0
    num_nonrel 1
    num_nonrel_ret 0
    num_rel 2
    num_rel_ret 2
"""
COUNTS = """\
  Counts_Array Dump. Num_judged 3
    Row   0
     0  0  1 $
    Row   1
     1  0  1 $
    Row   2
     0  0  0 $
""".replace("$", "")  # trec_eval's "%2hd " leaves a space
RUN = "q1 Q0 x 0 1.0 t\nq1 Q0 c 0 2.0 t\nq1 Q0 b 0 2.0 t\nq1 Q0 a 0 3.0 t\n"
PREFS = "q1 g1 s1 c 2\nq1 g1 s1 a 1\nq1 g1 s1 d 0\n"
LEVEL_4 = f"""\
Debug: Form_prefs starting query 'q1'
Form_prefs: num_judged 3, num_judged_ret 2
Prefs_and_ranks Dump.  num_pref_lines 3,  Final prefs
  g1\ts1\t2.00\tc\t  1
  g1\ts1\t1.00\ta\t  0
  g1\ts1\t0.00\td\t  2
Results_prefs Dump.  1 Judgment Groups
  num_judged_ret 2,  num_judged 3
  JG Dump.  Type EC
{COUNTERS}    Dump of 3 ECs within JG
    EC Dump. Rel_level 2.00. Num_docid_ranks 1
        1{SP}
    EC Dump. Rel_level 1.00. Num_docid_ranks 1
        0{SP}
    EC Dump. Rel_level 0.00. Num_docid_ranks 1
        2{SP}
{COUNTS}Debug: Form_prefs starting query 'q1'
Returned Cached Form_prefs
prefs_num_prefs_poss  \tq1\t3
prefs_simp            \tq1\t0.6667
prefs_num_prefs_poss  \tall\t3
prefs_simp            \tall\t0.6667
"""
# level 5 adds, after the first line: the ranking by score (ranks not yet written: 0 here, a new array),
# with ranks by docno, the judgements by docno, the unjudged marked -1 by rank (x ends the loop), the
# docid ranks (a and c move to the slots of b and x, whose scores stay)
LEVEL_5 = """\
Docno_results Dump.  num_results 4, After input, before ranks
  a\t3.00\t  0
  b\t2.00\t  0
  c\t2.00\t  0
  x\t1.00\t  0
Docno_results Dump.  num_results 4, After -M, ranks
  a\t3.00\t  1
  b\t2.00\t  2
  c\t2.00\t  3
  x\t1.00\t  4
Prefs_and_ranks Dump.  num_pref_lines 3,  Input, before ranks
  g1\ts1\t1.00\ta\t  0
  g1\ts1\t2.00\tc\t  0
  g1\ts1\t0.00\td\t  0
Docno_results Dump.  num_results 4, After marking not judged
  b\t2.00\t -1
  x\t1.00\t -1
  a\t3.00\t  1
  c\t2.00\t  3
Docno_results Dump.  num_results 2, After assigning docid_ranks
  a\t2.00\t  0
  c\t1.00\t  1
"""
# a partial order (two sub-groups: a > b, b > c; transitively a > c), c not retrieved
RUN_PA = "q1 Q0 b 0 2.0 t\nq1 Q0 a 0 1.0 t\n"
PREFS_PA = "q1 g s1 a 2\nq1 g s1 b 1\nq1 g s2 b 1\nq1 g s2 c 0\n"
LEVEL_3_PA = f"""\
Debug: Form_prefs starting query 'q1'
Results_prefs Dump.  1 Judgment Groups
  num_judged_ret 2,  num_judged 3
  JG Dump.  Type Prefs_array
{COUNTERS}    Prefs_Array Dump. Num_judged 3
      Row   0
       0 0 1
      Row   1
       1 0 1
      Row   2
       0 0 0
    Rel_array Dump. 3 values
      1.00 2.00 0.00{SP}
{COUNTS}prefs_simp            \tall\t0.6667
"""


def evaluate(capsys, *args) -> str:
    assert cli.main(["evaluate", *map(str, args)]) == 0
    return capsys.readouterr().out


def test_levels_worked_out_by_hand(tmp_path, capsys):
    (tmp_path / "run").write_text(RUN)
    (tmp_path / "prefs").write_text(PREFS)
    files = tmp_path / "prefs", tmp_path / "run"
    measures = ["-m", "prefs_num_prefs_poss", "-m", "prefs_simp"]
    assert evaluate(capsys, "-R", "prefs", "-D", "4", "-q", *measures, *files) == LEVEL_4
    head, tail = LEVEL_4.split("\n", 1)
    assert evaluate(capsys, "-R", "prefs", "-D", "5", "-q", *measures, *files) == head + "\n" + LEVEL_5 + tail
    level_3 = "".join(line for line in LEVEL_4.splitlines(True)
                      if not line.startswith(("Form_prefs", "Prefs_and_ranks", "  g1")))
    assert evaluate(capsys, "-R", "prefs", "-D", "3", "-q", *measures, *files) == level_3
    quiet = "".join(line for line in LEVEL_4.splitlines(True) if "\tall\t" in line)
    for level in ("0", "1", "2"):
        assert evaluate(capsys, "-R", "prefs", "-D", level, *measures, *files) == quiet
    (tmp_path / "run").write_text(RUN_PA)
    (tmp_path / "prefs").write_text(PREFS_PA)
    assert evaluate(capsys, "-R", "prefs", "-D", "3", "-m", "prefs_simp", *files) == LEVEL_3_PA


def test_qrels_prefs_sub_group_is_0(tmp_path, capsys):
    (tmp_path / "run").write_text(RUN)
    (tmp_path / "qrels").write_text("q1 g1 c 2\nq1 g1 a 1\nq1 g1 d 0\n")
    out = evaluate(capsys, "-R", "qrels_prefs", "-D", "4", "-m", "prefs_simp", tmp_path / "qrels", tmp_path / "run")
    assert "  g1\t0\t2.00\tc\t  1\n" in out and out.count("Form_prefs starting") == 1


# ---------------------------------------------------------------------------------------------- the binary
def assert_same(expected: str, shown: str) -> None:
    """Byte for byte, but for the not yet written ranks of a just allocated array (printed 0 here)."""
    difference = fuzz_trec_prefs.unwritten_difference(expected, shown)
    assert difference is None, difference


def trec_eval(*args) -> str:
    proc = subprocess.run([TREC_EVAL, *map(str, args)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


OPTIONS = [
    ["-D", "3", "-q", "-m", "all_prefs"],
    ["-D", "4", "-m", "all_prefs"],
    ["-D", "5", "-q", "-m", "prefs_simp", "-m", "prefs_pair"],
    ["-D", "5", "-q", "-c", "-m", "prefs"],
    ["-D", "4", "-q", "-M", "5", "-m", "prefs_avgjg_Rnonrel", "-m", "num_q"],
    ["-D", "3", "-n", "-q", "-m", "prefs_num_prefs_ful"],
]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """(format, judgements, run, every judged query ranked): seed 5 leaves queries unranked, which
    trec_eval rejects without -c. The qrels_jg file's rels of -1 become 0 for qrels_prefs."""
    cases = []
    for seed in (4, 5):
        folder = tmp_path_factory.mktemp(f"debug{seed}")
        run, prefs, qrels_jg, *_ = make_prefs(folder, seed, every_query_retrieved=seed == 4)
        qrels = folder / "qrels_prefs"
        qrels.write_text(qrels_jg.read_text().replace(" -1\n", " 0\n"))
        cases += [("prefs", prefs, run, seed == 4), ("qrels_prefs", qrels, run, seed == 4)]
    return cases


@needs_binary
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "".join(o).replace("-m", "_"))
def test_generated_equal_trec_eval(generated, capsys, options):
    for rel_format, judgements, run, ranked in generated:
        if ranked or "-c" in options:
            args = ["-R", rel_format, *options, judgements, run]
            assert_same(trec_eval(*args), evaluate(capsys, *args))


@needs_binary
@pytest.mark.skipif(not SOURCE, reason="no trec_eval source tree (set TREC_EVAL_SRC)")
@pytest.mark.parametrize("options", OPTIONS + [["-D", "5.11.PA=1", "-q", "-m", "all_prefs"],
                                               ["-D", "5.3.EC.B", "-q", "-m", "prefs_avgjg"]],
                         ids=lambda o: "".join(o).replace("-m", "_"))
def test_trec_eval_files_equal_trec_eval(capsys, options):
    test = Path(SOURCE) / "test"
    args = ["-R", "prefs", *options, test / "prefs.test", test / "prefs.results.test"]
    assert_same(trec_eval(*args), evaluate(capsys, *args))
    if "5" not in options[1]:  # the qrels file's counts arrays are large: levels 3 and 4 only
        args = ["-R", "qrels_prefs", *options, test / "qrels.rel_level", test / "results.test"]
        assert_same(trec_eval(*args), evaluate(capsys, *args))
