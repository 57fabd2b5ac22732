"""Differential fuzzing of ``torchrec-eval evaluate`` against a trec_eval 10 binary.

Generates small hostile run/qrels pairs (tied scores written differently, scientific notation,
docnos and qids that sort differently as bytes, UTF-8, graded/negative judgements, queries with no
relevant or only negative judgements, runs longer than 1000, tabs, CRLF, trailing blanks, comment
lines, a run tag that changes by line) and random trec_eval command lines (``-q -n -c -l -M -J -N -D``,
repeated ``-m`` with random measures, parameters and nicknames), runs both in trec_eval's argument
order and compares stdout and exit status byte for byte::

    python tests/scripts/fuzz_trec_eval.py --trec-eval /path/to/trec_eval --seeds 500

Not collected by pytest (``tests/trec/test_cli_trec_fuzz.py`` replays a few seeds). Inputs on which
trec_eval's behaviour is undefined are not generated; each exclusion is commented where it is made
(and listed in docs/trec_eval.md).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's torchrec_eval

QIDS = ["1", "2", "10", "9", "01", "301", "q1", "Q1", "q10", "q2", "a", "B", "topic-7", "é1", "z_last"]
DOC_STEMS = ["d", "D", "doc", "AP880212-", "FT911-", "10", "9", "", "é", "Ω", "x#y", "a.b", "LA0101"]
SCORES = ["1", "1.0", "1e0", "1E0", "10e-1", "0.1e1", "+1", "0", "-0", "0.0", "-1", "-1.5", "2", "2.0", "0.5", ".5",
          "5e-1", "1e30", "1.5e300", "-1e30", "1e-30", "4.9e-324", "3.14159", "1e-7", "123456789012345678",
          "0.30000000000000004", "0.3", "7", "7.0000000000000001", "-0.0"]
RELS = ["-1", "0", "0", "1", "1", "1", "2", "3", "4", "7", "-2"]
TAGS = ["run", "runA", "runB", "Tag-1"]
SEPS = [" ", " ", " ", "\t", "  ", " \t "]

MEASURES = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
            "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
            "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P",
            "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "yaap",
            "rbp", "rbp_resid", "unj"]
NICKNAMES = ["all_trec", "official", "set"]
CUTOFFS = {"P", "recall", "success", "relative_P", "map_cut", "ndcg_cut", "unj", "relstring"}
GAINS = {"G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg"}


@dataclass
class Case:
    qrels: str
    run: str
    options: list[str]
    qrels_lines: list[tuple[str, str]] = field(default_factory=list)  # (qid, line) to drop missing queries


def _number(rng: random.Random, low: float, high: float) -> str:
    value = rng.uniform(low, high)
    return rng.choice([f"{value:.2f}", f"{value:.1f}", str(round(value, 3)), f"{value:g}"]).rstrip()


def _gain_pairs(rng: random.Random, low: float, high: float) -> list[str]:
    """``level=gain`` pairs; now and then a negative gain, or a level given twice (trec_eval counts its
    documents at the first pair but gives a retrieved one the gain sorted first)."""
    grades = rng.sample(range(0, 5), rng.randint(1, 3))
    if rng.random() < 0.2:
        grades.insert(rng.randint(0, len(grades)), rng.choice(grades))
    return [f"{grade}={_number(rng, -3 if rng.random() < 0.2 else low, high)}" for grade in grades]


def _parameters(rng: random.Random, name: str) -> str:
    if name in CUTOFFS:
        cuts = [str(rng.choice([1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 100, 1000])) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.2:
            cuts.append(f"{rng.randint(1, 40)}.{rng.randint(0, 9)}")  # float cut-offs are truncated
        return ",".join(cuts[:1] if name == "relstring" else cuts)
    if name in ("iprec_at_recall", "11pt_avg"):
        values = [rng.choice(["0", "1", ".5", "0.25", "0.10", "0.333", "1.0", ".0", "0.75"]) for _ in range(rng.randint(1, 4))]
        return ",".join(values)
    if name == "Rprec_mult":
        return ",".join(rng.choice(["0.2", "0.5", "1.0", "2.0", "1.5", "3"]) for _ in range(rng.randint(1, 3)))
    if name == "utility":
        return ",".join(_number(rng, -3, 3) for _ in range(4))
    if name == "set_F":
        return rng.choice(["0.5", "1.0", "2", "0.25", "3.0"])
    if name in GAINS:
        return ",".join(_gain_pairs(rng, 0, 10))
    if name in ("rbp", "rbp_resid"):
        parts = [f"p={rng.choice(['0.5', '0.8', '0.95', '0.7'])}"]
        if rng.random() < 0.5:
            parts += _gain_pairs(rng, 0, 5)
        return ",".join(rng.sample(parts, len(parts)))
    return ""


def _measures(rng: random.Random) -> list[str]:
    options: list[str] = []
    parametrised: set[str] = set()
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.15:
            name = rng.choice(NICKNAMES)
        else:
            name = rng.choice(MEASURES)
            parameters = _parameters(rng, name) if rng.random() < 0.5 else ""
            # trec_eval's dcg, ideal_dcg and ndcg share one parameter block (freed twice: a crash), and rbp
            # with parameters next to another measure with parameters reads uninitialised variables: one
            # measure with parameters from these families per command line
            if parameters and name in {"dcg", "ideal_dcg", "ndcg", "rbp", "rbp_resid"}:
                if parametrised & {"dcg", "ideal_dcg", "ndcg", "rbp", "rbp_resid"} or (
                        name.startswith("rbp") and parametrised):
                    parameters = ""
            if parameters and parametrised & {"rbp", "rbp_resid"}:
                parameters = ""
            if parameters:
                parametrised.add(name)
                name = f"{name}.{parameters}"
        if rng.random() < 0.5:
            options += ["-m", name]
        else:
            options.append(f"-m{name}")
    # dcg, ideal_dcg and ndcg share one parameter block in trec_eval: parameters given to one of them
    # with another of them asked (all_trec has ndcg) crash it (freed twice): parameters dropped
    names = [option.removeprefix("-m") for option in options if option != "-m"]
    family = [name for name in names if name.split(".")[0] in ("dcg", "ideal_dcg", "ndcg", "all_trec")]
    if len(family) > 1 and any("." in name for name in family):
        options = [option.split(".")[0] if option.removeprefix("-m") in family else option for option in options]
    return options


def _options(rng: random.Random) -> list[str]:
    options = _measures(rng) if rng.random() < 0.85 else []
    if rng.random() < 0.5:
        options.append("-q")
    if rng.random() < 0.15:
        options.append("-n")
    if rng.random() < 0.3:
        options.append("-c")
    if rng.random() < 0.3:
        options += rng.choice([["-l", str(rng.randint(0, 3))], [f"-l{rng.randint(0, 3)}"]])
    if rng.random() < 0.3:
        options += rng.choice([["-M", str(rng.randint(1, 50))], [f"-M{rng.randint(1, 50)}"]])
    if rng.random() < 0.2:
        options.append("-J")
    if rng.random() < 0.2:
        options += ["-N", str(rng.randint(-5, 5000))]
    return options


def _debug(rng: random.Random, judged_qids: list[str], always: bool = False) -> list[str]:
    """trec_eval -D 0..3 (its measures' printouts), sometimes for one judged query (-D LEVEL.QID)."""
    if rng.random() < 0.6 and not always:
        return []
    level = str(rng.randint(0, 3))
    if rng.random() < 0.3:
        level += f".{rng.choice(judged_qids)}"
    return rng.choice([["-D", level], [f"-D{level}"]])


def _docno(rng: random.Random) -> str:
    stem = rng.choice(DOC_STEMS)
    number = rng.choice([str(rng.randint(0, 30)), str(rng.randint(0, 30)).zfill(3), str(rng.randint(0, 9))])
    docno = stem + number
    if rng.random() < 0.03:
        docno = docno * rng.randint(5, 20)  # long ids
    return docno


def _line_end(rng: random.Random, hostile: bool) -> str:
    if not hostile:
        return "\n"
    return rng.choice(["\n", "\n", "\n", " \n", "\t\n", "\r\n", "  \r\n"])


def generate(seed: int, debug: bool = False) -> Case:
    rng = random.Random(seed)
    hostile = rng.random() < 0.5
    qids = rng.sample(QIDS, rng.randint(1, 6))
    docs = list(dict.fromkeys(_docno(rng) for _ in range(rng.randint(1, 40))))
    qrels_lines: list[tuple[str, str]] = []
    run_lines: list[str] = []
    judged_qids = [q for q in qids if rng.random() < 0.85] or qids[:1]
    run_qids = [q for q in qids if rng.random() < 0.85] or qids[-1:]
    for qid in judged_qids:
        kind = rng.random()
        judged = rng.sample(docs, rng.randint(1, len(docs)))
        for doc in judged:
            if kind < 0.03:
                rel = rng.choice(["-1", "-2"])  # only negative judgements (trec_eval fails: _undefined)
            elif kind < 0.13:
                rel = "0"  # no relevant document
            elif kind < 0.23:
                rel = rng.choice(["1", "2", "3", "4"])  # all relevant
            else:
                rel = rng.choice(RELS)
            if hostile and rng.random() < 0.05:
                rel = rng.choice(["1.5", "2.9", "+1", "007", "-0"])  # read as integers (atol)
            sep = rng.choice(SEPS) if hostile else " "
            lead = rng.choice(["", "", " ", "\t"]) if hostile else ""
            iteration = rng.choice(["0", "Q0", "1"])
            qrels_lines.append((qid, f"{lead}{qid}{sep}{iteration}{sep}{doc}{sep}{rel}{_line_end(rng, hostile)}"))
    rng.shuffle(qrels_lines)
    qrels_text = []
    for number, (_qid, line) in enumerate(qrels_lines):
        # trec_eval skips one '#' line before a qrels line; two comment lines in a row, or a comment last,
        # make it parse past its buffers (undefined): only a single comment line between judgements
        if hostile and number > 0 and rng.random() < 0.05:
            qrels_text.append("# a comment\n")
        qrels_text.append(line)
    tag = rng.choice(TAGS)
    for qid in run_qids:
        length = rng.choice([1, 1, 2, 3, 5, 10, 20, 40]) if rng.random() < 0.97 else rng.randint(1000, 1050)
        pool = docs if length <= len(docs) else docs + [f"u{n}" for n in range(length)]
        retrieved = rng.sample(pool, min(length, len(pool)))
        scores = [rng.choice(SCORES) for _ in retrieved] if rng.random() < 0.6 else [
            f"{rng.uniform(-5, 5):.{rng.randint(0, 3)}f}" for _ in retrieved]
        for rank, (doc, score) in enumerate(zip(retrieved, scores, strict=True)):
            if hostile and rng.random() < 0.1:
                tag = rng.choice(TAGS)  # trec_eval prints the last line's tag
            sep = rng.choice(SEPS) if hostile else " "
            extra = rng.choice(["", "", " extra columns"]) if hostile else ""
            run_lines.append(f"{qid}{sep}Q0{sep}{doc}{sep}{rank + 1}{sep}{score}{sep}{tag}{extra}"
                             f"{_line_end(rng, hostile)}")
    rng.shuffle(run_lines)
    if hostile and rng.random() < 0.2:
        run_lines.insert(rng.randint(0, len(run_lines)), rng.choice(["\n", "  \n", "# comment\n", "  # c\n"]))
    options = _options(rng) + _debug(rng, judged_qids, debug)
    return Case("".join(qrels_text), "".join(run_lines), options, qrels_lines)


def binary_path() -> str | None:
    """$TREC_EVAL, else trec_eval on the PATH."""
    return os.environ.get("TREC_EVAL") or shutil.which("trec_eval")


def ours(arguments: list[str]) -> tuple[int, str]:
    from torchrec_eval import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(["evaluate", "--quiet", *arguments])
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 1
        except Exception:  # noqa: BLE001 (a crash is a difference to report)
            import traceback
            return -1, traceback.format_exc()
    return status, out.getvalue()


def theirs(binary: str, arguments: list[str]) -> tuple[int, str, str]:
    done = subprocess.run([binary, *arguments], capture_output=True, timeout=60)
    return done.returncode, done.stdout.decode("utf-8", "surrogateescape"), done.stderr.decode("utf-8", "replace")


def compare(binary: str, case: Case, folder: Path) -> str | None:
    """None when both agree, else a description of the difference."""
    qrels, run = folder / "qrels", folder / "run"
    qrels.write_bytes(case.qrels.encode())
    run.write_bytes(case.run.encode())
    arguments = [*case.options, str(qrels), str(run)]
    if _undefined(case) or ("-c" in case.options and _debug_query_of(case.options)):
        # -c -D LEVEL.QID: trec_eval averages that query over every judged query (docs/trec_eval.md); not compared
        return "skip"
    status, stdout, stderr = theirs(binary, arguments)
    if status == 4 and "not found in qrels" in stderr:
        # trec_eval 10 stops at a judged query missing from the run (without -c); we evaluate the
        # others, which is what it prints on the qrels without those queries (docs/trec_eval.md)
        run_qids = {line.split()[0] for line in case.run.splitlines() if line.strip() and not line.strip().startswith("#")}
        kept = folder / "qrels.kept"
        kept.write_bytes("".join(line for qid, line in case.qrels_lines if qid in run_qids).encode())
        if not kept.stat().st_size or _debug_query_not_run(case.options, run_qids):
            return None
        status, stdout, stderr = theirs(binary, [*case.options, str(kept), str(run)])
    mine, printed = ours(arguments)
    if _rbp_with_others(case.options):
        stdout, printed = _without_rbp(stdout), _without_rbp(printed)
    if status != mine or (status == 0 and printed != stdout):
        return f"exit {status} (ours {mine}); trec_eval stderr: {stderr.strip()[:200]}\n" + _diff(stdout, printed)
    return None


def _debug_query_of(options: list[str]) -> str | None:
    """The QID of -D LEVEL.QID, else None."""
    for index, option in enumerate(options):
        if option.startswith("-D"):
            text = option[2:] or options[index + 1]
            return text.partition(".")[2] if "." in text else None
    return None


def _debug_query_not_run(options: list[str], run_qids: set[str]) -> bool:
    """-D LEVEL.QID for a judged query the run lacks (without -c): trec_eval stops there (exit 4) as for
    any such query; we refuse it (exit 2), as we refuse a run without any judged query."""
    qid = _debug_query_of(options)
    return qid is not None and qid not in run_qids


def _undefined(case: Case) -> bool:
    """An evaluated query all of whose judgements are negative. trec_eval sizes its table of relevance
    levels by the query's largest judgement + 1 (``te_chk_and_malloc``, which returns the previous table,
    NULL at first, for a size of 0 or less) and does not reset its count of levels: such a query fails
    ("Can't calculate measure", exit 4) when it is the first evaluated, crashes (memset of a negative
    size) when judged -2 or less, and otherwise takes the previous query's relevance levels for its gain
    measures (``ideal_dcg``, ...). Not compared (docs/trec_eval.md)."""
    run_qids = {line.split()[0] for line in case.run.splitlines() if line.strip() and not line.strip().startswith("#")}
    largest: dict[str, int] = {}
    for qid, line in case.qrels_lines:
        largest[qid] = max(largest.get(qid, -10**9), int(float(line.split()[3])))
    return any(value < 0 and ("-c" in case.options or qid in run_qids) for qid, value in largest.items())


def _rbp_with_others(options: list[str]) -> bool:
    """trec_eval's rbp scales its gains by two uninitialised variables (``min``, ``max`` in m_rbp.c): its
    value depends on what the measures computed before it left on the stack. Its lines are compared
    only when rbp is the one measure asked."""
    names = [option.removeprefix("-m").split(".")[0] for option in options if option.startswith("-m")]
    names += [options[i + 1].split(".")[0] for i, option in enumerate(options) if option == "-m"]
    return ("rbp" in names or "all_trec" in names) and len(names) > 1


def _without_rbp(text: str) -> str:
    text = re.sub(r"rbp:-?\d+ [^\n]*\n", "", text)  # -D printouts, also after gm_bpref's (no newline)
    return "".join(line for line in text.splitlines(True)
                   if not (line.startswith("rbp ") or (line.startswith("rbp_") and not line.startswith("rbp_resid"))))


def _diff(expected: str, got: str) -> str:
    import difflib
    return "".join(list(difflib.unified_diff(expected.splitlines(True), got.splitlines(True), "trec_eval", "ours"))[:40])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trec-eval", default=binary_path(), help="the binary (default: $TREC_EVAL, the PATH)")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--debug", action="store_true", help="give every command line a -D option")
    parser.add_argument("--stop", action="store_true", help="stop at the first difference")
    parser.add_argument("--show", action="store_true", help="print each differing case's files")
    args = parser.parse_args(argv)
    mismatches = skipped = 0
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(args.first, args.first + args.seeds):
            case = generate(seed, args.debug)
            difference = compare(args.trec_eval, case, Path(folder))
            if difference == "skip":
                skipped += 1
            elif difference:
                mismatches += 1
                print(f"--- seed {seed}: {' '.join(case.options)}\n{difference}")
                if args.show:
                    print(f"qrels:\n{case.qrels}\nrun:\n{case.run[:3000]}")
                if args.stop:
                    break
    print(f"{args.seeds - skipped} command lines compared, {mismatches} mismatches ({skipped} seeds not compared: "
          "undefined in trec_eval)")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
