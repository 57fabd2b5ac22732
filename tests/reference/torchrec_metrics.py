"""Plain-Python references that follow TorchRec's metric source line by line (torchrec/metrics/*.py).

Written from ``ne.py`` (``compute_cross_entropy``, ``compute_ne``, ``compute_logloss``), ``calibration.py``,
``ctr.py``, ``mse.py``, ``mae.py``, ``auc.py`` (``_compute_auc_helper``: descending argsort, cumulative
true/false positives, ``torch.trapz``), ``auprc.py`` (``_compute_auprc_helper``: thresholds at distinct
predictions, Riemann sum) and ``rec_metric.py`` (``WindowBuffer``), one sample at a time with Python
floats, for the tests to compare against when ``torchrec`` itself cannot be imported (its package pulls
``fbgemm_gpu``, which has no build for every torch). TorchRec's placeholders for undefined values (0,
0.5) are kept here, so tests compare on data where the values are defined.
"""

import math
from collections import deque

ETA = 1e-12


def _clamp(x, low, high):
    return min(max(x, low), high)


def cross_entropy_sum(preds, labels, weights, eta=ETA):
    total = 0.0
    for p, y, w in zip(preds, labels, weights, strict=True):
        p = _clamp(float(p), eta, 1 - eta)
        total += -w * y * math.log2(p) - w * (1.0 - y) * math.log2(1.0 - p)
    return total


def ne(preds, labels, weights, eta=ETA):
    ce = cross_entropy_sum(preds, labels, weights, eta)
    weighted = max(sum(weights), eta)
    pos = sum(w * y for y, w in zip(labels, weights, strict=True))
    neg = sum(w * (1.0 - y) for y, w in zip(labels, weights, strict=True))
    mean = _clamp(pos / weighted, eta, 1 - eta)
    return ce / (-pos * math.log2(mean) - neg * math.log2(1.0 - mean))


def log_loss_bits(preds, labels, weights, eta=ETA):
    """TorchRec's LOG_LOSS: in bits, divided by max(pos + neg, eta)."""
    pos = sum(w * y for y, w in zip(labels, weights, strict=True))
    neg = sum(w * (1.0 - y) for y, w in zip(labels, weights, strict=True))
    return cross_entropy_sum(preds, labels, weights, eta) / max(pos + neg, eta)


def calibration(preds, labels, weights):
    num = sum(p * w for p, w in zip(preds, weights, strict=True))
    denom = sum(y * w for y, w in zip(labels, weights, strict=True))
    return 0.0 if denom <= 0.0 else num / denom


def ctr(preds, labels, weights):
    num = sum(y * w for y, w in zip(labels, weights, strict=True))
    denom = sum(weights)
    return 0.0 if denom == 0.0 else num / denom


def mse(preds, labels, weights):
    error = sum(w * (y - p) ** 2 for p, y, w in zip(preds, labels, weights, strict=True))
    return 0.0 if sum(weights) == 0.0 else error / sum(weights)


def mae(preds, labels, weights):
    error = sum(w * abs(y - p) for p, y, w in zip(preds, labels, weights, strict=True))
    return 0.0 if sum(weights) == 0.0 else error / sum(weights)


def auc(preds, labels, weights):
    """``_compute_auc_helper``: trapezoids over the samples in descending order (ties not grouped)."""
    order = sorted(range(len(preds)), key=lambda i: -preds[i])
    cum_tp, cum_fp, tp, fp = [], [], 0.0, 0.0
    for i in order:
        tp += weights[i] * labels[i]
        fp += weights[i] * (1.0 - labels[i])
        cum_tp.append(tp)
        cum_fp.append(fp)
    if not order or cum_fp[-1] * cum_tp[-1] == 0:
        return 0.5
    area = sum((cum_fp[j] - cum_fp[j - 1]) * (cum_tp[j] + cum_tp[j - 1]) / 2 for j in range(1, len(order)))
    return area / cum_fp[-1] / cum_tp[-1]


def auprc(preds, labels, weights):
    """``_compute_auprc_helper``: precision and recall at each distinct threshold, Riemann sum."""
    order = sorted(range(len(preds)), key=lambda i: -preds[i])
    tps, fps, tp, fp = [], [], 0.0, 0.0
    for j, i in enumerate(order):
        tp += weights[i] * labels[i]
        fp += weights[i] * (1.0 - labels[i])
        if j == len(order) - 1 or preds[order[j + 1]] != preds[i]:  # the last of its threshold
            tps.append(tp)
            fps.append(fp)
    precision = [t / (t + f) for t, f in zip(tps, fps, strict=True)][::-1] + [1.0]
    recall = [t / tps[-1] for t in tps][::-1] + [0.0]
    return -sum((recall[j + 1] - recall[j]) * precision[j] for j in range(len(recall) - 1))


class WindowBuffer:
    """``rec_metric.WindowBuffer``: per-update states in a deque; whole updates leave while the window
    holds more than ``max_size`` samples, or more than ``max_buffer_count`` updates."""

    def __init__(self, max_size, max_buffer_count=1000):
        self.max_size = max_size
        self.buffers = deque(maxlen=max_buffer_count)
        self.used_sizes = deque(maxlen=max_buffer_count)
        self.window_used_size = 0
        self.window_state = None

    def _remove(self):
        state = self.buffers.popleft()
        self.window_state = [a - b for a, b in zip(self.window_state, state, strict=True)]
        self.window_used_size -= self.used_sizes.popleft()

    def aggregate_state(self, curr_state, size):
        if self.window_state is None:
            self.window_state = [0.0] * len(curr_state)
        if len(self.buffers) == self.buffers.maxlen:
            self._remove()
        self.buffers.append(list(curr_state))
        self.used_sizes.append(size)
        self.window_state = [a + b for a, b in zip(self.window_state, curr_state, strict=True)]
        self.window_used_size += size
        while self.window_used_size > self.max_size:
            self._remove()

    def updates_in_window(self):
        """How many of the most recent updates the window holds."""
        return len(self.buffers)
