r"""Intent-aware diversity: AlphaNDCG, AlphaDCG, ERRIA, NERRIA, PrecisionIA, SubtopicRecall, AveragePrecisionIA, NRBP
and NNRBP (TREC's ``ndeval``: alpha-nDCG, alpha-DCG, ERR-IA, nERR-IA, P-IA, strec, MAP-IA, NRBP and nNRBP), thin
classes over the beyond registry's formulas (:mod:`torchrec_eval.beyond.intents`), as
:mod:`~torchrec_eval.metrics.beyond`'s."""

from __future__ import annotations

from typing import Unpack

from torch import Tensor

from torchrec_eval.metrics.arguments import MetricArguments
from torchrec_eval.metrics.beyond import IntOrSeq, _Beyond

__all__ = ["CLASSES", "NNRBP", "NRBP", "AlphaDCG", "AlphaNDCG", "AveragePrecisionIA", "ERRIA", "NERRIA",
           "PrecisionIA", "SubtopicRecall"]


class _IntentAware(_Beyond):
    """A family over the items' intents, ``item_intents``, with ndeval's redundancy penalty ``alpha``."""

    def __init__(self, k: IntOrSeq = 10, *, item_intents: Tensor, alpha: float | None = None,
                 **kwargs: Unpack[MetricArguments]) -> None:
        options: dict[str, object] = {"item_intents": item_intents}
        if alpha is not None:
            options["alpha"] = alpha
        super().__init__(k, options, **kwargs)


class AlphaNDCG(_IntentAware):
    r"""alpha-nDCG@k (Clarke et al., SIGIR 2008), as TREC's ``ndeval`` (ir-measures' ``alpha_nDCG``): NDCG whose
    gain at rank i counts each intent the item covers, (1 - alpha) less for every item above that covered it,
    over the DCG of ndeval's greedy ideal list.

    .. math:: G_i = \sum_s J_{i s} (1 - \alpha)^{c_s(i - 1)}, \quad
        \alpha\text{-nDCG@k} = \frac{\sum_{i \le k} G_i / \log_2(i + 1)}{\sum_{i \le k} G^*_i / \log_2(i + 1)}

    :math:`J_{i s} = 1` when the item at rank i is relevant and has intent s (``item_intents``), :math:`c_s(i -
    1)` the items above it that cover s, and :math:`G^*` the gains of the ideal list, built as ndeval does: each
    rank takes the relevant candidate of the largest marginal gain (ties: the larger item id). A query whose
    relevant items cover no intent scores 0; one without a relevant item follows ``empty_target_action``. The
    greedy ideal is an approximation (the exact one is NP-hard), so a list can score above 1.

    Args:
        k: cut-off(s) (ndeval reports 5, 10 and 20, and stops at 20).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents (subtopics, categories) of each item.
        alpha: the redundancy penalty in [0, 1], 0.5 by default (ndeval's).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents`` or ``alpha``, an item id out of range, and bad input in
            ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import AlphaNDCG
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])  # item 3 has both intents
        >>> metric = AlphaNDCG(k=2, item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> metric.compute()  # gains 1, 0.5; the ideal's 1, 1 (items 2 and 1): (1 + 0.5 / log2(3)) / (1 + 1 / log2(3))
        tensor(0.8066, dtype=torch.float64)
    """

    family = "alpha_ndcg"


class AlphaDCG(_IntentAware):
    r"""alpha-DCG@k (Clarke et al., SIGIR 2008), as TREC's ``ndeval`` reports it (ir-measures' ``alpha_DCG``):
    :class:`AlphaNDCG`'s discounted gains over ndeval's "ideal ideal" (its collection-independent normalisation,
    as :class:`ERRIA`'s), a list whose every item covers all S intents the query's relevant items cover, not over
    the greedy ideal list.

    .. math:: \alpha\text{-DCG@k} = \frac{\sum_{i \le k} G_i / \log_2(i + 1)}
        {S \sum_{i \le k} (1 - \alpha)^{i - 1} / \log_2(i + 1)}, \quad
        G_i = \sum_s J_{i s} (1 - \alpha)^{c_s(i - 1)}

    As ndeval, whose normalising loop starts at the second rank, alpha-DCG@1 is not divided: it is :math:`G_1`,
    the number of intents the first item covers (it may exceed 1). A query whose relevant items cover no intent
    scores 0; one without a relevant item follows ``empty_target_action``.

    Args:
        k: cut-off(s) (ndeval reports 5, 10 and 20, and stops at 20).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1], 0.5 by default (ndeval's).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents`` or ``alpha``, an item id out of range, and bad input in
            ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import AlphaDCG
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> metric = AlphaDCG(k=[1, 3], item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> metric.compute()  # @1: G_1 = 1; @3: (1 + 0.5 / log2(3) + 1 / 2) / (2 (1 + 0.5 / log2(3) + 0.25 / 2))
        {'alpha_dcg@1': tensor(1., dtype=torch.float64), 'alpha_dcg@3': tensor(0.6302, dtype=torch.float64)}
    """

    family = "alpha_dcg"


class ERRIA(_IntentAware):
    r"""ERR-IA@k (Chapelle et al., CIKM 2009), as TREC's ``ndeval`` (ir-measures' ``ERR_IA``): :class:`AlphaNDCG`'s
    gains discounted by 1 / i, over ndeval's "ideal ideal" (collection-independent normalisation): a list whose
    every item covers all S intents the query's relevant items cover.

    .. math:: \mathrm{ERR\text{-}IA@k} = \frac{\sum_{i \le k} G_i / i}{S \sum_{i \le k} (1 - \alpha)^{i - 1} / i}

    As ndeval, whose normalising loop starts at the second rank, ERR-IA@1 is not divided: it is :math:`G_1`, the
    number of intents the first item covers (it may exceed 1). A query whose relevant items cover no intent
    scores 0; one without a relevant item follows ``empty_target_action``.

    Args:
        k: cut-off(s).
        item_intents: ``[num_items, intents]`` 0s and 1s.
        alpha: the redundancy penalty in [0, 1], 0.5 by default (ir-measures' ``ERR_IA`` fixes it at 0.5).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents`` or ``alpha``, an item id out of range, and bad input in
            ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import ERRIA
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> metric = ERRIA(k=2, item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> metric.compute()  # (1 + 0.5 / 2) / (2 (1 + 0.5 / 2))
        tensor(0.5000, dtype=torch.float64)
    """

    family = "err_ia"


class NERRIA(_IntentAware):
    r"""nERR-IA@k, as TREC's ``ndeval`` (ir-measures' ``nERR_IA``): :class:`ERRIA`'s sum over that of ndeval's
    greedy ideal list (collection-dependent normalisation, as :class:`AlphaNDCG`'s).

    .. math:: \mathrm{nERR\text{-}IA@k} = \frac{\sum_{i \le k} G_i / i}{\sum_{i \le k} G^*_i / i}

    Args:
        k: cut-off(s).
        item_intents: ``[num_items, intents]`` 0s and 1s.
        alpha: the redundancy penalty in [0, 1], 0.5 by default.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents`` or ``alpha``, an item id out of range, and bad input in
            ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import NERRIA
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> metric = NERRIA(k=2, item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> metric.compute()  # (1 + 0.5 / 2) / (1 + 1 / 2)
        tensor(0.8333, dtype=torch.float64)
    """

    family = "nerr_ia"


class _IntentCounts(_Beyond):
    """A family that counts what the top k covers of the items' intents, ``item_intents`` (no redundancy penalty)."""

    def __init__(self, k: IntOrSeq = 10, *, item_intents: Tensor, **kwargs: Unpack[MetricArguments]) -> None:
        super().__init__(k, {"item_intents": item_intents}, **kwargs)


class PrecisionIA(_IntentCounts):
    r"""P-IA@k, intent-aware precision, as TREC's ``ndeval`` (ir-measures' ``P_IA``): each intent's precision at k,
    averaged over the S intents that the query's relevant items cover.

    .. math:: \mathrm{P\text{-}IA@k} = \frac{1}{S} \sum_s \frac{1}{k} \sum_{i \le k} J_{i s}

    :math:`J_{i s} = 1` when the item at rank i is relevant and has intent s (``item_intents``); a list shorter than
    k still divides by k (ndeval's). A query whose relevant items cover no intent scores 0; one without a relevant
    item follows ``empty_target_action``.

    Args:
        k: cut-off(s) (ndeval reports 5, 10 and 20).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents (subtopics, categories) of each item.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``item_intents``, an item id out of range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import PrecisionIA
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> metric = PrecisionIA(k=2, item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> metric.compute()  # intent 0: 2 of the top 2, intent 1: none; (2/2 + 0/2) / 2
        tensor(0.5000, dtype=torch.float64)
    """

    family = "p_ia"


class SubtopicRecall(_IntentCounts):
    r"""Subtopic recall@k (strec@k, Zhai et al. 2003), as TREC's ``ndeval`` (ir-measures' ``StRecall``): the share of
    the S intents that the query's relevant items cover which some relevant item of the top k covers.

    .. math:: \mathrm{strec@k} = \frac{|\{s : \exists\, i \le k,\ J_{i s} = 1\}|}{S}

    A query whose relevant items cover no intent scores 0; one without a relevant item follows
    ``empty_target_action``.

    Args:
        k: cut-off(s) (ndeval reports 5, 10 and 20).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``item_intents``, an item id out of range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import SubtopicRecall
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> metric = SubtopicRecall(k=[2, 3], item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> {key: value.item() for key, value in metric.compute().items()}  # intent 1 from rank 3
        {'strec@2': 0.5, 'strec@3': 1.0}
    """

    family = "strec"


class AveragePrecisionIA(_IntentCounts):
    r"""AP-IA@k, intent-aware average precision, as TREC's ``ndeval`` reports MAP-IA (ir-measures' ``AP_IA``): each
    intent's average precision over the relevant items that cover it, averaged over the S intents that the query's
    relevant items cover.

    .. math:: \mathrm{AP\text{-}IA@k} = \frac{1}{S} \sum_{s : R_s > 0} \frac{1}{R_s} \sum_{i \le k} J_{i s}
        \frac{\sum_{j \le i} J_{j s}}{i}

    :math:`R_s` is the number of the query's relevant items with intent s (ndeval's ``nrelSub``); ndeval ranks the
    whole run (k at least the list's length gives its value). A query whose relevant items cover no intent scores 0;
    one without a relevant item follows ``empty_target_action``.

    Args:
        k: cut-off(s).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or ``item_intents``, an item id out of range, and bad input in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import AveragePrecisionIA
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> metric = AveragePrecisionIA(k=3, item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> metric.compute()  # intent 0: (1/1 + 2/2) / 2, intent 1: (1/3) / 1; their mean
        tensor(0.6667, dtype=torch.float64)
    """

    family = "ap_ia"


class _PatientIntents(_Beyond):
    """A family over the items' intents with ndeval's redundancy penalty ``alpha`` and patience ``beta``."""

    def __init__(self, k: IntOrSeq = 10, *, item_intents: Tensor, alpha: float | None = None,
                 beta: float | None = None, **kwargs: Unpack[MetricArguments]) -> None:
        options: dict[str, object] = {"item_intents": item_intents}
        options |= {name: value for name, value in (("alpha", alpha), ("beta", beta)) if value is not None}
        super().__init__(k, options, **kwargs)


class NRBP(_PatientIntents):
    r"""NRBP@k, novelty- and rank-biased precision (Clarke, Kolla & Vechtomova, ICTIR 2009), as TREC's ``ndeval``
    (ir-measures' ``NRBP``): RBP whose gain at rank i is alpha-nDCG's intent-aware :math:`G_i`, over the S intents.

    .. math:: \mathrm{NRBP@k} = \frac{1 - (1 - \alpha)\beta}{S} \sum_{i \le k} \beta^{i - 1} G_i, \quad
        G_i = \sum_s J_{i s} (1 - \alpha)^{c_s(i - 1)}

    ndeval sums the whole run (k at least the list's length gives its value). A query whose relevant items cover
    no intent scores 0; one without a relevant item follows ``empty_target_action``.

    Args:
        k: cut-off(s).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1], 0.5 by default (ndeval's).
        beta: the patience in [0, 1], 0.5 by default (ndeval's).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents``, ``alpha`` or ``beta``, an item id out of range, and bad input
            in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import NRBP
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> metric = NRBP(k=3, item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> metric.compute()  # gains 1, 0.5, 1: (1 - 0.25) (1 + 0.5 * 0.5 + 0.25 * 1) / 2
        tensor(0.5625, dtype=torch.float64)
    """

    family = "nrbp"


class NNRBP(_PatientIntents):
    r"""nNRBP@k, NRBP over the NRBP of ndeval's greedy ideal list (ir-measures' ``nNRBP``), as ``ndeval``'s
    ``renormalize``.

    .. math:: \mathrm{nNRBP@k} = \frac{\sum_{i \le k} \beta^{i - 1} G_i}{\sum_{i \le k} \beta^{i - 1} G^*_i}

    :math:`G^*` the gains of the greedy ideal list (as :class:`~torchrec_eval.AlphaNDCG`'s). A list that gains
    nothing scores 0; a query without a relevant item follows ``empty_target_action``.

    Args:
        k: cut-off(s).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1], 0.5 by default (ndeval's).
        beta: the patience in [0, 1], 0.5 by default (ndeval's).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents``, ``alpha`` or ``beta``, an item id out of range, and bad input
            in ``update``.

    Example:
        >>> import torch
        >>> from torchrec_eval import NNRBP
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> metric = NNRBP(k=3, item_intents=intents)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]))
        >>> metric.compute()  # (1 + 0.25 + 0.25) / (1 + 0.5 + 0.125): the ideal's gains 1, 1, 0.5
        tensor(0.9231, dtype=torch.float64)
    """

    family = "nnrbp"


#: the class of each intent-aware family (the functions of :mod:`torchrec_eval.functional.intents`)
CLASSES: dict[str, type[_IntentAware] | type[_IntentCounts] | type[_PatientIntents]] = {
    "alpha_ndcg": AlphaNDCG, "alpha_dcg": AlphaDCG, "err_ia": ERRIA, "nerr_ia": NERRIA, "p_ia": PrecisionIA,
    "strec": SubtopicRecall, "ap_ia": AveragePrecisionIA, "nrbp": NRBP, "nnrbp": NNRBP}
