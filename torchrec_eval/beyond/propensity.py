r"""Propensity-scored precision and NDCG (Jain, Prabhu and Varma, KDD 2016; pyxclib's ``psprecision`` and
``psndcg``): each relevant item in the top k earns its inverse propensity :math:`w_i`, so that a rare (tail)
item found counts more than a popular one, and the sum is normalised by the best the query's own relevant
items could earn in k slots. As pyxclib, the mean over queries is pooled: the sum of the queries' scores over
the sum of their best scores.

.. math:: \mathrm{PSP@k} = \frac{\sum_q \sum_{j \le k} r_{q,j} w_{q,j}}{\sum_q \sum_{j \le k} w^*_{q,j}}, \quad
    \mathrm{PSnDCG@k} = \frac{\sum_q \mathrm{DCG}_w(q) / \mathrm{IDCG}_{\min(R_q, k)}}
    {\sum_q \mathrm{DCG}_{w^*}(q) / \mathrm{IDCG}_{\min(R_q, k)}}

with :math:`w^*_q` the query's relevant items' weights sorted descending, :math:`\mathrm{DCG}_w(q) =
\sum_{j \le k} r_{q,j} w_{q,j} / \log_2(j + 1)` and :math:`\mathrm{IDCG}_m = \sum_{i \le m} 1 / \log_2(i + 1)`
(binary relevance's ideal DCG, pyxclib's ``min(n, cumsum)``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from torchrec_eval.pipeline.batch import RankedTargets
from torchrec_eval.pipeline.tensor_cache import constant


def inverse_propensity(item_counts: Tensor, num_instances: int, a: float = 0.55, b: float = 1.5) -> Tensor:
    r"""Each item's inverse propensity from its training frequency (Jain et al. 2016, pyxclib's
    ``compute_inv_propesity``): :math:`w_i = 1 + C (n_i + B)^{-A}`, :math:`C = (\ln N - 1)(B + 1)^A`.

    Args:
        item_counts: [num_items] training instances (users, documents) holding each item, n_i >= 0.
        num_instances: N, the training instances.
        a, b: A and B (0.55 and 1.5 by default; the XML repository uses 0.5 and 0.4 for Wikipedia, 0.6 and 2.6
            for Amazon).

    Returns:
        [num_items] float64 weights.

    Raises:
        ValueError: on counts that are not a 1-D tensor of finite values >= 0, or N < 1.

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond import inverse_propensity
        >>> inverse_propensity(torch.tensor([0, 1, 100]), num_instances=1000)
        tensor([8.8242, 6.9078, 1.7704], dtype=torch.float64)
    """
    if not isinstance(item_counts, Tensor) or item_counts.ndim != 1 or item_counts.is_complex():
        raise ValueError(f"`item_counts` must be a 1-D real tensor [num_items], got {item_counts!r}")
    counts = item_counts.detach().to(torch.float64)
    if not bool(torch.isfinite(counts).all()) or (counts.numel() and float(counts.min()) < 0):
        raise ValueError(f"`item_counts` must be finite and >= 0, got min={float(counts.min())}")
    if not isinstance(num_instances, int) or isinstance(num_instances, bool) or num_instances < 1:
        raise ValueError(f"`num_instances` must be an int >= 1, got {num_instances!r}")
    scale = (math.log(num_instances) - 1) * (b + 1) ** a
    return 1.0 + scale * (counts + b).pow(-a)


def propensity_scored(ranked: RankedTargets, k: int, weights: Tensor, discounted: bool) -> tuple[Tensor, Tensor]:
    """Per query (float64 [B] each): the top k's sum of the relevant items' ``weights`` [num_items], and the most
    the query's relevant candidates reach in k slots; with ``discounted`` each rank's share is 1 / log2(j + 1)
    and both sums are divided by the binary ideal DCG of min(R, k) (PSnDCG), else by k (PSP)."""
    ids = ranked.listed_ids()[:, :k]
    found = weights[ids.clamp(min=0)] * ranked.relevant[:, :k]  # item -1 past the list is never relevant
    items, relevant = ranked.relevant_item_table()
    best = weights[items.clamp(min=0)] * relevant
    best = torch.topk(best, min(k, best.shape[1]), dim=1).values
    if not discounted:
        return found.sum(1) / k, best.sum(1) / k
    discount = _discounts(k, found.device)
    ideal = torch.cumsum(discount, 0)[(ranked.num_relevant.clamp(min=1, max=k) - 1).long()]
    return (found * discount[: found.shape[1]]).sum(1) / ideal, (best * discount[: best.shape[1]]).sum(1) / ideal


def _discounts(k: int, device: torch.device) -> Tensor:
    """[k] float64 1 / log2(j + 1) for ranks j = 1..k."""
    return constant(("log2_discounts", k, device),
                    lambda: 1.0 / torch.log2(torch.arange(2, k + 2, dtype=torch.float64, device=device)))
