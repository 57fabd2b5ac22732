"""k-fold cross-validation of a recommender: fit and score per fold, a metric suite, the summary."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from torchrec_eval.comparison.statistics import mean_confidence_interval
from torchrec_eval.data.interactions import Interactions
from torchrec_eval.data.splitting.arguments import check_choice, check_interactions
from torchrec_eval.data.splitting.kfold import interaction_kfold, user_kfold
from torchrec_eval.data.splitting.ranking_inputs import ranking_inputs
from torchrec_eval.data.splitting.split import Split
from torchrec_eval.pipeline.arguments import check_int, check_probability

__all__ = ["CrossValidationResult", "DEFAULT_METRICS", "cross_validate"]

DEFAULT_METRICS = ("ndcg@10", "recall@20", "map@10", "mrr@10", "hitrate@10", "precision@10")


@dataclass(frozen=True, eq=False)
class CrossValidationResult:
    """The per-fold values of every metric and their summary over folds.

    Attributes:
        values: metric name -> ``[n_folds]`` float64 tensor (``[n_folds, G]`` for a grouped metric).
        mean, std, low, high: metric name -> the mean over folds, the sample standard deviation, and
            the bounds of the Student-t interval (:func:`mean_confidence_interval`).
        confidence: the confidence level of the interval.
        num_users: ``[n_folds]`` long, the number of users evaluated in each fold.
    """

    values: dict[str, Tensor]
    mean: dict[str, Tensor]
    std: dict[str, Tensor]
    low: dict[str, Tensor]
    high: dict[str, Tensor]
    confidence: float
    num_users: Tensor

    @property
    def n_folds(self) -> int:
        return self.num_users.numel()

    def summary(self, digits: int = 4) -> str:
        """A table: one line per metric with its mean, standard deviation and interval."""
        level = f"{100 * self.confidence:g}% CI"
        lines = [f"{'metric':<14} {'mean':>{digits + 3}} {'std':>{digits + 3}}  {level}"]
        for name in self.values:
            mean, std, low, high = (float(d[name].mean()) for d in (self.mean, self.std, self.low, self.high))
            lines.append(f"{name:<14} {mean:>{digits + 3}.{digits}f} {std:>{digits + 3}.{digits}f}  "
                         f"[{low:.{digits}f}, {high:.{digits}f}]")
        return "\n".join(lines)


def _as_dict(metric: Metric, value: Any) -> dict[str, Tensor]:
    if isinstance(value, dict):
        return {str(key): torch.as_tensor(v).detach().double().cpu() for key, v in value.items()}
    return {type(metric).__name__.lower(): torch.as_tensor(value).detach().double().cpu()}


def _check_scores(scores: Any, expected: tuple[int, int]) -> None:
    """Raises unless ``fit_and_score`` returned a ``[len(users), num_items]`` tensor (or a scorer)."""
    if not isinstance(scores, Tensor) or tuple(scores.shape) != expected:
        got = tuple(scores.shape) if isinstance(scores, Tensor) else type(scores).__name__
        raise ValueError(
            "`fit_and_score` must return a scorer or scores of shape "
            f"[len(users), num_items] = {list(expected)}, got {got}"
        )


def _evaluate_fold(suite: Metric, split: Split,
                   fit_and_score: Callable[[Interactions, Tensor], Tensor | Callable[[Tensor], Tensor]],
                   batch_size: int) -> tuple[dict[str, Tensor], int]:
    """Fit on the split's training part, evaluate the held-out users; the values and the user count."""
    inputs = ranking_inputs(split.train, split.test)
    suite.reset()
    if inputs.users.numel() == 0:  # nobody to evaluate (e.g. only single-interaction users): NaN values
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*compute.*before.*update")
            return _as_dict(suite, suite.compute()), 0
    scores = fit_and_score(split.train, inputs.users)
    if not callable(scores):
        _check_scores(scores, (inputs.users.numel(), split.train.num_items))
    offset = 0
    for batch in inputs.batches(batch_size):
        size = batch.users.numel()
        batch_scores = scores(batch.users) if callable(scores) else scores[offset : offset + size]
        offset += size
        device = batch_scores.device
        suite.update(batch_scores, target_ids=batch.target_ids.to(device),
                     exclude_ids=batch.exclude_ids.to(device))
    return _as_dict(suite, suite.compute()), inputs.users.numel()


def cross_validate(
    n_folds: int,
    fit_and_score: Callable[[Interactions, Tensor], Tensor | Callable[[Tensor], Tensor]],
    interactions: Interactions,
    metrics: Sequence[str] | Metric = DEFAULT_METRICS,
    *,
    by: str = "user",
    test_fraction: float = 0.2,
    holdout: str = "time",
    seed: int = 0,
    confidence: float = 0.95,
    batch_size: int = 1024,
) -> CrossValidationResult:
    r"""k-fold cross-validation of a recommender: fit on each fold's training part, rank its held-out users.

    For each of the ``n_folds`` splits of :func:`user_kfold` (``by="user"``) or
    :func:`interaction_kfold` (``by="interaction"``), in order:

    1. :func:`ranking_inputs` gives the held-out users (those with a test interaction), their test
       items (``target_ids``) and their training items (``exclude_ids``);
    2. ``fit_and_score(train, users)`` trains a model on the fold's training interactions and returns
       either the ``[len(users), num_items]`` scores of those users, or a function that maps a
       ``[B]`` batch of users to their ``[B, num_items]`` scores (called in batches of
       ``batch_size``, to bound memory);
    3. the metrics are reset, updated batch by batch and computed: the fold's value of each metric is
       its mean over the fold's evaluated users. A fold without an evaluated user (its users all have a
       single interaction) is not fitted, and its values are NaN.

    The summary over the :math:`k` fold values :math:`x_f` of each metric is the mean, the sample
    standard deviation and the Student-t interval
    :math:`\bar x \pm t_{(1+c)/2,\,k-1}\, s/\sqrt{k}` (:func:`mean_confidence_interval`; the folds share
    training data, so read it as indicative). Run two models with the same ``seed`` to get the same
    folds, and compare them fold by fold (a paired difference).

    Args:
        n_folds: the number of folds, ``>= 2``.
        fit_and_score: ``(train: Interactions, users: Tensor) -> scores or scorer``, as above.
        interactions: the data.
        metrics: names for :class:`~torchrec_eval.RankingMetrics` (default: ndcg@10, recall@20, map@10,
            mrr@10, hitrate@10, precision@10), or any metric taking ``target_ids``/``exclude_ids``
            (a :class:`~torchrec_eval.RankingMetrics`, :class:`~torchrec_eval.NDCG`, ...); it is reset
            before each fold.
        by: ``"user"`` (:func:`user_kfold`) or ``"interaction"`` (:func:`interaction_kfold`).
        test_fraction: the tested share of a held-out user's interactions (``by="user"`` only).
        holdout: ``"time"`` or ``"random"``, which of a held-out user's interactions are tested
            (``by="user"`` only).
        seed: the seed of the folds.
        confidence: the level of the interval, in ``(0, 1)``.
        batch_size: users per metric update, ``>= 1``.

    Returns:
        :class:`CrossValidationResult`.

    Raises:
        ValueError: on a bad argument (named, with the value received), or if ``fit_and_score``
            returns neither a callable nor scores of shape ``[len(users), num_items]``.

    Example:
        >>> from torchrec_eval.data.interactions import generate_interactions, item_popularity
        >>> from torchrec_eval.data.splits import cross_validate
        >>> data = generate_interactions(num_users=200, num_items=100, interactions_per_user=10, seed=0)
        >>> def popularity(train, users):
        ...     return item_popularity(train).double().expand(users.numel(), -1)
        >>> result = cross_validate(5, popularity, data, ["ndcg@10", "hitrate@10"], seed=0)
        >>> result.values["ndcg@10"].shape, result.num_users.tolist()
        (torch.Size([5]), [40, 40, 40, 40, 40])
        >>> bool(result.low["ndcg@10"] < result.mean["ndcg@10"] < result.high["ndcg@10"])
        True
        >>> print(result.summary())
        metric            mean     std  95% CI
        ndcg@10         0.1926  0.0480  [0.1329, 0.2522]
        hitrate@10      0.5150  0.0602  [0.4402, 0.5898]
    """
    data = check_interactions(interactions)
    check_choice("by", by, ("user", "interaction"))
    batch_size = check_int("batch_size", batch_size, 1)
    check_probability("confidence", confidence)
    if not callable(fit_and_score):
        raise ValueError(f"`fit_and_score` must be callable, got {type(fit_and_score).__name__}")
    suite = _metric_suite(metrics)
    if by == "user":
        folds = user_kfold(data, n_folds, test_fraction=test_fraction, holdout=holdout, seed=seed)
    else:
        folds = interaction_kfold(data, n_folds, seed=seed)
    per_fold = [_evaluate_fold(suite, split, fit_and_score, batch_size) for split in folds]
    suite.reset()
    return _summarise(per_fold, confidence)


def _metric_suite(metrics: Sequence[str] | Metric) -> Metric:
    """The metric to evaluate each fold with: ``metrics`` itself, or a suite of the names it lists."""
    if isinstance(metrics, Metric):
        return metrics
    from torchrec_eval.suites.ranking import RankingMetrics

    if isinstance(metrics, str):
        raise ValueError(
            f"`metrics` must be a list of names such as ['ndcg@10'], got {metrics!r}"
        )
    return RankingMetrics(list(metrics))


def _summarise(per_fold: list[tuple[dict[str, Tensor], int]], confidence: float) -> CrossValidationResult:
    """The folds' (values, users evaluated) stacked per metric, with their mean, std and interval."""
    num_users = torch.tensor([users for _, users in per_fold])
    values = {name: torch.stack([fold[name] for fold, _ in per_fold]) for name in per_fold[0][0]}
    summary = {name: mean_confidence_interval(v, confidence) for name, v in values.items()}
    mean, std, low, high = ({name: s[i] for name, s in summary.items()} for i in range(4))
    return CrossValidationResult(values, mean, std, low, high, confidence, num_users)
