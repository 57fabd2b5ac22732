r"""Off-policy CTR@k: the click-through rate a new ranking would get, estimated from the responses logged under
another policy (Jurity's ``CTR(estimation="ips" | "dr")``, with self-normalised IPS as Open Bandit Pipeline has
it).

Each query's top k are the new ranking's recommendations; a recommended item a with a logged response r (it was
shown by the logging policy with probability p = ``propensity``) is a match, :math:`I_a = 1`. Over the
recommended (query, item) pairs, n of them:

.. math::

    \mathrm{IPS} = \frac{1}{n} \sum \frac{I_a\, r_a}{p_a}, \qquad
    \mathrm{SNIPS} = \frac{\sum I_a r_a / p_a}{\sum I_a / p_a}, \qquad
    \mathrm{DR} = \frac{1}{n} \sum \Big(\hat r_a + \frac{I_a (r_a - \hat r_a)}{p_a}\Big)

with :math:`\hat r_a` a reward model's estimate (``reward_estimate``; by default the ranking's own score, as
Jurity reads the recommendation's score column). Pooled over queries, so the state is four float64 sums per
cut-off: n, :math:`\sum I r / p`, :math:`\sum I / p` and DR's numerator.

Which is unbiased when (Dudik, Langford & Li, ICML 2011; Swaminathan & Joachims, NeurIPS 2015): IPS, when each
pair's ``propensity`` is the true probability that the logging policy showed it and is positive wherever the new
ranking recommends (common support); DR, when the propensities are right *or* the reward model is (doubly
robust), with less variance than IPS where the model is good; SNIPS is biased (O(1/n)) but consistent under IPS's
conditions, has less variance, and stays within the range of the rewards. None corrects for position: each
recommended pair counts the same, as in Jurity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Unpack, get_args, overload

import torch
from torch import Tensor

from torchrec_eval.members.interface import Member
from torchrec_eval.members.steps import Reduction, accumulate, plain_requests, prepare
from torchrec_eval.pairwise.ctr import check_ignore_index, ctr_cutoffs
from torchrec_eval.pairwise.logged import logged_inputs
from torchrec_eval.pipeline import Batch, FormInputs, Inputs, Rules, Ties, input_keywords_checked
from torchrec_eval.pipeline.arguments import check_k
from torchrec_eval.pipeline.tensor_cache import constant

__all__ = ["ESTIMATORS", "Estimator", "OffPolicyMember", "build_member", "off_policy_ctr", "off_policy_sums", "sums_at_ranks"]

Estimator = Literal["ips", "snips", "dr"]
ESTIMATORS: tuple[Estimator, ...] = get_args(Estimator)
#: the sums of the state, per cut-off, in this order
SUMS = ("recommended", "weighted_rewards", "weights", "doubly_robust")


def sums_at_ranks(listed: Tensor, logged: Tensor, reward: Tensor, propensity: Tensor, estimate: Tensor) -> Tensor:
    """The four sums' terms at each rank, [B, 4, K] float64: recommended (1 where an item is listed), I r / p,
    I / p and r-hat + I (r - r-hat) / p (0 past the list).

    Args:
        listed: [B, K] bool, an item at the rank.
        logged: [B, K] bool, the item has a logged response (a match).
        reward, propensity, estimate: [B, K] the logged reward, the logging propensity (read where logged) and the
            reward model's estimate of the item at each rank.
    """
    weight = torch.where(logged, 1.0 / torch.where(logged, propensity.to(torch.float64), 1.0), 0.0)
    reward, estimate = reward.to(torch.float64), estimate.to(torch.float64)
    dr = torch.where(listed, estimate, 0.0) + weight * (reward - estimate)
    return torch.stack([listed.to(torch.float64), weight * reward, weight, dr], dim=1)


def off_policy_sums(terms: Tensor, ks: Sequence[int]) -> Tensor:
    """[B, 4 len(ks)] each query's sums over its top k, cut-off by cut-off (the four of :data:`SUMS` for the
    first k, then the next)."""
    depth = terms.shape[2]
    columns = tuple(min(k, depth) - 1 for k in ks)
    device = terms.device
    index = constant(("off-policy-columns", columns, device), lambda: torch.tensor(columns, device=device))
    return terms.cumsum(2).index_select(2, index).transpose(1, 2).reshape(terms.shape[0], -1)


def estimate_from_sums(estimator: str, sums: Tensor) -> Tensor:
    """The estimator's value from the four sums [..., 4] (0/0 = NaN: no recommended pair, or no match for SNIPS)."""
    recommended, weighted_rewards, weights, doubly_robust = sums.unbind(-1)
    if estimator == "ips":
        return weighted_rewards / recommended
    if estimator == "snips":
        return weighted_rewards / weights
    return doubly_robust / recommended


class OffPolicyMember(Member):
    """Off-policy estimates, each an (estimator, cut-off) pair; its state ``off_policy_sums`` [G, 4 C] float64, the
    four sums of each of its C distinct cut-offs (every estimator reads the same sums).

    The batch's top-k view gives the recommended items; ``batch.extras`` holds, at each rank, whether the item is
    logged, its reward, its propensity and the reward model's estimate (see
    :meth:`~torchrec_eval.pairwise.logged.LoggedInputs.at_ranks`).
    """

    needs_ideal = False
    to_num_relevant = False
    needs_candidates = False
    needs_listed_ids = True
    supports_weights = True  # a pooled ratio: each query's sums weighed
    paired = False  # a ratio of pooled sums, not a mean over queries

    def __init__(self, requests: Sequence[tuple[str, Any]]) -> None:
        for estimator, _ in requests:
            if not isinstance(estimator, str) or estimator not in ESTIMATORS:
                raise ValueError(f"`estimator` must be one of {ESTIMATORS}, got {estimator!r}")
        self.requests = [(estimator, check_k(k)) for estimator, k in requests]
        self.ks = sorted({k for _, k in self.requests})
        self.keys = [f"{estimator}_ctr@{k}" for estimator, k in self.requests]
        self.query_keys = list(self.keys)  # a query's value is its own ratio
        self.depth = max(self.ks)
        self.needs_estimate = any(estimator == "dr" for estimator, _ in self.requests)

    def configuration(self) -> dict[str, Any]:
        return {"kind": "off-policy", "requests": [list(request) for request in self.requests]}

    def check_ties(self, ties: str) -> None:
        if ties == "average":
            raise ValueError("`ties`: an off-policy estimate reads the items of one ranking, and 'average' has no "
                             f"single list; use an order ('index', 'reverse_index', ...), got ties={ties!r}")

    def sums(self, batch: Batch) -> Tensor:
        """[B, 4 C] each query's sums at each distinct cut-off."""
        extras = batch.extras or {}
        missing = [name for name in ("logged", "reward", "propensity", "estimate") if name not in extras]
        if missing:
            raise ValueError(f"an off-policy estimate reads each rank's {missing}: this batch holds none, got "
                             f"extras={sorted(extras)}")
        listed = batch.top_k().listed_ids() >= 0
        terms = sums_at_ranks(listed, extras["logged"], extras["reward"], extras["propensity"], extras["estimate"])
        return off_policy_sums(terms, self.ks)

    def values(self, sums: Tensor) -> Tensor:
        """[..., P] each key's estimate from sums [..., 4 C]."""
        by_cutoff = sums.view(*sums.shape[:-1], len(self.ks), len(SUMS))
        return torch.stack([estimate_from_sums(estimator, by_cutoff[..., self.ks.index(k), :])
                            for estimator, k in self.requests], dim=-1)

    def add_states(self, metric: Any, num_groups: int) -> None:
        default = torch.zeros(num_groups, len(SUMS) * len(self.ks), dtype=torch.float64)
        metric.add_state("off_policy_sums", default=default, dist_reduce_fx="sum")

    def stage(self, metric: Any, batch: Batch) -> Callable[[], None]:
        sums = self.sums(batch)
        return lambda: accumulate(metric.off_policy_sums, sums, batch.groups, batch.weights)

    def per_query(self, metric: Any, batch: Batch) -> tuple[Tensor, Tensor]:
        values = self.values(self.sums(batch))
        return values.nan_to_num(0.0), values.isfinite()

    def moments(self, metric: Any) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
        return {}  # a ratio of pooled sums: no interval over queries

    def compute(self, metric: Any) -> dict[str, Tensor]:
        values = self.values(metric.off_policy_sums)
        return {key: values[:, i] for i, key in enumerate(self.keys)}


def build_member(pairs: list[tuple[str, int | None]], options: dict[str, dict[str, Any]]) -> OffPolicyMember:
    """A suite's member of the off-policy families (``"ips_ctr"``, ``"snips_ctr"``, ``"dr_ctr"``) at their cut-offs."""
    return OffPolicyMember([(family.removesuffix("_ctr"), k) for family, k in plain_requests(pairs, options)])


@overload
def off_policy_ctr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int = 10,
                   estimator: Estimator = "ips", propensity: Tensor | None = None,
                   reward_estimate: Tensor | None = None, ignore_index: float | None = None,
                   reduction: Reduction = "mean", ties: Ties = "index", validate_args: bool = True,
                   **inputs: Unpack[FormInputs]) -> Tensor: ...
@overload
def off_policy_ctr(preds: Tensor | None = None, target: Tensor | None = None, *, k: Sequence[int],
                   estimator: Estimator = "ips", propensity: Tensor | None = None,
                   reward_estimate: Tensor | None = None, ignore_index: float | None = None,
                   reduction: Reduction = "mean", ties: Ties = "index", validate_args: bool = True,
                   **inputs: Unpack[FormInputs]) -> dict[str, Tensor]: ...
@input_keywords_checked
def off_policy_ctr(preds: Tensor | None = None, target: Tensor | None = None, *, k: int | Sequence[int] = 10,
                   estimator: Estimator = "ips", propensity: Tensor | None = None,
                   reward_estimate: Tensor | None = None, ignore_index: float | None = None,
                   reduction: Reduction = "mean", ties: Ties = "index", validate_args: bool = True,
                   **inputs: Unpack[FormInputs]) -> Tensor | dict[str, Tensor]:
    r"""Off-policy CTR@k of one batch: IPS, SNIPS or DR over the recommended (query, item) pairs (see
    :class:`~torchrec_eval.metrics.off_policy.OffPolicyCTR`, whose ``update`` takes the same inputs).

    .. math:: \mathrm{IPS} = \frac{1}{n} \sum \frac{I_a r_a}{p_a}

    Shapes: dense ``preds``, ``target``, ``propensity`` [B, N]; or ``target_ids``, ``target_gains`` and
    ``propensity`` [B, T] beside ``preds`` [B, N] or ``ranked_ids`` [B, L].

    Args:
        preds, target, inputs: the new ranking and the logged rewards in the dense, ids or ranked form.
        k: cut-off, an int or a sequence of them (then a dict ``{"ips_ctr@k": value}``).
        estimator: ``"ips"``, ``"snips"`` or ``"dr"``.
        propensity, reward_estimate: the logging propensities and the reward model's estimates (defaults: Jurity's).
        ignore_index: the dense ``target`` value of an unlogged item.
        reduction: ``"mean"``: the pooled estimate (a 0-d float64 tensor); ``"none"``: each query's own [B] (NaN:
            no recommended pair).
        ties, validate_args: the order of equal scores, and whether values are checked (a host read).

    Raises:
        ValueError: on a bad ``k``, ``estimator``, ``ignore_index``, ``reduction`` or ``ties="average"``, and on bad
            input.

    Example:
        >>> import torch
        >>> from torchrec_eval.functional import off_policy_ctr
        >>> scores = torch.tensor([[0.8, 0.1, 0.3], [0.2, 0.7, 0.1]])
        >>> clicks = torch.tensor([[0.0, -1, -1], [-1, 1.0, 0.0]])
        >>> propensity = torch.tensor([[0.1, 1.0, 1.0], [1.0, 0.6, 0.2]])
        >>> off_policy_ctr(scores, clicks, k=1, propensity=propensity, ignore_index=-1, reduction="none")
        tensor([0.0000, 1.6667], dtype=torch.float64)
    """
    if reduction not in ("mean", "none"):
        raise ValueError(f"`reduction` must be 'mean' or 'none', got {reduction!r}")
    check_ignore_index(ignore_index)
    ks = ctr_cutoffs(k)
    member = OffPolicyMember([(estimator, one) for one in ks])
    member.check_ties(ties)
    log = logged_inputs(preds, target, propensity, reward_estimate, inputs, ignore_index, validate_args,
                        needs_estimate=estimator == "dr")
    ranking = {name: value for name, value in inputs.items() if name != "target_gains"}
    batch = prepare([member], Inputs.of({**ranking, "preds": preds, "target": log.pipeline_target}),
                    Rules(ties, None, validate_args))
    batch.extras = log.at_ranks(batch.top_k().listed_ids())
    sums = member.sums(batch)
    values = member.values(sums if reduction == "none" else sums.sum(0, keepdim=True))
    results = {key: values[:, i] if reduction == "none" else values[0, i] for i, key in enumerate(member.keys)}
    return results if isinstance(k, (list, tuple)) else results[member.keys[0]]
