r"""How much two ranked lists of each query agree: RecTools' ``Intersection``, the Jaccard index of the two
top-k sets, and rank-biased overlap (LensKit's ``rank_biased_overlap``; Webber, Moffat and Zobel's
:math:`\mathrm{RBO_{ext}}`).

Inputs, per query: ``ids`` [B, K] the evaluated model's items in rank order and ``reference`` [B, R] the
reference model's, ``-1`` past a short list (real ids first, as the pipeline leaves them). :math:`A` is the
top k of ``ids``, :math:`B` the top k (or ``ref_k``) of ``reference``, :math:`A_{:d}` the first d items of A
(all of A when d > |A|), and the overlap at depth d is :math:`X_d = |A_{:d} \cap B_{:d}|`.

* ``intersection@k`` = :math:`|A \cap B_{:\mathrm{ref\_k}}| \,/\, |A|` (RecTools ``Intersection``: the
  reference list's Recall@ref_k with the top k of ``reco`` as the relevant items, so it divides by the
  length of A, which is k unless the list is shorter). A query with an empty A has no value (RecTools has
  no row for it); an empty reference list scores 0.
* ``jaccard@k`` = :math:`|A \cap B| \,/\, |A \cup B|`; two empty lists have no value, one empty list scores 0.
* ``rbo@k`` (LensKit, ``variant="lenskit"``) = :math:`\sum_{d=1}^{k} p^{d-1} X_d / d \,\big/\,
  \sum_{d=1}^{k} p^{d-1}`: the truncated RBO sum normalised by the weight of depths 1..k, so that two
  identical lists of at least k items score 1 (a list shorter than k keeps dividing by d: two identical
  lists of 3 items score less than 1 at k = 10). Any empty list scores 0 (LensKit's tests), and every
  query counts.
* ``rbo@k`` with ``variant="ext"``: :math:`\mathrm{RBO_{ext}}` (Webber et al. 2010, eq. 32) of A and B cut at
  k, for lists of uneven lengths: with S the shorter of length s and L the longer of length l,

  .. math:: \frac{1-p}{p}\Big(\sum_{d=1}^{l} \frac{X_d}{d} p^d + \sum_{d=s+1}^{l} \frac{X_s (d-s)}{s\,d} p^d\Big)
      + \Big(\frac{X_l - X_s}{l} + \frac{X_s}{s}\Big) p^l

  (for d > s, :math:`X_d` counts all of S). Identical lists score 1 at any length, and so does a list that
  is a prefix of the other. An empty list scores 0 here too.

Every value is a function of each item's pair of positions: its 0-based position i in A and its position j
in B (absent: past every depth). The item lies in both prefixes of depth d exactly when max(i, j) < d, so
:math:`X_d` is a cumulative count of max(i, j) over A's items. No [B, K, R] tensor is formed: A's items are
looked up among B's sorted ids.
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.forms.ids import lookup
from torchrec_eval.pipeline.tensor_cache import geometric, ranks
from torchrec_eval.pipeline.tensor_cache import positions as list_positions

__all__ = ["ABSENT", "intersection", "jaccard", "overlap_at_depths", "rank_biased_overlap", "reference_positions"]


#: the position of an item that is not in the reference list: past every cut-off
ABSENT = 1 << 62


def reference_positions(ids: Tensor, reference: Tensor) -> Tensor:
    """[B, K] the 0-based position in ``reference`` [B, R] of each item of ``ids`` [B, K] (int64), and
    :data:`ABSENT` (past every cut-off) where the item is not in ``reference`` or is padding.

    Example:
        >>> import torch
        >>> reference_positions(torch.tensor([[5, 3, 9, -1]]), torch.tensor([[3, 4, 5]])).tolist()
        [[2, 0, 4611686018427387904, 4611686018427387904]]
    """
    found, pos, order = lookup(ids, reference)
    absent = ~found | (ids < 0)
    return order.gather(1, pos).masked_fill(absent, ABSENT)


def intersection(positions: Tensor, ids: Tensor, k: int, ref_k: int) -> tuple[Tensor, Tensor]:
    """RecTools' Intersection@k per query: the share of the top ``k`` of ``ids`` found in the top ``ref_k`` of
    the reference list (``positions`` from :func:`reference_positions`); float64 [B] values (0 where not
    counted) and whether each query counts [B] (a non-empty top k).

    Example:
        >>> import torch
        >>> ids, reference = torch.tensor([[1, 2, 3], [4, -1, -1], [-1, -1, -1]]), torch.tensor([[3, 1, 7]] * 3)
        >>> intersection(reference_positions(ids, reference), ids, 3, 2)
        (tensor([0.6667, 0.0000, 0.0000], dtype=torch.float64), tensor([ True,  True, False]))
    """
    listed = ids[:, :k] >= 0
    common = ((positions[:, :k] < ref_k) & listed).sum(1, dtype=torch.float64)
    length = listed.sum(1, dtype=torch.float64)
    counted = length > 0
    return torch.where(counted, common / length.clamp(min=1), 0.0), counted


def jaccard(positions: Tensor, ids: Tensor, reference: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The Jaccard index of the two top-``k`` sets per query: float64 [B] values (0 where not counted) and
    whether each query counts [B] (not both lists empty).

    Example:
        >>> import torch
        >>> ids, reference = torch.tensor([[1, 2, 3], [-1, -1, -1]]), torch.tensor([[3, 1, 7], [-1, -1, -1]])
        >>> jaccard(reference_positions(ids, reference), ids, reference, 3)
        (tensor([0.5000, 0.0000], dtype=torch.float64), tensor([ True, False]))
    """
    common = (positions[:, :k] < k).sum(1, dtype=torch.float64)
    union = (ids[:, :k] >= 0).sum(1, dtype=torch.float64) + (reference[:, :k] >= 0).sum(1, dtype=torch.float64) - common
    counted = union > 0
    return torch.where(counted, common / union.clamp(min=1), 0.0), counted


def overlap_at_depths(positions: Tensor, depth: int) -> Tensor:
    """[B, depth] float64 :math:`X_d` for d = 1..depth: the number of items in both lists' first d items
    (``positions`` from :func:`reference_positions`, the reference list ranked at least ``depth`` deep).

    Example:
        >>> import torch
        >>> ids, reference = torch.tensor([[1, 2, 3]]), torch.tensor([[2, 1, 4]])
        >>> overlap_at_depths(reference_positions(ids, reference), 3)
        tensor([[0., 2., 2.]], dtype=torch.float64)
    """
    rows, width = positions.shape
    own = list_positions(width, positions.device)
    deepest = torch.maximum(positions, own)[:, :depth].clamp(max=depth)  # depth: a spare column, never read
    counts = torch.zeros(rows, depth + 1, dtype=torch.float64, device=positions.device)
    counts.scatter_add_(1, deepest, torch.ones_like(deepest, dtype=torch.float64))
    return counts[:, :depth].cumsum(1)


def rank_biased_overlap(overlap: Tensor, own_length: Tensor, reference_length: Tensor, k: int, patience: float,
                        variant: str) -> Tensor:
    """RBO@k per query from the overlaps ``overlap`` [B, >= k] (:func:`overlap_at_depths`) and the two lists'
    lengths [B]: LensKit's normalised truncated sum (``variant="lenskit"``) or Webber et al.'s
    :math:`\\mathrm{RBO_{ext}}` of the lists cut at k (``"ext"``); 0 where a list is empty. float64 [B], in [0, 1].

    Example:
        >>> import torch
        >>> ids, reference = torch.tensor([[1, 2, 3]]), torch.tensor([[1, 2, 3]])
        >>> overlap = overlap_at_depths(reference_positions(ids, reference), 5)
        >>> lengths = torch.tensor([3])
        >>> [rank_biased_overlap(overlap, lengths, lengths, k, 0.5, "lenskit").item() for k in (3, 5)]
        [1.0, 0.970967741935484]
        >>> rank_biased_overlap(overlap, lengths, lengths, 5, 0.5, "ext").item()
        1.0
    """
    device = overlap.device
    x = overlap[:, :k]
    depths = ranks(k, device)
    weights = geometric(k, patience, device)  # p^(d - 1)
    own, other = own_length.clamp(max=k), reference_length.clamp(max=k)
    listed = (own > 0) & (other > 0)
    if variant == "lenskit":
        value = (x / depths * weights).sum(1) / weights.sum()
        return torch.where(listed, value, 0.0)
    short, long = torch.minimum(own, other), torch.maximum(own, other)  # s and l of eq. 32
    s_len, l_len = short.to(torch.float64).unsqueeze(1), long.to(torch.float64).unsqueeze(1)
    x_s = x.gather(1, (short - 1).clamp(min=0).unsqueeze(1))
    x_l = x.gather(1, (long - 1).clamp(min=0).unsqueeze(1))
    powers = weights * patience  # p^d
    within = depths <= l_len
    first = torch.where(within, x / depths * powers, 0.0).sum(1)
    past_short = within & (depths > s_len)
    second = torch.where(past_short, x_s * (depths - s_len) / (s_len.clamp(min=1) * depths) * powers, 0.0).sum(1)
    tail = ((x_l - x_s) / l_len.clamp(min=1) + x_s / s_len.clamp(min=1)).squeeze(1) * torch.pow(patience, l_len.squeeze(1))
    value = (1 - patience) / patience * (first + second) + tail
    return torch.where(listed, value.clamp(0.0, 1.0), 0.0)
