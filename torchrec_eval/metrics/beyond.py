"""The beyond-accuracy metric classes: each a thin :class:`~torchrec_eval.metrics.base.MemberMetric`
over one :class:`~torchrec_eval.beyond.member.BeyondMember` of its family (definitions:
:mod:`torchrec_eval.beyond`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from torch import Tensor

from torchrec_eval.beyond.member import BeyondMember
from torchrec_eval.beyond.registry import REGISTRY
from torchrec_eval.members.conventions import resolve_options
from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.base import MemberMetric

IntOrSeq = int | Sequence[int]


class _Beyond(MemberMetric):
    family: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "family" in vars(cls):  # one source of the direction: the registry
            cls.higher_is_better = REGISTRY[cls.family].higher_is_better

    def __init__(self, k: IntOrSeq, options: dict[str, Any], **kwargs: Unpack[MetricArguments]) -> None:
        ks: list[Any] = list(k) if isinstance(k, (list, tuple)) else [k]  # each checked by the member
        if not ks:
            raise ValueError(f"`k` must be an int or a non-empty sequence of ints, got {k!r}")
        options = resolve_options(kwargs.get("convention"), self.family, options)
        member = BeyondMember([(self.family, one) for one in ks], {self.family: options})
        super().__init__([member], single_key=not isinstance(k, (list, tuple)), **kwargs)
        self._show(**options)


class _OverCatalogue(_Beyond):
    """A family whose only option is the catalogue size."""

    def __init__(self, k: IntOrSeq = 10, *, num_items: int, **kwargs: Unpack[MetricArguments]) -> None:
        super().__init__(k, {"num_items": num_items}, **kwargs)


class Coverage(_OverCatalogue):
    r"""Catalogue coverage@k: the share of the catalogue recommended (in some top k) to anyone.

    .. math:: \mathrm{Coverage@k} = \frac{|\{i : c_i > 0\}|}{N}

    ``c_i``: number of top-k lists containing item ``i``; ``N`` = ``num_items`` (RecBole
    ItemCoverage; RecTools with the catalogue size). For MS Recommenders' ``catalog_coverage`` pass
    the number of distinct training items as ``num_items``. State: ``[G, num_items]`` item counts.
    NaN before any item is recommended (as for a group without queries).

    Args:
        k: cut-off(s).
        num_items: catalogue size ``N``; recommended ids must be ``< num_items``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``num_items``, an item id ``>= num_items``, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import Coverage
        >>> metric = Coverage(k=2, num_items=5)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [1, 3]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(0.6000, dtype=torch.float64)
    """

    family = "coverage"


class GiniIndex(_OverCatalogue):
    r"""Gini index@k of how often each catalogue item is recommended (0 = evenly; lower is better).

    .. math:: \mathrm{Gini@k} = \frac{\sum_{j=1}^{N} (2j - N - 1)\, c_{(j)}}{N \sum_i c_i}

    with ``c_(1) <= ... <= c_(N)`` the item recommendation counts sorted ascending, items never
    recommended counting 0 (RecBole GiniIndex). Ranges from 0 (every item equally often) to
    ``1 - 1/N`` (one item only). NaN before any recommendation.

    Args:
        k: cut-off(s).
        num_items: catalogue size ``N``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``num_items``, an item id ``>= num_items``, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import GiniIndex
        >>> metric = GiniIndex(k=2, num_items=4)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [0, 2]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(0.3750, dtype=torch.float64)
    """

    family = "gini"


class Entropy(_Beyond):
    r"""Shannon entropy@k of the distribution of recommendations over the catalogue.

    .. math:: H@k = -\sum_i p_i \log_b p_i, \qquad p_i = c_i / \sum_j c_j

    Base ``b`` = 2 by default (bits; MS Recommenders' distributional coverage).
    ``normalization="log_num_items"`` divides by ``ln N`` (1 = uniform over the catalogue);
    ``normalization="distinct"`` divides by the number of distinct recommended items (RecBole
    ShannonEntropy, which uses ``base=math.e``).

    Args:
        k: cut-off(s).
        num_items: catalogue size ``N``.
        base: logarithm base (ignored with ``"log_num_items"``).
        normalization: ``"none"`` (default), ``"log_num_items"`` or ``"distinct"``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``num_items``, ``base`` or ``normalization``, an item id
            ``>= num_items``, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import Entropy
        >>> metric = Entropy(k=2, num_items=4)
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [2, 3]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """

    family = "entropy"

    def __init__(
        self,
        k: IntOrSeq = 10,
        *,
        num_items: int,
        base: float = 2.0,
        normalization: str = "none",
        **kwargs: Unpack[MetricArguments],
    ) -> None:
        super().__init__(k, {"num_items": num_items, "base": base, "normalization": normalization}, **kwargs)


class InterListDiversity(_OverCatalogue):
    r"""Inter-list diversity@k: mean pairwise cosine distance between the top-k lists of queries.

    .. math::
        \mathrm{ILD_{inter}@k} = 1 - \frac{2}{n(n-1)} \sum_{u<v} \frac{|L_u \cap L_v|}{\sqrt{|L_u|\,|L_v|}}

    over the ``n`` queries with a non-empty list (Jurity's definition, computed exactly rather than
    by sampling users): with full lists, ``1 - sum_i c_i (c_i - 1) / (k n (n - 1))``. Exact for
    short lists from two weighted item-count vectors (see :mod:`torchrec_eval.beyond`). NaN with
    fewer than two lists; with groups, pairs are formed within each group.

    Args:
        k: cut-off(s).
        num_items: catalogue size ``N``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``num_items``, an item id ``>= num_items``, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import InterListDiversity
        >>> metric = InterListDiversity(k=2, num_items=5)
        >>> ranked = torch.tensor([[0, 1], [1, 2], [3, 4]])
        >>> metric.update(ranked_ids=ranked, target_ids=torch.tensor([[0], [1], [2]]))
        >>> metric.compute()
        tensor(0.8333, dtype=torch.float64)
    """

    family = "inter_list_diversity"


class IntraListDiversity(_Beyond):
    r"""Intra-list diversity@k: mean pairwise distance between the items of each top-k list.

    .. math:: \mathrm{ILD@k} = \operatorname{mean}_{u : |L_u| \ge 2}\;
        \frac{2}{|L_u|(|L_u|-1)} \sum_{i<j \in L_u} \big(1 - \mathrm{sim}(i, j)\big)

    ``sim`` is the cosine of ``item_features`` rows (a zero row has similarity 0), or read from
    ``item_similarity`` (e.g. :func:`cooccurrence_similarity` of the training interactions, as in
    MS Recommenders). Lists with fewer than two items are not counted (Jurity, MS Recommenders);
    with ``single_item="zero"`` (RecTools, and its preset) a one-item list counts as 0.

    ``featureless="nan"`` (RecTools, and its preset) accepts NaN: an item whose ``item_features`` row
    holds a NaN has no features, and a NaN similarity an unknown one; a pair with such a distance is
    left out of its list's mean (RecTools' distance is NaN there and pandas' mean skips it), and a list
    of two or more items without any known pair is not counted (RecTools' per-user NaN, left out of
    its mean). RecTools' own distance is Hamming's: pass ``item_similarity = 1 - D`` for a distance
    matrix ``D``.

    Args:
        k: cut-off(s).
        item_features: ``[num_items, d]`` float item vectors, or
        item_similarity: ``[num_items, num_items]`` float similarity matrix (exactly one of the two).
        single_item: ``"skip"`` (default) or ``"zero"``: how a one-item list counts.
        featureless: ``"error"`` (default: NaN in the table raises) or ``"nan"`` (above).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: unless exactly one of ``item_features``/``item_similarity`` is a finite float
            matrix of the right shape (NaN allowed with ``featureless="nan"``); on a bad
            ``single_item`` or ``featureless``, an item id out of its range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import IntraListDiversity
        >>> features = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> metric = IntraListDiversity(k=3, item_features=features)
        >>> ranked = torch.tensor([[0, 1, 2], [0, 2, -1]])
        >>> metric.update(ranked_ids=ranked, target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(0.4107, dtype=torch.float64)
    """

    family = "intra_list_diversity"

    def __init__(
        self,
        k: IntOrSeq = 10,
        *,
        item_features: Tensor | None = None,
        item_similarity: Tensor | None = None,
        single_item: str | None = None,
        featureless: str | None = None,
        **kwargs: Unpack[MetricArguments],
    ) -> None:
        options = {"item_features": item_features, "item_similarity": item_similarity, "single_item": single_item,
                   "featureless": featureless}
        super().__init__(k, options, **kwargs)


class Novelty(_Beyond):
    r"""Novelty@k: mean self-information of the recommended items, in bits.

    .. math:: \mathrm{Novelty@k} = \operatorname{mean}_{u : |L_u| > 0}\;
        \frac{1}{|L_u|} \sum_{i \in L_u} -\log_2 p_i

    ``p_i = pop_i / num_users`` with ``num_users`` (RecTools), else ``pop_i / sum(pop)`` (MS
    Recommenders; also right for ``item_popularity`` given as probabilities). Items with
    popularity 0 (cold items) get the self-information of the least popular observed item, or with
    ``cold_items="one_user"`` (RecTools, and its preset) that of an item one user interacted with.

    Args:
        k: cut-off(s).
        item_popularity: ``[num_items]`` training counts (e.g.
            :func:`torchrec_eval.data.interactions.item_popularity`) or probabilities.
        num_users: number of training users when ``item_popularity`` counts users per item.
        cold_items: ``"least_popular"`` (default) or ``"one_user"``; ``convention="rectools"`` sets it.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_popularity`` (not 1-D, negative, all 0) or
            ``num_users``, an item id out of range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import Novelty
        >>> metric = Novelty(k=2, item_popularity=torch.tensor([4.0, 2.0, 1.0, 1.0]))
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [2, 3]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(2.2500, dtype=torch.float64)
    """

    family = "novelty"

    def __init__(
        self,
        k: IntOrSeq = 10,
        *,
        item_popularity: Tensor,
        num_users: int | None = None,
        cold_items: str | None = None,
        **kwargs: Unpack[MetricArguments],
    ) -> None:
        options = {"item_popularity": item_popularity, "num_users": num_users, "cold_items": cold_items}
        super().__init__(k, options, **kwargs)


class Serendipity(_Beyond):
    r"""Serendipity@k: share of the top k that is relevant and not recommended by a popularity baseline.

    .. math:: \mathrm{Serendipity@k} = \frac{1}{k} \sum_{i \le k} r_i \, \mathbb{1}[\mathrm{item}_i \notin
        \mathrm{Pop}_b]

    ``Pop_b``: the ``b`` most popular items by ``item_popularity`` (``baseline_size``, default ``k``;
    ties: lower id first), the primitive recommender of Ge, Delgado-Battenfeld and Jannach (2010).
    Relevance follows ``relevance_threshold``; queries with no relevant item follow
    ``empty_target_action`` (as Precision@k).

    Args:
        k: cut-off(s).
        item_popularity: ``[num_items]`` training counts or probabilities.
        baseline_size: size ``b`` of the popular list (default: ``k``).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_popularity`` or ``baseline_size``, an item id out of
            range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import Serendipity
        >>> metric = Serendipity(k=2, item_popularity=torch.tensor([9.0, 5.0, 1.0, 1.0]))
        >>> metric.update(torch.tensor([[0.9, 0.1, 0.8, 0.0]]), torch.tensor([[1, 0, 1, 0]]))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    family = "serendipity"

    def __init__(
        self, k: IntOrSeq = 10, *, item_popularity: Tensor, baseline_size: int | None = None,
        **kwargs: Unpack[MetricArguments],
    ) -> None:
        super().__init__(k, {"item_popularity": item_popularity, "baseline_size": baseline_size}, **kwargs)


class AveragePopularity(_Beyond):
    r"""Average popularity@k of the recommended items (RecBole AveragePopularity; popularity bias).

    .. math::
        \mathrm{ARP@k} = \operatorname{mean}_{u : |L_u| > 0}\; \frac{1}{|L_u|} \sum_{i \in L_u} \mathrm{pop}_i

    Args:
        k: cut-off(s).
        item_popularity: ``[num_items]`` training counts (or any popularity score), used as given.
        all_zero: ``"error"`` (default): an ``item_popularity`` of only 0s raises (it is most often an
            empty or misaligned training split); ``"zero"``: accepted, every value is then 0, as
            RecTools' ``AvgRecPopularity`` gives without previous interactions (its preset sets it).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_popularity`` or ``all_zero``, an item id out of range, and
            bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import AveragePopularity
        >>> metric = AveragePopularity(k=2, item_popularity=torch.tensor([4.0, 2.0, 1.0, 1.0]))
        >>> metric.update(ranked_ids=torch.tensor([[0, 1], [2, -1]]), target_ids=torch.tensor([[0], [2]]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """

    family = "average_popularity"

    def __init__(
        self, k: IntOrSeq = 10, *, item_popularity: Tensor, all_zero: str | None = None,
        **kwargs: Unpack[MetricArguments],
    ) -> None:
        super().__init__(k, {"item_popularity": item_popularity, "all_zero": all_zero}, **kwargs)
