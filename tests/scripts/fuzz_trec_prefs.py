"""Differential fuzzing of ``torchrec-eval evaluate`` on trec_eval's preference formats (``-R prefs``,
``-R qrels_prefs``) against a trec_eval 10 binary.

Generates queries with several judgement groups, each of one sub-group (equivalence classes) or several
(a partial order), graded, fractional, zero and negative rel_levels, the same line twice, tied scores,
judged documents the run does not retrieve; and random command lines (``-q -c -n -M -D LEVEL[.QID]``,
random ``prefs_*`` measures, ``prefs``, ``all_prefs``). Compares stdout and exit status byte for byte::

    python tests/scripts/fuzz_trec_prefs.py --trec-eval /path/to/trec_eval --seeds 300

Not collected by pytest (``tests/trec/test_cli_trec_prefs.py`` replays a few seeds). Where trec_eval reads
memory it has not written, those values are left out of the comparison (each case is commented where
it is made, and listed in docs/trec_eval.md).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_trec_eval import _diff, binary_path, ours, theirs  # noqa: E402

MEASURES = ["prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
            "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
            "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp", "runid", "num_q"]
RNONREL = ("prefs_avgjg_Rnonrel", "prefs_avgjg_Rnonrel_ret")
# the first lines of the -D 5 dumps whose rank column trec_eval prints before writing it
UNWRITTEN = ("Docno_results Dump.  num_results", "Prefs_and_ranks Dump.  num_pref_lines")


@dataclass
class Case:
    prefs: str
    qrels_prefs: str
    run: str
    options: list[str]
    unsafe_rnonrel: bool  # an equivalence-class JG whose Rnonrel recalculation reads past its last class


def _level(rng: random.Random, rank: int, coarse: int, zero: bool, negative: bool) -> str:
    if zero:
        return rng.choice(["0", "0.0", "-1", "-2.5"] if negative else ["0", "0.0"])
    value = 1 + rank // coarse
    return rng.choice([str(value), f"{value}.0", f"{value + 0.5:g}"]) if rng.random() < 0.2 else str(value)


def generate(seed: int) -> Case:
    rng = random.Random(seed)
    run, prefs, qrels = [], [], []
    unsafe = False
    negative = rng.random() < 0.3  # non-relevant classes below 0
    for number in range(rng.randint(1, 5)):
        qid = rng.choice([f"q{rng.randint(0, 99)}", f"Q.{number}", str(rng.randint(1, 400))])
        if any(line.startswith(f"{qid} ") for line in run):
            continue
        pool = [f"d{n}" for n in rng.sample(range(10, 99), 30)]
        for doc in pool[: rng.choice([1, 2, 5, 12, 25, 30])]:
            run.append(f"{qid} Q0 {doc} 0 {rng.choice(['1', '2', '1.5', '1.0', f'{rng.uniform(0, 3):.3f}'])} r")
        for group in range(rng.randint(1, 3)):
            judged = rng.sample(pool, rng.randint(1, 25))
            hidden = {doc: place for place, doc in enumerate(rng.sample(judged, len(judged)))}
            zero = set(judged[: rng.randint(0, len(judged) // 2)])
            levels = {doc: _level(rng, len(judged) - hidden[doc], rng.choice([1, 2, 4]), doc in zero, negative)
                      for doc in judged}
            subgroups = rng.choice([1, 1, 2, 3])
            for sub in range(subgroups):
                for doc in rng.sample(judged, rng.randint(1, len(judged))) if subgroups > 1 else judged:
                    prefs.append(f"{qid} g{group} s{sub} {doc} {levels[doc]}")
                    if rng.random() < 0.05:
                        prefs.append(prefs[-1])  # the same line twice
            graded = {doc: rng.choice(["-1", "0", "0", "1", "2", "3"] if negative else ["0", "1", "2", "3"]) for doc in judged}
            qrels += [f"{qid} g{group} {doc} {graded[doc]}" for doc in judged]
            # trec_eval's Rnonrel recalculation of an equivalence-class JG with fewer relevant (R) than
            # non-relevant documents takes the first R entries of its last class (the lowest rel_level) as
            # the non-relevant ones, reading past that class when it holds fewer than R (the non-relevant
            # ones split between 0 and -1): undefined
            for grades, single in ((levels, subgroups == 1), (graded, True)):
                values = [float(grades[doc]) for doc in judged]
                relevant = sum(value > 0 for value in values)
                unsafe |= single and len({v for v in values if v <= 0}) > 1 and values.count(min(values)) <= relevant
    rng.shuffle(prefs)
    options = ["-m", rng.choice(["all_prefs", "prefs"])] if rng.random() < 0.4 else []
    for name in rng.sample(MEASURES, rng.randint(0 if options else 1, 3)):
        options += rng.choice([["-m", name], [f"-m{name}"]])
    for flag, chance in (("-q", 0.6), ("-c", 0.2), ("-n", 0.1)):
        if rng.random() < chance:
            options.append(flag)
    if rng.random() < 0.2:
        options += ["-M", str(rng.choice([1, 3, 10]))]
    if rng.random() < 0.4:
        level = str(rng.randint(0, 5))
        if rng.random() < 0.25 and "-c" not in options:  # -c -D LEVEL.QID: trec_eval's average differs (docs/trec_eval.md)
            level += "." + rng.choice([line.split()[0] for line in run])
        options += ["-D", level]
    return Case("\n".join(prefs) + "\n", "\n".join(qrels) + "\n", "\n".join(run) + "\n", options, unsafe)


def unwritten_difference(expected: str, shown: str) -> str | None:
    """None when ``shown`` is ``expected`` but for the ranks trec_eval printed before writing them (in a
    just allocated array: whatever ``malloc`` returned; printed 0 here), else the first difference."""
    want, got = expected.splitlines(True), shown.splitlines(True)
    if len(want) != len(got):
        return f"{len(want)} lines, ours {len(got)}"
    section = ""
    for number, (a, b) in enumerate(zip(want, got, strict=True)):
        if a.startswith(UNWRITTEN):
            section = a
        elif not a.startswith("  "):
            section = ""
        unwritten = section.endswith(("After input, before ranks\n", "Input, before ranks\n"))
        if a != b and not (unwritten and b.endswith("\t  0\n") and a.rsplit("\t", 1)[0] == b.rsplit("\t", 1)[0]):
            return f"line {number + 1}: trec_eval {a!r}, ours {b!r}"
    return None


def _without_rnonrel(text: str) -> str:
    return "".join(line for line in text.splitlines(True) if not line.startswith(RNONREL))


def compare(binary: str, case: Case, folder: Path) -> str | None:
    """None when both agree on both formats, else a description of the first difference."""
    (folder / "prefs").write_text(case.prefs)
    (folder / "qrels_prefs").write_text(case.qrels_prefs)
    (folder / "run").write_text(case.run)
    for form in ("prefs", "qrels_prefs"):
        arguments = ["-R", form, *case.options, str(folder / form), str(folder / "run")]
        status, stdout, stderr = theirs(binary, arguments)
        mine, printed = ours(arguments)
        if case.unsafe_rnonrel:
            stdout, printed = _without_rnonrel(stdout), _without_rnonrel(printed)
        if status != mine:
            return f"-R {form}: exit {status} (ours {mine}); trec_eval stderr: {stderr.strip()[:200]}"
        difference = unwritten_difference(stdout, printed) if status == 0 else None
        if difference:
            return f"-R {form}: {difference}\n" + _diff(stdout, printed)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trec-eval", default=binary_path(), help="the binary (default: $TREC_EVAL, the PATH)")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--stop", action="store_true", help="stop at the first difference")
    args = parser.parse_args(argv)
    mismatches = 0
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(args.first, args.first + args.seeds):
            case = generate(seed)
            difference = compare(args.trec_eval, case, Path(folder))
            if difference:
                mismatches += 1
                print(f"--- seed {seed}: {' '.join(case.options)}\n{difference}")
                if args.stop:
                    break
    print(f"{2 * args.seeds} command lines compared (each seed in both formats), {mismatches} seeds differ")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
