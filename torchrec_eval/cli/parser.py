"""The command line's arguments: the ``evaluate``, ``compare`` and ``demo`` sub-commands and their options."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from torchrec_eval.cli.compare import FORMATS, cmd_compare
from torchrec_eval.cli.demo import cmd_demo
from torchrec_eval.cli.errors import PROG, report_error
from torchrec_eval.cli.evaluate import cmd_evaluate
from torchrec_eval.cli.names import DEFAULT_METRICS
from torchrec_eval.conventions import PRESETS

# ``--convention`` takes the library's presets (torchrec_eval.conventions). With "trec" the numbers are
# trec_eval's: its document order (score desc, docid desc) is built by torchrec_eval.trec, and its
# measures by torchrec_eval.trec.measures (or the library's metrics with the preset's normalisations).
CONVENTIONS = tuple(sorted(PRESETS))

TREC_EVAL_VERSION = "10.0-rc3"  # the trec_eval whose output is reproduced (trec_eval -v)

# the largest count an option takes: numpy and torch hold it in an int64 (a larger -M overflowed there)
INT64_MAX = (1 << 63) - 1


class OneLineParser(argparse.ArgumentParser):
    """argparse's errors as the command's other errors: one line on stderr (no usage block), exit status 2;
    the sub-commands' parsers are of this class too (add_subparsers passes it on)."""

    def error(self, message: str) -> NoReturn:
        report_error(f"{message} (see {self.prog} -h)", prog=self.prog)
        self.exit(2)


class _Version(argparse.Action):
    """trec_eval -v / --version: which trec_eval is reproduced, and this package's version."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        from torchrec_eval import __version__

        parser.exit(message=f"{PROG} {__version__}: trec_eval version {TREC_EVAL_VERSION}, reproduced "
                            f"(--trec-eval-version 9: trec_eval 9 / pytrec_eval)\n")


def _int_at_least(minimum: int | None) -> Callable[[str], int]:
    """An int option of at least ``minimum`` (None: any) that fits in an int64, as numpy and torch hold it."""
    wanted = "an integer" if minimum is None else f"an int >= {minimum}"
    bounds = "-2**63 to 2**63 - 1" if minimum is None else "at most 2**63 - 1"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        if not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise argparse.ArgumentTypeError(f"expected {wanted} of 64 bits ({bounds}), got {text!r}")
        return value

    return parse


_positive_int = _int_at_least(1)
_level = _int_at_least(0)
_integer = _int_at_least(None)


def _probability(text: str) -> float:
    """A float strictly between 0 and 1 (a significance level)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description="Ranking metrics for recommender and search evaluation (torchrec_eval).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    _add_evaluate(commands)
    _add_compare(commands)
    _add_demo(commands)
    return parser


def _add_evaluate(commands: argparse._SubParsersAction[OneLineParser]) -> None:
    """The ``evaluate`` sub-command: trec_eval's options, and the library's."""
    ev = commands.add_parser(
        "evaluate", add_help=False,
        help="evaluate a run against relevance judgements",
        description="Evaluate a TREC run (qid Q0 docid rank score tag) against TREC qrels "
                    "(qid iter docid rel), "
                    "or tensors saved with torch.save / numpy.savez: {'preds' [B, N], 'target' [B, N]} "
                    "(dense), {'preds', 'target_ids' [B, T]} or {'ranked_ids' [B, L], 'target_ids' [B, T]} "
                    "(+ 'target_gains', 'mask', 'exclude_ids'); the targets may sit in a second file.",
        epilog="A TREC run is ranked by score descending, ties by docid descending (trec_eval's order; "
               "--convention ranx: ranx's order; the other conventions: the file's order); its rank column is "
               "ignored. Queries of the run that have judgements are evaluated. A metric without @k (mrr, map, "
               "ndcg, recall, rprecision) has no cut-off. --convention trec gives trec_eval's numbers and "
               "output: without -m, trec_eval's default measures; trec_eval's names (P_10, P.5,10, ndcg_cut_10, "
               "map_cut_100, recall_1000, success_1, Rprec, recip_rank, bpref, gm_map, iprec_at_recall, num_q, "
               "num_ret, num_rel, num_rel_ret, set_recall, set_P, set_F, ...) and ours (precision@k = P_k, "
               "recall@k = recall_k, map@k = map_cut_k, ndcg@k = ndcg_cut_k, hitrate@k = success_k, mrr = "
               "recip_rank, rprecision = Rprec, recall = set_recall).",
    )
    ev.add_argument("-h", "--help", action="store_true",
                    help="show this help and exit; with -m NAME ...: also what those measures compute (trec_eval -h)")
    ev.add_argument("-v", "--version", action=_Version,
                    help="print the trec_eval version reproduced and this package's, and exit (trec_eval -v)")
    ev.add_argument("run", metavar="RUN", nargs="?",
                    help="TREC run file ('-': read from stdin, as trec_eval), or .pt/.npz tensors "
                         "(trec_eval's order, QRELS RUN, is recognised too)")
    ev.add_argument("qrels", metavar="QRELS", nargs="?", help="TREC qrels file (or .pt/.npz targets)")
    ev.add_argument("-m", "--metrics", "--measure", nargs="+", action="extend", metavar="METRIC",
                    help=f"metrics such as ndcg@10 map@100 recall@20, or trec_eval's (P.5,10 ndcg_cut_10 "
                         f"official); also comma separated (default: {' '.join(DEFAULT_METRICS)}; with "
                         f"--convention trec, trec_eval's default set)")
    ev.add_argument("--convention", choices=CONVENTIONS,
                    help="reproduce another tool's definitions (trec: trec_eval / pytrec_eval)")
    ev.add_argument("-c", "--complete", "--complete_rel_info_wanted", action="store_true",
                    help="also evaluate judged queries missing from the run, as empty lists (trec_eval -c)")
    ev.add_argument("-l", "--level-for-rel", "--level_for_rel", dest="relevance_level", type=_level,
                    metavar="LEVEL", help="a judgement >= LEVEL is relevant (trec_eval -l; default: > 0, "
                                          "that is 1 for trec_eval's integer judgements)")
    ev.add_argument("-M", "--max-retrieved-per-topic", "--Max_retrieved_per_topic", dest="max_docs",
                    type=_positive_int, metavar="DOCS",
                    help="evaluate only the first DOCS documents of each ranking (trec_eval -M)")
    ev.add_argument("-q", "--query-eval", "--query_eval_wanted", dest="query_eval", action="store_true",
                    help="also print each query's values, as trec_eval -q does (its layout: name, qid, value)")
    ev.add_argument("-n", "--nosummary", action="store_true", help="with -q, no 'all' lines (trec_eval -n)")
    ev.add_argument("-J", "--Judged_docs_only", dest="judged_only", action="store_true",
                    help="evaluate only the retrieved documents that are judged, ranked among themselves "
                         "(trec_eval -J)")
    ev.add_argument("-N", "--Number_docs_in_coll", dest="num_docs", type=_integer, metavar="NUM",
                    help="documents in the collection (trec_eval -N: utility's fourth coefficient)")
    ev.add_argument("-o", "--Output_old_results_format", dest="old_format", action="store_true",
                    help="accepted and ignored, as trec_eval 10 ignores it")
    ev.add_argument("--trec-eval-version", type=int, choices=(9, 10), default=10,
                    help="trec_eval version to reproduce (default 10; 9 as pytrec_eval): they differ in "
                         "iprec_at_recall's cut-offs")
    ev.add_argument("--json", action="store_true", help='print {"ndcg@10": 0.41, ...} instead of a table')
    ev.add_argument("--per-query", metavar="FILE",
                    help="write per-query values as tab-separated qid and metric columns ('-' for stdout; "
                         "nan = query not counted)")
    ev.add_argument("--batch-size", type=_positive_int, metavar="ROWS", help="queries per update")
    ev.add_argument("--sampled", type=_int_at_least(2), metavar="NUM_ITEMS",
                    help="sampled evaluation: each query lists its held-out (relevant) items and m sampled "
                         "negatives; estimate the metrics for a catalogue of NUM_ITEMS items (default metrics: "
                         "ndcg@10 recall@10 hitrate@10 mrr; docs/sampled.md)")
    ev.add_argument("--estimator", choices=("naive", "rank_estimate", "bias_variance", "constrained", "em"),
                    default="bias_variance", help="with --sampled: how the full-catalogue value is estimated "
                                                  "(default bias_variance; naive: the sampled metric itself)")
    ev.add_argument("--gamma", type=float, default=0.01, metavar="WEIGHT",
                    help="with --sampled: the variance weight of bias_variance and constrained (default 0.01)")
    ev.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="progress bar on stderr (default: on a terminal, for large inputs)")
    ev.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    _add_formats_debug_zscore(ev)
    ev.set_defaults(handler=cmd_evaluate, format_help=ev.format_help)


def _add_formats_debug_zscore(ev: argparse.ArgumentParser) -> None:
    """trec_eval's -R, -T, -Z and -D options."""
    ev.add_argument("-R", "--Rel_info_format", "--rel-info-format", dest="rel_format", default="qrels",
                    metavar="FORMAT", help="judgements format (trec_eval -R): qrels (default), prefs, qrels_prefs "
                                           "(-m all_prefs, prefs), qrels_jg (-m qrels_jg)")
    ev.add_argument("-T", "--Results_format", "--results-format", dest="results_format", default="trec_results",
                    metavar="FORMAT", help="run format (trec_eval -T): trec_results, its only one")
    ev.add_argument("-Z", "--Zscore", "--zscore", dest="zscores", metavar="FILE",
                    help="print each value as a z-score with the means and deviations of FILE (trec_eval -Z; "
                         "lines: qid measure mean stddev)")
    ev.add_argument("-D", "--Debug_level", "--debug-level", dest="debug", metavar="LEVEL[.QID]",
                    help="trec_eval -D: its debug printouts (qrels measures: levels 1-2; -R prefs and "
                         "qrels_prefs: levels 3-5); with .QID evaluate only that query")


def _add_compare(commands: argparse._SubParsersAction[OneLineParser]) -> None:
    """The ``compare`` sub-command: the runs, the metrics, the test and the report's format."""
    compare = commands.add_parser(
        "compare", help="compare two or more runs with significance tests",
        description="Evaluate two or more TREC runs (qid Q0 docid rank score tag) against TREC qrels on the same "
                    "queries and test every pair of runs: each run's mean of each metric, in boldface where best, "
                    "with the letters of the runs it is significantly better than (ranx's compare table).",
        epilog="The queries are the judged ones that any run retrieves for (-c: every judged query); a run "
               "that retrieves nothing for one of them scores it as an empty list. Tests: student (the paired "
               "t-test), fisher (randomization), bootstrap, tukey (randomized Tukey HSD, for all pairs at once); "
               "docs/segments-uncertainty.md says which to use. Random replicates are a hash of the query's "
               "position in query id order and --seed: a run reproduces its p-values.")
    compare.add_argument("qrels", metavar="QRELS", help="TREC qrels file")
    compare.add_argument("runs", metavar="RUN", nargs="+", help="TREC run files, two or more")
    compare.add_argument("-m", "--metrics", nargs="+", action="extend", metavar="METRIC",
                         help=f"metrics such as ndcg@10 map@100 (default: {' '.join(DEFAULT_METRICS)})")
    compare.add_argument("--names", nargs="+", metavar="NAME",
                         help="a name per run (default: the run files' names without extension)")
    compare.add_argument("--test", choices=("student", "fisher", "bootstrap", "tukey"), default="student",
                         help="the significance test (default student)")
    compare.add_argument("--correction", choices=("holm", "bonferroni", "bh", "none"), default="holm",
                         help="the adjustment of each metric's p-values over the pairs (default holm; tukey "
                              "needs none)")
    compare.add_argument("--alpha", type=_probability, default=0.05, help="the significance level (default 0.05)")
    compare.add_argument("--replicates", type=_positive_int, default=10_000,
                         help="random replicates of fisher, bootstrap and tukey (default 10,000)")
    compare.add_argument("--seed", type=int, default=0, help="the seed of the replicates (default 0)")
    compare.add_argument("--convention", choices=CONVENTIONS,
                         help="another tool's definitions (ranx: ranx's; trec: trec_eval's ranking and relevance)")
    compare.add_argument("-c", "--complete", action="store_true",
                         help="evaluate every judged query, also those no run retrieves for (trec_eval -c)")
    compare.add_argument("-l", "--level-for-rel", dest="relevance_level", type=_level, metavar="LEVEL",
                         help="a judgement >= LEVEL is relevant (default: > 0)")
    compare.add_argument("-M", "--max-retrieved-per-topic", dest="max_docs", type=_positive_int, metavar="DOCS",
                         help="evaluate only the first DOCS documents of each ranking")
    compare.add_argument("--format", choices=FORMATS, default="text",
                         help="text (default), markdown, latex, or json (every value and pair's statistics)")
    compare.add_argument("--digits", type=_level, default=3, help="digits shown (default 3)")
    compare.add_argument("--batch-size", type=_positive_int, metavar="ROWS", help="queries per update")
    compare.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                         help="progress bar on stderr (default: on a terminal, for large inputs)")
    compare.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    compare.set_defaults(handler=cmd_compare)


def _add_demo(commands: argparse._SubParsersAction[OneLineParser]) -> None:
    """The ``demo`` sub-command: the run's size, seed, data, threads and plot."""
    demo = commands.add_parser(
        "demo",
        help="train a small recommender on synthetic data and evaluate it every epoch",
        description="Train BPR matrix factorisation on the embedded synthetic interaction data, print "
                    "ndcg/map/recall/precision/mrr/hitrate after every epoch next to a popularity baseline, "
                    "and plot the metrics against the epoch and the cut-off k (needs matplotlib).",
    )
    demo.add_argument("--epochs", type=_positive_int, default=10, help="training epochs (default 10)")
    demo.add_argument("--users", type=_positive_int, default=2000, help="users (default 2000)")
    demo.add_argument("--items", type=int, default=2000, help="items (default 2000)")
    demo.add_argument("--dim", type=_positive_int, default=32, help="embedding dimension (default 32)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the data and the model (default 0)")
    demo.add_argument("--data", metavar="PATH", default=None,
                      help="a MovieLens u.data / ratings.dat / ratings.csv or RecBole .inter file instead of the "
                           "synthetic data (--users and --items are then ignored)")
    demo.add_argument("--threads", type=int, default=1, metavar="N",
                      help="CPU threads (default 1: the demo's tensors are small, so one thread is fastest "
                           "and least disturbed by other work; 0 = torch's default)")
    demo.add_argument("--plot", default="torchrec_eval_demo.png", metavar="PNG",
                      help="where to write the plot (default torchrec_eval_demo.png)")
    demo.add_argument("--no-plot", action="store_true", help="do not plot")
    demo.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    demo.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                      help="progress bar on stderr (default: on a terminal)")
    demo.set_defaults(handler=cmd_demo)
