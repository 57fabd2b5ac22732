"""``torchrec-eval evaluate`` against trec_eval, pytrec_eval and ranx on TREC run files, end to end.

Run: ``python benchmarks/bench_trec_eval.py --trec-eval /path/to/trec_eval`` (trec_eval's binary is
optional: build it from its public source, ``github.com/usnistgov/trec_eval``, with ``make``; without
it the table has no trec_eval row and ratios are to torchrec-eval). ``--quick`` runs tiny files.

Each tool is a fresh process, as a user runs it: the time is the wall time from start to exit
(reading both files, evaluating, printing), the memory its peak resident set (``ru_maxrss`` of that
child, from ``os.wait4``). Rows run interleaved, ``--repeats`` rounds, median time and peak memory.
Files: ``queries x documents`` run lines (scores with 4 decimals, so some tie; MS MARCO-like numeric
ids), ``--judged`` judgements per query (grades 0..3, half of them on retrieved documents).

Rows:

* ``trec_eval QRELS RUN``: its default measures (``--trec-eval PATH``);
* ``torchrec-eval evaluate RUN QRELS --convention trec``: the same measures, same output (checked
  byte for byte against trec_eval's when it is given);
* ``trec_eval -m all_trec QRELS RUN`` and ``torchrec-eval evaluate -m all_trec QRELS RUN`` (trec_eval's
  own command line, every measure it prints with these files; checked byte for byte);
* ``torchrec-eval ... -m ndcg@10 map@1000 recall@1000 precision@10 mrr``: the library's metrics
  (torch), for comparison;
* ``pytrec_eval``: ``parse_run``/``parse_qrel`` and ``RelevanceEvaluator(qrels, {"official"})``,
  averaged (its values are compared with ours: ``max |diff|``);
* ``ranx``: ``Run.from_file``, ``Qrels.from_file`` and ``evaluate`` of map, bpref, r-precision, mrr
  and precision at trec_eval's cut-offs, in a cold process (numba compiles its functions first).

A second table (``--prefs QUERIESxDOCS``, default 300x1000) times the preference formats: ``-R prefs
-m all_prefs`` on a prefs file of ``--groups`` judgement groups per query, each judging all of the
query's ``--prefs-judged`` documents (levels 0..3: every pair of documents is counted by every group,
``prefs_pair``'s hardest case), and ``-R qrels_prefs -m all_prefs`` on the qrels file; trec_eval and
torchrec-eval side by side, byte-checked, and the baseline of a torchrec-eval process (Python, numpy and
the modules the command imports, evaluating nothing): the memory over it is the evaluation's own.

A third table (``--long-ids BYTES,...``, default 1 KB, 64 KB and 1 MB) times long document ids, for
each length two files: one id of that length among the short ids of a ``--long-id-run`` run (default
10x100; a relevant document tied with the first query's top one, so that trec_eval's order compares the
ids), and a run whose every id has that length (``--long-id-mb`` MB of them, default 32): ``torchrec-eval
--convention trec`` and trec_eval, wall time, peak memory and the output checked byte for byte.
``--quick`` runs ids of 64 bytes and 1 KB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

PYTREC = """
import sys, pytrec_eval
with open(sys.argv[2]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[1]) as f:
    run = pytrec_eval.parse_run(f)
per_query = pytrec_eval.RelevanceEvaluator(qrels, {"official"}).evaluate(run)
names = next(iter(per_query.values())).keys()
for name in names:
    values = [v[name] for v in per_query.values()]
    print(name, pytrec_eval.compute_aggregated_measure(name, values))
"""

RANX = f"""
import sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[2], kind="trec")
run = Run.from_file(sys.argv[1], kind="trec")
run.make_comparable(qrels)
metrics = ["map", "bpref", "r-precision", "mrr"] + [f"precision@{{k}}" for k in {CUTOFFS}]
for name, value in evaluate(qrels, run, metrics).items():
    print(name, value)
"""


def write_files(folder: Path, queries: int, docs: int, judged: int, seed: int = 0) -> tuple[Path, Path]:
    """A run of queries x docs lines and qrels of ``judged`` judgements per query (cached by name)."""
    run_path = folder / f"run_{queries}x{docs}.trec"
    qrels_path = folder / f"qrels_{queries}x{docs}x{judged}.trec"
    if run_path.exists() and qrels_path.exists():
        return run_path, qrels_path
    rng = np.random.default_rng(seed)
    with open(run_path, "w") as run_file, open(qrels_path, "w") as qrels_file:
        for q in range(queries):
            qid = 1_000_000 + 37 * q
            ids = rng.choice(8_841_823, size=docs, replace=False)
            scores = np.sort(np.round(rng.gamma(4.0, 3.0, size=docs), 4))[::-1]
            ranked = enumerate(zip(ids.tolist(), scores.tolist(), strict=True), start=1)
            run_file.write("".join(f"{qid} Q0 {d} {r} {s:.4f} bm25\n" for r, (d, s) in ranked))
            half = judged // 2
            judged_ids = np.unique(np.concatenate([rng.choice(ids, half, replace=False),
                                                   rng.choice(8_841_823, judged - half)]))
            grades = rng.choice(4, size=len(judged_ids), p=[0.5, 0.25, 0.15, 0.1])
            judgements = zip(judged_ids.tolist(), grades.tolist(), strict=True)
            qrels_file.write("".join(f"{qid} 0 {d} {g}\n" for d, g in judgements))
    return run_path, qrels_path


def write_prefs(folder: Path, qrels_path: Path, groups: int, seed: int = 1) -> Path:
    """A prefs file: ``groups`` judgement groups per query of ``qrels_path``, each judging every judged
    document of the query at a level 0..3 (one sub-group)."""
    prefs_path = folder / f"prefs_{qrels_path.stem}x{groups}.trec"
    if prefs_path.exists():
        return prefs_path
    rng = np.random.default_rng(seed)
    by_query: dict[str, list[str]] = {}
    with open(qrels_path) as handle:
        for line in handle:
            qid, _, doc, _ = line.split()
            by_query.setdefault(qid, []).append(doc)
    with open(prefs_path, "w") as out:
        for qid, docs in by_query.items():
            for group in range(groups):
                levels = rng.choice(4, size=len(docs), p=[0.5, 0.25, 0.15, 0.1]).tolist()
                out.write("".join(f"{qid} u{group} s {d} {g}\n" for d, g in zip(docs, levels, strict=True)))
    return prefs_path


def write_long_ids(folder: Path, length: int, queries: int, docs: int, every: bool, seed: int = 2) -> tuple[Path, Path]:
    """A run of queries x docs lines whose document ids are ``length`` bytes long (``every``), or whose
    first query's second document alone has such an id, tied with the first (trec_eval orders the two by
    id), and its qrels (every other retrieved document and the long one, relevant); scores with 2
    decimals, so that ids break other ties too."""
    name = f"{'every' if every else 'one'}_{length}_{queries}x{docs}"
    run_path, qrels_path = folder / f"run_{name}.trec", folder / f"qrels_{name}.trec"
    if run_path.exists() and qrels_path.exists():
        return run_path, qrels_path
    rng = np.random.default_rng(seed)
    with open(run_path, "wb") as run_file, open(qrels_path, "wb") as qrels_file:
        for q in range(queries):
            scores = np.sort(np.round(rng.gamma(4.0, 0.5, size=docs), 2))[::-1]
            scores[1:2] = scores[0]
            for r in range(docs):
                doc = b"%d-%d-" % (q, r)
                if every or (q, r) == (0, 1):
                    doc = doc.ljust(length, b"x")
                run_file.write(b"q%d Q0 %s %d %.2f long\n" % (q, doc, r + 1, scores[r]))
                if r % 2 == 0 or (q, r) == (0, 1):
                    qrels_file.write(b"q%d 0 %s %d\n" % (q, doc, 1 if r == 1 else int(rng.integers(0, 3))))
    return run_path, qrels_path


def long_id_rows(folder: Path, lengths: list[int], run_size: tuple[int, int], every_bytes: int,
                 trec_eval: str | None) -> dict[str, tuple[Path, dict[str, list[str]]]]:
    """The long-id table's files and commands: per length, one long id among short ones, then every id long."""
    python = sys.executable
    rows = {}
    for length in lengths:
        lines = max(8, min(every_bytes // length, 100_000))
        every_size = (max(1, lines // 100), min(lines, 100))
        for label, (queries, docs), every in ((f"one {length:,}-byte id", run_size, False),
                                              (f"every id {length:,} bytes", every_size, True)):
            run_path, qrels_path = write_long_ids(folder, length, queries, docs, every)
            commands = {"torchrec-eval": [python, "-m", "torchrec_eval", "evaluate", str(run_path), str(qrels_path),
                                          "--convention", "trec", "--quiet"]}
            if trec_eval:
                commands["trec_eval"] = [trec_eval, str(qrels_path), str(run_path)]
            rows[f"{label}, {queries * docs:,} lines"] = (run_path, commands)
    return rows


def long_id_report(results: dict[str, tuple[Path, dict[str, dict]]]) -> list[str]:
    """The long-id table: each file's rows, torchrec-eval against trec_eval (itself without trec_eval)."""
    out = ["\nLong document ids: torchrec-eval --convention trec (and trec_eval when given) on each file", "",
           "| tool (file) | seconds | vs trec_eval | peak memory | vs trec_eval | output is trec_eval's |",
           "|---|---|---|---|---|---|"]
    for label, (run_path, measured) in results.items():
        base = measured.get("trec_eval", measured["torchrec-eval"])
        size = run_path.stat().st_size
        size_text = f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size / 1e3:,.0f} KB"
        for tool, result in measured.items():
            same = ""
            if tool != "trec_eval" and "trec_eval" in measured:
                same = "yes" if result["out"] == base["out"] else "NO"
            out.append(f"| {tool} ({label}, {size_text}) | {result['median_s']:.2f} | "
                       f"{result['median_s'] / base['median_s']:.2f}x | {result['peak_bytes'] / 1e6:,.0f} MB | "
                       f"{result['peak_bytes'] / base['peak_bytes']:.2f}x | {same} |")
    return out


BASELINE = "import torchrec_eval.cli, torchrec_eval.trec, torchrec_eval.trec.prefs, torchrec_eval.trec.jg"


def prefs_commands(run_path: Path, qrels_path: Path, prefs_path: Path, trec_eval: str | None) -> dict[str, list[str]]:
    python = sys.executable
    rows = {}
    for fmt, path in (("prefs", prefs_path), ("qrels_prefs", qrels_path)):
        if trec_eval:
            rows[f"trec_eval -R {fmt}"] = [trec_eval, "-R", fmt, "-m", "all_prefs", str(path), str(run_path)]
        rows[f"torchrec-eval -R {fmt}"] = [python, "-m", "torchrec_eval", "evaluate", str(run_path), str(path), "-R",
                                           fmt, "-m", "all_prefs"]
    rows["torchrec-eval baseline (imports, no evaluation)"] = [python, "-c", BASELINE]
    return rows


def prefs_report(title: str, results: dict[str, dict]) -> list[str]:
    """The preference formats' table: each torchrec-eval row against trec_eval's row of its format."""
    baseline = results["torchrec-eval baseline (imports, no evaluation)"]
    out = [f"\n{title}", "", "| tool | seconds | vs trec_eval | peak memory | vs trec_eval | over the baseline |",
           "|---|---|---|---|---|---|"]
    for name, result in results.items():
        fmt = name.split("-R ")[-1]
        base = results.get(f"trec_eval -R {fmt}", result)
        own = result["peak_bytes"] - baseline["peak_bytes"]
        extra = f"{own / 1e6:,.0f} MB" if name.startswith("torchrec-eval -R") else ""
        out.append(f"| {name} | {result['median_s']:.2f} | {result['median_s'] / base['median_s']:.2f}x | "
                   f"{result['peak_bytes'] / 1e6:,.0f} MB | {result['peak_bytes'] / base['peak_bytes']:.2f}x | "
                   f"{extra} |")
    for fmt in ("prefs", "qrels_prefs"):
        if f"trec_eval -R {fmt}" in results:
            same = results[f"torchrec-eval -R {fmt}"]["out"] == results[f"trec_eval -R {fmt}"]["out"]
            out.append(f"\n-R {fmt}: torchrec-eval's output is trec_eval's, byte for byte: {'yes' if same else 'NO'}")
    return out


# A small launcher forks the tool and reports its peak resident set: a child forked from this (larger)
# process would inherit this process's high-water mark, which survives exec.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write("\\npeak-kb %d\\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_once(command: list[str], env: dict) -> tuple[float, int, str]:
    """(wall seconds, peak resident set in bytes, stdout) of one process."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, *command], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    peak_kb = int(proc.stderr.rsplit("peak-kb", 1)[1])  # Linux: ru_maxrss in kilobytes
    return seconds, peak_kb * 1024, proc.stdout


def commands(run_path: Path, qrels_path: Path, trec_eval: str | None, tools: set[str]) -> dict[str, list[str]]:
    python = sys.executable
    rows = {}
    if trec_eval:
        rows["trec_eval"] = [trec_eval, str(qrels_path), str(run_path)]
    rows["torchrec-eval --convention trec"] = [python, "-m", "torchrec_eval", "evaluate", str(run_path),
                                               str(qrels_path), "--convention", "trec", "--quiet"]
    if "all_trec" in tools:
        if trec_eval:
            rows["trec_eval -m all_trec"] = [trec_eval, "-m", "all_trec", str(qrels_path), str(run_path)]
        rows["torchrec-eval -m all_trec"] = [python, "-m", "torchrec_eval", "evaluate", "--quiet", "-m", "all_trec",
                                             str(qrels_path), str(run_path)]
    if "library" in tools:
        rows["torchrec-eval, library metrics (torch)"] = [
            python, "-m", "torchrec_eval", "evaluate", str(run_path), str(qrels_path), "-m", "ndcg@10", "map@1000",
            "recall@1000", "precision@10", "mrr", "--quiet"]
    if "pytrec_eval" in tools and _importable("pytrec_eval"):
        rows["pytrec_eval"] = [python, "-c", PYTREC, str(run_path), str(qrels_path)]
    if "ranx" in tools and _importable("ranx"):
        rows["ranx"] = [python, "-c", RANX, str(run_path), str(qrels_path)]
    return rows


def _importable(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def _values(text: str) -> dict[str, float]:
    """name -> value of trec_eval-style ('name all value') or 'name value' lines."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            try:
                out[parts[0]] = float(parts[-1])
            except ValueError:
                pass
    return out


def measure(rows: dict[str, list[str]], repeats: int, env: dict) -> dict[str, dict]:
    results: dict[str, dict] = {name: {"seconds": [], "peak": [], "out": ""} for name in rows}
    for command in rows.values():  # a first, unmeasured run of each: files and bytecode cached for all
        run_once(command, env)
    for _ in range(repeats):  # interleaved rounds
        for name, command in rows.items():
            seconds, peak, out = run_once(command, env)
            results[name]["seconds"].append(seconds)
            results[name]["peak"].append(peak)
            results[name]["out"] = out
    for result in results.values():
        result["median_s"] = statistics.median(result["seconds"])
        result["peak_bytes"] = statistics.median(result["peak"])
    return results


def report(title: str, results: dict[str, dict], lines: int) -> list[str]:
    base_name = "trec_eval" if "trec_eval" in results else "torchrec-eval --convention trec"
    base = results[base_name]
    out = [f"\n{title}: {lines:,} run lines", "",
           f"| tool | seconds | vs {base_name} | peak memory | vs {base_name} |", "|---|---|---|---|---|"]
    for name, result in results.items():
        out.append(f"| {name} | {result['median_s']:.2f} | {result['median_s'] / base['median_s']:.2f}x | "
                   f"{result['peak_bytes'] / 1e6:,.0f} MB | {result['peak_bytes'] / base['peak_bytes']:.2f}x |")
    ours = results["torchrec-eval --convention trec"]
    if "trec_eval" in results:
        same = ours["out"] == results["trec_eval"]["out"]
        out.append(f"\ntorchrec-eval's output is trec_eval's, byte for byte: {'yes' if same else 'NO'}")
    if "trec_eval -m all_trec" in results:
        mine, theirs = results["torchrec-eval -m all_trec"], results["trec_eval -m all_trec"]
        same = mine["out"] == theirs["out"]
        out.append(f"-m all_trec: {mine['median_s'] / theirs['median_s']:.2f}x trec_eval's time, "
                   f"{mine['peak_bytes'] / theirs['peak_bytes']:.2f}x its peak memory; byte for byte: "
                   f"{'yes' if same else 'NO'}")
    if "pytrec_eval" in results:  # pytrec_eval is trec_eval 9: iprec_at_recall's cut-offs differ
        theirs, mine = _values(results["pytrec_eval"]["out"]), _values(ours["out"])
        common = [n for n in theirs if n in mine and not n.startswith(("iprec", "runid"))]
        gap = max(abs(theirs[n] - mine[n]) for n in common)
        out.append(f"max |ours - pytrec_eval| over {len(common)} measures: {gap:.1e} (ours printed to 4 decimals, "
                   f"so <= 5e-05 is agreement)")
    return out


def goals(small: dict[str, dict] | None, large: dict[str, dict] | None) -> list[str]:
    out = ["\nGoals (torchrec-eval --convention trec vs trec_eval):"]
    for label, results, want in (("no slower on the 2M-line run", small, 1.0),
                                 ("faster on the 7M-line run", large, 1.0)):
        if results and "trec_eval" in results:
            ratio = results["torchrec-eval --convention trec"]["median_s"] / results["trec_eval"]["median_s"]
            out.append(f"* {label}: {ratio:.2f}x its time, {'met' if ratio <= want else 'NOT met'}")
    for label, results in (("2M", small), ("7M", large)):
        if results and "trec_eval" in results:
            ratio = results["torchrec-eval --convention trec"]["peak_bytes"] / results["trec_eval"]["peak_bytes"]
            out.append(f"* peak memory <= 2x trec_eval's ({label}): {ratio:.2f}x, {'met' if ratio <= 2 else 'NOT met'}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=textwrap.dedent(__doc__.split("\n\n", 1)[1]))
    parser.add_argument("--trec-eval", metavar="PATH", help="trec_eval's binary (optional)")
    parser.add_argument("--quick", action="store_true", help="tiny files, one round: a smoke test")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--judged", type=int, default=50, help="judgements per query (default 50)")
    parser.add_argument("--sizes", default="2000x1000,7000x1000",
                        help="QUERIESxDOCS run sizes (default 2000x1000,7000x1000: 2M and 7M lines; 'none' skips them)")
    parser.add_argument("--tools", default="all_trec,library,pytrec_eval,ranx",
                        help="other rows to run: all_trec, library, pytrec_eval, ranx (default all)")
    parser.add_argument("--prefs", default="300x1000", metavar="QUERIESxDOCS",
                        help="run size of the preference formats' table (default 300x1000; 'none' skips it)")
    parser.add_argument("--prefs-judged", type=int, default=300,
                        help="judged documents per query in that table (default 300)")
    parser.add_argument("--groups", type=int, default=6, help="judgement groups per query in the prefs file (default 6)")
    parser.add_argument("--long-ids", default="1024,65536,1048576", metavar="BYTES,...",
                        help="document id lengths of the long-id table (default 1 KB, 64 KB, 1 MB; 'none' skips it)")
    parser.add_argument("--long-id-run", default="10x100", metavar="QUERIESxDOCS",
                        help="the run holding one long id among short ones (default 10x100)")
    parser.add_argument("--long-id-mb", type=float, default=32,
                        help="MB of ids in the run whose every id is long (default 32)")
    parser.add_argument("--data", metavar="DIR", help="where to write (and reuse) the files (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.trec_eval and not os.access(args.trec_eval, os.X_OK):
        parser.error(f"--trec-eval {args.trec_eval}: not an executable")
    sizes = [(40, 60)] if args.quick else [tuple(map(int, size.split("x"))) for size in args.sizes.split(",")
                                            if size != "none"]
    repeats = 1 if args.quick else args.repeats
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    # as an installed package runs: its modules' bytecode cached (.pyc), not compiled from source in every
    # process (which a machine with PYTHONDONTWRITEBYTECODE set would measure: +0.1 s and +4 MB a run)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    tools = set(filter(None, args.tools.split(",")))
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.data or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        tables, measured = [], []
        for queries, docs in sizes:
            run_path, qrels_path = write_files(folder, queries, docs, args.judged)
            results = measure(commands(run_path, qrels_path, args.trec_eval, tools), repeats, env)
            measured.append(results)
            tables += report(f"{queries:,} queries x {docs:,} documents, {args.judged} judgements per query", results,
                             queries * docs)
        if args.prefs != "none":
            queries, docs = (20, 60) if args.quick else map(int, args.prefs.split("x"))
            judged = 30 if args.quick else args.prefs_judged
            run_path, qrels_path = write_files(folder, queries, docs, judged)
            prefs_path = write_prefs(folder, qrels_path, args.groups)
            results = measure(prefs_commands(run_path, qrels_path, prefs_path, args.trec_eval), repeats, env)
            tables += prefs_report(f"Preference formats, -m all_prefs: {queries:,} queries x {docs:,} documents, "
                                   f"{judged} judged per query, {args.groups} judgement groups each judging them all "
                                   f"(-R prefs) or the qrels' one (-R qrels_prefs)", results)
        if args.long_ids != "none":
            lengths = [64, 1024] if args.quick else [int(n) for n in args.long_ids.split(",")]
            run_size = (4, 10) if args.quick else tuple(map(int, args.long_id_run.split("x")))
            every_bytes = 1 << 16 if args.quick else int(args.long_id_mb * 1e6)
            rows = long_id_rows(folder, lengths, run_size, every_bytes, args.trec_eval)
            tables += long_id_report({label: (path, measure(commands, repeats, env))
                                      for label, (path, commands) in rows.items()})
    print(f"bench_trec_eval: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, median of {repeats} "
          f"interleaved rounds; each tool a fresh process (wall time, peak resident set)")
    print("\n".join(tables))
    lines = [queries * docs for queries, docs in sizes]
    small = next((r for r, n in zip(measured, lines, strict=True) if 1_500_000 <= n <= 3_000_000), None)
    large = next((r for r, n in zip(measured, lines, strict=True) if n >= 5_000_000), None)
    print("\n".join(goals(small, large)) if small or large else "\nGoals: not measured at these sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
