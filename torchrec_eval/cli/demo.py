"""The ``demo`` sub-command: :func:`torchrec_eval.demo.run_demo` from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from torchrec_eval.cli.errors import PROG, CliError
from torchrec_eval.cli.output import emit
from torchrec_eval.cli.paths import check_output_file, written_whole
from torchrec_eval.cli.progress import progress_factory


def cmd_demo(args: argparse.Namespace) -> int:
    from torchrec_eval.demo import PLOT_HINT, run_demo

    plot = None if args.no_plot else args.plot
    if plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(f"{PROG}: {PLOT_HINT}; running without the plot", file=sys.stderr)
            plot = None
    if plot is not None:  # refused before the training, not after it
        check_output_file(plot, "--plot", inputs=(args.data,))
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    progress = progress_factory(args.progress, large=True)
    result = run_demo(epochs=args.epochs, users=args.users, items=args.items, dim=args.dim, seed=args.seed,
                      data=args.data, plot=None, progress=progress, echo=_echo)
    if plot is not None:
        result["plot"] = _write_plot(result, plot, args.data)
        _echo(f"plot: {plot}")
    if args.json:
        emit(json.dumps({key: result[key] for key in ("baseline", "history", "plot", "seconds")}) + "\n")
    return 0


def _echo(line: str) -> None:
    emit(line + "\n")


def _write_plot(result: dict[str, Any], plot: str, data: str | None) -> str:
    """The demo's PNG, written whole or not at all (torchrec_eval.cli.paths)."""
    from torchrec_eval.demo import PLOT_HINT, plot_demo

    names = {"data_name": Path(data).name} if data else {}
    with written_whole(plot, "--plot") as staged:
        if plot_demo(result["baseline"], result["history"], result["curves"], staged, **names) is None:
            raise CliError(PLOT_HINT)  # matplotlib was found above: only if its import failed since
    return plot
