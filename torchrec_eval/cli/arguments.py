"""trec_eval's ways with the command line: the files among ``-m``'s words, ``QRELS RUN`` order, ``-``
for stdin; and the options that do not go together."""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from torchrec_eval.cli.errors import CliError
from torchrec_eval.cli.inputs import is_tensor_file


def check_options(args: argparse.Namespace, tensors: bool) -> None:
    if tensors:
        for flag, given in (("--complete", args.complete), ("-l", args.relevance_level is not None),
                            ("-M", args.max_docs is not None)):
            if given:
                raise CliError(f"{flag} applies to TREC runs only")
    if args.sampled and args.convention is not None:
        raise CliError("--sampled estimates the library's metrics for the catalogue: it takes no --convention")
    if args.json and args.query_eval:
        raise CliError("-q prints trec_eval's per-query lines; with --json, write them with --per-query FILE")
    if args.nosummary and not args.query_eval and args.convention != "trec":
        raise CliError("-n (no summary) goes with -q (per-query lines)")
    trec_formats = args.convention == "trec" or args.rel_format != "qrels"  # -R prefs... are trec_eval's alone
    if (args.judged_only or args.num_docs) and not trec_formats:
        raise CliError("-J and -N are trec_eval's options: they need --convention trec")


def trec_eval_order(args: argparse.Namespace) -> None:
    """trec_eval's command line: ``-m`` takes every word after it, so the files may be among its values;
    the qrels come first there (``trec_eval [options] QRELS RUN``): detected by their columns (4 in a
    qrels line, 5 in a prefs line, 6 or more in a run line), which also sets ``--convention trec`` when none is given."""
    files = [path for path in (args.run, args.qrels) if path is not None]
    while len(files) < 2 and args.metrics and os.path.isfile(args.metrics[-1]):
        files.insert(0, args.metrics.pop())
    args.metrics = args.metrics or None
    if not files:
        raise CliError("the following arguments are required: RUN (and QRELS)")
    args.run, args.qrels = (files + [None])[:2]
    if args.qrels is None or is_tensor_file(args.run) or is_tensor_file(args.qrels):
        return
    first, second = _columns(args.run), _columns(args.qrels)  # 0: empty
    if first < 6 <= second or 0 < first < 6 and second == 0:  # judgements (4 columns, 5 for prefs) first
        args.run, args.qrels = args.qrels, args.run
        args.convention = args.convention or "trec"


def _columns(path: str) -> int:
    """Columns of the first data line of a text file (0 if unreadable or none in its first 64 KiB)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return 0
    for line in head.splitlines():
        words = line.split()
        if words and not words[0].startswith(b"#"):
            return len(words)
    return 0


def stdin_results(args: argparse.Namespace, folder: str) -> None:
    """trec_eval reads the results file from stdin when it is named ``-``: stdin is copied to a file in
    ``folder`` (the readers take paths), which takes the place of ``-``."""
    words = [args.run, args.qrels, *(args.metrics or [])[-2:]]
    if words.count("-") > 1:
        raise CliError("'-' (stdin) is given twice: only the results file (the run) can be read from stdin")
    if "-" not in words:
        return
    path = os.path.join(folder, "stdin")
    with open(path, "wb") as handle:
        shutil.copyfileobj(sys.stdin.buffer, handle, 1 << 20)
    if args.run == "-":
        args.run = path
    elif args.qrels == "-":
        args.qrels = path
    else:
        args.metrics[len(args.metrics) - 1 - args.metrics[::-1].index("-")] = path
