"""pyxclib's propensity-scored metrics, transcribed in numpy from its ``xclib/evaluation/xc_metrics.py``
(kunaldahiya/pyxclib, commit 07eefca): ``compute_inv_propesity``, ``psprecision`` and ``psndcg`` on dense
[instances, labels] arrays (pyxclib is not on the package index). Each returns the values at k = 1..``k``,
as pyxclib does; scores must be distinct (pyxclib's top k is numpy's unstable ``argsort``)."""

import numpy as np


def inverse_propensity(train_labels, a=0.55, b=1.5):
    num_instances = train_labels.shape[0]
    freqs = np.ravel(np.sum(train_labels, axis=0))
    c = (np.log(num_instances) - 1) * np.power(b + 1, a)
    return 1.0 + c * np.power(freqs + b, -a)


def _top_k(scores, k):
    return np.argsort(-scores, axis=1)[:, :k]


def _flags(indices, labels, weights):
    return np.take_along_axis(labels, indices, axis=1) * weights[indices]


def _precision(flags, k):
    return np.mean(np.cumsum(flags, axis=1) / (np.arange(k) + 1), axis=0)


def _ndcg(flags, n, k):
    dcg = np.cumsum(flags / np.log2(np.arange(k) + 2), axis=1)
    out, cumsum = np.zeros(k), 0.0
    for j in range(k):
        cumsum += 1 / np.log2(j + 2)
        out[j] = np.mean(dcg[:, j] / np.minimum(n, cumsum))
    return out


def psprecision(scores, labels, weights, k):
    """pyxclib's ``psprecision``: the mean top-k propensity-scored precision over the best one's, per k."""
    best = _top_k(labels * weights, k)
    return _precision(_flags(_top_k(scores, k), labels, weights), k) / _precision(_flags(best, labels, weights), k)


def psndcg(scores, labels, weights, k):
    """pyxclib's ``psndcg``: n is each instance's binary ideal DCG over all its labels (index R - 1 of the
    running sum, so an instance without a label reads the last entry, as pyxclib's ``_cumsum[-1]``)."""
    total = labels.sum(axis=1).astype(int)
    cumsum = np.cumsum(1 / np.log2(np.arange(1, max(total.max(), k) + 1) + 1))
    n = cumsum[total - 1]
    best = _top_k(labels * weights, k)
    return _ndcg(_flags(_top_k(scores, k), labels, weights), n, k) / _ndcg(_flags(best, labels, weights), n, k)
