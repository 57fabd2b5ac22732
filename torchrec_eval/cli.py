"""The ``torchrec-eval`` command (also ``python -m torchrec_eval``).

``torchrec-eval evaluate RUN QRELS [-m ndcg@10 map@100 recall@20 | -m P.5,10 ndcg_cut.10 ...]
[--convention trec] [-q] [-c] [-l LEVEL] [-M DOCS] [--json] [--per-query FILE]`` evaluates a TREC run
file against TREC qrels (string ids), or saved tensors (``.pt`` / ``.npz``: scores and relevance, or
ranked ids and target ids), and prints a table, or trec_eval's output under ``--convention trec``.

With ``--convention trec`` on TREC files, trec_eval's measures (``torchrec_eval.trec.measures``) are
computed with numpy alone: torch is not imported, which is most of the command's start-up time.
``torchrec-eval evaluate RUN QRELS --convention trec`` prints what ``trec_eval QRELS RUN`` prints.

``torchrec-eval demo`` trains a small BPR-MF recommender on the embedded synthetic data for a few
epochs, prints the metrics after each epoch and writes a PNG plot (needs matplotlib).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from torchrec_eval.conventions import PRESETS

if TYPE_CHECKING:
    from torch import Tensor

    from torchrec_eval.trec import Qrels, Run
    from torchrec_eval.trec.measures import Measure

__all__ = ["main", "progress_factory", "CONVENTIONS"]

PROG = "torchrec-eval"
DEFAULT_METRICS = ["ndcg@10", "map@100", "recall@100", "precision@10", "mrr"]

# ``--convention`` takes the library's presets (torchrec_eval.conventions). With "trec" the numbers are
# trec_eval's: its document order (score desc, docid desc) is built by torchrec_eval.trec, and its
# measures by torchrec_eval.trec.measures (or the library's metrics with the preset's normalisations).
CONVENTIONS = tuple(sorted(PRESETS))
# the order of equal scores in a TREC run, per convention (torchrec_eval.trec.ranking_order); the
# other presets' "index" ties are the order of their inputs: the file's
TIES = {None: "trec", "trec": "trec", "ranx": "ranx"}

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
_CANONICAL = ("precision", "recall", "ndcg", "map", "mrr", "hitrate", "rprecision")  # need no alias table


def _family(name: str) -> tuple[str, str]:
    """(metric family, cut-off or "") of a name: ours (``ndcg@10``) or trec_eval's (``ndcg_cut_10``)."""
    name = name.strip()
    trec = _TREC_CUT.match(name)
    if trec:
        return _TREC_FAMILY[trec.group(1)], trec.group(2)
    if name in _TREC_BARE:
        return _TREC_BARE[name], ""
    family, _, cutoff = name.lower().partition("@")
    if family in _CANONICAL:
        return family, cutoff
    from torchrec_eval.collection import ALIASES  # imports torch: only for the other names

    return ALIASES.get(family, family), cutoff


def split_metric_names(values: Sequence[str] | None, default: Sequence[str] = DEFAULT_METRICS) -> list[str]:
    """``["ndcg@10,map@100", "mrr"]`` -> ``["ndcg@10", "map@100", "mrr"]``; ``default`` if empty.

    trec_eval's ``P.5,10`` keeps its comma (the cut-offs of one measure), as does any ``NAME.PARAMS`` of a
    trec_eval family (``utility.2,-1,0,0``, ``rbp.1=2,p=0.8``)."""
    from torchrec_eval.trec.spec import FAMILIES, NICKNAMES

    names = []
    for value in values or []:
        family, dot, _ = value.strip().partition(".")
        if dot and (family in FAMILIES or family in NICKNAMES):
            names.append(value.strip())
            continue
        for part in re.split(r",(?![\d.])", value):  # a comma before a digit or '.' separates cut-offs
            if part.strip():
                names.append(part.strip())
    return names or list(default)


def trec_measures(names: Sequence[str]) -> list[Measure] | None:
    """The trec_eval measures ``names`` ask for (trec_eval's names, or ours that equal one of its measures
    under ``--convention trec``), or None if one of them is not a trec_eval measure.

    trec_eval's ``-m`` rules hold (``torchrec_eval.trec.spec.resolve``): a measure asked for twice is
    evaluated once, the first parameters given to a family win. A trec_eval name means trec_eval's
    measure: ``recall`` is its ``recall_5`` ... ``recall_1000`` (the library's whole-list ``recall`` is
    ``set_recall`` there)."""
    from torchrec_eval.trec.measures import from_library, resolve
    from torchrec_eval.trec.spec import UnknownMeasure

    def library(name: str) -> Measure | None:
        family, cutoff = _family(name)
        return from_library(name, family, cutoff)

    try:
        return resolve(names, library)
    except UnknownMeasure:
        return None
    except ValueError as error:
        raise CliError(str(error)) from None


def _trec_only(name: str) -> bool:
    """A trec_eval measure that the library has no metric for (bpref, num_q, P.5,10, official, ...)."""
    from torchrec_eval.trec.measures import parse_measures

    if _TREC_CUT.match(name) or name in _TREC_BARE or name == "recall":
        return False
    try:
        return parse_measures(name) is not None
    except ValueError:
        return True


def _trec_parse(parse: Callable[[str], Any], name: str) -> Any:
    try:
        return parse(name)
    except ValueError as error:
        raise CliError(str(error)) from None


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
            if _trec_only(name):
                raise CliError(f"{name!r} is one of trec_eval's measures: it needs --convention trec and a TREC "
                               f"run file (this library's names: ndcg@10, map@100, recall@20, mrr, ...)")
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
            raise CliError(self._unknown(convention) or str(error)) from None

    def _unknown(self, convention: str | None) -> str | None:
        """The error for the first name that is no metric, as the user typed it."""
        from torchrec_eval.collection import RankingMetrics

        for name in self.names:
            try:
                RankingMetrics([self.internal[name]], **self.kwargs)
            except ValueError:
                trec = (" nor a trec_eval measure (P.5,10, ndcg_cut.10, map, bpref, official, all_trec, ...)"
                        if convention == "trec" else "")
                return f"Unknown metric {name!r}: not one of this library's metrics (ndcg@10, map@100, ...){trec}"
        return None

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
    import torch

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
    if not isinstance(raw, dict) or not all(isinstance(v, torch.Tensor) for v in raw.values()):
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
        import torch

        for start in range(0, len(self), rows):
            batch = {key: value[start : start + rows] for key, value in self.tensors.items()}
            if width is not None and "ranked_ids" in batch and batch["ranked_ids"].shape[1] < width:
                ranked = batch["ranked_ids"]
                batch["ranked_ids"] = torch.nn.functional.pad(ranked, (0, width - ranked.shape[1]), value=-1)
            yield start, batch


def read_trec(run_path: str, qrels_path: str, progress: Callable[..., Any], repeats: str = "error") -> tuple[Run, Qrels]:
    """Read a TREC run and qrels file (with progress bars); ``repeats`` as in :func:`torchrec_eval.trec.read_run`."""
    from torchrec_eval.trec import read_qrels, read_run

    tables = []
    for path, reader, what in ((run_path, read_run, "run"), (qrels_path, read_qrels, "qrels")):
        bar = progress(total=os.path.getsize(path), desc=f"reading {what}", unit="B", unit_scale=True)
        try:
            tables.append(reader(path, progress=bar.update, repeats=repeats))
        finally:
            bar.close()
        if not len(tables[-1]):  # trec_eval quits on an empty file too
            raise CliError(f"{path}: the {what} file has no {what} line (empty, or comments only)")
    return tables[0], tables[1]


def _coverage_note(run: Run, qrels: Qrels, evaluated: int, complete: bool) -> str:
    """What was evaluated, or an error when nothing was."""
    import numpy as np

    run_only = np.setdiff1d(run.queries, qrels.queries).tolist()
    qrels_only = np.setdiff1d(qrels.queries, run.queries).tolist()
    if not evaluated:
        raise CliError(f"no query of the run {run.path} has judgements in {qrels.path} "
                       f"(run queries: {_sample(run.queries.tolist())}; "
                       f"judged queries: {_sample(qrels.queries.tolist())})")
    notes = [f"{evaluated} queries evaluated"]
    if run_only:
        notes.append(f"{len(run_only)} run queries without judgements ignored ({_sample(run_only)})")
    if qrels_only:
        verb = "scored 0 (--complete)" if complete else "ignored"
        notes.append(f"{len(qrels_only)} judged queries not in the run {verb} ({_sample(qrels_only)})")
    return "; ".join(notes)


def load_trec(run: Run, qrels: Qrels, args: argparse.Namespace) -> Inputs:
    """The run ranked into the library's input form (``ranked_ids``, ``target_ids``, ``target_gains``)."""
    from torchrec_eval.trec import to_ranked

    data = to_ranked(run, qrels, complete=args.complete, relevance_level=args.relevance_level,
                     max_docs=args.max_docs, ties=TIES.get(args.convention, "file"),
                     integer_relevance=args.convention == "trec")
    note = _coverage_note(run, qrels, len(data), args.complete)
    num_relevant = int((data.target_ids >= 0).sum(1).max())
    tensors = {"ranked_ids": data.ranked_ids, "target_ids": data.target_ids,
               "target_gains": data.target_gains}
    return Inputs(data.qids, tensors, max(data.depth, num_relevant), note)


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


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _write_per_query(path: str, qids: Sequence[str], values: dict[str, Sequence[float]]) -> None:
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


def _trec_layout(args: argparse.Namespace) -> bool:
    """trec_eval's output lines (``name\\tqid\\tvalue``) instead of a table."""
    return not args.json and (args.convention == "trec" or args.query_eval)


def _check_options(args: argparse.Namespace, tensors: bool) -> None:
    if tensors:
        for flag, given in (("--complete", args.complete), ("-l", args.relevance_level is not None),
                            ("-M", args.max_docs is not None)):
            if given:
                raise CliError(f"{flag} applies to TREC runs only")
    if args.json and args.query_eval:
        raise CliError("-q prints trec_eval's per-query lines; with --json, write them with --per-query FILE")
    if args.nosummary and not args.query_eval and args.convention != "trec":
        raise CliError("-n (no summary) goes with -q (per-query lines)")
    trec_formats = args.convention == "trec" or args.rel_format != "qrels"  # -R prefs... are trec_eval's alone
    if (args.judged_only or args.num_docs) and not trec_formats:
        raise CliError("-J and -N are trec_eval's options: they need --convention trec")


def evaluate_trec(args: argparse.Namespace, run: Run, qrels: Qrels, measures: list[Measure]) -> int:
    """trec_eval's measures, with numpy alone (no torch)."""
    from torchrec_eval.trec import rank_judgements
    from torchrec_eval.trec.measures import evaluate

    run, qrels = _debug_query(args, run, qrels)  # trec_eval -D LEVEL.QID
    judgements = rank_judgements(run, qrels, complete=args.complete, max_docs=args.max_docs, ties="trec",
                                 judged_only=args.judged_only)
    note = _coverage_note(run, qrels, len(judgements.qids), args.complete)
    if not args.json:  # trec_eval prints its measures in its own order
        measures = sorted(measures, key=lambda measure: measure.order)
    level = 1 if args.relevance_level is None else args.relevance_level
    try:
        result = evaluate(judgements, measures, relevance_level=level, version=args.trec_eval_version,
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
    _print_evaluation(args, result)
    if not args.quiet:
        print(f"{PROG}: {note}", file=sys.stderr)
    return 0


def _other_trec_options(args: argparse.Namespace) -> bool:
    """trec_eval's -R/-T/-D/-Z checks; True when the judgements are not qrels (prefs, qrels_prefs,
    qrels_jg: :func:`evaluate_format`), or a prefs / qrels_jg measure is asked of qrels (an error there)."""
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


def evaluate_format(args: argparse.Namespace, run_path: str, judgements_path: str, progress) -> int:
    """trec_eval -R prefs / qrels_prefs / qrels_jg (torchrec_eval.trec.formats), with -q -n -c -M -l -D -Z."""
    from torchrec_eval.trec import read_run
    from torchrec_eval.trec.formats import evaluate_format as evaluate_judgements
    from torchrec_eval.trec.formats import parse_debug

    bar = progress(total=os.path.getsize(run_path), desc="reading run", unit="B", unit_scale=True)
    try:
        run = read_run(run_path, progress=bar.update)
    finally:
        bar.close()
    try:
        result = evaluate_judgements(args.rel_format, run, judgements_path,
                                     split_metric_names(args.metrics, default=[]), complete=args.complete,
                                     max_docs=args.max_docs,
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
    _print_evaluation(args, result)
    return 0


def _print_evaluation(args: argparse.Namespace, result: Any) -> None:
    """A trec_eval :class:`torchrec_eval.trec.measures.Evaluation`: ``--per-query`` file, then ``--json`` or
    trec_eval's lines (``-q`` per query, ``-n`` no summary; nothing printed when there is no line)."""
    if args.per_query:  # numbers only (a measure such as relstring is text)
        numbers = {name: values for name, values in result.per_query.items() if values.dtype.kind in "fiub"}
        _write_per_query(args.per_query, result.qids.tolist(), numbers)
    if args.json:
        print(json.dumps({name: _json_value(value) for name, value in result.summary.items()}))
    elif getattr(result, "debug", None):  # trec_eval -D: printouts between the lines, some without newline
        sys.stdout.write(result.output(queries=args.query_eval, summary=not args.nosummary))
    else:
        text = result.format(queries=args.query_eval, summary=not args.nosummary)
        if text:
            print(text)


def evaluate_library(args: argparse.Namespace, inputs: Inputs, names: list[str], progress) -> int:
    """The library's metrics (RankingMetrics), batch by batch."""
    from torchrec_eval.trec.measures import format_line

    suite = Suite(names, inputs.full_depth, args.convention)
    columns = max(1, inputs.tensors.get("preds", inputs.tensors.get("ranked_ids")).shape[-1])
    rows = args.batch_size or max(1, min(8192, (1 << 22) // columns))
    per_query: dict[str, list[float]] = {name: [] for name in suite.names}
    wanted = args.per_query or args.query_eval
    bar = progress(total=len(inputs), desc="evaluating", unit="queries")
    try:
        for _, batch in inputs.batches(rows, width=inputs.full_depth if suite.bare else None):
            try:
                suite.update(**batch)
                if wanted:
                    for name, values in suite.per_query(**batch).items():
                        per_query[name].extend(values.tolist())
            except ValueError as error:
                raise CliError(f"{args.run}: {error}") from None
            bar.update(next(iter(batch.values())).shape[0])
    finally:
        bar.close()
    results = suite.compute()

    if args.per_query:
        _write_per_query(args.per_query, inputs.qids, per_query)
    if args.json:
        print(json.dumps({name: _json_value(value) for name, value in results.items()}))
    elif _trec_layout(args):
        lines = []
        if args.query_eval:
            lines += [format_line(name, qid, per_query[name][row]) for row, qid in enumerate(inputs.qids)
                      for name in suite.names]
        if not args.nosummary:
            lines += [format_line(name, "all", value) for name, value in results.items()]
        print("\n".join(lines))
    else:
        print(_format_table(results))
    if not args.quiet and inputs.note:
        print(f"{PROG}: {inputs.note}", file=sys.stderr)
    return 0


def _trec_eval_order(args: argparse.Namespace) -> None:
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
    if args.qrels is None or _is_tensor_file(args.run) or _is_tensor_file(args.qrels):
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


TREC_EVAL_VERSION = "10.0-rc3"  # the trec_eval whose output is reproduced (trec_eval -v)


class _Version(argparse.Action):
    """trec_eval -v / --version: which trec_eval is reproduced, and this package's version."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from torchrec_eval import __version__

        parser.exit(message=f"{PROG} {__version__}: trec_eval version {TREC_EVAL_VERSION}, reproduced "
                            f"(--trec-eval-version 9: trec_eval 9 / pytrec_eval)\n")


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


def _stdin_results(args: argparse.Namespace, folder: str) -> None:
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


def cmd_evaluate(args: argparse.Namespace) -> int:
    if args.help:
        return _help(args)
    with tempfile.TemporaryDirectory(prefix="torchrec-eval-") as folder:
        _stdin_results(args, folder)
        return _evaluate(args)


def _evaluate(args: argparse.Namespace) -> int:
    _trec_eval_order(args)
    run_path, qrels_path = args.run, args.qrels
    if not os.path.isfile(run_path):
        raise CliError(f"{run_path}: no such run file")
    if qrels_path is not None and not os.path.isfile(qrels_path):
        raise CliError(f"{qrels_path}: no such qrels file")
    tensors = _is_tensor_file(run_path)
    _check_options(args, tensors)
    large = os.path.getsize(run_path) >= (1 << 20)
    progress = progress_factory(args.progress, large=large)
    if tensors:
        if qrels_path is not None and not _is_tensor_file(qrels_path):
            raise CliError(f"{qrels_path}: with a tensor run ({run_path}) the targets must be a .pt/.npz "
                           "file too")
        names = split_metric_names(args.metrics)
        return evaluate_library(args, load_tensor_inputs(run_path, qrels_path), names, progress)
    if qrels_path is None:
        raise CliError("a TREC run needs a QRELS file: torchrec-eval evaluate RUN QRELS -m ...")
    if _is_tensor_file(qrels_path):
        raise CliError(f"{qrels_path}: a TREC run ({run_path}) needs TREC qrels (qid iter docid rel), "
                       "not tensors")
    if _other_trec_options(args):  # trec_eval -R prefs / qrels_prefs / qrels_jg, -T, -D, -Z
        return evaluate_format(args, run_path, qrels_path, progress)
    trec = args.convention == "trec"
    names = split_metric_names(args.metrics, default=["official"] if trec else DEFAULT_METRICS)
    measures = trec_measures(names) if trec else None
    if trec and measures is None:  # the library's metrics then: trec_eval-only measures cannot come along
        others = [name for name in names if trec_measures([name]) is None]
        mixed = [name for name in names if _trec_only(name) or name == "recall"]
        if mixed:
            raise CliError(f"{mixed} are trec_eval measures and {others} are not: ask for them in two runs "
                           f"(trec_eval's recall is recall_5 ... recall_1000; the whole list's is set_recall)")
    # a repeated document: trec_eval refuses it, naming it; ranx's Run/Qrels keep its last line
    run, qrels = read_trec(run_path, qrels_path, progress, "last" if args.convention == "ranx" else "error")
    if measures is not None:
        return evaluate_trec(args, run, qrels, measures)
    return evaluate_library(args, load_trec(run, qrels, args), names, progress)


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
        import torch

        torch.set_num_threads(args.threads)
    result = run_demo(epochs=args.epochs, users=args.users, items=args.items, dim=args.dim, seed=args.seed,
                      data=args.data, plot=plot, progress=progress_factory(args.progress, large=True),
                      echo=lambda line: print(line, flush=True))
    if args.json:
        print(json.dumps({key: result[key] for key in ("baseline", "history", "plot", "seconds")}))
    return 0


# ---------------------------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------------------------
def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an int >= {minimum}, got {text!r}")
        return value

    return parse


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


_positive_int = _int_at_least(1)
_level = _int_at_least(0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Ranking metrics for recommender and search evaluation (torchrec_eval).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

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
    ev.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="progress bar on stderr (default: on a terminal, for large inputs)")
    ev.add_argument("--quiet", action="store_true", help="no summary line on stderr")
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
    ev.set_defaults(handler=cmd_evaluate, format_help=ev.format_help)

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
