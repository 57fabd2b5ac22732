"""The ranking as one opaque operator of ``torch.compile``: ``torchrec_eval::top_indices``.

Traced by dynamo, :func:`~torchrec_eval.pipeline.topk.top_indices` would become inductor's own sort and
top-k, and the tie repair masked work over every row (a traced function cannot ask which rows tie).
Registered as a custom operator instead, it runs as the library's eager kernel inside the compiled
graph: ``torch.topk`` and the repair of the rows that tie, exactly as in eager mode, and the graph fuses
only what comes after it, on [B, k] tensors. Its fake implementation gives the output shapes, so the
graph has no break.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.exclusion import Exclusions
from torchrec_eval.pipeline.topk import TopK, listed_scores, top_indices


def ranked_top(
    scores: Tensor,
    k: int,
    ties: str = "index",
    tie_gains: Tensor | None = None,
    exclusions: Exclusions | None = None,
) -> TopK:
    """:func:`~torchrec_eval.pipeline.topk.top_indices`, through the operator while ``torch.compile`` traces.

    Example:
        >>> import torch
        >>> from torchrec_eval.pipeline.topk_op import ranked_top
        >>> ranked_top(torch.tensor([[0.5, 0.9, 0.5, 0.5, 0.1]]), 3).indices
        tensor([[1, 0, 2]])
    """
    if not torch.compiler.is_compiling():
        return top_indices(scores, k, ties, tie_gains, exclusions)
    # a compiled update reads nothing on the host on an accelerator, whatever the tie order
    excluded = (None, None) if exclusions is None else (exclusions.ids, exclusions.count)
    indices, values, following = top_indices_op(scores, k, ties, tie_gains, *excluded)
    return TopK(indices, following, values)


def _top_indices_kernel(
    scores: Tensor,
    k: int,
    ties: str,
    tie_gains: Tensor | None,
    excluded_ids: Tensor | None,
    excluded_count: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`~torchrec_eval.pipeline.topk.top_indices` as an operator: (indices [B, k] int64, their scores
    [B, k] (-inf where excluded), following [B]), with no host read on an accelerator for any tie order
    (``sync_free=True``). The scores come out of the kernel, so that the graph reads them from memory (a
    gather inside the graph is recomputed in every loop that reads it).

    The exclusions travel as their two tensors (``Exclusions.ids``, ``Exclusions.count``): an operator
    takes tensors, not records.
    """
    exclusions = None if excluded_ids is None or excluded_count is None else Exclusions(excluded_ids, excluded_count)
    top = top_indices(scores, k, ties, tie_gains, exclusions, sync_free=True)
    values = top.values if top.values is not None else listed_scores(scores, top.indices, exclusions)
    # contiguous (the strides the fake implementation promises); the list's scores and `following` are often
    # slices of one top-k result, and an operator's outputs must not share storage: copies of their own
    return (top.indices.contiguous(), values.clone(memory_format=torch.contiguous_format),
            top.following.clone(memory_format=torch.contiguous_format))


# the kernel as an operator of its own (a custom operator's object carries no docstring of the function)
top_indices_op = torch.library.custom_op("torchrec_eval::top_indices", mutates_args=())(_top_indices_kernel)


@top_indices_op.register_fake
def _(
    scores: Tensor,
    k: int,
    ties: str,
    tie_gains: Tensor | None,
    excluded_ids: Tensor | None,
    excluded_count: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    rows = scores.shape[0]
    return scores.new_empty((rows, k), dtype=torch.int64), scores.new_empty((rows, k)), scores.new_empty((rows,))
