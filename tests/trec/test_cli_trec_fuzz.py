"""Differences found by differential fuzzing against trec_eval 10 (``tests/scripts/fuzz_trec_eval.py``):
a few of the fuzzer's seeds replayed against the binary (``TREC_EVAL``), and one focused regression
test per difference fixed, with its expected output from trec_eval's source (always run) and from
the binary (when at hand)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from reference import trec_eval as ref

from torchrec_eval import cli

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import fuzz_trec_eval  # noqa: E402


@pytest.fixture(scope="module")
def binary() -> str:
    return fuzz_trec_eval.binary_path() or pytest.skip("no trec_eval binary (set TREC_EVAL)")


def test_fuzz_seeds_equal_trec_eval_binary(binary, tmp_path):
    """The fuzzer's generator (hostile files, random command lines) on a handful of seeds."""
    differences = []
    for seed in range(40):
        difference = fuzz_trec_eval.compare(binary, fuzz_trec_eval.generate(seed), tmp_path)
        if difference and difference != "skip":
            differences.append(f"seed {seed}: {difference}")
    assert not differences, "\n".join(differences)


def _files(tmp_path: Path, qrels: str, run: str) -> tuple[str, str]:
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    return str(tmp_path / "qrels"), str(tmp_path / "run")


def _ours(capsys, *arguments: str) -> str:
    assert cli.main(["evaluate", "--quiet", *arguments]) == 0
    return capsys.readouterr().out


def _line(name: str, qid: str, value: float) -> str:
    return f"{name:<22}\t{qid}\t{value:6.4f}\n"


# no query with a relevant document: no ideal-gain step anywhere (numpy's bincount of nothing is int64)
NO_RELEVANT = ("q1 0 d1 0\nq2 0 d2 0\n", "q1 Q0 d1 1 1.0 t\nq1 Q0 d3 2 0.5 t\n")


def test_gain_measures_without_any_relevant_document(tmp_path, capsys):
    qrels, run = _files(tmp_path, *NO_RELEVANT)
    rels = ref.ranking({"d1": 1.0, "d3": 0.5}, {"d1": 0})
    expected = ref.rbp_resid(rels, 0.5)  # d3 unjudged at rank 2
    assert _ours(capsys, "-q", "-m", "Rndcg", "-m", "G", "-m", "ndcg_rel", "-m", "rbp_resid.p=0.5", qrels, run) == (
        _line("G", "q1", 0) + _line("ndcg_rel", "q1", 0) + _line("Rndcg", "q1", 0)
        + _line("rbp_resid_p=0.5", "q1", expected) + _line("G", "all", 0) + _line("ndcg_rel", "all", 0)
        + _line("Rndcg", "all", 0) + _line("rbp_resid_p=0.5", "all", expected))


# -c -J, no judged query in the run: every ranking is empty
ALL_MISSING = ("q1 0 d1 1\n", "q2 Q0 d1 1 1.0 t\n")


def test_rbp_resid_with_parameters_when_every_ranking_is_empty(tmp_path, capsys):
    qrels, run = _files(tmp_path, *ALL_MISSING)
    # -c alone: q1 retrieves trec_eval's stand-in document, unjudged; the value is only reset under the
    # exact name rbp_resid; -J drops the stand-in
    assert _ours(capsys, "-c", "-J", "-m", "rbp_resid.p=0.5", qrels, run) == _line("rbp_resid_p=0.5", "all", 0)
    assert _ours(capsys, "-c", "-m", "rbp_resid.p=0.5", qrels, run) == _line(
        "rbp_resid_p=0.5", "all", ref.rbp_resid([-1], 0.5))


@pytest.mark.parametrize("files, options", [
    (NO_RELEVANT, ["-q", "-c", "-m", "Rndcg", "-m", "G", "-m", "ndcg_rel", "-m", "rbp_resid.p=0.5"]),
    (NO_RELEVANT, ["-q", "-c", "-J", "-m", "Rndcg", "-m", "binG", "-m", "rbp_resid.p=0.5"]),
    (ALL_MISSING, ["-c", "-J", "-m", "rbp_resid.p=0.5", "-m", "Rndcg"]),
    (ALL_MISSING, ["-c", "-q", "-m", "rbp_resid.p=0.5", "-m", "Rndcg"]),
], ids=["no_relevant", "no_relevant_cJ", "all_missing_cJ", "all_missing_c"])
def test_fixed_cases_equal_trec_eval_binary(binary, tmp_path, capsys, files, options):
    qrels, run = _files(tmp_path, *files)
    expected = subprocess.run([binary, *options, qrels, run], capture_output=True, text=True, timeout=60)
    assert expected.returncode == 0, expected.stderr
    assert _ours(capsys, *options, qrels, run) == expected.stdout


# query 2's only judged value is 1, with a gain under 1: trec_eval's sorted gains compare (int)(a - b),
# so 1 (gain 0.03) and 0 (gain 0, no document) are equal and stay in that order: the top entry, 0, has
# no gain and the ideal ranking is empty (ideal_dcg 0, ndcg 0)
GAIN_UNDER_ONE = ("1 0 a 1\n1 0 b 2\n2 0 a 1\n2 0 b 1\n2 0 c -1\n", "1 Q0 a 1 2 t\n2 Q0 a 1 2 t\n2 Q0 b 2 1 t\n")


def test_ideal_gains_whose_top_value_judges_no_document(tmp_path, capsys):
    qrels, run = _files(tmp_path, *GAIN_UNDER_ONE)
    pairs = [(1, 0.03)]
    first = ref.setup_gains_ideal_dcg({"a": 1, "b": 2}, pairs)
    second = ref.setup_gains_ideal_dcg({"a": 1, "b": 1, "c": -1}, pairs)
    assert second == 0.0 and first > 0
    assert _ours(capsys, "-q", "-m", "ideal_dcg.1=0.03", qrels, run) == (
        _line("ideal_dcg_1=0.03", "1", first) + _line("ideal_dcg_1=0.03", "2", second)
        + _line("ideal_dcg_1=0.03", "all", (first + second) / 2))


@pytest.mark.parametrize("measure", ["ideal_dcg.1=0.03", "ndcg.1=0.03", "G.1=0.5", "ndcg_rel.1=0.5,0=0",
                                     "Rndcg.1=0.3", "dcg.1=0.03"])
def test_ideal_gains_whose_top_value_judges_no_document_equal_trec_eval_binary(binary, tmp_path, capsys, measure):
    qrels, run = _files(tmp_path, *GAIN_UNDER_ONE)
    options = ["-q", "-m", measure, "-m", "P.1"]
    expected = subprocess.run([binary, *options, qrels, run], capture_output=True, text=True, timeout=60)
    assert expected.returncode == 0, expected.stderr
    assert _ours(capsys, *options, qrels, run) == expected.stdout


# a level given twice (1=3 then 1=0.5): trec_eval counts the documents of level 1 at its first pair
# (the ideal ranking gains 3), but a retrieved document gains the pair sorted first (0.5); rbp's gains
# outside [0, 1] are scaled, so a judged non-relevant document (gain 0) gains too; ndcg_rel with no
# ideal ranking anywhere (top sorted gain 0) is 0, not a crash
REPEATED = ("1 0 a 1\n1 0 b 2\n1 0 c 0\n2 0 a 1\n2 0 b 0\n2 0 e 2\n",
            "1 Q0 c 1 5 t\n1 Q0 a 1 4 t\n1 Q0 x 1 3 t\n1 Q0 b 1 2 t\n2 Q0 b 1 3 t\n2 Q0 a 1 2 t\n2 Q0 z 1 1 t\n")
REPEATED_DOCS = {"1": {"c": 5.0, "a": 4.0, "x": 3.0, "b": 2.0}, "2": {"b": 3.0, "a": 2.0, "z": 1.0}}
REPEATED_JUDGED = {"1": {"a": 1, "b": 2, "c": 0}, "2": {"a": 1, "b": 0, "e": 2}}


def _per_query(name: str, values: dict[str, float]) -> str:
    lines = [_line(name, qid, value) for qid, value in values.items()]
    return "".join(lines) + _line(name, "all", sum(values.values()) / len(values))


@pytest.mark.parametrize("pairs", [[(1, 3.0), (1, 0.5)], [(2, 0.5), (1, 4.0), (2, 7.0)], [(0, 2.0), (0, -1.0)]])
def test_repeated_gain_levels_follow_setup_gains(tmp_path, capsys, pairs):
    qrels, run = _files(tmp_path, *REPEATED)
    text = ",".join(f"{level}={gain:g}" for level, gain in pairs)
    values = {}
    for qid, docs in REPEATED_DOCS.items():
        judged = REPEATED_JUDGED[qid]
        ideal = ref.setup_gains_ideal_dcg(judged, pairs)
        found = ref.entries_dcg(ref.ranking(docs, judged), ref.setup_gains(judged, pairs))
        values[qid] = found / ideal if ideal > 0 else 0.0
    assert _ours(capsys, "-q", "-m", f"ndcg.{text}", qrels, run) == _per_query(f"ndcg_{text}", values)


@pytest.mark.parametrize("pairs", [[(1, -2.0), (2, 3.0)], [(0, 2.0), (1, 0.5)], [(2, 0.25)], [(1, 3.0), (1, -1.0)]])
def test_rbp_scaled_gains_reach_judged_documents_of_gain_zero(tmp_path, capsys, pairs):
    qrels, run = _files(tmp_path, *REPEATED)
    text = ",".join(f"{level}={gain:g}" for level, gain in pairs) + ",p=0.7"
    values = {qid: ref.rbp_with_gains(ref.ranking(docs, REPEATED_JUDGED[qid]), REPEATED_JUDGED[qid], pairs, 0.7)
              for qid, docs in REPEATED_DOCS.items()}
    assert _ours(capsys, "-q", "-m", f"rbp.{text}", qrels, run) == _per_query(f"rbp_{text}", values)


def test_ndcg_rel_without_any_ideal_ranking(tmp_path, capsys):
    """m_ndcg_rel.c with an ideal DCG of 0: each retrieved document of positive gain adds dcg / 0 (+inf),
    then the unretrieved ``num_rel - num_rel_ret`` (here -1) add -1 * dcg / 0. Query 1 ends with
    dcg = 0.2 / log2(3) - 3 / log2(5) < 0 (its level-2 document, gain -3, at rank 4): +inf + inf = inf.
    Query 2 ends with dcg = 0.2 / log2(3) > 0: inf - inf = NaN, not > 0, so 0."""
    qrels, run = _files(tmp_path, *REPEATED)
    pairs = [(1, 0.2), (2, -3.0)]  # sorted: 2 (-3), 1 (0.2) and 0 (0) compare equal: the top gain is 0
    assert all(ref.setup_gains_ideal_dcg(judged, pairs) == 0 for judged in REPEATED_JUDGED.values())
    assert 0.2 / math.log2(3) - 3 / math.log2(5) < 0
    assert _ours(capsys, "-q", "-m", "ndcg_rel.1=0.2,2=-3", qrels, run) == _per_query(
        "ndcg_rel_1=0.2,2=-3", {"1": math.inf, "2": 0.0})


@pytest.mark.parametrize("measure", ["ndcg.1=3,1=0.5", "dcg.2=0.5,1=4,2=7", "ideal_dcg.0=2,0=-1", "G.1=3,1=0.5",
                                     "rbp.1=-2,2=3,p=0.7", "rbp.0=2,1=0.5", "rbp.1=3,1=-1", "ndcg_rel.1=0.2,2=-3",
                                     "Rndcg.1=0.2,2=-3", "ndcg_rel.1=3,1=0.5", "Rndcg.2=0.5,1=4,2=7"])
def test_repeated_and_negative_gains_equal_trec_eval_binary(binary, tmp_path, capsys, measure):
    qrels, run = _files(tmp_path, *REPEATED)
    options = ["-q", "-m", measure]
    expected = subprocess.run([binary, *options, qrels, run], capture_output=True, text=True, timeout=60)
    assert expected.returncode == 0, expected.stderr
    assert _ours(capsys, *options, qrels, run) == expected.stdout
