"""The ``torchrec-eval`` command (also ``python -m torchrec_eval``).

``torchrec-eval evaluate RUN QRELS -m ndcg@10 map@100 recall@20 [--convention trec] [--json]
[--per-query FILE]`` evaluates a TREC run file against TREC qrels (string ids), or saved tensors
(``.pt`` / ``.npz``: scores and relevance, or ranked ids and target ids), and prints a table.

``torchrec-eval demo`` trains a small BPR-MF recommender on the embedded synthetic data for a few
epochs, prints the metrics after each epoch and writes a PNG plot (needs matplotlib).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from torchrec_eval.conventions import PRESETS

__all__ = ["main", "progress_factory", "CONVENTIONS"]

PROG = "torchrec-eval"
DEFAULT_METRICS = ["ndcg@10", "map@100", "recall@100", "precision@10", "mrr"]

# ``--convention`` takes the library's presets (torchrec_eval.conventions). With "trec" the numbers are
# trec_eval's: its document order (score desc, docid desc) is built by torchrec_eval.trec, and the
# preset sets the normalisations (map_cut_k divides by R, judged queries without a relevant doc score 0).
CONVENTIONS = tuple(sorted(PRESETS))

TEXT_FORMATS = "TREC text"
TENSOR_SUFFIXES = (".pt", ".pth", ".npz")
TENSOR_KEYS = {
    "preds": ("preds", "scores"),
    "target": ("target", "relevance"),
    "ranked_ids": ("ranked_ids",),
    "target_ids": ("target_ids",),
    "target_gains": ("target_gains",),
    "mask": ("mask",),
    "exclude_ids": ("exclude_ids",),
}
_NO_BARE_CUTOFF = ("precision", "f1")  # their value depends on k itself: a bare name would be meaningless


class CliError(Exception):
    """A user error: printed as ``torchrec-eval: error: ...`` with exit status 2."""


# ---------------------------------------------------------------------------------------------
# progress bars
# ---------------------------------------------------------------------------------------------
class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class _LineBar:
    """A minimal stderr progress line for when tqdm is not installed."""

    def __init__(self, total: int, desc: str, unit: str) -> None:
        self.total, self.desc, self.unit, self.n = max(int(total), 1), desc, unit, 0
        self.start = self.last = time.monotonic()
        self._draw()

    def _draw(self) -> None:
        share = min(self.n / self.total, 1.0)
        sys.stderr.write(f"\r{self.desc}: {share:4.0%} ({self.n}/{self.total} {self.unit}, "
                         f"{time.monotonic() - self.start:.1f} s)")
        sys.stderr.flush()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= 0.1 or self.n >= self.total:
            self.last = now
            self._draw()

    def close(self) -> None:
        self._draw()
        sys.stderr.write("\n")
        sys.stderr.flush()


def progress_factory(enabled: bool | None, large: bool = True) -> Callable[..., Any]:
    """A ``progress(total=, desc=, unit=)`` factory of bars on stderr.

    ``enabled``: ``True`` always draws, ``False`` never, ``None`` (auto) only when stderr is a terminal
    and the input is ``large``. Uses tqdm when installed, else a minimal progress line.
    """
    show = enabled if enabled is not None else (large and sys.stderr.isatty())

    def make(total: int, desc: str, unit: str = "it", **kwargs: Any) -> Any:
        if not show:
            return _NoBar()
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return _LineBar(total, desc, unit)
        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True,
                    mininterval=0.1, **kwargs)

    return make


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------
# trec_eval's measure names, for its users: "P_10" is precision@10, "set_recall" recall of the whole list
_TREC_CUT = re.compile(r"^(P|recall|ndcg_cut|map_cut|success)_(\d+)$")
_TREC_FAMILY = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map", "success": "hitrate"}
_TREC_BARE = {"Rprec": "rprecision", "recip_rank": "mrr", "set_recall": "recall", "map": "map", "ndcg": "ndcg"}


def _family(name: str) -> tuple[str, str]:
    """(metric family, cut-off or "") of a name: ours (``ndcg@10``) or trec_eval's (``ndcg_cut_10``)."""
    from torchrec_eval.collection import ALIASES

    name = name.strip()
    trec = _TREC_CUT.match(name)
    if trec:
        return _TREC_FAMILY[trec.group(1)], trec.group(2)
    if name in _TREC_BARE:
        return _TREC_BARE[name], ""
    family, _, cutoff = name.lower().partition("@")
    return ALIASES.get(family, family), cutoff


def split_metric_names(values: Sequence[str] | None) -> list[str]:
    """``["ndcg@10,map@100", "mrr"]`` -> ``["ndcg@10", "map@100", "mrr"]``; the default suite if empty."""
    names = [part.strip() for value in values or [] for part in value.split(",") if part.strip()]
    return names or list(DEFAULT_METRICS)


class Suite:
    """The requested metrics, as one RankingMetrics, under their names as the user typed them.

    A name without a cut-off (``mrr``, ``map``, ``ndcg``, ``recall``, ``rprecision``) means the whole
    list: it is evaluated at ``full_depth`` (the longest list, or more relevant documents than that),
    like trec_eval's ``recip_rank``, ``map`` and ``ndcg``.
    """

    def __init__(self, names: Sequence[str], full_depth: int, convention: str | None) -> None:
        from torchrec_eval.collection import RankingMetrics

        self.names = list(names)
        self.internal: dict[str, str] = {}
        families: dict[str, str] = {}
        for name in self.names:
            family, cutoff = _family(name)
            if not cutoff and family in _NO_BARE_CUTOFF:
                raise CliError(f"metric {name!r} needs a cut-off, as in '{family}@10'")
            internal = f"{family}@{cutoff}" if cutoff or family == "rprecision" else f"{family}@{full_depth}"
            if family == "rprecision" and not cutoff:
                internal = "rprecision"
            self.internal[name] = internal
            families[name] = family
        self.kwargs = {"convention": convention}
        self.families = families
        self.bare = any(not _family(name)[1] for name in self.names)
        if len(set(self.names)) != len(self.names):
            raise CliError(f"a metric is requested twice: {self.names}")
        try:  # two names may be one value (map and map@1000 on lists of 1,000): evaluated once
            self.metrics = RankingMetrics(list(dict.fromkeys(self.internal.values())), **self.kwargs)
        except ValueError as error:
            raise CliError(str(error)) from None

    def update(self, **inputs: Tensor) -> None:
        self.metrics.update(**inputs)

    def compute(self) -> dict[str, float]:
        values = self.metrics.compute()
        return {name: float(values[self.internal[name]]) for name in self.names}

    def per_query(self, **inputs: Tensor) -> dict[str, Tensor]:
        """Per-query values [B] of each metric (NaN = not counted), from the functional API."""
        from torchrec_eval import functional

        out = {}
        for name in self.names:
            family = self.families[name]
            internal = self.internal[name]
            cutoff = None if internal == "rprecision" else int(internal.partition("@")[2])
            fn = getattr(functional, family)
            out[name] = fn(k=cutoff, reduction="none", **self.kwargs, **inputs)
        return out


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def _is_tensor_file(path: str) -> bool:
    return path.lower().endswith(TENSOR_SUFFIXES)


def load_tensors(path: str) -> dict[str, Tensor]:
    """Read a ``.pt`` / ``.pth`` (a dict of tensors, saved with ``torch.save``) or ``.npz`` file."""
    if not os.path.isfile(path):
        raise CliError(f"{path}: no such file")
    try:
        if path.lower().endswith(".npz"):
            import numpy as np

            with np.load(path, allow_pickle=False) as archive:
                raw = {key: torch.from_numpy(archive[key]) for key in archive.files}
        else:
            raw = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - any reader failure is a bad input file
        raise CliError(f"{path}: cannot read tensors ({type(error).__name__}: {error})") from None
    if not isinstance(raw, dict) or not all(isinstance(v, Tensor) for v in raw.values()):
        raise CliError(f"{path}: expected a dict of named tensors, got {type(raw).__name__}")
    known = {alias: key for key, aliases in TENSOR_KEYS.items() for alias in aliases}
    out: dict[str, Tensor] = {}
    for name, value in raw.items():
        if name not in known:
            raise CliError(f"{path}: unknown tensor {name!r}; expected some of {sorted(known)}")
        key = known[name]
        if key in out:
            raise CliError(f"{path}: {key!r} is given twice (as {name!r} and another alias)")
        if key.endswith("_ids"):
            value = value.long()
        elif key == "mask":
            value = value.bool()
        elif key == "preds" and not value.is_floating_point():
            value = value.double()
        out[key] = value
    return out


class Inputs:
    """The rows to evaluate: query labels, keyword tensors for ``update`` and the full list depth."""

    def __init__(self, qids: list[str], tensors: dict[str, Tensor], full_depth: int, note: str = "") -> None:
        self.qids, self.tensors, self.full_depth, self.note = qids, tensors, full_depth, note

    def __len__(self) -> int:
        return len(self.qids)

    def batches(self, rows: int, width: int | None = None):
        for start in range(0, len(self), rows):
            batch = {key: value[start : start + rows] for key, value in self.tensors.items()}
            if width is not None and "ranked_ids" in batch and batch["ranked_ids"].shape[1] < width:
                ranked = batch["ranked_ids"]
                batch["ranked_ids"] = torch.nn.functional.pad(ranked, (0, width - ranked.shape[1]), value=-1)
            yield start, batch


def load_trec(run_path: str, qrels_path: str, progress: Callable[..., Any], complete: bool) -> Inputs:
    from torchrec_eval.trec import read_qrels, read_run, to_ranked

    bar = progress(total=os.path.getsize(run_path), desc="reading run", unit="B", unit_scale=True)
    try:
        run = read_run(run_path, progress=bar.update)
    finally:
        bar.close()
    bar = progress(total=os.path.getsize(qrels_path), desc="reading qrels", unit="B", unit_scale=True)
    try:
        qrels = read_qrels(qrels_path, progress=bar.update)
    finally:
        bar.close()
    data = to_ranked(run, qrels, complete=complete)
    if not len(data):
        raise CliError(f"no query of the run {run_path} has judgements in {qrels_path} "
                       f"(run queries: {_sample(sorted(set(run.qid.tolist())))}; "
                       f"judged queries: {_sample(sorted(set(qrels.qid.tolist())))})")
    num_relevant = int((data.target_ids >= 0).sum(1).max())
    notes = [f"{len(data)} queries evaluated"]
    if data.run_only:
        notes.append(f"{len(data.run_only)} run queries without judgements ignored "
                     f"({_sample(data.run_only)})")
    if data.qrels_only:
        verb = "scored 0 (--complete)" if complete else "ignored"
        notes.append(f"{len(data.qrels_only)} judged queries not in the run {verb} "
                     f"({_sample(data.qrels_only)})")
    tensors = {"ranked_ids": data.ranked_ids, "target_ids": data.target_ids,
               "target_gains": data.target_gains}
    return Inputs(data.qids, tensors, max(data.depth, num_relevant), "; ".join(notes))


def _sample(ids: Sequence[str], count: int = 3) -> str:
    shown = ", ".join(repr(i) for i in list(ids)[:count])
    return shown + (", ..." if len(ids) > count else "")


def load_tensor_inputs(run_path: str, qrels_path: str | None) -> Inputs:
    tensors = load_tensors(run_path)
    if qrels_path is not None:
        extra = load_tensors(qrels_path)
        for key in set(tensors) & set(extra):
            raise CliError(f"{key!r} is in both {run_path} and {qrels_path}")
        tensors.update(extra)
    main_key = "ranked_ids" if "ranked_ids" in tensors else "preds"
    if main_key not in tensors:
        raise CliError(f"{run_path}: expected 'preds' (or 'scores') [B, N], or 'ranked_ids' [B, L]; "
                       f"got {sorted(tensors)}")
    rows = tensors[main_key].shape[0] if tensors[main_key].ndim else 0
    for key, value in tensors.items():
        if value.ndim < 1 or value.shape[0] != rows:
            raise CliError(f"{key!r} must have one row per query ({rows} rows, like {main_key!r}), "
                           f"got shape {tuple(value.shape)}")
    if main_key == "ranked_ids":
        width = tensors["ranked_ids"].shape[1] if tensors["ranked_ids"].ndim == 2 else 1
        targets = tensors.get("target_ids")
        if targets is not None and targets.ndim == 2:
            width = max(width, int((targets >= 0).sum(1).max()) if targets.numel() else 0)
    else:
        width = tensors["preds"].shape[1] if tensors["preds"].ndim == 2 else 1
    return Inputs([str(i) for i in range(rows)], tensors, max(width, 1), f"{rows} queries evaluated")


# ---------------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------------
def _format_table(results: dict[str, float]) -> str:
    width = max(len("metric"), *(len(name) for name in results))
    lines = [f"{'metric':<{width}}  {'value':>8}"]
    lines += [f"{name:<{width}}  {value:>8.4f}" for name, value in results.items()]
    return "\n".join(lines)


def _json_value(value: float) -> float | None:
    return None if math.isnan(value) else value


def _write_per_query(path: str, qids: list[str], values: dict[str, list[float]]) -> None:
    names = list(values)
    lines = ["\t".join(["qid", *names])]
    for row, qid in enumerate(qids):
        lines.append("\t".join([qid, *(repr(float(values[name][row])) for name in names)]))
    text = "\n".join(lines) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


def cmd_evaluate(args: argparse.Namespace) -> int:
    run_path, qrels_path = args.run, args.qrels
    if not os.path.isfile(run_path):
        raise CliError(f"{run_path}: no such run file")
    if qrels_path is not None and not os.path.isfile(qrels_path):
        raise CliError(f"{qrels_path}: no such qrels file")
    large = os.path.getsize(run_path) >= (1 << 20)
    progress = progress_factory(args.progress, large=large)
    if args.complete and _is_tensor_file(run_path):
        raise CliError("--complete applies to TREC runs only")
    if _is_tensor_file(run_path):
        if qrels_path is not None and not _is_tensor_file(qrels_path):
            raise CliError(f"{qrels_path}: with a tensor run ({run_path}) the targets must be a .pt/.npz "
                           "file too")
        inputs = load_tensor_inputs(run_path, qrels_path)
    else:
        if qrels_path is None:
            raise CliError("a TREC run needs a QRELS file: torchrec-eval evaluate RUN QRELS -m ...")
        if _is_tensor_file(qrels_path):
            raise CliError(f"{qrels_path}: a TREC run ({run_path}) needs TREC qrels (qid iter docid rel), "
                           "not tensors")
        inputs = load_trec(run_path, qrels_path, progress, args.complete)

    suite = Suite(split_metric_names(args.metrics), inputs.full_depth, args.convention)
    columns = max(1, inputs.tensors.get("preds", inputs.tensors.get("ranked_ids")).shape[-1])
    rows = args.batch_size or max(1, min(8192, (1 << 22) // columns))
    per_query: dict[str, list[float]] = {name: [] for name in suite.names}
    bar = progress(total=len(inputs), desc="evaluating", unit="queries")
    try:
        for _, batch in inputs.batches(rows, width=inputs.full_depth if suite.bare else None):
            try:
                suite.update(**batch)
                if args.per_query:
                    for name, values in suite.per_query(**batch).items():
                        per_query[name].extend(values.tolist())
            except ValueError as error:
                raise CliError(f"{run_path}: {error}") from None
            bar.update(next(iter(batch.values())).shape[0])
    finally:
        bar.close()
    results = suite.compute()

    if args.per_query:
        _write_per_query(args.per_query, inputs.qids, per_query)
    if args.json:
        print(json.dumps({name: _json_value(value) for name, value in results.items()}))
    else:
        print(_format_table(results))
    if not args.quiet and inputs.note:
        print(f"{PROG}: {inputs.note}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from torchrec_eval.demo import PLOT_HINT, run_demo

    plot = None if args.no_plot else args.plot
    if plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(f"{PROG}: {PLOT_HINT}; running without the plot", file=sys.stderr)
            plot = None
    if args.threads:
        torch.set_num_threads(args.threads)
    result = run_demo(epochs=args.epochs, users=args.users, items=args.items, dim=args.dim, seed=args.seed,
                      plot=plot, progress=progress_factory(args.progress, large=True),
                      echo=lambda line: print(line, flush=True))
    if args.json:
        print(json.dumps({key: result[key] for key in ("baseline", "history", "plot", "seconds")}))
    return 0


# ---------------------------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Ranking metrics for recommender and search evaluation (torchrec_eval).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    ev = commands.add_parser(
        "evaluate",
        help="evaluate a run against relevance judgements",
        description="Evaluate a TREC run (qid Q0 docid rank score tag) against TREC qrels "
                    "(qid iter docid rel), "
                    "or tensors saved with torch.save / numpy.savez: {'preds' [B, N], 'target' [B, N]} "
                    "(dense), {'preds', 'target_ids' [B, T]} or {'ranked_ids' [B, L], 'target_ids' [B, T]} "
                    "(+ 'target_gains', 'mask', 'exclude_ids'); the targets may sit in a second file.",
        epilog="A TREC run is ranked by score descending, ties by docid descending (trec_eval's order); "
               "its rank column is ignored. Queries of the run that have judgements are evaluated. "
               "A metric without @k (mrr, map, ndcg, recall, rprecision) has no cut-off. "
               "--convention trec gives trec_eval's numbers: precision@k = P_k, recall@k = recall_k, "
               "map@k = map_cut_k, ndcg@k = ndcg_cut_k, mrr = recip_rank, map = map, rprecision = Rprec.",
    )
    ev.add_argument("run", metavar="RUN", help="TREC run file, or .pt/.npz tensors")
    ev.add_argument("qrels", metavar="QRELS", nargs="?", help="TREC qrels file (or .pt/.npz targets)")
    ev.add_argument("-m", "--metrics", nargs="+", action="extend", metavar="METRIC",
                    help=f"metrics such as ndcg@10 map@100 recall@20 (also comma separated; "
                         f"default: {' '.join(DEFAULT_METRICS)})")
    ev.add_argument("--convention", choices=CONVENTIONS,
                    help="reproduce another tool's definitions (trec: trec_eval / pytrec_eval)")
    ev.add_argument("--complete", action="store_true",
                    help="also evaluate judged queries missing from the run, as empty lists (trec_eval -c)")
    ev.add_argument("--json", action="store_true", help='print {"ndcg@10": 0.41, ...} instead of a table')
    ev.add_argument("--per-query", metavar="FILE",
                    help="write per-query values as tab-separated qid and metric columns ('-' for stdout; "
                         "nan = query not counted)")
    ev.add_argument("--batch-size", type=_positive_int, metavar="ROWS", help="queries per update")
    ev.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="progress bar on stderr (default: on a terminal, for large inputs)")
    ev.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    ev.set_defaults(handler=cmd_evaluate)

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 on a user error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo" and args.items < 2:
        parser.error("--items must be >= 2")
    try:
        return args.handler(args)
    except (CliError, ValueError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
