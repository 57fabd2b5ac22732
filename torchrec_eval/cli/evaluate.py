"""The ``evaluate`` sub-command: the files' kind and the convention pick the library's metrics or trec_eval's
measures."""

from __future__ import annotations

import argparse
import os
import tempfile

from torchrec_eval.cli.arguments import check_options, stdin_results, trec_eval_order
from torchrec_eval.cli.errors import CliError
from torchrec_eval.cli.inputs import is_tensor_file, load_tensor_inputs, load_trec
from torchrec_eval.cli.library import evaluate_library
from torchrec_eval.cli.names import (
    DEFAULT_METRICS,
    reads_judgments,
    split_metric_names,
    trec_measures,
    trec_only,
)
from torchrec_eval.cli.paths import check_input_file, check_output_file
from torchrec_eval.cli.progress import progress_factory
from torchrec_eval.cli.sampled import SAMPLED_DEFAULT, evaluate_sampled
from torchrec_eval.cli.trec_eval import evaluate_judgement_format, evaluate_trec_measures, other_trec_options
from torchrec_eval.cli.trec_files import read_trec


def _help(args: argparse.Namespace) -> int:
    """``-h``: the usage and options; with ``-m NAME ...`` also what those measures compute (trec_eval's
    ``-h -m NAME``); words that are files are skipped (trec_eval's -h ignores its file arguments)."""
    from torchrec_eval.trec.help import describe

    names = [name for name in split_metric_names(args.metrics, default=[]) if not os.path.isfile(name)]
    try:
        text = describe(names)
    except ValueError as error:
        raise CliError(f"-h -m: {error}") from None
    print(args.format_help(), end="")
    if names:
        print(f"\nMeasures asked for with -m ({' '.join(names)}):\n{text}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    if args.help:
        return _help(args)
    with tempfile.TemporaryDirectory(prefix="torchrec-eval-") as folder:
        stdin_results(args, folder)
        return _evaluate_files(args)


def _evaluate_files(args: argparse.Namespace) -> int:
    trec_eval_order(args)
    run_path, qrels_path = args.run, args.qrels
    check_input_file(run_path, "run")
    if qrels_path is not None:
        check_input_file(qrels_path, "qrels")
    if args.per_query not in (None, "-"):  # refused now, not after the whole evaluation
        check_output_file(args.per_query, "--per-query", inputs=(run_path, qrels_path, args.zscores))
    tensors = is_tensor_file(run_path)
    check_options(args, tensors)
    large = os.path.getsize(run_path) >= (1 << 20)
    progress = progress_factory(args.progress, large=large)
    if tensors:
        if qrels_path is not None and not is_tensor_file(qrels_path):
            raise CliError(f"{qrels_path}: with a tensor run ({run_path}) the targets must be a .pt/.npz "
                           "file too")
        if args.sampled:
            names = split_metric_names(args.metrics, default=SAMPLED_DEFAULT)
            return evaluate_sampled(args, load_tensor_inputs(run_path, qrels_path), names, progress)
        names = split_metric_names(args.metrics)
        return evaluate_library(args, load_tensor_inputs(run_path, qrels_path), names, progress)
    if qrels_path is None:
        raise CliError("a TREC run needs a QRELS file: torchrec-eval evaluate RUN QRELS -m ...")
    if is_tensor_file(qrels_path):
        raise CliError(f"{qrels_path}: a TREC run ({run_path}) needs TREC qrels (qid iter docid rel), "
                       "not tensors")
    if other_trec_options(args):  # trec_eval -R prefs / qrels_prefs / qrels_jg, -T, -D, -Z
        return evaluate_judgement_format(args, run_path, qrels_path, progress)
    if args.sampled:
        names = split_metric_names(args.metrics, default=SAMPLED_DEFAULT)
        run, qrels = read_trec(run_path, qrels_path, progress, "error")
        return evaluate_sampled(args, load_trec(run, qrels, args), names, progress)
    trec = args.convention == "trec"
    names = split_metric_names(args.metrics, default=["official"] if trec else DEFAULT_METRICS)
    measures = trec_measures(names) if trec else None
    if trec and measures is None:  # the library's metrics then: trec_eval-only measures cannot come along
        others = [name for name in names if trec_measures([name]) is None]
        mixed = [name for name in names if trec_only(name) or name == "recall"]
        if mixed:
            raise CliError(f"{mixed} are trec_eval measures and {others} are not: ask for them in two runs "
                           f"(trec_eval's recall is recall_5 ... recall_1000; the whole list's is set_recall)")
    # a repeated document: trec_eval refuses it, naming it; ranx's Run/Qrels keep its last line
    run, qrels = read_trec(run_path, qrels_path, progress, "last" if args.convention == "ranx" else "error")
    if measures is not None:
        return evaluate_trec_measures(args, run, qrels, measures)
    return evaluate_library(args, load_trec(run, qrels, args, reads_judgments(names)), names, progress)
