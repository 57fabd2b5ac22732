"""The families of a user who scans the list from the top and stops: ERR (stops at a satisfying item), RBP
(goes on to the next rank with probability p), and the C/W/L users of cwl_eval: NERR (ERR's stopping), INST and
INSQ (a user who wants T units of gain) and BPM (who reads until T or k).

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol, Unpack, cast, get_args, overload

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import IntOrSeq, TopKMetric
from torchrec_eval.pipeline import RankedTargets, keywords_checked_by
from torchrec_eval.pipeline.tensor_cache import ranks
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric
from torchrec_eval.ranking.rank_sums import at_cutoffs, best_sums, divide, listed_within, summed, weight_sums
from torchrec_eval.ranking.registry import LIST_OPTIONS, TOP_GRADE, Interval, TopKFamily, register


def err_kernel(rt: RankedTargets, ks: Sequence[int], max_grade: float = 4.0) -> Tensor:
    # the item at rank i satisfies the user with probability s_i = (2^g_i - 1) / 2^max_grade (Chapelle et
    # al. 2009, gdeval); the user reaches rank i if no item above did, and stops there with 1 / i utility
    satisfied = (torch.exp2(rt.gains) - 1) / 2.0**max_grade
    unsatisfied = torch.cumprod(1 - satisfied, dim=1)
    reached = torch.cat([torch.ones_like(unsatisfied[:, :1]), unsatisfied[:, :-1]], dim=1)
    return summed(satisfied * reached, ks, "reciprocal")


register("err", TopKFamily(err_kernel, {**TOP_GRADE, **LIST_OPTIONS}, max_grade=4.0, exact_under_average_ties=False))


class ERR(TopKMetric):
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


@overload
def err(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        max_grade: float | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def err(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        max_grade: float | None = None,
        **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def err(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        max_grade: float | None = None,
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""ERR@k, the expected reciprocal rank of the item that satisfies the user (Chapelle et al. 2009):
    :math:`\sum_{i \le k} \frac{1}{i} s_i \prod_{j < i} (1 - s_j)` with :math:`s_i = (2^{g_i} - 1) / 2^{g_{max}}`.

    The gains are the targets (graded, as gdeval and ir-measures' ``ERR@k``); ``max_grade`` is the top
    grade :math:`g_{max}` (4 by default, gdeval's); a larger gain is refused with the other checks. Its
    value is a product over ranks, which has no exact expectation over tied scores here: it refuses
    ``ties="average"``.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"err@k": value}``).
        max_grade: the top grade (a number >= 1, default 4).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import err
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> err(preds, target, k=3, max_grade=3)
        tensor(0.3776, dtype=torch.float64)
    """
    return compute_named_metric("err", preds, target, k, {"max_grade": max_grade}, arguments)


#: the rank weights of RBP: "geometric" p^(i-1) (Moffat & Zobel's); LensKit's ``LogRankWeight``, "log"
#: 1 / log_b(i + 1) (``offset=1``) and "clipped_log" 1 / log_b(max(i, 2)) (its default, ``offset=0``)
RankWeight = Literal["geometric", "log", "clipped_log"]
_WEIGHTS = {"geometric": "geometric", "log": "discount", "clipped_log": "clipped_discount"}


def rbp_kernel(rt: RankedTargets, ks: Sequence[int], p: float = 0.8, normalize: bool = False,
               weight: str = "geometric", log_base: float = 2.0) -> Tensor:
    # (1 - p) sum_{i<=k} r_i p^(i-1) (Moffat & Zobel 2008): the geometric weights' series sums to 1 / (1 - p).
    # normalize: over the most the query's relevant items reach, the weights of ranks 1..min(R, k, list length)
    # (LensKit's normalize=True). A log weight has no series sum: LensKit divides by the weights of the list's
    # ranks 1..min(k, list length) then
    rank_weight, parameter = _WEIGHTS[weight], p if weight == "geometric" else log_base
    total = summed(rt.hits, ks, rank_weight, parameter)
    if normalize:
        return divide(total, best_sums(rt, ks, rank_weight, parameter))
    if weight == "geometric":
        return (1 - p) * total
    listed = listed_within(rt, ks).long()
    return divide(total, weight_sums(max(ks), rank_weight, parameter, rt.gains.device)[listed])


register("rbp", TopKFamily(rbp_kernel, {"p": (Interval(0.0, 1.0),), "normalize": (True, False),
                                        "weight": get_args(RankWeight), "log_base": (Interval(1.0),), **LIST_OPTIONS}))


class RBP(TopKMetric):
    r"""RBP@k, rank-biased precision (Moffat & Zobel 2008): :math:`(1 - p) \sum_{i \le k} r_i p^{i-1}`; with
    LensKit's log rank weights :math:`w_i`, :math:`\sum_{i \le k} r_i w_i / \sum_{i \le \min(k, n)} w_i`.

    Args:
        k: cut-off(s).
        p: the patience of the geometric weights, in (0, 1); 0.8 by default (ranx, ir-measures).
        normalize: divide :math:`\sum_{i \le k} r_i w_i` by its most with the query's relevant items,
            :math:`\sum_{i \le \min(R, k, n)} w_i` (LensKit's ``normalize=True``).
        weight: the rank weights :math:`w_i`: ``"geometric"`` :math:`p^{i-1}` (default), ``"log"``
            :math:`1 / \log_b(i + 1)` (LensKit's ``LogRankWeight(offset=1)``) or ``"clipped_log"``
            :math:`1 / \log_b \max(i, 2)` (``LogRankWeight()``); a log weight ignores ``p``.
        log_base: the base b of the log weights (2).
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
                 weight: RankWeight | None = None, log_base: float | None = None,
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"p": p, "normalize": normalize, "weight": weight, "log_base": log_base}, **kwargs)


@overload
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
        p: float | None = None, normalize: bool | None = None, weight: RankWeight | None = None,
        log_base: float | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
        p: float | None = None, normalize: bool | None = None, weight: RankWeight | None = None,
        log_base: float | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def rbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        p: float | None = None, normalize: bool | None = None, weight: RankWeight | None = None,
        log_base: float | None = None, **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""RBP@k, rank-biased precision (Moffat & Zobel 2008): :math:`(1 - p) \sum_{i \le k} r_i p^{i-1}`.

    A user goes on from each rank to the next with probability ``p`` (0.8 by default, as ranx and
    ir-measures); relevance is binary. ``normalize=True`` divides
    :math:`\sum_{i \le k} r_i p^{i-1}` by its most with the query's relevant items,
    :math:`\sum_{i \le \min(R, k, n)} p^{i-1}` (LensKit's ``normalize=True``; n the list's length). ``weight``
    takes LensKit's log rank weights instead (see :class:`RBP`).

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"rbp@k": value}``).
        p: the patience, a number in (0, 1).
        normalize: see above.
        weight, log_base: the rank weights, ``"geometric"`` (default), ``"log"`` or ``"clipped_log"``, and the
            log weights' base (see :class:`RBP`).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import rbp
        >>> preds = torch.tensor([[0.9, 0.8, 0.1, 0.4], [0.2, 0.3, 0.7, 0.1]])
        >>> target = torch.tensor([[1, 0, 0, 3], [0, 0, 2, 1]])
        >>> rbp(preds, target, k=3, p=0.5)
        tensor(0.5625, dtype=torch.float64)
    """
    options = {"p": p, "normalize": normalize, "weight": weight, "log_base": log_base}
    return compute_named_metric("rbp", preds, target, k, options, arguments)


#: the continuation of Azzopardi, Mackenzie & Moffat's NERR (ICTIR 2021), by the equation of the paper
NerrEquation = Literal[8, 9, 10, 11]


def nerr_kernel(rt: RankedTargets, ks: Sequence[int], equation: int = 8, max_grade: float | None = None,
                phi: float = 0.9, T: float = 1.0) -> Tensor:  # noqa: N803 (the paper's and cwl_eval's name)
    # a C/W/L user who goes on from rank j with probability C_j and scores sum_i W_i g_i, W_i proportional to
    # prod_{j<i} C_j over the ranks up to k (cwl_eval pads a short list with 0 gains, which continue)
    gains, rank = _scaled_gains(rt, max_grade)
    scale = {8: torch.ones_like(rank), 9: rank / (rank + 1), 10: torch.full_like(rank, phi),
             11: ((rank + 2 * T - 1) / (rank + 2 * T)) ** 2}[equation]
    tails = {8: _flat_tail, 9: _harmonic_tail, 10: lambda depth, k: _geometric_tail(depth, k, phi),
             11: lambda depth, k: _square_tail(depth, k, gains.new_tensor(2 * T))}
    return _expected_utility(gains, scale * (1 - gains), ks, tails[equation])


def _scaled_gains(rt: RankedTargets, max_grade: float | None) -> tuple[Tensor, Tensor]:
    """[B, L] the gains in [0, 1] (grade / ``max_grade``, or the relevance) and the ranks 1..L of the view."""
    gains = rt.gains / max_grade if max_grade else rt.hits.to(torch.float64)
    return gains, ranks(gains.shape[1], gains.device)


def _expected_utility(gains: Tensor, going_on: Tensor, ks: Sequence[int], tail: Callable[[int, int], Tensor]) -> Tensor:
    """C/W/L's expected utility per item within each cut-off: sum_i W_i g_i, W_i = prod_{j<i} C_j over their sum
    (Moffat et al.'s framework, as cwl_eval), from the continuation ``going_on`` C [B, L]. Past the view's L ranks
    the list goes on with 0 gains (cwl_eval pads it to its depth): ranks L+1..k weigh prod_{j<=L} C_j times
    ``tail(L, k)``, the sum of the 0-gain continuation's products in closed form, so a cut-off of 10^12 allocates
    nothing for it."""
    reached = torch.cumprod(going_on, dim=1)
    reach = torch.cat([torch.ones_like(reached[:, :1]), reached[:, :-1]], dim=1)  # prod_{j<i} C_j
    numerator = at_cutoffs((gains * reach).cumsum(1), ks)
    denominator = at_cutoffs(reach.cumsum(1), ks)
    depth = gains.shape[1]
    if max(ks) > depth:
        zero = gains.new_zeros(gains.shape[0])
        extra = torch.stack([zero + tail(depth, k) if k > depth else zero for k in ks], dim=1)
        denominator = denominator + reached[:, -1:] * extra
    return numerator / denominator


def _flat_tail(depth: int, k: int) -> Tensor:
    """C = 1 past the list: k - L ranks of the same weight."""
    return torch.tensor(float(k - depth), dtype=torch.float64)


def _harmonic_tail(depth: int, k: int) -> Tensor:
    """C_j = j / (j + 1): sum_{i=L+1}^{k} (L + 1) / i."""
    at = torch.tensor([k + 1.0, depth + 1.0], dtype=torch.float64)
    digamma = torch.digamma(at)
    return (depth + 1) * (digamma[0] - digamma[1])


def _geometric_tail(depth: int, k: int, phi: float) -> Tensor:
    """C = phi: sum_{t < k - L} phi^t."""
    count = k - depth
    return torch.tensor(float(count) if phi == 1 else (1 - phi**count) / (1 - phi), dtype=torch.float64)


def _square_tail(depth: int, k: int, offset: Tensor) -> Tensor:
    """C_j = ((j + a - 1) / (j + a))^2 (a = ``offset`` > 0, any shape): sum_{i=L+1}^{k} ((L + a) / (i - 1 + a))^2
    = (L + a)^2 (trigamma(L + a) - trigamma(k + a))."""
    start = offset + depth
    return start**2 * (torch.special.polygamma(1, start) - torch.special.polygamma(1, offset + k))


_PATIENCE = Interval(0.0, 1.0, closed=True, closed_high=True)
register("nerr", TopKFamily(nerr_kernel, {"equation": get_args(NerrEquation), **TOP_GRADE, "phi": (_PATIENCE,),
                                          "T": (Interval(0.0),), **LIST_OPTIONS}, exact_under_average_ties=False))


class NERR(TopKMetric):
    r"""NERR@k, "not (but nearly) ERR" (Azzopardi, Mackenzie & Moffat, ICTIR 2021; cwl_eval's NERR-EQ8 to 11,
    ir-measures' ``NERR8`` to ``NERR11``): ERR's gain-based stopping as a C/W/L user model,
    :math:`\sum_{i \le k} g_i \prod_{j < i} C_j / \sum_{i \le k} \prod_{j < i} C_j` with the continuation
    :math:`C_j = (1 - g_j)` (``equation=8``), :math:`\frac{j}{j+1}(1 - g_j)` (9), :math:`\phi (1 - g_j)` (10) or
    :math:`(\frac{j + 2T - 1}{j + 2T})^2 (1 - g_j)` (11), and gains :math:`g = \text{grade} / g_{max}` in [0, 1].

    cwl_eval truncates equations 8 and 9 at k and runs 10 and 11 to the depth of 1000: NERR@1000 is its value
    there. A list shorter than k continues past its end with 0 gains (cwl_eval's padding).

    Args:
        k: cut-off(s).
        equation: 8 (default), 9, 10 or 11.
        max_grade: the top grade :math:`g_{max}` (ir-measures' ``max_rel``); None: binary relevance (a relevant item
            gains 1, cwl_eval's ``max_rel=1``). A larger gain is refused in ``update``.
        phi: the patience of equation 10, in [0, 1] (0.9, cwl_eval's).
        T: the expected number of relevant items sought, equation 11, > 0 (1, cwl_eval's).
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``
            (a product over ranks).

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.NERR(k=3, max_grade=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[1, 0, 0, 2]]))
        >>> metric.compute()  # gains 0.5, 0, 1: (0.5 + 0 + 0.5 * 1) / (1 + 0.5 + 0.5)
        tensor(0.5000, dtype=torch.float64)
    """

    name = "nerr"

    def __init__(self, k: IntOrSeq = 10, *, equation: NerrEquation | None = None, max_grade: float | None = None,
                 phi: float | None = None, T: float | None = None,  # noqa: N803
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"equation": equation, "max_grade": max_grade, "phi": phi, "T": T}, **kwargs)


@overload
def nerr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
         equation: NerrEquation | None = None, max_grade: float | None = None, phi: float | None = None,
         T: float | None = None, **arguments: Unpack[TopKCall]) -> Tensor: ...  # noqa: N803


@overload
def nerr(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
         equation: NerrEquation | None = None, max_grade: float | None = None, phi: float | None = None,
         T: float | None = None, **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...  # noqa: N803


@keywords_checked_by(TopKCall)
def nerr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
         equation: NerrEquation | None = None, max_grade: float | None = None, phi: float | None = None,
         T: float | None = None, **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:  # noqa: N803
    r"""NERR@k (:class:`~torchrec_eval.NERR`): ERR's gain-based stopping as a C/W/L user,
    :math:`\sum_{i \le k} g_i \prod_{j < i} C_j / \sum_{i \le k} \prod_{j < i} C_j`, C by ``equation``.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"nerr@k": value}``).
        equation: 8 (default), 9, 10 or 11 of Azzopardi et al.
        max_grade: the top grade (None: binary relevance).
        phi: equation 10's patience (0.9); T: equation 11's relevant items sought (1).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import nerr
        >>> nerr(torch.tensor([[0.9, 0.8, 0.1, 0.4]]), torch.tensor([[0, 0, 0, 1]]), k=3, equation=9)  # (1/3) / (1 + 1/2 + 1/3)
        tensor(0.1818, dtype=torch.float64)
    """
    options = {"equation": equation, "max_grade": max_grade, "phi": phi, "T": T}
    return compute_named_metric("nerr", preds, target, k, options, arguments)


def inst_kernel(rt: RankedTargets, ks: Sequence[int], T: float = 1.0,  # noqa: N803
                max_grade: float | None = None) -> Tensor:
    # Moffat et al.'s INST: a user who wants T units of gain goes on from rank i with C_i = ((i + T + T_i - 1)
    # / (i + T + T_i))^2, T_i = T - the gain of ranks 1..i (cwl_eval's INSTCWLMetric)
    gains, rank = _scaled_gains(rt, max_grade)
    wanted = rank + 2 * T - gains.cumsum(1)
    still_wanted = 2 * T - gains.sum(1)  # past the list: C_j = ((j + b - 1) / (j + b))^2, b = 2T - its gain
    return _expected_utility(gains, ((wanted - 1) / wanted) ** 2, ks,
                             lambda depth, k: _square_tail(depth, k, still_wanted))


def insq_kernel(rt: RankedTargets, ks: Sequence[int], T: float = 1.0,  # noqa: N803
                max_grade: float | None = None) -> Tensor:
    # INSQ (Moffat et al. 2012): INST's continuation with T_i = T at every rank, C_i = ((i + 2T - 1) / (i + 2T))^2
    gains, rank = _scaled_gains(rt, max_grade)
    return _expected_utility(gains, (((rank + 2 * T - 1) / (rank + 2 * T)) ** 2).expand_as(gains), ks,
                             lambda depth, k: _square_tail(depth, k, gains.new_tensor(2 * T)))


def bpm_kernel(rt: RankedTargets, ks: Sequence[int], T: float = 1.0,  # noqa: N803
               max_grade: float | None = None) -> Tensor:
    # Zhang et al.'s static bejeweled player (cwl_eval's BPMCWLMetric with a cost of 1 an item): the user goes on
    # while the gain so far is below T and the items read below k, and scores the mean gain of what was read
    gains, _ = _scaled_gains(rt, max_grade)  # (past the list C = 1 while the gain is below T, as on the list)
    return _expected_utility(gains, (gains.cumsum(1) < T).to(gains.dtype), ks, _flat_tail)


_ADAPTIVE = {"T": (Interval(0.0),), **TOP_GRADE, **LIST_OPTIONS}
register("inst", TopKFamily(inst_kernel, _ADAPTIVE, exact_under_average_ties=False))
register("insq", TopKFamily(insq_kernel, _ADAPTIVE, exact_under_average_ties=False))
register("bpm", TopKFamily(bpm_kernel, _ADAPTIVE, exact_under_average_ties=False))


class _GainGoal(TopKMetric):
    """A C/W/L user with a goal of ``T`` units of gain (INST, INSQ, BPM): their options, written once."""

    def __init__(self, k: IntOrSeq = 10, *, T: float | None = None, max_grade: float | None = None,  # noqa: N803
                 **kwargs: Unpack[TopKArguments]) -> None:
        super().__init__(k, {"T": T, "max_grade": max_grade}, **kwargs)


class GainGoalFunction(Protocol):
    """The type of :func:`inst`, :func:`insq` and :func:`bpm`: an int ``k`` gives a tensor, a sequence of cut-offs a
    dict ``{"name@k": value}``; ``T`` and ``max_grade`` their options, the rest :class:`TopKCall`'s."""

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
                 T: float | None = None, max_grade: float | None = None,  # noqa: N803
                 **arguments: Unpack[TopKCall]) -> Tensor: ...

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
                 T: float | None = None, max_grade: float | None = None,  # noqa: N803
                 **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


def gain_goal_function(function: Callable[..., Tensor | dict[str, Tensor]]) -> GainGoalFunction:
    """INST's, INSQ's or BPM's function typed as :class:`GainGoalFunction`, its keywords checked against
    :class:`TopKCall`."""
    return cast(GainGoalFunction, keywords_checked_by(TopKCall)(function))


class INST(_GainGoal):
    r"""INST@k, the adaptive user of Moffat, Bailey, Scholer & Thomas (2015; cwl_eval's INST, ir-measures'
    ``INST``): a user who wants T units of gain and goes on from rank i with
    :math:`C_i = (\frac{i + T + T_i - 1}{i + T + T_i})^2`, :math:`T_i = T - \sum_{j \le i} g_j`; the expected
    utility :math:`\sum_{i \le k} g_i \prod_{j < i} C_j / \sum_{i \le k} \prod_{j < i} C_j`.

    cwl_eval runs it to the depth of 1000 (a short run padded with 0 gains): INST@1000 is its value.

    Args:
        k: cut-off(s).
        T: the gain the user wants, > 0 (1, cwl_eval's).
        max_grade: the top grade (ir-measures' ``max_rel``); None: binary relevance.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``.

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.INST(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[1, 0, 0]]))
        >>> metric.compute()  # C_1 = (1 + 1 + 0 - 1)^2 / (1 + 1 + 0)^2 = 1/4: 1 / (1 + 1/4)
        tensor(0.8000, dtype=torch.float64)
    """

    name = "inst"


class INSQ(_GainGoal):
    r"""INSQ@k (Moffat, Scholer & Thomas 2012; cwl_eval's INSQ, ir-measures' ``INSQ``): INST's user with a goal that
    does not adapt, :math:`C_i = (\frac{i + 2T - 1}{i + 2T})^2`; the expected utility
    :math:`\sum_{i \le k} g_i \prod_{j < i} C_j / \sum_{i \le k} \prod_{j < i} C_j`.

    cwl_eval runs it to the depth of 1000 (a short run padded with 0 gains): INSQ@1000 is its value.

    Args:
        k: cut-off(s).
        T: the gain the user wants, > 0 (1, cwl_eval's).
        max_grade: the top grade (ir-measures' ``max_rel``); None: binary relevance.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``.

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.INSQ(k=2)
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 0]]))
        >>> metric.compute()  # C_1 = (2/3)^2: (4/9) / (1 + 4/9)
        tensor(0.3077, dtype=torch.float64)
    """

    name = "insq"


@gain_goal_function
def inst(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
         T: float | None = None, max_grade: float | None = None,  # noqa: N803
         **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""INST@k (:class:`~torchrec_eval.INST`): the expected utility of a user who wants T units of gain.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"inst@k": value}``).
        T: the gain the user wants (1); max_grade: the top grade (None: binary relevance).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import inst
        >>> inst(torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[1, 0, 0]]), k=2)
        tensor(0.8000, dtype=torch.float64)
    """
    return compute_named_metric("inst", preds, target, k, {"T": T, "max_grade": max_grade}, arguments)


@gain_goal_function
def insq(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
         T: float | None = None, max_grade: float | None = None,  # noqa: N803
         **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""INSQ@k (:class:`~torchrec_eval.INSQ`): INST's user with a goal that does not adapt.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"insq@k": value}``).
        T: the gain the user wants (1); max_grade: the top grade (None: binary relevance).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import insq
        >>> insq(torch.tensor([[0.9, 0.8, 0.1]]), torch.tensor([[0, 1, 0]]), k=2)
        tensor(0.3077, dtype=torch.float64)
    """
    return compute_named_metric("insq", preds, target, k, {"T": T, "max_grade": max_grade}, arguments)


class BPM(_GainGoal):
    r"""BPM@k, the static bejeweled player model (Zhang, Liu, Li, Ma, Zhang & Ma, SIGIR 2017; cwl_eval's BPM,
    ir-measures' ``BPM``): a user who reads until the gain so far reaches T or k items are read, and scores the
    mean gain of what was read, :math:`\sum_{i \le s} g_i / s` with
    :math:`s = \min(k, \min\{i : \sum_{j \le i} g_j \ge T\})`.

    Args:
        k: cut-off(s): the items the user will read at most (cwl_eval's K, with a cost of 1 an item).
        T: the gain the user wants, > 0 (1, cwl_eval's).
        max_grade: the top grade (ir-measures' ``max_rel``); None: binary relevance.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`; not ``ties="average"``.

    Raises:
        ValueError: on a bad ``k`` or option, ``ties="average"``, and on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.BPM(k=[2, 4])
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.1]]), torch.tensor([[0, 0, 1, 1]]))
        >>> {key: value.item() for key, value in metric.compute().items()}  # @4: stops at rank 3 (gain 1 = T)
        {'bpm@2': 0.0, 'bpm@4': 0.3333333333333333}
    """

    name = "bpm"


@gain_goal_function
def bpm(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
        T: float | None = None, max_grade: float | None = None,  # noqa: N803
        **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""BPM@k (:class:`~torchrec_eval.BPM`): the mean gain of what a user reads until the gain reaches T or k
    items are read.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"bpm@k": value}``).
        T: the gain the user wants (1); max_grade: the top grade (None: binary relevance).
        arguments: the common arguments and input forms of
            :class:`~torchrec_eval.ranking.named_metric.TopKCall`.

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import bpm
        >>> bpm(torch.tensor([[0.9, 0.8, 0.7, 0.1]]), torch.tensor([[0, 1, 1, 1]]), k=4, T=2)  # reads 3: 2 / 3
        tensor(0.6667, dtype=torch.float64)
    """
    return compute_named_metric("bpm", preds, target, k, {"T": T, "max_grade": max_grade}, arguments)

