"""What the command prints: a table, JSON, trec_eval's lines, and ``--per-query`` files.

Ids are the files' bytes (read as UTF-8, undecodable bytes kept by surrogateescape): they are written
back as the same bytes whatever the locale, on stdout as in files."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from torchrec_eval.cli.paths import write_file


def _format_table(results: dict[str, float]) -> str:
    width = max(len("metric"), *(len(name) for name in results))
    lines = [f"{'metric':<{width}}  {'value':>8}"]
    lines += [f"{name:<{width}}  {value:>8.4f}" for name, value in results.items()]
    return "\n".join(lines)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def emit(text: str) -> None:
    """``text`` on stdout, as bytes: an id that is not UTF-8, or not in the locale's encoding (LC_ALL=C,
    PYTHONIOENCODING=ascii:strict), comes out as it came in."""
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:  # a text-only stand-in for stdout (io.StringIO)
        sys.stdout.write(text)
        return
    sys.stdout.flush()  # what print() wrote before comes first
    binary.write(encode(text))
    binary.flush()


def _write_per_query(path: str, qids: Sequence[str], values: Mapping[str, Sequence[float]]) -> None:
    names = list(values)
    lines = ["\t".join(["qid", *names])]
    for row, qid in enumerate(qids):
        lines.append("\t".join([qid, *(repr(float(values[name][row])) for name in names)]))
    text = "\n".join(lines) + "\n"
    if path == "-":
        emit(text)
    else:
        write_file(path, encode(text), "--per-query")


def _trec_layout(args: argparse.Namespace) -> bool:
    """trec_eval's output lines (``name\\tqid\\tvalue``) instead of a table."""
    return not args.json and (args.convention == "trec" or args.query_eval)


def print_evaluation(args: argparse.Namespace, result: Any) -> None:
    """A trec_eval :class:`torchrec_eval.trec.measures.Evaluation`: ``--per-query`` file, then ``--json`` or
    trec_eval's lines (``-q`` per query, ``-n`` no summary; nothing printed when there is no line)."""
    if args.per_query:  # numbers only (a measure such as relstring is text)
        numbers = {name: values for name, values in result.per_query.items() if values.dtype.kind in "fiub"}
        _write_per_query(args.per_query, result.qids.tolist(), numbers)
    if args.json:
        emit(json.dumps({name: _json_value(value) for name, value in result.summary.items()}) + "\n")
    elif getattr(result, "debug", None):  # trec_eval -D: printouts between the lines, some without newline
        emit(result.output(queries=args.query_eval, summary=not args.nosummary))
    else:
        text = result.format(queries=args.query_eval, summary=not args.nosummary)
        if text:
            emit(text + "\n")


def print_results(args: argparse.Namespace, qids: Sequence[str], results: dict[str, float],
                  per_query: dict[str, list[float]]) -> None:
    """The library's metrics (``per_query``: each metric's values, filled for ``--per-query`` and ``-q``):
    ``--per-query`` file, then ``--json``, trec_eval's lines (``-q`` per query, ``-n`` no summary) or a table."""
    from torchrec_eval.trec.measures import format_line

    if args.per_query:
        _write_per_query(args.per_query, qids, per_query)
    if args.json:
        emit(json.dumps({name: _json_value(value) for name, value in results.items()}) + "\n")
    elif _trec_layout(args):
        lines = []
        if args.query_eval:
            lines += [format_line(name, qid, per_query[name][row]) for row, qid in enumerate(qids) for name in per_query]
        if not args.nosummary:
            lines += [format_line(name, "all", value) for name, value in results.items()]
        emit("\n".join(lines) + "\n")
    else:
        emit(_format_table(results) + "\n")
