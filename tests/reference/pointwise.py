"""Brute-force pointwise references: weighted pairs counted one by one, plain Python.

``auc`` looks at every (positive, negative) pair of samples with weights ``w_i y_i`` and ``w_j (1 - y_j)``
(soft labels count on both sides), a tie counting 1/2: the definition, not a sort. ``average_precision``
walks the distinct thresholds from the highest, precision and recall of everything scored at or above.
"""


def auc(preds, labels, weights):
    num = den = 0.0
    for i in range(len(preds)):
        for j in range(len(preds)):
            pair = weights[i] * labels[i] * weights[j] * (1.0 - labels[j])
            den += pair
            num += pair * (1.0 if preds[i] > preds[j] else 0.5 if preds[i] == preds[j] else 0.0)
    return float("nan") if den == 0 else num / den


def average_precision(preds, labels, weights):
    positives = sum(w * y for y, w in zip(labels, weights, strict=True))
    if positives == 0:
        return float("nan")
    total, recall_before = 0.0, 0.0
    for threshold in sorted(set(preds), reverse=True):
        tp = sum(w * y for p, y, w in zip(preds, labels, weights, strict=True) if p >= threshold)
        fp = sum(w * (1.0 - y) for p, y, w in zip(preds, labels, weights, strict=True) if p >= threshold)
        recall = tp / positives
        if tp + fp > 0:
            total += (recall - recall_before) * tp / (tp + fp)
        recall_before = recall
    return total
