"""``evaluate`` as trec_eval: its qrels measures, its other judgement formats (``-R``), ``-D`` and ``-Z``,
with numpy alone (torch is not imported on this path)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from torchrec_eval.cli.errors import PROG, CliError
from torchrec_eval.cli.names import split_metric_names
from torchrec_eval.cli.output import print_evaluation
from torchrec_eval.cli.trec_files import coverage_note, read_with_bar

if TYPE_CHECKING:
    from torchrec_eval.trec import Qrels, Run
    from torchrec_eval.trec.measures import Measure


def evaluate_trec_measures(args: argparse.Namespace, run: Run, qrels: Qrels, measures: list[Measure]) -> int:
    """trec_eval's measures, with numpy alone (no torch)."""
    from torchrec_eval.trec import rank_judgements
    from torchrec_eval.trec.measures import evaluate_measures

    run, qrels = _debug_query(args, run, qrels)  # trec_eval -D LEVEL.QID
    judgements = rank_judgements(run, qrels, complete=args.complete, max_docs=args.max_docs, ties="trec",
                                 judged_only=args.judged_only)
    note = coverage_note(run, qrels, len(judgements.qids), args.complete)
    if not args.json:  # trec_eval prints its measures in its own order
        measures = sorted(measures, key=lambda measure: measure.order)
    level = 1 if args.relevance_level is None else args.relevance_level
    try:
        result = evaluate_measures(judgements, measures, relevance_level=level, version=args.trec_eval_version,
                                   num_docs=args.num_docs or 0)
    except ValueError as error:
        raise CliError(str(error)) from None
    if getattr(args, "zscores", None):  # trec_eval -Z
        from torchrec_eval.trec.zscore import read_zscores, zscore_trec

        result = zscore_trec(judgements, result, read_zscores(args.zscores), relevance_level=level,
                             version=args.trec_eval_version)
    if getattr(args, "debug", None) and not args.json:  # trec_eval -D LEVEL: its measures' printouts
        from torchrec_eval.trec.debug import debug_blocks
        from torchrec_eval.trec.formats import parse_debug

        result.debug = debug_blocks(judgements, measures, level, parse_debug(args.debug)[0])
    print_evaluation(args, result)
    if not args.quiet:
        print(f"{PROG}: {note}", file=sys.stderr)
    return 0


def other_trec_options(args: argparse.Namespace) -> bool:
    """trec_eval's -R/-T/-D/-Z checks; True when the judgements are not qrels (prefs, qrels_prefs,
    qrels_jg: :func:`evaluate_judgement_format`), or a prefs / qrels_jg measure is asked of qrels (an error there)."""
    from torchrec_eval.trec.formats import check_formats, misplaced_measures

    check_formats(args.rel_format, args.results_format)
    if args.rel_format != "qrels":
        return True
    misplaced = misplaced_measures(split_metric_names(args.metrics, default=[]))
    if misplaced:
        raise CliError(f"{misplaced} {'is a measure' if len(misplaced) == 1 else 'are measures'} of preference or "
                       f"judgement-group judgements: give them with -R prefs, -R qrels_prefs or -R qrels_jg")
    if (args.zscores or args.debug) and args.convention != "trec":
        raise CliError("-Z and -D are trec_eval's options: they go with --convention trec")
    return False


def _debug_query(args: argparse.Namespace, run: Run, qrels: Qrels) -> tuple[Run, Qrels]:
    """trec_eval -D LEVEL.QID: only that query's entries."""
    from torchrec_eval.trec.formats import only_query, parse_debug

    qid = parse_debug(args.debug)[1] if getattr(args, "debug", None) else None
    if qid is None:
        return run, qrels
    if qid not in qrels.queries:
        raise CliError(f"-D {args.debug}: query {qid!r} has no judgements in {qrels.path}")
    if qid not in run.queries and args.complete:  # trec_eval -c: evaluated with its stand-in ranking
        return run, only_query(qrels, qid)
    return only_query(run, qid), only_query(qrels, qid)


def evaluate_judgement_format(args: argparse.Namespace, run_path: str, judgements_path: str,
                              progress: Callable[..., Any]) -> int:
    """trec_eval -R prefs / qrels_prefs / qrels_jg (torchrec_eval.trec.formats), with -q -n -c -M -l -D -Z."""
    from torchrec_eval.trec import read_run
    from torchrec_eval.trec.formats import evaluate_format, parse_debug

    run = read_with_bar(run_path, read_run, "run", progress)
    try:
        result = evaluate_format(args.rel_format, run, judgements_path, split_metric_names(args.metrics, default=[]),
                                 complete=args.complete, max_docs=args.max_docs,
                                 relevance_level=1 if args.relevance_level is None else int(args.relevance_level),
                                 debug_query=parse_debug(args.debug)[1] if args.debug else None,
                                 judged_only=args.judged_only)
    except ValueError as error:
        raise CliError(str(error)) from None
    if args.zscores:
        from torchrec_eval.trec.zscore import read_zscores, zscore_evaluation

        result = zscore_evaluation(result, read_zscores(args.zscores))
    if args.debug and not args.json and args.rel_format in ("prefs", "qrels_prefs"):  # -D 3 and above
        from torchrec_eval.trec.debug_prefs import debug_evaluation

        result.debug = debug_evaluation(args.rel_format, run, judgements_path, result, parse_debug(args.debug),
                                        args.max_docs) or None
    print_evaluation(args, result)
    return 0
