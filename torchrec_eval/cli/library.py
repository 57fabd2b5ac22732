"""``evaluate`` with the library's metrics (RankingMetrics), batch by batch."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from torchrec_eval.cli.errors import PROG, CliError
from torchrec_eval.cli.inputs import Inputs
from torchrec_eval.cli.output import print_results
from torchrec_eval.cli.suite import Suite

if TYPE_CHECKING:
    from torch import Tensor


def evaluate_library(args: argparse.Namespace, inputs: Inputs, names: list[str], progress: Callable[..., Any]) -> int:
    """The library's metrics (RankingMetrics), batch by batch."""
    suite = Suite(names, inputs.full_depth, args.convention)
    main = cast("Tensor", inputs.tensors.get("preds", inputs.tensors.get("ranked_ids")))  # inputs hold one of them
    columns = max(1, main.shape[-1])
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
    print_results(args, inputs.qids, suite.compute(), per_query)
    if not args.quiet and inputs.note:
        print(f"{PROG}: {inputs.note}", file=sys.stderr)
    return 0
