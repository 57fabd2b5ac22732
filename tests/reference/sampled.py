"""Brute-force references for sampled evaluation, in numpy and scipy, one formula at a time: the sampled-rank
distributions from scipy.stats, the corrections as least-squares problems solved by numpy.linalg.lstsq, and a
plain EM over the true ranks."""

from __future__ import annotations

import numpy as np
from scipy import stats


def transition(n: int, m: int, replacement: bool) -> np.ndarray:
    """[n, m + 1] P(s | r) from scipy's binomial or hypergeometric pmf."""
    j, r = np.arange(m + 1)[None, :], np.arange(1, n + 1)[:, None]
    return stats.binom.pmf(j, m, (r - 1) / (n - 1)) if replacement else stats.hypergeom.pmf(j, n - 1, r - 1, m)


def possible_ranks(scores: list[float], j: int, ties: str) -> list[int]:
    """The ranks item ``j`` may take among ``scores`` (1 + the others above it), a tie by ``ties``: "index" puts
    a tied item of a lower position above, "pessimistic" every tied item, "average" each rank of the tie."""
    above = sum(1 for i, v in enumerate(scores) if i != j and v > scores[j])
    tied = [i for i, v in enumerate(scores) if i != j and v == scores[j]]
    if ties == "average":
        return [1 + above + t for t in range(len(tied) + 1)]
    if ties == "pessimistic":
        return [1 + above + len(tied)]
    return [1 + above + sum(1 for i in tied if i < j)]


def metric(family: str, r: np.ndarray, k: int | None, size: int) -> np.ndarray:
    """The metric of one relevant item at rank r, written out per family."""
    r = np.asarray(r, dtype=float)
    if family == "auc":
        return (size - r) / (size - 1)
    inside = np.ones_like(r) if k is None else (r <= k).astype(float)
    return {"hitrate": inside, "recall": inside, "precision": inside / (k or 1), "mrr": inside / r,
            "map": inside / r, "ndcg": inside / np.log2(r + 1)}[family]


def bias_variance_lstsq(a: np.ndarray, b: np.ndarray, gamma: float) -> np.ndarray:
    """argmin_c sum_r pi_r [(A_r c - b_r)^2 + gamma Var_r(c)], pi uniform, as one stacked least-squares problem:
    the objective is (1 - gamma) ||sqrt(pi) A c||^2 - 2 (pi b)^T A c + gamma sum_s w_s c_s^2 + const with
    w = A^T pi, i.e. ||sqrt((1 - gamma) pi) (A c - b / (1 - gamma))||^2 + ||sqrt(gamma w) c||^2 + const."""
    n = a.shape[0]
    pi = np.full(n, 1.0 / n)
    w = a.T @ pi
    top = np.sqrt((1 - gamma) * pi)[:, None] * a
    bottom = np.diag(np.sqrt(gamma * w))
    rhs = np.concatenate([np.sqrt((1 - gamma) * pi) * b / (1 - gamma), np.zeros(a.shape[1])])
    return np.linalg.lstsq(np.vstack([top, bottom]), rhs, rcond=None)[0]


def constrained_nnls(a: np.ndarray, b: np.ndarray, gamma: float) -> np.ndarray:
    """The same objective as :func:`bias_variance_lstsq` over c_1 >= ... >= c_{m+1} >= 0, solved by
    scipy.optimize.nnls on the stacked system in d >= 0 with c = U d (U: upper-triangular ones)."""
    from scipy.optimize import nnls

    n, size = a.shape
    pi = np.full(n, 1.0 / n)
    upper = np.triu(np.ones((size, size)))
    top = np.sqrt((1 - gamma) * pi)[:, None] * a @ upper
    bottom = np.diag(np.sqrt(gamma * (a.T @ pi))) @ upper
    rhs = np.concatenate([np.sqrt((1 - gamma) * pi) * b / (1 - gamma), np.zeros(size)])
    d, _ = nnls(np.vstack([top, bottom]), rhs, maxiter=100 * size)
    return upper @ d


def posterior_mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """c_s = sum_r P(r | s) M(r) under a uniform prior."""
    return (a * b[:, None]).sum(0) / a.sum(0)


def em(histogram: np.ndarray, a: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Maximum likelihood of the distribution of true ranks given counts of sampled ranks, by EM:
    pi_r <- sum_s h_s P(r | s) / N, P(r | s) = pi_r P(s | r) / sum_r' pi_r' P(s | r')."""
    pi = np.full(a.shape[0], 1.0 / a.shape[0])
    for _ in range(iterations):
        evidence = pi @ a  # [m + 1]: P(s)
        pi = pi * (a @ np.divide(histogram, evidence, out=np.zeros_like(evidence), where=evidence > 0))
        pi /= histogram.sum()
    return pi


def recbole_user_metrics(candidate_scores: dict[int, float], positives: set[int], k: int) -> dict[str, float]:
    """One user's metrics as RecBole's ``recbole/evaluator/metrics.py`` computes them from the top-k of its
    row (candidates: the user's positives and sampled negatives, every other item at -inf)."""
    top = sorted(candidate_scores, key=lambda item: -candidate_scores[item])[:k]
    hits = [1.0 if item in positives else 0.0 for item in top]
    pos_len = len(positives)
    first = next((i for i, h in enumerate(hits, start=1) if h), None)
    dcg = sum(h / np.log2(i + 1) for i, h in enumerate(hits, start=1))
    idcg = sum(1 / np.log2(i + 1) for i in range(1, min(pos_len, k) + 1))
    precision_at = [sum(hits[:i]) / i for i in range(1, len(hits) + 1)]
    return {
        "hitrate": float(any(hits)),
        "recall": sum(hits) / pos_len,
        "mrr": 0.0 if first is None else 1 / first,
        "ndcg": dcg / idcg,
        "precision": sum(hits) / k,
        "map": sum(p * h for p, h in zip(precision_at, hits, strict=True)) / min(pos_len, k),
    }
