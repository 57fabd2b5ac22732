"""The top-k classes of the peers' families: ERR, RBP, SDCG and NCRR (user models), SetF, NumRet and NumRelRet
(the top k as a set), IPrec and InterpolatedAP (interpolated precision), FallOut (torchmetrics'), Bpref, Judged and
InfAP (incomplete judgments: trec_eval's bpref and infAP, ir-measures' Judged@k). Thin classes over the registry's
formulas, as :mod:`~torchrec_eval.metrics.topk`'s; their functions are in
:mod:`torchrec_eval.ranking.functional_peers`."""

from __future__ import annotations

from typing import Unpack

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, _TopK

__all__ = ["ERR", "NCRR", "RBP", "SDCG", "Bpref", "FallOut", "InfAP", "InterpolatedAP", "IPrec", "Judged", "NumRel",
           "NumRelRet", "NumRet", "SetF"]



class ERR(_TopK):
    r"""ERR@k, expected reciprocal rank (Chapelle et al. 2009):
    :math:`\sum_{i \le k} \frac{1}{i} s_i \prod_{j < i} (1 - s_j)`, :math:`s_i = (2^{g_i} - 1) / 2^{g_{max}}`.

    Args:
        k: cut-off(s).
        max_grade: the top grade :math:`g_{max}` (a number >= 1, default 4 as gdeval); a larger gain
            is refused in ``update``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not
            ``ties="average"`` (a product over ranks has no exact expectation over tie orders here).

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.ERR(k=3, max_grade=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 3]]))
        >>> metric.compute()  # 1/8 + (7/8)(7/8)/3
        tensor(0.3802, dtype=torch.float64)
    """

    name = "err"

    def __init__(self, k: IntOrSeq = 10, *, max_grade: float | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"max_grade": max_grade}, **kwargs)


class RBP(_TopK):
    r"""RBP@k, rank-biased precision (Moffat & Zobel 2008): :math:`(1 - p) \sum_{i \le k} r_i p^{i-1}`.

    Args:
        k: cut-off(s).
        p: the patience, in (0, 1); 0.8 by default (ranx, ir-measures).
        normalize: divide :math:`\sum_{i \le k} r_i p^{i-1}` by its most with the query's relevant items,
            :math:`\sum_{i \le \min(R, k, n)} p^{i-1}` (LensKit's ``normalize=True``).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.RBP(k=3, p=0.5)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 3]]))
        >>> metric.compute()  # 0.5 (1 + 0.25)
        tensor(0.6250, dtype=torch.float64)
    """

    name = "rbp"

    def __init__(self, k: IntOrSeq = 10, *, p: float | None = None, normalize: bool | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"p": p, "normalize": normalize}, **kwargs)


class SDCG(_TopK):
    r"""SDCG@k, scaled DCG (cwl_eval): DCG@k over the DCG of k items of the top grade,
    :math:`\sum_{i \le k} \frac{g_i}{\log_2(i + 1)} / (g_{max} \sum_{i \le k} \frac{1}{\log_2(i + 1)})`.

    Args:
        k: cut-off(s).
        max_grade: the top grade :math:`g_{max}` (a number >= 1; a larger gain is refused in ``update``),
            or None (default): :math:`g_i` is the relevance :math:`r_i`, 0 or 1.
        log_base: base of the discount, 2 by default.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.SDCG(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # 1 / (1 + 1 / log2(3))
        tensor(0.6131, dtype=torch.float64)
    """

    name = "sdcg"

    def __init__(self, k: IntOrSeq = 10, *, max_grade: float | None = None, log_base: float | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"max_grade": max_grade, "log_base": log_base}, **kwargs)


class NCRR(_TopK):
    r"""NCRR@k, normalized cumulative reciprocal rank (cornac):
    :math:`\sum_{i \le k} r_i / i \;/\; \sum_{i \le \min(R, k, n)} 1 / i` (n the list's length).

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NCRR(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # (1 + 1/3) / (1 + 1/2)
        tensor(0.8889, dtype=torch.float64)
    """

    name = "ncrr"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


class SetF(_TopK):
    r"""SetF@k, the F-measure of the top k as a set: :math:`(1 + \beta^2) P R / (\beta^2 P + R)`, P = hits /
    min(k, n), R = hits / R; 0 without hits.

    Args:
        k: cut-off(s).
        beta: recall weighs :math:`\beta` times as much as precision (a number > 0, default 1).
            trec_eval's and ir-measures' ``set_F.x`` write :math:`x = \beta^2`.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.SetF(k=3, beta=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # 5 * 2 / (4 * 2 + 3)
        tensor(0.9091, dtype=torch.float64)
    """

    name = "setf"

    def __init__(self, k: IntOrSeq = 10, *, beta: float | None = None, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"beta": beta}, **kwargs)


class NumRet(_TopK):
    r"""NumRet@k: the items retrieved within the cut-off, :math:`\min(k, n)`; its mean over queries.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NumRet(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, float("-inf"), float("-inf")]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()  # two candidates
        tensor(2., dtype=torch.float64)
    """

    name = "num_ret"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


class NumRel(_TopK):
    r"""NumRel: the query's relevant candidates R, their mean over queries (trec_eval's ``num_rel``, which it
    sums over queries). It takes no cut-off.

    Args:
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NumRel()
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """

    name = "num_rel"

    def __init__(self, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(None, None, **kwargs)


class NumRelRet(_TopK):
    r"""NumRelRet@k: the relevant items within the cut-off, :math:`\sum_{i \le k} r_i`; its mean over queries.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NumRelRet(k=3)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(2., dtype=torch.float64)
    """

    name = "num_rel_ret"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


class IPrec(_TopK):
    r"""IPrec@k, interpolated precision at recall level p (trec_eval's ``iprec_at_recall``): the most
    precision over the ranks :math:`\le k` at or after the c-th relevant item, :math:`c = \lfloor pR + 0.9
    \rfloor`; 0 where the top k holds fewer.

    Args:
        k: cut-off(s).
        recall: the recall level p in [0, 1] (0 by default).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not
            ``ties="average"``.

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.IPrec(k=5, recall=0.6)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]]), torch.tensor([[0, 1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(0.4000, dtype=torch.float64)
    """

    name = "iprec"

    def __init__(self, k: IntOrSeq = 10, *, recall: float | None = None, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"recall": recall}, **kwargs)


class InterpolatedAP(_TopK):
    r"""InterpolatedAP@k, the 11-point interpolated average precision (trec_eval's ``11pt_avg``): the mean
    of :class:`IPrec` at the recall levels 0.0, 0.1, ..., 1.0.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not
            ``ties="average"``.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.InterpolatedAP(k=5)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6, 0.5]]), torch.tensor([[0, 1, 0, 0, 1]]))
        >>> metric.compute()
        tensor(0.4545, dtype=torch.float64)
    """

    name = "interpolated_ap"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


class FallOut(_TopK):
    r"""FallOut@k: the share of the query's non-relevant candidates that the top k retrieves (torchmetrics'
    ``RetrievalFallOut``); lower is better.

    .. math:: \mathrm{FallOut@k} = \frac{\min(k, n) - \sum_{i \le k} r_i}{n - R}

    with n the query's candidates and R its relevant ones. The query that ``empty_target_action`` resolves
    is the one without a non-relevant candidate (torchmetrics': "no negative target"). torchmetrics' class
    scores it 1 (``empty_target_action="pos"``), where this library skips it by default as every family's
    empty query. It needs every candidate's score: the dense, ids or flat form, not ``ranked_ids``.

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`.

    Raises:
        ValueError: on a bad ``k``, on the ranked form, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.FallOut(k=2, empty_target_action="pos")  # torchmetrics' RetrievalFallOut
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]]),
        ...               torch.tensor([[1, 0, 0, 0], [1, 1, 1, 1]]))
        >>> metric.compute()  # (1 / 3 + 1) / 2: the second query has no non-relevant candidate
        tensor(0.6667, dtype=torch.float64)
    """

    name = "fallout"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


class Bpref(_TopK):
    r"""bpref@k, binary preference (Buckley & Voorhees 2004): how few judged non-relevant items rank above each
    relevant item of the top k (trec_eval's ``bpref`` on the run cut at k).

    .. math:: \mathrm{bpref@k} = \frac{1}{R} \sum_{r \text{ relevant}, \mathrm{rank}(r) \le k}
        \left(1 - \frac{\min(n_r, R)}{\min(N, R)}\right)

    with :math:`n_r` the judged non-relevant items ranked above r, N the query's judged non-relevant items and R
    its relevant ones; a term is 1 where :math:`n_r = 0` (so wherever N = 0). Unjudged items are skipped: a
    target id is a judgment (not relevant where its gain is not: a qrels line of 0, or below
    ``relevance_threshold``), an item outside the target ids is unjudged. The dense form judges every
    candidate. trec_eval scores a query without a relevant item 0: ``empty_target_action="neg"`` (or
    ``convention="trec"``).

    Args:
        k: cut-off(s); a k as long as the lists gives trec_eval's ``bpref``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``
            (the cap min(n_r, R) has no exact expectation over tie orders here).

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.Bpref(k=10)
        >>> # ranked a, u, b, c, v: a and c relevant, b judged non-relevant, d and e judged non-relevant
        >>> # and not retrieved, u and v unjudged (trec_eval: 0.75)
        >>> metric.update(ranked_ids=torch.tensor([[0, 5, 1, 2, 6]]), target_ids=torch.tensor([[0, 1, 2, 3, 4]]),
        ...               target_gains=torch.tensor([[1, 0, 2, 0, 0]]))
        >>> metric.compute()  # (1 + (1 - min(1, 2) / min(3, 2))) / 2
        tensor(0.7500, dtype=torch.float64)
    """

    name = "bpref"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


class Judged(_TopK):
    r"""Judged@k: the share of the top k that is judged (ir-measures' ``Judged@k``).

    .. math:: \mathrm{Judged@k} = \frac{\sum_{i \le k} j_i}{\min(k, n)}

    with :math:`j_i` 1 where the item at rank i is among the query's target ids (whatever its gain) and n the
    list's length. The query that ``empty_target_action`` resolves is the one without a judged item (no target
    id), as ir-measures evaluates every query with a judgment; a query without a relevant item counts. The
    dense form judges every candidate (1 for every non-empty list).

    Args:
        k: cut-off(s).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``.

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.Judged(k=[2, 10])
        >>> metric.update(ranked_ids=torch.tensor([[7, 2, 5], [1, 3, -1]]), target_ids=torch.tensor([[5, 7], [3, -1]]),
        ...               target_gains=torch.tensor([[0, 1], [0, 0]]))
        >>> metric.compute()  # (1/2 + 1/2) / 2 and (2/3 + 1/2) / 2
        {'judged@2': tensor(0.5000, dtype=torch.float64), 'judged@10': tensor(0.5833, dtype=torch.float64)}
    """

    name = "judged"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)


class InfAP(_TopK):
    r"""infAP@k, inferred average precision (Yilmaz & Aslam 2006): average precision estimated from a judged
    random sample of the pool, as trec_eval's ``infAP`` computes it on the run cut at k.

    .. math:: \mathrm{infAP@k} = \frac{1}{R} \sum_{r \text{ relevant}, i_r \le k}
        \frac{1}{i_r} \left(1 + a_r \frac{h_r + \epsilon}{h_r + m_r + 2\epsilon}\right)

    with :math:`i_r` the rank of r, :math:`a_r` the pooled items ranked above it (judged or not), :math:`h_r` and
    :math:`m_r` the judged relevant and non-relevant ones above, :math:`\epsilon = 10^{-5}` and R the query's
    relevant items (1 at rank 1). The targets say what is pooled and judged: a target gain of -1 is a pooled
    item that is not judged (trec_eval's qrels line of -1), any other target id is a judgment (non-relevant
    where its gain is not relevant), an item outside the target ids is not pooled. The dense form pools and
    judges every candidate. The other metrics of a suite read a gain of -1 as 0. trec_eval scores a query
    without a relevant item 0: ``empty_target_action="neg"`` (or ``convention="trec"``).

    Args:
        k: cut-off(s); a k as long as the lists gives trec_eval's ``infAP``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``
            (the estimate is not linear in the relevance of the ranks above).

    Raises:
        ValueError: on a bad ``k``, ``ties="average"``, and on bad input in ``update`` (a negative target gain
            other than -1, among others).

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.InfAP(k=[1, 10])
        >>> # ranked 0, 5, 1, 2, 6: 0 and 2 relevant, 1 judged non-relevant, 5 pooled but not judged, 6 not pooled
        >>> metric.update(ranked_ids=torch.tensor([[0, 5, 1, 2, 6]]), target_ids=torch.tensor([[0, 1, 2, 5]]),
        ...               target_gains=torch.tensor([[1, 0, 2, -1]]))
        >>> metric.compute()  # @10: (1 + (1 + 3 (1 + e) / (2 + 2e)) / 4) / 2, trec_eval's 0.8125
        {'infap@1': tensor(0.5000, dtype=torch.float64), 'infap@10': tensor(0.8125, dtype=torch.float64)}
    """

    name = "infap"

    def __init__(self, k: IntOrSeq = 10, **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, None, **kwargs)
