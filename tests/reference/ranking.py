"""Brute-force per-query oracle for the top-k ranking metrics (the formulas of ``docs/metrics/hits.md``,
``docs/metrics/rank.md`` and ``docs/metrics/graded.md``).

Plain Python on lists, one query at a time, written to be obviously right rather than fast.
Inputs may be torch tensors or nested lists; they are converted with ``.tolist()`` first.

A query is described by two lists:

* ``ranked``: the gains (raw relevance values) of the valid candidates, in rank order; it may be
  shorter than the number of candidates (a recommendation list of a given length);
* ``gains``: the gains of *all* the query's items that can count (valid candidates, or the ids
  of the ground truth), used for R (number of relevant items) and the ideal DCG.

Every metric function returns the per-query value, or ``None`` when the query has no relevant
item (R == 0; for fall-out: no non-relevant candidate; for Judged: no judged item); :func:`apply_empty`
and :func:`mean` then apply ``empty_target_action``.

Incomplete judgments (bpref, Judged): an item of ``ranked`` is ``None`` where it is unjudged (not among the
target ids), and ``gains`` then holds the judged items only (a gain that is not relevant: judged
non-relevant); :func:`ids_queries` builds such queries from the ids of the ranked form. The dense form
judges every candidate (no ``None``). The other functions take judged queries only. infAP tells a third kind
apart: an item of ``ranked`` is :data:`POOLED` (-1.0) where it is pooled but not judged (a target gain of -1),
``None`` where it is not pooled; ``gains`` holds the judged items only (``ids_queries(..., pooled=True)``).
"""

import itertools
import math

METRICS = ("precision", "recall", "f1", "hitrate", "mrr", "arhr", "map", "mar",
           "dcg", "ndcg", "cg", "rprecision")


def _list(x):
    return x.tolist() if hasattr(x, "tolist") else list(x)


def is_relevant(g, threshold=None):
    return g > 0 if threshold is None else g >= threshold


# ----------------------------------------------------------------------------------------------
# ranking
# ----------------------------------------------------------------------------------------------
def rank(scores, relevance=None, mask=None, ties="index"):
    """Indices of the valid candidates of one query, best first.

    Sort by score descending; equal scores: lower index first (``ties="index"``), higher index first
    (``"reverse_index"``), lower relevance first, then lower index (``"pessimistic"``), or higher
    relevance first, then lower index (``"optimistic"``).
    """
    scores = _list(scores)
    n = len(scores)
    mask = [True] * n if mask is None else [bool(m) for m in _list(mask)]
    candidates = [i for i in range(n) if mask[i]]
    if ties == "index":
        return sorted(candidates, key=lambda i: (-scores[i], i))
    if ties == "reverse_index":
        return sorted(candidates, key=lambda i: (-scores[i], -i))
    if ties == "pessimistic":
        relevance = _list(relevance)
        return sorted(candidates, key=lambda i: (-scores[i], relevance[i], i))
    if ties == "optimistic":
        relevance = _list(relevance)
        return sorted(candidates, key=lambda i: (-scores[i], -relevance[i], i))
    raise ValueError(ties)


def tie_orderings(scores, mask=None):
    """Every ranking of the valid candidates that sorts scores descending: all orders of each tie group."""
    scores = _list(scores)
    order = rank(scores, mask=mask)
    groups = [list(g) for _, g in itertools.groupby(order, key=lambda i: scores[i])]
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [i for group in choice for i in group]


def average_over_ties(metric, scores, target, k, mask=None, **options):
    """Expected per-query value over all orderings of tied items, by enumeration (None if no relevant)."""
    target = [float(v) for v in _list(target)]
    values = [FUNCTIONS[metric]([target[i] for i in order], [target[i] for i in order], k, **options)
              for order in tie_orderings(scores, mask)]
    if values[0] is None:
        return None
    return sum(values) / len(values)


def dense_queries(preds, target, mask=None, ties="index"):
    """Dense [B, N] input -> list of (ranked gains, all valid gains) per query."""
    preds, target = _list(preds), _list(target)
    masks = [None] * len(preds) if mask is None else _list(mask)
    out = []
    for s, t, m in zip(preds, target, masks, strict=True):
        t = [float(v) for v in t]
        order = rank(s, t, m, ties)
        out.append(([t[i] for i in order], [t[i] for i in order]))
    return out


# ----------------------------------------------------------------------------------------------
# per-query metrics; ranked = gains in rank order, gains = all gains of the query
# ----------------------------------------------------------------------------------------------
def _rel(ranked, threshold):
    return [1 if is_relevant(g, threshold) else 0 for g in ranked]


def _num_relevant(gains, threshold):
    return sum(1 for g in gains if is_relevant(g, threshold))


def _hits(r, k):
    return sum(r[:k])


def precision(ranked, gains, k, denominator="k", threshold=None):
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    hits = _hits(_rel(ranked, threshold), k)
    if denominator == "k":
        d = k
    elif denominator == "retrieved":
        d = min(k, len(ranked))
    elif denominator == "min_k_r":
        d = min(k, R)
    else:
        raise ValueError(denominator)
    return hits / d if d > 0 else 0.0


def recall(ranked, gains, k, denominator="r", threshold=None):
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    hits = _hits(_rel(ranked, threshold), k)
    d = R if denominator == "r" else min(k, R)
    return hits / d


def f1(ranked, gains, k, threshold=None):
    p = precision(ranked, gains, k, "k", threshold)
    if p is None:
        return None
    r = recall(ranked, gains, k, "r", threshold)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def hitrate(ranked, gains, k, threshold=None):
    if _num_relevant(gains, threshold) == 0:
        return None
    return 1.0 if _hits(_rel(ranked, threshold), k) > 0 else 0.0


def mrr(ranked, gains, k, threshold=None):
    if _num_relevant(gains, threshold) == 0:
        return None
    r = _rel(ranked, threshold)
    for i in range(min(k, len(r))):
        if r[i]:
            return 1.0 / (i + 1)
    return 0.0


def arhr(ranked, gains, k, threshold=None):
    if _num_relevant(gains, threshold) == 0:
        return None
    r = _rel(ranked, threshold)
    return sum(r[i] / (i + 1) for i in range(min(k, len(r))))


def _normalizer(normalizer, k, R, hits, listed):
    return {"min_k_r": min(k, R), "r": R, "hits": hits, "k": k, "min_list_r": min(k, R, listed)}[normalizer]


def map(ranked, gains, k, normalizer="min_k_r", threshold=None):  # noqa: A001 - metric name
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    r = _rel(ranked, threshold)
    total = 0.0
    for i in range(min(k, len(r))):
        if r[i]:
            total += _hits(r, i + 1) / (i + 1)  # Precision@i
    d = _normalizer(normalizer, k, R, _hits(r, k), len(ranked))
    return total / d if d > 0 else 0.0


def mar(ranked, gains, k, normalizer="min_k_r", threshold=None):
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    r = _rel(ranked, threshold)
    total = 0.0
    for i in range(min(k, len(r))):
        if r[i]:
            total += _hits(r, i + 1) / R  # Recall@i
    d = _normalizer(normalizer, k, R, _hits(r, k), len(ranked))
    return total / d if d > 0 else 0.0


def _gain(g, gain):
    return g if gain == "linear" else 2.0 ** g - 1.0


def _dcg(ranked, k, gain, log_base, discount="log"):
    """discount "log": rank i weighs 1 / log_b(i + 1); "clipped_log": 1 / log_b(max(i, 2)) (LensKit)."""
    def weight(i):
        return 1 / math.log(i + 1 if discount == "log" else max(i, 2), log_base)

    return sum(_gain(ranked[i - 1], gain) * weight(i) for i in range(1, min(k, len(ranked)) + 1))


def dcg(ranked, gains, k, gain="linear", log_base=2.0, discount="log", threshold=None):
    if _num_relevant(gains, threshold) == 0:
        return None
    return _dcg(ranked, k, gain, log_base, discount)


def ndcg(ranked, gains, k, gain="linear", log_base=2.0, discount="log", threshold=None):
    if _num_relevant(gains, threshold) == 0:
        return None
    ideal = sorted(gains, reverse=True)[:k]
    return _dcg(ranked, k, gain, log_base, discount) / _dcg(ideal, k, gain, log_base, discount)


def cg(ranked, gains, k, threshold=None):
    if _num_relevant(gains, threshold) == 0:
        return None
    return float(sum(ranked[:k]))


def rprecision(ranked, gains, k=None, threshold=None):
    """Precision@R; with a cap k: hits in the top min(R, k) / min(R, k)."""
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    cut = R if k is None else min(R, k)
    return _hits(_rel(ranked, threshold), cut) / cut


def ncrr(ranked, gains, k, threshold=None):
    """cornac: ARHR@k over 1 + 1/2 + ... + 1/min(R, k, list length)."""
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    best = sum(1 / i for i in range(1, min(R, k, len(ranked)) + 1))
    return arhr(ranked, gains, k, threshold) / best if best else 0.0


def err(ranked, gains, k, max_grade=4.0, threshold=None):
    """Chapelle et al. 2009: the user stops at rank i with probability (2^g - 1) / 2^max_grade."""
    if _num_relevant(gains, threshold) == 0:
        return None
    total, going_on = 0.0, 1.0
    for i, g in enumerate(ranked[:k], start=1):
        stop = (2.0 ** g - 1) / 2.0 ** max_grade
        total += going_on * stop / i
        going_on *= 1 - stop
    return total


def rbp(ranked, gains, k, p=0.8, normalize=False, threshold=None):
    """Moffat & Zobel 2008; normalize: over sum_{i <= min(R, k, list length)} p^(i-1) (LensKit)."""
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    found = sum(p ** i for i, relevant in enumerate(_rel(ranked, threshold)[:k]) if relevant)
    if not normalize:
        return (1 - p) * found
    best = sum(p ** i for i in range(min(R, k, len(ranked))))
    return found / best if best else 0.0


def sdcg(ranked, gains, k, max_grade=None, log_base=2.0, threshold=None):
    """cwl_eval: DCG@k of the gains over max_grade times the DCG of k ranks of gain 1 (no max_grade: of
    the relevance, cwl_eval's max_rel=1)."""
    if _num_relevant(gains, threshold) == 0:
        return None
    shown = ranked if max_grade else _rel(ranked, threshold)
    return _dcg(shown, k, "linear", log_base) / ((max_grade or 1.0) * _dcg([1.0] * k, k, "linear", log_base))


def nerr(ranked, gains, k, equation=8, max_grade=None, phi=0.9, T=1.0, threshold=None):  # noqa: N803
    """Azzopardi et al. 2021 (cwl_eval's NERR-EQ8..11): W_i proportional to prod_{j<i} C_j over ranks 1..k (a
    short list padded with 0 gains), sum_i W_i g_i; g = grade / max_grade (no max_grade: the relevance)."""
    if _num_relevant(gains, threshold) == 0:
        return None
    scale = {8: lambda j: 1.0, 9: lambda j: j / (j + 1), 10: lambda j: phi,
             11: lambda j: ((j + 2 * T - 1) / (j + 2 * T)) ** 2}[equation]
    return _cwl(ranked, k, max_grade, threshold, lambda j, g, so_far: scale(j) * (1 - g))


def _cwl(ranked, k, max_grade, threshold, continuation):
    """cwl_eval's expected utility over ranks 1..k (a short list padded with 0 gains): sum_i W_i g_i,
    W_i proportional to prod_{j<i} C_j, C_j = continuation(j, g_j, gain of ranks 1..j)."""
    shown = [g / max_grade for g in ranked] if max_grade else [float(r) for r in _rel(ranked, threshold)]
    total, weights, reach, so_far = 0.0, 0.0, 1.0, 0.0
    for j, g in enumerate((shown + [0.0] * k)[:k], start=1):
        total, weights, so_far = total + reach * g, weights + reach, so_far + g
        reach *= continuation(j, g, so_far)
    return total / weights


def inst(ranked, gains, k, T=1.0, max_grade=None, threshold=None):  # noqa: N803
    """Moffat et al. 2015: C_i = ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T - the gain of ranks 1..i."""
    if _num_relevant(gains, threshold) == 0:
        return None
    return _cwl(ranked, k, max_grade, threshold,
                lambda j, g, so_far: ((j + T + (T - so_far) - 1) / (j + T + (T - so_far))) ** 2)


def insq(ranked, gains, k, T=1.0, max_grade=None, threshold=None):  # noqa: N803
    """Moffat et al. 2012: C_i = ((i + 2T - 1) / (i + 2T))^2."""
    if _num_relevant(gains, threshold) == 0:
        return None
    return _cwl(ranked, k, max_grade, threshold, lambda j, g, so_far: ((j + 2 * T - 1) / (j + 2 * T)) ** 2)


def bpm(ranked, gains, k, T=1.0, max_grade=None, threshold=None):  # noqa: N803
    """Zhang et al. 2017, static (cwl_eval, a cost of 1 an item): the mean gain of ranks 1..s, s the first rank where
    the gain so far reaches T, at most k."""
    if _num_relevant(gains, threshold) == 0:
        return None
    return _cwl(ranked, k, max_grade, threshold, lambda j, g, so_far: float(so_far < T))


def setf(ranked, gains, k, beta=1.0, threshold=None):
    """van Rijsbergen's F_beta of the top k as a set (0 without hits)."""
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    hits = _hits(_rel(ranked, threshold), k)
    if hits == 0:
        return 0.0
    p, r = hits / min(k, len(ranked)), hits / R
    return (1 + beta ** 2) * p * r / (beta ** 2 * p + r)


def set_map(ranked, gains, k, threshold=None):
    """trec_eval's set_map of the top k: (hits / listed) (hits / R), 0 without hits."""
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    hits = _hits(_rel(ranked, threshold), k)
    return hits * hits / (min(k, len(ranked)) * R) if hits else 0.0


def num_ret(ranked, gains, k, threshold=None):
    if _num_relevant(gains, threshold) == 0:
        return None
    return float(min(k, len(ranked)))


def num_rel(ranked, gains, k=None, threshold=None):
    R = _num_relevant(gains, threshold)
    return None if R == 0 else float(R)


def _rbo(ranking, ideal, p, depth):
    """ir-measures' ``rbo`` (``compat_provider.py``): sum_i p^(i-1) |I_i & R_i| / i over its normalizer."""
    seen_ranking, seen_ideal, score, normalizer, weight = set(), set(), 0.0, 0.0, 1.0
    for i in range(depth):
        if i < len(ranking):
            seen_ranking.add(ranking[i])
        if i < len(ideal):
            seen_ideal.add(ideal[i])
        score += weight * len(seen_ideal & seen_ranking) / (i + 1)
        normalizer += weight
        weight *= p
    return score / normalizer


def compat(ranked, gains, k, threshold=None, p=0.95, normalize=True):
    """Clarke et al.'s compatibility as ir-measures computes it on the run cut at k: RBO of the ranking against the
    relevant items by grade, a grade's ranked items in rank order before its unranked ones (ir-measures' ideal
    sorts a grade by run score, 0 for an unranked item), to depth max(len, R)."""
    relevant = [g for g in gains if g is not None and (g > 0 if threshold is None else g >= threshold)]
    if not relevant:
        return None
    ranking = [("ranked", i) for i in range(min(k, len(ranked)))]
    listed = [(g, ("ranked", i)) for i, g in enumerate(ranked[:k])
              if g is not None and (g > 0 if threshold is None else g >= threshold)]
    unranked = list(relevant)
    for g, _ in listed:
        unranked.remove(g)
    pool = listed + [(g, ("unranked", j)) for j, g in enumerate(unranked)]
    # sorted is stable: a grade's ranked items keep their rank order, ahead of its unranked ones
    ideal = [item for _, item in sorted(pool, key=lambda pair: (-pair[0], pair[1][0] == "unranked"))]
    depth = max(len(ranking), len(ideal))
    score = _rbo(ranking, ideal, p, depth)
    return score / _rbo(ideal, ideal, p, depth) if normalize else score


def num_q(ranked, gains, k=None, threshold=None):
    """trec_eval's num_q of one query: 1 when the query has a judgment (a gain, any), summed over queries."""
    return 1.0 if gains else None


def num_rel_ret(ranked, gains, k, threshold=None):
    if _num_relevant(gains, threshold) == 0:
        return None
    return float(_hits(_rel(ranked, threshold), k))


def fallout(ranked, gains, k, threshold=None):
    """torchmetrics' fall-out: the non-relevant items of the top k over the query's non-relevant candidates
    (``gains`` holds every candidate here); None (the empty query) without a non-relevant candidate."""
    negatives = sum(not is_relevant(g, threshold) for g in gains)
    if negatives == 0:
        return None
    return sum(not is_relevant(g, threshold) for g in ranked[:k]) / negatives


def bpref(ranked, gains, k, threshold=None):
    """trec_eval's m_bpref.c on the list cut at k: each judged relevant item scores 1 - min(n, R) / min(N, R),
    n the judged non-relevant items above it (1 where n = 0), N the query's judged non-relevant items; unjudged
    items (None) are skipped; the sum over R."""
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    N = sum(1 for g in gains if not is_relevant(g, threshold))
    nonrel_so_far, total = 0, 0.0
    for g in ranked[:k]:
        if g is None:  # unjudged: skipped
            continue
        if not is_relevant(g, threshold):
            nonrel_so_far += 1
        elif nonrel_so_far > 0:
            total += 1.0 - min(nonrel_so_far, R) / min(N, R)
        else:
            total += 1.0
    return total / R


def judged(ranked, gains, k, threshold=None):
    """ir-measures' Judged@k: the judged items of the top k over min(k, the list's length); None (the empty
    query) without a judged item; 0 for an empty list."""
    if not gains:
        return None
    top = ranked[:k]
    return sum(g is not None for g in top) / len(top) if top else 0.0


POOLED = -1.0  # a ranked item that is pooled but not judged (a qrels line of -1)


def infap(ranked, gains, k, threshold=None):
    """trec_eval's m_infAP.c on the list cut at k, its loop over the ranks as written there: an unpooled item
    (None) is skipped, a pooled unjudged one (POOLED) counted, each relevant item at 0-based rank j adds 1 at
    j = 0, else 1/(j+1) + (j/(j+1)) ((rel-1 + nonrel + pooled) / j) ((rel-1 + e) / (rel-1 + nonrel + 2e)),
    the counts including it; the sum over R (None where R = 0)."""
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    epsilon, total = 1e-5, 0.0
    rel_so_far = nonrel_so_far = pool_unjudged_so_far = 0
    for j, g in enumerate(ranked[:k]):
        if g is None:
            continue
        if g == POOLED:
            pool_unjudged_so_far += 1
            continue
        if not is_relevant(g, threshold):
            nonrel_so_far += 1
            continue
        rel_so_far += 1
        if j == 0:
            total += 1.0
        else:
            fj = float(j)
            total += (1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel_so_far - 1 + nonrel_so_far + pool_unjudged_so_far) / fj)
                      * ((rel_so_far - 1 + epsilon) / (rel_so_far - 1 + nonrel_so_far + 2 * epsilon)))
    return total / R


def _iprec(r, R, k, level):
    """trec_eval 9: the most precision at or after the c-th relevant item, c = (long)(level R + 0.9)."""
    needed = int(level * R + 0.9)
    hits, best, reached = 0, 0.0, needed == 0
    for rank, relevant in enumerate(r[:k], start=1):
        hits += relevant
        reached = reached or hits >= needed
        if reached:
            best = max(best, hits / rank)
    return best


def iprec(ranked, gains, k, recall=0.0, threshold=None):
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    return _iprec(_rel(ranked, threshold), R, k, recall)


def interpolated_ap(ranked, gains, k, threshold=None):
    R = _num_relevant(gains, threshold)
    if R == 0:
        return None
    return sum(_iprec(_rel(ranked, threshold), R, k, j / 10) for j in range(11)) / 11


FUNCTIONS = {"precision": precision, "recall": recall, "f1": f1, "hitrate": hitrate, "mrr": mrr,
             "arhr": arhr, "map": map, "mar": mar, "dcg": dcg, "ndcg": ndcg, "cg": cg,
             "rprecision": rprecision, "ncrr": ncrr, "err": err, "nerr": nerr, "inst": inst, "insq": insq, "bpm": bpm, "rbp": rbp,
             "sdcg": sdcg, "setf": setf,
             "set_map": set_map,
             "num_ret": num_ret, "num_rel": num_rel, "num_rel_ret": num_rel_ret, "num_q": num_q, "compat": compat, "iprec": iprec,
             "interpolated_ap": interpolated_ap, "fallout": fallout, "bpref": bpref, "judged": judged, "infap": infap}


# ----------------------------------------------------------------------------------------------
# empty targets and the mean over queries
# ----------------------------------------------------------------------------------------------
def apply_empty(values, empty_target_action="skip"):
    """Replace None (query without relevant item): skip -> NaN, neg -> 0, pos -> 1."""
    if empty_target_action == "error" and any(v is None for v in values):
        raise ValueError("query without relevant item")
    fill = {"skip": math.nan, "neg": 0.0, "pos": 1.0, "error": math.nan}[empty_target_action]
    return [fill if v is None else float(v) for v in values]


def mean(values, empty_target_action="skip"):
    """Mean over the counted queries (NaN if none is counted)."""
    vals = [v for v in apply_empty(values, empty_target_action) if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan


#: the families whose value is a sum over queries (trec_eval and ir-measures sum num_q), not a mean
TOTALS = {"num_q"}


def summary(family, values, empty_target_action="skip"):
    """A family's value over its queries: their mean, or their sum for a total (0 over none)."""
    if family in TOTALS:
        return sum(v for v in apply_empty(values, empty_target_action) if not math.isnan(v))
    return mean(values, empty_target_action)


# ----------------------------------------------------------------------------------------------
# convenience: a whole batch
# ----------------------------------------------------------------------------------------------
def evaluate_queries(metric, queries, k, empty_target_action="skip", **options):
    """Per-query values (NaN = skipped) for a list of (ranked, gains) queries."""
    fn = FUNCTIONS[metric]
    return apply_empty([fn(ranked, gains, k, **options) for ranked, gains in queries],
                       empty_target_action)


def ids_queries(ranked_ids, target_ids, target_gains=None, pooled=False):
    """The ranked form [B, L] with its targets [B, T] (-1 = padding) -> (ranked gains, None where an item is not
    a target id: unjudged; the gains of the target ids) per query. A target gain of -1 (pooled, not judged) is
    no judgment: None in ``ranked`` (POOLED with ``pooled``, for infAP), left out of the gains."""
    ranked_ids, target_ids = _list(ranked_ids), _list(target_ids)
    target_gains = [[1.0] * len(row) for row in target_ids] if target_gains is None else _list(target_gains)
    out = []
    for items, ids, row_gains in zip(ranked_ids, target_ids, target_gains, strict=True):
        table = {i: float(g) for i, g in zip(ids, row_gains, strict=True) if i >= 0}
        if not pooled:
            table = {i: g for i, g in table.items() if g != POOLED}
        out.append(([table.get(i) for i in items if i >= 0], [g for g in table.values() if g != POOLED]))
    return out


def evaluate_dense(metric, preds, target, k, mask=None, ties="index", empty_target_action="skip",
                   **options):
    """Per-query values for dense [B, N] preds/target (+ optional [B, N] bool mask)."""
    return evaluate_queries(metric, dense_queries(preds, target, mask, ties), k,
                            empty_target_action, **options)
