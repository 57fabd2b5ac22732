"""The ``demo`` sub-command: :func:`torchrec_eval.demo.run_demo` from the command line."""

from __future__ import annotations

import argparse
import json
import sys

from torchrec_eval.cli.errors import PROG
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
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    result = run_demo(epochs=args.epochs, users=args.users, items=args.items, dim=args.dim, seed=args.seed,
                      data=args.data, plot=plot, progress=progress_factory(args.progress, large=True),
                      echo=lambda line: print(line, flush=True))
    if args.json:
        print(json.dumps({key: result[key] for key in ("baseline", "history", "plot", "seconds")}))
    return 0
