"""The ``compare`` sub-command: two or more TREC runs against one qrels file, every pair of runs tested on the
same queries (:class:`~torchrec_eval.ModelComparison`), reported as ranx's ``compare`` reports it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from torchrec_eval.cli.errors import PROG, CliError
from torchrec_eval.cli.inputs import TIES
from torchrec_eval.cli.names import DEFAULT_METRICS, reads_judgments, split_metric_names
from torchrec_eval.cli.paths import check_input_file
from torchrec_eval.cli.progress import progress_factory
from torchrec_eval.cli.suite import Suite
from torchrec_eval.cli.trec_files import read_runs

if TYPE_CHECKING:
    import numpy as np

    from torchrec_eval.comparison.report import ComparisonReport
    from torchrec_eval.trec import Qrels, Run, TrecRanked

FORMATS = ("text", "markdown", "latex", "json")  # what --format takes


def cmd_compare(args: argparse.Namespace) -> int:
    for path, what in [(args.qrels, "qrels"), *((run, "run") for run in args.runs)]:
        check_input_file(path, what)
    if len(args.runs) < 2:
        raise CliError(f"compare takes two or more runs, got {len(args.runs)}: {PROG} compare QRELS RUN RUN ...")
    models = _model_names(args.runs, args.names)
    progress = progress_factory(args.progress, large=sum(os.path.getsize(run) for run in args.runs) >= (1 << 20))
    runs, qrels = read_runs(args.runs, args.qrels, progress, "last" if args.convention == "ranx" else "error")
    names = split_metric_names(args.metrics, default=DEFAULT_METRICS)
    judged = reads_judgments(names)  # bpref, Judged@k, infAP: the judged non-relevant (and pooled) documents too
    ranked = _ranked_runs(runs, qrels, args, judged)
    targets = ranked[0].target_ids >= 0
    if judged:  # (their gain is 0, where a relevant document's is not but under -l 0)
        level = args.relevance_level
        targets &= ranked[0].target_gains >= level if level is not None else ranked[0].target_gains > 0
    depth = max(max(data.depth for data in ranked), int(targets.sum(1).max()))
    suite = Suite(names, depth, args.convention)
    comparison = _compared(ranked, suite, models, args)
    report = _named(comparison.report(alpha=args.alpha, digits=args.digits), suite)
    if args.format == "json":
        print(json.dumps(_json(comparison.compute(), report, suite, len(ranked[0]), args)))
    elif args.format == "markdown":
        print(report.to_markdown())
    elif args.format == "latex":
        print(report.to_latex())
    else:
        print(report)
    if not args.quiet:
        print(f"{PROG}: {len(ranked[0])} queries, each run evaluated on all of them (a query a run does not "
              "retrieve for is an empty list)", file=sys.stderr)
    return 0


def _model_names(runs: Sequence[str], names: Sequence[str] | None) -> list[str]:
    """``--names``, else each run file's name without its folder and extension; distinct."""
    if names is None:
        names = [os.path.splitext(os.path.basename(run))[0] for run in runs]
        if len(set(names)) != len(names):
            raise CliError(f"the runs' file names {names} repeat a name: give each run one with --names")
    elif len(names) != len(runs) or len(set(names)) != len(names) or not all(names):
        raise CliError(f"--names takes one distinct, non-empty name per run ({len(runs)}), got {list(names)}")
    return list(names)


def _ranked_runs(runs: list[Run], qrels: Qrels, args: argparse.Namespace, judged: bool = False) -> list[TrecRanked]:
    """Every run ranked on the same queries with the same document ids: the judged queries any run retrieves
    for (with ``-c``, every judged query); with ``judged``, the judged non-relevant (gain 0) and pooled but unjudged
    (gain -1) documents are targets too."""
    import numpy as np

    from torchrec_eval.trec import to_ranked

    retrieved: np.ndarray = np.unique(np.concatenate([run.queries for run in runs]))
    queries = qrels.queries if args.complete else np.intersect1d(retrieved, qrels.queries, assume_unique=True)
    if not len(queries):
        raise CliError(f"no query of the runs has judgements in {args.qrels}")
    return [to_ranked(run, qrels, relevance_level=args.relevance_level, max_docs=args.max_docs,
                      ties=TIES.get(args.convention, "file"), integer_relevance=args.convention == "trec",
                      queries=queries, shared_ids=True, judged=judged) for run in runs]


def _compared(ranked: list[TrecRanked], suite: Suite, models: list[str], args: argparse.Namespace) -> Any:
    """The comparison of the runs, updated batch by batch (query id: the query's row, in query id order)."""
    import torch

    from torchrec_eval.comparison.models import ModelComparison

    try:
        comparison = ModelComparison(suite.metrics, models=models, test=args.test, replicates=args.replicates,
                                     seed=args.seed, correction=None if args.correction == "none" else args.correction)
    except ValueError as error:
        raise CliError(str(error)) from None
    width = max(data.depth for data in ranked) if suite.bare else None
    lists = [data.ranked_ids for data in ranked]
    if width is not None:
        lists = [torch.nn.functional.pad(ids, (0, width - ids.shape[1]), value=-1) for ids in lists]
    targets, gains = ranked[0].target_ids, ranked[0].target_gains
    rows = args.batch_size or max(1, min(8192, (1 << 22) // max(ids.shape[1] for ids in lists)))
    for start in range(0, len(ranked[0]), rows):
        part = slice(start, start + rows)
        comparison.update(ranked_ids=[ids[part] for ids in lists], target_ids=targets[part],
                          target_gains=gains[part], query_ids=torch.arange(start, start + targets[part].shape[0]))
    return comparison


def _named(report: ComparisonReport, suite: Suite) -> ComparisonReport:
    """The report under the metric names as the user typed them (several names may share one key)."""
    keys = [suite.internal[name] for name in suite.names]
    return replace(report, keys=list(suite.names),
                   values={name: report.values[key] for name, key in zip(suite.names, keys, strict=True)},
                   better_than={name: report.better_than[key] for name, key in zip(suite.names, keys, strict=True)})


def _json(results: dict[str, Any], report: ComparisonReport, suite: Suite, queries: int,
          args: argparse.Namespace) -> dict[str, Any]:
    pairs: dict[str, dict[str, dict[str, float]]] = {}
    for name in suite.names:
        prefix = suite.internal[name] + "/"
        pairs[name] = {}
        for key, value in results.items():
            if key.startswith(prefix) and "_vs_" in key:
                pair, _, statistic = key[len(prefix):].rpartition("/")
                pairs[name].setdefault(pair, {})[statistic] = float(value)
    return {"queries": queries, "models": report.models, "test": args.test, "correction": args.correction,
            "alpha": args.alpha, "values": report.values, "better_than": report.better_than, "pairs": pairs}
