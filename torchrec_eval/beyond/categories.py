r"""The entropy of the categories in each list, plain or rank-biased (LensKit's ``entropy`` and
``rank_biased_entropy``).

Per query ``u`` with top-k list ``L_u`` and an item-by-category table ``C`` (one-hot, or any weights >= 0):

.. math::
    c_j = \sum_{r \le |L_u|} w_r\, C_{L_u(r), j}, \qquad p_j = \frac{c_j + s}{\sum_l (c_l + s)}, \qquad
    H_u = -\sum_j p_j \log_2 p_j

with :math:`w_r = 1` (category entropy) or :math:`p^{r-1}` (rank-biased, ``patience`` p), :math:`0 \log 0 =
0`, and the smoothing ``s`` LensKit adds to every category (1e-6; 0 by default here, so that a list of one
category scores exactly 0).
"""

from __future__ import annotations

import torch
from torch import Tensor

from torchrec_eval.pipeline.tensor_cache import geometric


def category_entropy(table: Tensor, ids: Tensor, patience: float | None, smoothing: float) -> tuple[Tensor, Tensor]:
    """Per list of ``ids`` [B, k] (-1 past a short list): the entropy in bits of its categories (float64 [B],
    0 for an empty list) and whether it is non-empty [B].

    Example:
        >>> import torch
        >>> from torchrec_eval.beyond.categories import category_entropy
        >>> genres = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
        >>> category_entropy(genres, torch.tensor([[0, 1], [0, 2], [-1, -1]]), None, 0.0)
        (tensor([1., 0., 0.], dtype=torch.float64), tensor([ True,  True, False]))
    """
    present = ids >= 0
    weights = present.to(torch.float64)
    if patience is not None:
        weights = weights * geometric(ids.shape[1], patience, ids.device)
    counts = (table[ids.clamp(min=0)] * weights.unsqueeze(2)).sum(1) + smoothing  # [B, categories]
    shares = counts / counts.sum(1, keepdim=True).clamp(min=1e-300)
    entropy = 0.0 - (shares * torch.log2(torch.where(shares > 0, shares, 1.0))).sum(1)  # 0.0 -: no -0.0
    listed = present.any(1)
    return torch.where(listed, entropy, 0.0), listed
