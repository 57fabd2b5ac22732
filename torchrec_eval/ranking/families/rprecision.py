"""R-Precision: the precision of the top R (or min(k, R)) items.

Each family here is its formula (a kernel of the ranked batch), its registry entry, its class and its
function, in that order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Unpack, get_args, overload

import torch
from torch import Tensor

from torchrec_eval.metrics.arguments import TopKArguments
from torchrec_eval.metrics.topk import TopKMetric
from torchrec_eval.pipeline import RankedTargets, keywords_checked_by
from torchrec_eval.ranking.named_metric import TopKCall, compute_named_metric
from torchrec_eval.ranking.rank_sums import divide
from torchrec_eval.ranking.registry import LIST_OPTIONS, NO_HIT_ACTIONS, NoHitAction, TopKFamily, register

RPrecisionDenominator = Literal["min_k_r", "r"]


def rprecision_kernel(rt: RankedTargets, ks: Sequence[int | None], denominator: str = "min_k_r") -> Tensor:
    """hits in the top min(k, R) over min(k, R) (``"min_k_r"``), or over R (``"r"``: MS Recommenders)."""
    columns = []
    for cap in ks:
        depth = rt.num_relevant if cap is None else rt.num_relevant.clamp(max=cap)
        position = (depth.long() - 1).clamp(0, rt.depth - 1).unsqueeze(1)
        hits = rt.cum_hits.gather(1, position).squeeze(1)
        columns.append(divide(hits, rt.num_relevant if denominator == "r" else depth))
    return torch.stack(columns, dim=1)


# no_hit_action="skip": a query without a relevant item in its top min(k, R) is left out (MS
# Recommenders' r_precision_at_k averages over the users with such a hit)
register("rprecision", TopKFamily(
    rprecision_kernel, {"denominator": get_args(RPrecisionDenominator), "no_hit_action": NO_HIT_ACTIONS, **LIST_OPTIONS},
    cutoff="k_or_r", aliases=("r_precision", "r-precision")))


class RPrecision(TopKMetric):
    r"""R-Precision: Precision@R, R = the query's number of relevant items.

    .. math:: \mathrm{RPrec@k} = \frac{\sum_{i \le \min(k, R)} r_i}{D}, \quad D = \min(k, R) \text{ or } R

    Args:
        k: ``None`` (default, no cut: ranks as deep as the batch's largest R, one host sync) or a cap,
            giving hits@min(k, R) / min(k, R). RecTools' R-Precision (``Precision(r_precision=True)``) is
            another value, hits@k / min(k, R): ``Precision(k, denominator="min_k_r")``.
        denominator: D, ``"min_k_r"`` (default) or ``"r"`` (MS Recommenders' ``r_precision_at_k``).
        no_hit_action: ``"neg"`` (default): a query without a relevant item in its top min(k, R)
            scores 0 and counts; ``"skip"``: it is left out of the mean (MS Recommenders), and so is a
            query without any relevant item, whatever ``empty_target_action``. The state keeps one
            more count per such value (constant size). Not with ``ties="average"``.
        kwargs: common arguments, see :class:`~torchrec_eval.metrics.base.MemberMetric`;
            ``convention="recommenders"`` sets ``denominator="r"``, ``no_hit_action="skip"``.

    Raises:
        ValueError: on a bad ``k`` or option, ``no_hit_action="skip"`` with ``ties="average"``, and
            on bad input in ``update``.

    Example:
        >>> import torch
        >>> import torchrec_eval as tre
        >>> metric = tre.RPrecision()
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.7, 0.6]]), torch.tensor([[1, 0, 1, 1]]))
        >>> metric.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    name = "rprecision"

    def __init__(
        self, k: int | None = None, *, denominator: RPrecisionDenominator | None = None,
        no_hit_action: NoHitAction | None = None,
        **kwargs: Unpack[TopKArguments],
    ) -> None:
        super().__init__(k, {"denominator": denominator, "no_hit_action": no_hit_action}, **kwargs)


@overload
def rprecision(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | None = None,
               denominator: RPrecisionDenominator | None = None, no_hit_action: NoHitAction | None = None,
               **arguments: Unpack[TopKCall]) -> Tensor: ...


@overload
def rprecision(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int | None],
               denominator: RPrecisionDenominator | None = None, no_hit_action: NoHitAction | None = None,
               **arguments: Unpack[TopKCall]) -> dict[str, Tensor]: ...


@keywords_checked_by(TopKCall)
def rprecision(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | None | Sequence[int | None] = None,
               denominator: RPrecisionDenominator | None = None, no_hit_action: NoHitAction | None = None,
               **arguments: Unpack[TopKCall]) -> Tensor | dict[str, Tensor]:
    r"""R-Precision: Precision@R, the share of the top R that is relevant, R = the query's relevant items.

    ``k`` is an optional cap: with it the value is hits@min(k, R) / min(k, R). Without a cap the
    ranking goes as deep as the largest R of the batch, which needs one host sync. RecTools'
    R-Precision is hits@k / min(k, R): ``precision(..., k=k, denominator="min_k_r")``.

    ``denominator="r"`` divides the hits in the top min(k, R) by R instead; ``no_hit_action="skip"``
    leaves out the queries without a relevant item in the top min(k, R) (with it, a query without
    any relevant item is left out whatever ``empty_target_action``; not with ``ties="average"``).
    Both together are MS Recommenders' ``r_precision_at_k``, which ``convention="recommenders"``
    sets.

    Args:
        preds, target: one batch, or ``preds`` with ``target_ids``, or another input form of ``arguments``.
        k: the cut-off, or a sequence of them (then a dict ``{"rprecision@k": value}``).
        denominator: see above.
        no_hit_action: see above.
        arguments: ``reduction``, ``convention``, ``empty_target_action``, ``relevance_threshold``, ``ties``,
            ``validate_args``, ``empty_list_action`` and the other input forms
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Raises:
        ValueError: on a bad ``k`` or option, and on bad input
            (:class:`~torchrec_eval.ranking.named_metric.TopKCall`).

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import rprecision
        >>> rprecision(torch.tensor([[0.9, 0.8, 0.7, 0.6]]), torch.tensor([[1, 0, 1, 1]]))
        tensor(0.6667, dtype=torch.float64)
    """
    options = {"denominator": denominator, "no_hit_action": no_hit_action}
    return compute_named_metric("rprecision", preds, target, k, options, arguments)
