r"""The intent-aware families as functions of one batch (public as :mod:`torchrec_eval.functional`):
``alpha_ndcg``, ``alpha_dcg``, ``err_ia``, ``nerr_ia``, ``p_ia``, ``strec``, ``ap_ia``, ``nrbp`` and ``nnrbp``, TREC's ``ndeval``
measures over an ``item_intents`` table (definitions: :mod:`torchrec_eval.beyond.intents`).

Each function evaluates its class (:class:`~torchrec_eval.AlphaNDCG`, :class:`~torchrec_eval.AlphaDCG`,
:class:`~torchrec_eval.ERRIA`, :class:`~torchrec_eval.NERRIA`) on the batch, so both give the same values: the
mean over the counted queries, or each query's value (``reduction="none"``, NaN where a query is not counted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, Unpack, cast, overload

from torch import Tensor

from torchrec_eval.metrics.intents import CLASSES
from torchrec_eval.pipeline import keywords_checked_by
from torchrec_eval.ranking.named_metric import CommonCall

__all__ = ["IntentCall", "alpha_dcg", "alpha_ndcg", "ap_ia", "err_ia", "nerr_ia", "nnrbp", "nrbp", "p_ia", "strec"]


class IntentCall(CommonCall, total=False):
    """The keywords an intent-aware function takes in ``**arguments`` besides ``preds``, ``target``, ``k``,
    ``item_intents`` and ``alpha``: the input forms and the common arguments of
    :class:`~torchrec_eval.ranking.named_metric.CommonCall` (``reduction``: ``"mean"`` over the counted queries, or
    ``"none"``: per-query values [B], NaN where a query is not counted)."""


class IntentFunction(Protocol):
    """The type of the intent-aware functions: an int ``k`` gives a tensor, a sequence of cut-offs a dict
    ``{"name@k": value}``; ``item_intents`` is required, ``alpha`` optional, the rest :class:`IntentCall`'s."""

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
                 item_intents: Tensor, alpha: float | None = None, **arguments: Unpack[IntentCall]) -> Tensor: ...

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
                 item_intents: Tensor, alpha: float | None = None,
                 **arguments: Unpack[IntentCall]) -> dict[str, Tensor]: ...


class IntentCountFunction(Protocol):
    """The type of the functions that count what the top k covers (P-IA, strec, AP-IA): :class:`IntentFunction` without
    ``alpha``."""

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
                 item_intents: Tensor, **arguments: Unpack[IntentCall]) -> Tensor: ...

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
                 item_intents: Tensor, **arguments: Unpack[IntentCall]) -> dict[str, Tensor]: ...


class PatientIntentFunction(Protocol):
    """The type of NRBP and nNRBP: :class:`IntentFunction` with the patience ``beta``."""

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
                 item_intents: Tensor, alpha: float | None = None, beta: float | None = None,
                 **arguments: Unpack[IntentCall]) -> Tensor: ...

    @overload
    def __call__(self, preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
                 item_intents: Tensor, alpha: float | None = None, beta: float | None = None,
                 **arguments: Unpack[IntentCall]) -> dict[str, Tensor]: ...


def patient_intent_function(function: Callable[..., Tensor | dict[str, Tensor]]) -> PatientIntentFunction:
    """NRBP or nNRBP typed as :class:`PatientIntentFunction`, its keywords checked against :class:`IntentCall`."""
    return cast(PatientIntentFunction, keywords_checked_by(IntentCall)(function))


def intent_count_function(function: Callable[..., Tensor | dict[str, Tensor]]) -> IntentCountFunction:
    """A counting intent-aware function typed as :class:`IntentCountFunction`, its keywords checked against
    :class:`IntentCall`."""
    return cast(IntentCountFunction, keywords_checked_by(IntentCall)(function))


def intent_function(function: Callable[..., Tensor | dict[str, Tensor]]) -> IntentFunction:
    """An intent-aware function typed as :class:`IntentFunction`, its keywords checked against :class:`IntentCall`."""
    return cast(IntentFunction, keywords_checked_by(IntentCall)(function))


_COMMON = ("convention", "empty_target_action", "relevance_threshold", "ties", "validate_args")


def intent_values(family: str, preds: Tensor | None, target: Tensor | None, k: int | Sequence[int],
                  item_intents: Tensor, alpha: float | None, arguments: IntentCall,
                  beta: float | None = None) -> Tensor | dict[str, Tensor]:
    """The shared body of the functions: ``family``'s class built with the call's common arguments, evaluated on
    its one batch, on the device of the batch."""
    given: dict[str, Any] = dict(arguments)
    reduction = given.pop("reduction", "mean")
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    common = {name: given.pop(name) for name in _COMMON if name in given}
    penalty = {name: value for name, value in (("alpha", alpha), ("beta", beta)) if value is not None}
    make: Any = CLASSES[family]  # one of three signatures: with alpha, with alpha and beta, with neither
    metric = make(k, item_intents=item_intents, **penalty, **common)
    inputs = {"preds": preds, "target": target, **given}
    device = next((value.device for value in inputs.values() if isinstance(value, Tensor)), None)
    if device is not None:
        metric = metric.to(device)
    if reduction == "none":
        values: Tensor | dict[str, Tensor] = metric.per_query(**inputs)
        return values
    metric.update(**inputs)
    result: Tensor | dict[str, Tensor] = metric.compute()
    return result


@intent_function
def alpha_ndcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
               item_intents: Tensor, alpha: float | None = None,
               **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""alpha-nDCG@k as ndeval (:class:`~torchrec_eval.AlphaNDCG`):
    :math:`\sum_{i \le k} G_i / \log_2(i + 1)` over the same sum of ndeval's greedy ideal list,
    :math:`G_i = \sum_s J_{is} (1 - \alpha)^{c_s(i - 1)}`.

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"alpha_ndcg@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1] (None: 0.5, ndeval's).
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents``, ``alpha`` or ``reduction``, an item id out of range, and bad
            input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import alpha_ndcg
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> alpha_ndcg(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]), k=2, item_intents=intents)
        tensor(0.8066, dtype=torch.float64)
    """
    return intent_values("alpha_ndcg", preds, target, k, item_intents, alpha, arguments)


@intent_function
def alpha_dcg(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
              item_intents: Tensor, alpha: float | None = None,
              **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""alpha-DCG@k as ndeval reports it (:class:`~torchrec_eval.AlphaDCG`):
    :math:`\sum_{i \le k} G_i / \log_2(i + 1)` over ndeval's "ideal ideal"
    :math:`S \sum_{i \le k} (1 - \alpha)^{i - 1} / \log_2(i + 1)`, S the intents the query's relevant items
    cover; alpha-DCG@1 is :math:`G_1`, undivided (as ndeval).

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"alpha_dcg@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1] (None: 0.5, ndeval's).
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents``, ``alpha`` or ``reduction``, an item id out of range, and bad
            input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import alpha_dcg
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> alpha_dcg(ranked_ids=torch.tensor([[0, 1, 2], [3, 2, -1]]), target_ids=torch.tensor([[0, 1, 2], [2, 3, -1]]),
        ...           k=[1, 2], item_intents=intents, reduction="none")  # @2: (1 + 0.5 / log2(3)) / (2 (1 + 0.5 / log2(3)))
        {'alpha_dcg@1': tensor([1., 2.], dtype=torch.float64), 'alpha_dcg@2': tensor([0.5000, 0.8801], dtype=torch.float64)}
    """
    return intent_values("alpha_dcg", preds, target, k, item_intents, alpha, arguments)


@intent_function
def err_ia(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
           item_intents: Tensor, alpha: float | None = None,
           **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""ERR-IA@k as ndeval (:class:`~torchrec_eval.ERRIA`): :math:`\sum_{i \le k} G_i / i` over ndeval's "ideal
    ideal" :math:`S \sum_{i \le k} (1 - \alpha)^{i - 1} / i`; ERR-IA@1 is :math:`G_1`, undivided (as ndeval).

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"err_ia@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1] (None: 0.5, ndeval's).
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents``, ``alpha`` or ``reduction``, an item id out of range, and bad
            input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import err_ia
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> err_ia(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]), k=2, item_intents=intents)
        tensor(0.5000, dtype=torch.float64)
    """
    return intent_values("err_ia", preds, target, k, item_intents, alpha, arguments)


@intent_function
def nerr_ia(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
            item_intents: Tensor, alpha: float | None = None,
            **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""nERR-IA@k as ndeval (:class:`~torchrec_eval.NERRIA`): :math:`\sum_{i \le k} G_i / i` over the same sum of
    ndeval's greedy ideal list.

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"nerr_ia@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1] (None: 0.5, ndeval's).
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents``, ``alpha`` or ``reduction``, an item id out of range, and bad
            input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import nerr_ia
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> nerr_ia(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]), k=2, item_intents=intents)
        tensor(0.8333, dtype=torch.float64)
    """
    return intent_values("nerr_ia", preds, target, k, item_intents, alpha, arguments)


@intent_count_function
def p_ia(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
         item_intents: Tensor, **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""P-IA@k as ndeval (:class:`~torchrec_eval.PrecisionIA`): each intent's precision at k, averaged over the S
    intents the query's relevant items cover, :math:`\frac{1}{S} \sum_s \frac{1}{k} \sum_{i \le k} J_{i s}`.

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"p_ia@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents`` or ``reduction``, an item id out of range, and bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import p_ia
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> p_ia(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]), k=3, item_intents=intents)
        tensor(0.5000, dtype=torch.float64)
    """
    return intent_values("p_ia", preds, target, k, item_intents, None, arguments)


@intent_count_function
def strec(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
          item_intents: Tensor, **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""Subtopic recall@k as ndeval (:class:`~torchrec_eval.SubtopicRecall`): the share of the S intents the query's
    relevant items cover that the top k covers.

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"strec@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents`` or ``reduction``, an item id out of range, and bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import strec
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> strec(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]), k=2, item_intents=intents)
        tensor(0.5000, dtype=torch.float64)
    """
    return intent_values("strec", preds, target, k, item_intents, None, arguments)


@intent_count_function
def ap_ia(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
          item_intents: Tensor, **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""AP-IA@k as ndeval's MAP-IA (:class:`~torchrec_eval.AveragePrecisionIA`): each intent's average precision over
    its R_s relevant items, averaged over the S intents the query's relevant items cover.

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"ap_ia@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents`` or ``reduction``, an item id out of range, and bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import ap_ia
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> ap_ia(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]), k=2, item_intents=intents)
        tensor(0.5000, dtype=torch.float64)
    """
    return intent_values("ap_ia", preds, target, k, item_intents, None, arguments)


@patient_intent_function
def nrbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
         item_intents: Tensor, alpha: float | None = None, beta: float | None = None,
         **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""NRBP@k as ndeval (:class:`~torchrec_eval.NRBP`):
    :math:`\frac{1 - (1 - \alpha)\beta}{S} \sum_{i \le k} \beta^{i - 1} G_i`, with alpha-nDCG's gains.

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"nrbp@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1] (None: 0.5, ndeval's).
        beta: the patience in [0, 1] (None: 0.5, ndeval's).
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents``, ``alpha``, ``beta`` or ``reduction``, an item id out of range,
            and bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import nrbp
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> nrbp(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]), k=3, item_intents=intents, beta=1.0)
        tensor(0.6250, dtype=torch.float64)
    """
    return intent_values("nrbp", preds, target, k, item_intents, alpha, arguments, beta)


@patient_intent_function
def nnrbp(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
          item_intents: Tensor, alpha: float | None = None, beta: float | None = None,
          **arguments: Unpack[IntentCall]) -> Tensor | dict[str, Tensor]:
    r"""nNRBP@k as ndeval (:class:`~torchrec_eval.NNRBP`): NRBP over the greedy ideal list's,
    :math:`\sum_{i \le k} \beta^{i - 1} G_i / \sum_{i \le k} \beta^{i - 1} G^*_i`.

    Args:
        preds, target: one batch, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"nnrbp@k": value}``).
        item_intents: ``[num_items, intents]`` 0s and 1s, the intents of each item.
        alpha: the redundancy penalty in [0, 1] (None: 0.5, ndeval's).
        beta: the patience in [0, 1] (None: 0.5, ndeval's).
        arguments: the input forms and common arguments of :class:`IntentCall`.

    Raises:
        ValueError: on a bad ``k``, ``item_intents``, ``alpha``, ``beta`` or ``reduction``, an item id out of range,
            and bad input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import nnrbp
        >>> intents = torch.tensor([[1, 0], [1, 0], [0, 1], [1, 1]])
        >>> nnrbp(torch.tensor([[0.9, 0.8, 0.1, 0.0]]), torch.tensor([[1, 1, 1, 0]]), k=3, item_intents=intents)
        tensor(0.9231, dtype=torch.float64)
    """
    return intent_values("nnrbp", preds, target, k, item_intents, alpha, arguments, beta)
