"""TREC run and qrels files read with progress bars, and the note of what was evaluated of them."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from torchrec_eval.cli.errors import CliError

if TYPE_CHECKING:
    from torchrec_eval.trec import Qrels, Run


def read_trec(run_path: str, qrels_path: str, progress: Callable[..., Any], repeats: str = "error") -> tuple[Run, Qrels]:
    """Read a TREC run and qrels file (with progress bars); ``repeats`` as in :func:`torchrec_eval.trec.read_run`."""
    runs, qrels = read_runs([run_path], qrels_path, progress, repeats)
    return runs[0], qrels


def read_runs(run_paths: Sequence[str], qrels_path: str, progress: Callable[..., Any],
              repeats: str = "error") -> tuple[list[Run], Qrels]:
    """Read TREC run files and one qrels file, as :func:`read_trec`."""
    from torchrec_eval.trec import read_qrels, read_run

    tables = []
    for path, reader, what in [*((path, read_run, "run") for path in run_paths), (qrels_path, read_qrels, "qrels")]:
        tables.append(read_with_bar(path, reader, what, progress, repeats=repeats))
        if not len(tables[-1]):  # trec_eval quits on an empty file too
            raise CliError(f"{path}: the {what} file has no {what} line (empty, or comments only)")
    return tables[:-1], tables[-1]


def read_with_bar(path: str, reader: Callable[..., Any], what: str, progress: Callable[..., Any], **options: Any) -> Any:
    """``reader(path, **options)`` with a progress bar of the bytes read."""
    bar = progress(total=os.path.getsize(path), desc=f"reading {what}", unit="B", unit_scale=True)
    try:
        return reader(path, progress=bar.update, **options)
    finally:
        bar.close()


def coverage_note(run: Run, qrels: Qrels, evaluated: int, complete: bool) -> str:
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


def _sample(ids: Sequence[str], count: int = 3) -> str:
    shown = ", ".join(repr(i) for i in list(ids)[:count])
    return shown + (", ..." if len(ids) > count else "")
