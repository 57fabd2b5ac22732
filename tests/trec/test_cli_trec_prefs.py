"""trec_eval's other judgement formats and options: ``-R prefs``, ``-R qrels_prefs``, ``-R qrels_jg``,
``-Z``, ``-D``, ``-T``.

Oracles: the brute-force loops of ``tests/reference/trec_prefs.py`` (always), trec_eval 10 itself byte
for byte on generated data (``TREC_EVAL``), and its own ``make quicktest``
files (``TREC_EVAL_SRC``, in tests/trec/test_cli_trec_eval_all.py).
The generated data has tied scores (docno breaks them, ascending for prefs, descending for qrels_jg),
unretrieved and unjudged documents, documents judged by several judgement groups (conflicting
preferences, so ``prefs_pair``'s ratios are fractions), partial-order groups of several sub-groups
(transitive preferences), more and fewer non-relevant than relevant documents (both branches of
``prefs_avgjg_Rnonrel``), and queries judged but not retrieved (``-c``).
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from reference.trec_prefs import jg_query, prefs_query

from torchrec_eval import cli
from torchrec_eval.trec.prefs import PREFS_MEASURES

TREC_EVAL = os.environ.get("TREC_EVAL")
SOURCE = os.environ.get("TREC_EVAL_SRC")


def make_prefs(folder: Path, seed: int, num_queries: int = 8, every_query_retrieved: bool = True):
    """A run, a prefs file, a qrels_jg file; returns their paths and the Python dicts of the same data."""
    rng = random.Random(seed)
    run: dict[str, dict[str, float]] = {}
    prefs: dict[str, list] = {}
    jg: dict[str, dict[str, dict[str, int]]] = {}
    run_lines, prefs_lines, jg_lines = [], [], []
    for q in range(num_queries):
        qid = f"q{q}"
        pool = [f"d{n}" for n in rng.sample(range(100, 400), 40)]
        if every_query_retrieved or q % 4:
            depth = rng.choice([1, 3, 10, 25])
            run[qid] = {d: rng.choice([0.5, 1.0, 2.0, round(rng.uniform(0, 3), 2)]) for d in pool[:depth]}
            run_lines += [f"{qid} Q0 {d} 0 {s} tag{seed}" for d, s in run[qid].items()]
        prefs[qid] = []
        for g in range(rng.randint(1, 3)):
            judged = rng.sample(pool[:30], rng.randint(2, 12))
            if rng.random() < 0.4:  # a partial order: sub-groups consistent with one hidden order
                nonrel = set(judged[: rng.randint(0, len(judged) // 2)])
                hidden = sorted(judged, key=lambda d: (d not in nonrel, rng.random()))
                value = {d: i for i, d in enumerate(hidden)}
                for s in range(rng.randint(2, 3)):
                    members = rng.sample(judged, rng.randint(2, len(judged)))
                    coarse = rng.choice([1, 2, 3])  # levels monotone in the hidden order: no cycle
                    for d in members:
                        level = 0 if d in nonrel else 1 + value[d] // coarse
                        prefs[qid].append((f"u{g}", f"s{s}", d, float(level)))
            else:
                for d in judged:
                    prefs[qid].append((f"u{g}", "s", d, float(rng.choice([0, 0, 0, 1, 2, 3]))))
        for jg_name, jsg, d, level in prefs[qid]:
            prefs_lines.append(f"{qid} {jg_name} {jsg} {d} {level:g}")
        jg[qid] = {}
        for g in range(rng.randint(1, 3)):
            judged = rng.sample(pool[:30], rng.randint(1, 15))
            jg[qid][f"j{g}"] = {d: rng.choice([-1, 0, 0, 1, 2]) for d in judged}
            jg_lines += [f"{qid} j{g} {d} {r}" for d, r in jg[qid][f"j{g}"].items()]
    rng.shuffle(prefs_lines)
    paths = folder / "run", folder / "prefs", folder / "qrels_jg"
    for path, lines in zip(paths, (run_lines, prefs_lines, jg_lines), strict=True):
        path.write_text("\n".join(lines) + "\n")
    return (*paths, run, prefs, jg)


def evaluate(capsys, *args) -> str:
    assert cli.main(["evaluate", *map(str, args)]) == 0
    return capsys.readouterr().out


def parse(text: str) -> dict[tuple[str, str], str]:
    return {(line.split("\t")[0].strip(), line.split("\t")[1]): line.split("\t")[2] for line in text.splitlines()}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return [make_prefs(tmp_path_factory.mktemp(f"prefs{seed}"), seed) for seed in (1, 2, 3)]


@pytest.mark.parametrize("max_docs", [None, 4])
def test_prefs_measures_equal_the_reference(cases, capsys, max_docs):
    for run_path, prefs_path, _, run, prefs, _ in cases:
        out = parse(evaluate(capsys, run_path, prefs_path, "-R", "prefs", "-m", "all_prefs", "-q",
                             *(["-M", max_docs] if max_docs else [])))
        means = dict.fromkeys(PREFS_MEASURES, 0.0)
        for qid in prefs:
            expected = prefs_query(prefs[qid], run.get(qid, {}), max_docs)
            for name in PREFS_MEASURES:
                shown = out[name, qid]
                want = expected[name]
                assert (shown == str(want)) if name in ("prefs_num_prefs_poss", "prefs_num_prefs_ful",
                                                        "prefs_num_prefs_ful_ret") else \
                    math.isclose(float(shown), want, abs_tol=6e-5), (qid, name, shown, want)
                means[name] += want
        for name in PREFS_MEASURES[3:]:
            assert math.isclose(float(out[name, "all"]), means[name] / len(prefs), abs_tol=6e-5), name


@pytest.mark.parametrize("judged_only", [False, True], ids=["all", "J"])
def test_qrels_jg_measures_equal_the_reference(cases, capsys, judged_only):
    for run_path, _, jg_path, run, _, jg in cases:
        for level in (0, 1, 2):
            out = parse(evaluate(capsys, run_path, jg_path, "-R", "qrels_jg", "-m", "qrels_jg", "-m", "P_avgjg.1,3,7",
                                 "-l", level, "-q", *(["-J"] if judged_only else [])))
            for qid in jg:
                expected = jg_query(jg[qid], run.get(qid, {}), level, None, [1, 3, 7],
                                    [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0], judged_only)
                for name, want in expected.items():
                    assert math.isclose(float(out[name, qid]), want, abs_tol=6e-5), (qid, name)


def test_wrong_formats_and_measures_are_errors(cases, capsys):
    run_path, prefs_path, jg_path = cases[0][:3]
    for args, words in (
        (["-R", "foo"], "not a relevance format"),
        (["-T", "foo"], "not a results format"),
        (["-R", "prefs", "-m", "map"], "needs another -R format"),
        (["-R", "prefs"], "default measures need -R qrels"),
        (["-R", "qrels_jg", "-m", "P_avgjg.0"], "cut-offs must be positive"),
        (["--convention", "trec", "-m", "prefs_simp"], "give them with -R prefs"),
    ):
        assert cli.main(["evaluate", str(run_path), str(prefs_path if "qrels_jg" not in args else jg_path), *args]) == 2
        assert words in capsys.readouterr().err, args
    bad = prefs_path.parent / "bad_prefs"
    bad.write_text("q1 u s d1 2\nq1 u s d1 1\n")
    assert cli.main(["evaluate", str(run_path), str(bad), "-R", "prefs", "-m", "prefs"]) == 2
    assert "bad_prefs:2: document 'd1' has two rel_levels" in capsys.readouterr().err
    bad.write_text("q1 u s1 d1 2\nq1 u s1 d2 1\nq1 u s2 d2 2\nq1 u s2 d1 1\n")
    assert cli.main(["evaluate", str(run_path), str(bad), "-R", "prefs", "-m", "prefs"]) == 2
    assert "inconsistent preferences" in capsys.readouterr().err
    bad.write_text("q1 u d1 2\nq1 u d1 1\n")
    assert cli.main(["evaluate", str(run_path), str(bad), "-R", "qrels_jg", "-m", "qrels_jg"]) == 2
    assert "bad_prefs:2: document 'd1' is judged twice" in capsys.readouterr().err
    bad.write_text("q1 u s d1\n")
    assert cli.main(["evaluate", str(run_path), str(bad), "-R", "prefs", "-m", "prefs"]) == 2
    assert "bad_prefs:1: a prefs line has 5 columns" in capsys.readouterr().err


def test_zscores_and_debug_query(cases, capsys, tmp_path):
    run_path, prefs_path, _, run, prefs, _ = cases[0]
    qids = sorted(prefs)
    table = tmp_path / "z"
    table.write_text("".join(f"{q} prefs_simp 0.5 {0.25 if i % 3 else 0}\n{q} prefs_num_prefs_poss 10 5\n"
                             for i, q in enumerate(qids[:-1])))
    raw = parse(evaluate(capsys, run_path, prefs_path, "-R", "prefs", "-m", "prefs", "-q"))
    z = parse(evaluate(capsys, run_path, prefs_path, "-R", "prefs", "-m", "prefs", "-q", "-Z", table))
    for i, q in enumerate(qids):
        value = float(raw["prefs_simp", q])
        want = -1e6 if q == qids[-1] else (value - 0.5) / 0.25 if i % 3 else (0.0 if value == 0.5 else -1e6)
        assert math.isclose(float(z["Zprefs_simp", q]), want, abs_tol=1e-3), q
        assert float(z["Zprefs_avgjg", q]) == -1e6  # a measure the file lacks
    assert z["Znum_q", "all"] == f"{len(qids):6.4f}" and z["runid", "all"] == "tag1"
    one = parse(evaluate(capsys, run_path, prefs_path, "-R", "prefs", "-m", "prefs", "-q", "-D", f"2.{qids[1]}"))
    assert {k[1] for k in one} == {qids[1], "all"} and one["prefs_simp", "all"] == raw["prefs_simp", qids[1]]


# ---------------------------------------------------------------------------------------------
# trec_eval itself, when at hand
# ---------------------------------------------------------------------------------------------
needs_binary = pytest.mark.skipif(not TREC_EVAL, reason="no trec_eval binary (set TREC_EVAL)")


def trec_eval(*args) -> str:
    proc = subprocess.run([TREC_EVAL, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@needs_binary
@pytest.mark.parametrize("options", [["-q"], ["-q", "-M", "4"], ["-q", "-c"], [], ["-q", "-J"], ["-q", "-J", "-M", "4"],
                                     ["-q", "-J", "-c"]], ids=["q", "qM4", "qc", "all", "qJ", "qJM4", "qJc"])
def test_prefs_output_equals_trec_eval(capsys, tmp_path, options):
    cases = [make_prefs(tmp_path / str(seed), seed, every_query_retrieved="-c" not in options)
             for seed in (11, 12) if (tmp_path / str(seed)).mkdir() is None]
    for run_path, prefs_path, jg_path, *_ in cases:
        qrels_prefs = jg_path.parent / "qrels_prefs"  # a qrels file with non-negative judgements
        qrels_prefs.write_text("".join(line for line in jg_path.read_text().splitlines(keepends=True)
                                       if not line.rstrip().endswith("-1")))
        for fmt, path, measures in (("prefs", prefs_path, ["all_prefs"]), ("qrels_prefs", qrels_prefs, ["prefs"]),
                                    ("qrels_jg", jg_path, ["qrels_jg", "P_avgjg.2,9"]),
                                    ("qrels_jg", jg_path, ["Rprec_mult_avgjg.0.5,1.5", "map_avgjg"])):
            flags = [*options, "-R", fmt, *[a for m in measures for a in ("-m", m)]]
            assert evaluate(capsys, run_path, path, *flags) == trec_eval(*flags, path, run_path), (fmt, options)
        flags = [*options, "-R", "qrels_jg", "-m", "qrels_jg", "-l", "2"]
        assert evaluate(capsys, run_path, jg_path, *flags) == trec_eval(*flags, jg_path, run_path)


@needs_binary
def test_zscores_equal_trec_eval(capsys, tmp_path):
    """-Z over the default (qrels) measures and over the prefs ones, a query and some measures missing."""
    from tests.trec_files import make_trec

    run_path, qrels_path, _, _ = make_trec(tmp_path, 5, 12, every_judged_query_retrieves=True)
    rng = random.Random(5)
    names = ["num_ret", "num_rel", "map", "Rprec", "bpref", "recip_rank", "P_5", "P_10", "iprec_at_recall_0.50",
             "gm_map"]
    qids = sorted({line.split()[0] for line in qrels_path.read_text().splitlines()})
    table = tmp_path / "zscores"
    table.write_text("".join(f"{q} {n} {rng.uniform(0, 1):.4f} {rng.choice([0, 0.2, 0.5]):.4f}\n"
                             for q in qids[1:] for n in names if rng.random() < 0.9))
    for options in (["-q"], []):
        flags = [*options, "-Z", table]
        assert evaluate(capsys, run_path, qrels_path, "--convention", "trec", "--quiet", *flags) == \
            trec_eval(*flags, qrels_path, run_path)


def test_trec_eval_argument_order_with_a_prefs_file_first(cases, capsys):
    """trec_eval's order (PREFS RUN, 5 columns before 6) is recognised as its QRELS RUN order is."""
    run_path, prefs_path = cases[0][0], cases[0][1]
    ours = evaluate(capsys, run_path, prefs_path, "--convention", "trec", "--quiet", "-R", "prefs", "-m", "all_prefs")
    theirs = evaluate(capsys, "-m", "all_prefs", "-R", "prefs", "--quiet", prefs_path, run_path)
    assert theirs == ours and "prefs_simp" in ours


def test_zscores_print_relstring_as_it_is(tmp_path, capsys):
    """-Z leaves a string measure as trec_eval does: no Z, quoted, and no summary line."""
    (tmp_path / "run").write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\n")
    (tmp_path / "qrels").write_text("q1 0 a 0\nq1 0 b 1\n")
    (tmp_path / "z").write_text("q1 relstring 0 1\nq1 map 0.25 0.5\n")
    out = evaluate(capsys, tmp_path / "run", tmp_path / "qrels", "--convention", "trec", "--quiet", "-q",
                   "-m", "relstring", "-m", "map", "-Z", tmp_path / "z")
    assert out.splitlines() == ["Zmap                   \tq1\t0.5000", "relstring             \tq1\t'01-'",
                                "Zmap                   \tall\t0.5000"]  # as trec_eval 10 prints it


def test_fuzz_seeds_equal_trec_eval_binary(tmp_path):
    """``tests/scripts/fuzz_trec_prefs.py``'s generator (both formats, random command lines) on a few seeds."""
    if not TREC_EVAL:
        pytest.skip("no trec_eval binary (set TREC_EVAL)")
    sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
    import fuzz_trec_prefs

    differences = [f"seed {seed}: {difference}" for seed in range(60)
                   if (difference := fuzz_trec_prefs.compare(TREC_EVAL, fuzz_trec_prefs.generate(seed), tmp_path))]
    assert not differences, "\n".join(differences)
