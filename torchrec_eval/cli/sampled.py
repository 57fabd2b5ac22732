"""``evaluate --sampled NUM_ITEMS``: each query's list is its held-out items and m sampled negatives, and the
metrics are estimated for a catalogue of NUM_ITEMS items (:class:`~torchrec_eval.SampledMetrics`).

A TREC run lists, per query, the candidates it scored: the judged-relevant ones are the held-out items, the
others its sampled negatives, ranked in the run's order. Tensors give ``preds`` and ``target`` (and ``mask``)
as ``SampledMetrics.update`` takes them. A query without a relevant candidate has nothing to estimate and is
left out first (however many candidates it lists), and the summary line on stderr says how many; every other
query must have the same number m of negatives (the estimators assume it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from torchrec_eval.cli.errors import PROG, CliError
from torchrec_eval.cli.inputs import Inputs
from torchrec_eval.cli.output import print_results

if TYPE_CHECKING:
    from torch import Tensor

#: the metrics of ``--sampled`` without ``-m``: RecBole's usual report
SAMPLED_DEFAULT = ["ndcg@10", "recall@10", "hitrate@10", "mrr"]


def sampled_rows(inputs: Inputs) -> tuple[dict[str, Tensor], int, list[int]]:
    """The rows as ``SampledMetrics`` takes them (``preds``, ``target``, ``mask``), m, the negatives of each, and
    the positions of the rows kept: a query without a relevant candidate is left out first, so that its list
    (all of it negatives) does not count against the others' m."""
    import torch

    tensors = inputs.tensors
    if "ranked_ids" in tensors:  # a TREC run: its order as scores, the relevant documents as the target
        ranked, targets = tensors["ranked_ids"], tensors["target_ids"]
        mask = ranked >= 0
        preds = -torch.arange(ranked.shape[1], dtype=torch.float64).expand(ranked.shape).clone()
        target = ((ranked.unsqueeze(2) == targets.unsqueeze(1)) & (targets >= 0).unsqueeze(1)).any(2) & mask
    else:
        if "preds" not in tensors or "target" not in tensors:
            raise CliError(f"--sampled takes 'preds' and 'target' [B, R + m] tensors, got {sorted(tensors)}")
        preds, target = tensors["preds"], tensors["target"] > 0
        mask = tensors.get("mask", torch.ones_like(target))
    target = target & mask
    keep = target.any(1).nonzero().squeeze(1)
    if keep.numel() == 0:
        raise CliError("--sampled: no query has a relevant candidate: nothing to estimate")
    rows = {"preds": preds[keep], "target": target[keep], "mask": mask[keep]}
    negatives = (rows["mask"] & ~rows["target"]).sum(1)
    if bool((negatives != negatives[0]).any()):
        raise CliError(f"--sampled: every query with a relevant candidate must list the same number m of sampled "
                       f"negatives, got {sorted(set(negatives.tolist()))} across queries")
    return rows, int(negatives[0]), keep.tolist()


def evaluate_sampled(args: argparse.Namespace, inputs: Inputs, names: list[str], progress: Callable[..., Any]) -> int:
    """The sampled metrics of the rows, batch by batch; ``--per-query`` and ``-q`` for the linear estimators."""
    import torch

    from torchrec_eval.metrics.sampled import SampledMetrics

    rows, m, keep = sampled_rows(inputs)
    qids = [inputs.qids[i] for i in keep]
    try:
        metric = SampledMetrics(names, num_items=args.sampled, num_negatives=m, estimator=args.estimator,
                                gamma=args.gamma)
    except ValueError as error:
        raise CliError(f"--sampled: {error}") from None
    wanted = args.per_query or args.query_eval
    if wanted and args.estimator == "em":
        raise CliError("--per-query and -q need per-query values: the EM estimate has none (it fits the "
                       "whole histogram); use another --estimator")
    per_query: dict[str, list[float]] = {name: [] for name in names}
    batch_rows = args.batch_size or 4096
    bar = progress(total=len(qids), desc="evaluating", unit="queries")
    try:
        for start in range(0, len(qids), batch_rows):
            batch = {key: value[start:start + batch_rows] for key, value in rows.items()}
            try:
                metric.update(batch["preds"], batch["target"], mask=batch["mask"])
                if wanted:
                    values = metric.per_query(batch["preds"], batch["target"], mask=batch["mask"])
                    for name in names:
                        per_query[name].extend(torch.as_tensor(values[name]).tolist())
            except ValueError as error:
                raise CliError(f"{args.run}: {error}") from None
            bar.update(batch["preds"].shape[0])
    finally:
        bar.close()
    results = {name: float(value) for name, value in metric.compute().items()}
    print_results(args, qids, results, per_query)
    if not args.quiet:
        left_out = len(inputs) - len(qids)
        print(f"{PROG}: {len(qids)} queries estimated for {args.sampled} items with {m} sampled negatives each"
              f" ({args.estimator}){f'; {left_out} without a relevant candidate left out' if left_out else ''}",
              file=sys.stderr)
    return 0
