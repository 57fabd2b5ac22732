"""Property tests (hypothesis) of the top-k metrics: results do not depend on how the same queries are
given -- input form, batching, column order, masking vs dropping, exclude_ids vs mask."""

import math

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchrec_eval as tre
from tests.reference import ranking as ref
from torchrec_eval import functional as F

TOL = {"rtol": 1e-9, "atol": 1e-12}
SETTINGS = settings(max_examples=30, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

CONFIGS = (
    [("precision", {"denominator": d}) for d in ("k", "retrieved", "min_k_r")]
    + [("recall", {"denominator": d}) for d in ("r", "min_k_r")]
    + [("f1", {}), ("hitrate", {}), ("mrr", {}), ("arhr", {})]
    + [("map", {"normalizer": n}) for n in ("min_k_r", "r", "hits", "k")]
    + [("mar", {"normalizer": n}) for n in ("min_k_r", "r", "hits", "k")]
    + [("dcg", {"gain": "exp", "log_base": math.e}), ("dcg", {}), ("ndcg", {}),
       ("ndcg", {"gain": "exp", "log_base": 10.0}), ("cg", {}), ("rprecision", {})]
)
CLASSES = {"precision": "Precision", "recall": "Recall", "f1": "F1", "hitrate": "HitRate", "mrr": "MRR",
           "arhr": "ARHR", "map": "MAP", "mar": "MAR", "dcg": "DCG", "ndcg": "NDCG", "cg": "CG",
           "rprecision": "RPrecision"}


def _close(actual, expected):
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected)
        for key in expected:
            _close(actual[key], expected[key])
        return
    actual = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    if not isinstance(expected, torch.Tensor):
        expected = torch.tensor(expected, dtype=torch.float64)  # python floats: keep double precision
    expected = expected.detach().to("cpu", torch.float64)
    torch.testing.assert_close(actual, expected, equal_nan=True, **TOL)


@st.composite
def batches(draw, distinct=False, min_candidates=0, min_n=1):
    """A dense batch: scores (integers with ties, or distinct), gains in {0, 1, 2, 3, 0.5}, a mask."""
    B = draw(st.integers(1, 6))
    N = draw(st.integers(max(1, min_n), 18))  # > 16 exercises the packed bool counting
    if distinct:
        rows = [draw(st.permutations(range(N))) for _ in range(B)]
        preds = torch.tensor(rows, dtype=torch.float64) * 0.37 - 1.1
    else:
        preds = torch.tensor(draw(st.lists(st.lists(st.integers(-2, 2), min_size=N, max_size=N),
                                           min_size=B, max_size=B)), dtype=torch.float64)
    target = torch.tensor(draw(st.lists(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0, 0.5]),
                                                 min_size=N, max_size=N), min_size=B, max_size=B)),
                          dtype=torch.float64)
    mask = torch.tensor(draw(st.lists(st.lists(st.booleans(), min_size=N, max_size=N),
                                      min_size=B, max_size=B)))
    for b in range(B):  # at least `min_candidates` valid candidates per query
        for i in range(min(min_candidates, N)):
            mask[b, i] = True
    return preds, target, mask


configs = st.sampled_from(CONFIGS)
ks = st.integers(1, 11)
actions = st.sampled_from(["skip", "neg", "pos"])
ties_modes = st.sampled_from(["index", "pessimistic"])


def _k(name, k):
    return None if name == "rprecision" else k


def _call(name, k, opts, **kw):
    return getattr(F, name)(k=_k(name, k), reduction="none", **opts, **kw)


# ----------------------------------------------------------------------------------------------
# the four input forms give the same results
# ----------------------------------------------------------------------------------------------
def _ids_form(target, mask=None):
    """target [B, N] -> target_ids / target_gains [B, T], -1 / 0 padded; only valid items if mask."""
    rows = []
    for b in range(target.shape[0]):
        rows.append([i for i in range(target.shape[1]) if target[b, i] > 0 and (mask is None or mask[b, i])])
    T = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), T), -1, dtype=torch.long)
    gains = torch.zeros(len(rows), T, dtype=torch.float64)
    for b, r in enumerate(rows):
        ids[b, :len(r)] = torch.tensor(r, dtype=torch.long)
        gains[b, :len(r)] = target[b, r]
    return ids, gains


@given(data=batches(), config=configs, k=ks, action=actions)
@SETTINGS
def test_dense_ids_ranked_flat_agree(data, config, k, action):
    preds, target, mask = data
    name, opts = config
    dense = _call(name, k, opts, preds=preds, target=target, mask=mask, empty_target_action=action)
    # the oracle agrees with the dense form
    _close(dense, ref.evaluate_dense(name, preds, target, _k(name, k), mask=mask,
                                     empty_target_action=action, **opts))

    # ids form: relevant ids (masked ones included: a masked item is not a candidate, so not relevant)
    ids, gains = _ids_form(target)
    _close(_call(name, k, opts, preds=preds, target_ids=ids, target_gains=gains, mask=mask,
                 empty_target_action=action), dense)

    # ranked form: the full ranking of the valid candidates, -1 padded; ground truth = valid relevant ids
    N = preds.shape[1]
    ranked = torch.full((preds.shape[0], N), -1, dtype=torch.long)
    for b in range(preds.shape[0]):
        order = ref.rank(preds[b], target[b], mask[b])
        ranked[b, :len(order)] = torch.tensor(order, dtype=torch.long)
    vids, vgains = _ids_form(target, mask)
    _close(_call(name, k, opts, ranked_ids=ranked, target_ids=vids, target_gains=vgains,
                 empty_target_action=action), dense)

    # flat form: the valid candidates only, queries as `indexes`, rows kept in item order;
    # queries without any candidate do not exist in the flat form
    has_candidates = mask.any(1)
    rows = has_candidates.nonzero().flatten()
    if len(rows) > 0:
        flat_idx = torch.arange(preds.shape[0]).unsqueeze(1).expand_as(preds)
        flat = _call(name, k, opts, preds=preds[mask], target=target[mask], indexes=flat_idx[mask],
                     empty_target_action=action)
        _close(flat, dense[rows])


@given(data=batches(min_candidates=1), config=configs, k=ks, action=actions)
@SETTINGS
def test_flat_form_row_order_does_not_matter(data, config, k, action):
    """Shuffled flat rows, query ids not starting at 0, and a flat `mask` give the dense results.
    Scores are made distinct within a query: after shuffling, the "item index" of a tie is undefined."""
    preds, target, mask = data
    name, opts = config
    B, N = preds.shape
    preds = preds + torch.arange(N, dtype=torch.float64) * 1e-3  # distinct within a row
    dense = _call(name, k, opts, preds=preds, target=target, mask=mask, empty_target_action=action)
    g = torch.Generator().manual_seed(B * 100 + N)
    perm = torch.randperm(B * N, generator=g)
    idx = torch.arange(B).repeat_interleave(N) + 7  # ids need not start at 0
    flat = _call(name, k, opts, preds=preds.flatten()[perm], target=target.flatten()[perm],
                 indexes=idx[perm], mask=mask.flatten()[perm], empty_target_action=action)
    _close(flat, dense)


# ----------------------------------------------------------------------------------------------
# batching
# ----------------------------------------------------------------------------------------------
@given(data=batches(), config=configs, cut=st.lists(st.integers(0, 6), max_size=3), action=actions,
       ties=ties_modes)
@SETTINGS
def test_split_batches_change_nothing(data, config, cut, action, ties):
    preds, target, mask = data
    name, opts = config
    B = preds.shape[0]
    k = None if name == "rprecision" else [1, 3, 10]
    cls = getattr(tre, CLASSES[name])
    whole = cls(k=k, empty_target_action=action, ties=ties, **opts)
    whole.update(preds, target, mask=mask)
    split = cls(k=k, empty_target_action=action, ties=ties, **opts)
    bounds = sorted({0, B, *[min(c, B) for c in cut]})
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        split.update(preds[lo:hi], target[lo:hi], mask=mask[lo:hi])
    expected = whole.compute()
    _close(split.compute(), expected)
    # and both equal the mean of the per-query functional values
    per_query = {}
    for kk in ([None] if k is None else k):
        per_query[kk] = _call(name, kk, opts, preds=preds, target=target, mask=mask,
                              empty_target_action=action, ties=ties)
    if isinstance(expected, dict):
        for kk, v in per_query.items():
            key = "rprecision" if kk is None else f"{name}@{kk}"
            _close(expected[key], v.nanmean() if not v.isnan().all() else torch.tensor(math.nan))
    else:
        v = per_query[None]
        _close(expected, v.nanmean() if not v.isnan().all() else torch.tensor(math.nan))


# ----------------------------------------------------------------------------------------------
# column permutation, masking vs dropping, exclude_ids vs mask
# ----------------------------------------------------------------------------------------------
@given(data=batches(distinct=True), config=configs, k=ks, action=actions, ties=ties_modes,
       seed=st.integers(0, 2**16))
@SETTINGS
def test_item_permutation_changes_nothing(data, config, k, action, ties, seed):
    preds, target, mask = data
    name, opts = config
    perm = torch.randperm(preds.shape[1], generator=torch.Generator().manual_seed(seed))
    before = _call(name, k, opts, preds=preds, target=target, mask=mask, empty_target_action=action,
                   ties=ties)
    after = _call(name, k, opts, preds=preds[:, perm], target=target[:, perm], mask=mask[:, perm],
                  empty_target_action=action, ties=ties)
    _close(after, before)


@given(data=batches(min_n=2), config=configs, k=ks, action=actions, ties=ties_modes,
       keep=st.lists(st.booleans(), min_size=18, max_size=18))
@SETTINGS
def test_masked_columns_equal_dropped_columns(data, config, k, action, ties, keep):
    preds, target, _ = data
    name, opts = config
    N = preds.shape[1]
    keep = torch.tensor(keep[:N])
    keep[0] = True
    column_mask = keep.unsqueeze(0).expand_as(preds)
    masked = _call(name, k, opts, preds=preds, target=target, mask=column_mask,
                   empty_target_action=action, ties=ties)
    dropped = _call(name, k, opts, preds=preds[:, keep], target=target[:, keep],
                    empty_target_action=action, ties=ties)
    _close(masked, dropped)
    # an all-True mask is the same as no mask
    _close(_call(name, k, opts, preds=preds, target=target, mask=torch.ones_like(column_mask),
                 empty_target_action=action, ties=ties),
           _call(name, k, opts, preds=preds, target=target, empty_target_action=action, ties=ties))


@given(data=batches(), config=configs, k=ks, action=actions, ties=ties_modes)
@SETTINGS
def test_exclude_ids_equal_mask(data, config, k, action, ties):
    preds, target, mask = data
    name, opts = config
    B, N = preds.shape
    excluded = [[i for i in range(N) if not mask[b, i]] for b in range(B)]
    S = max(1, max(len(e) for e in excluded))
    exclude_ids = torch.full((B, S + 1), -1, dtype=torch.long)  # always some padding
    for b, e in enumerate(excluded):
        exclude_ids[b, :len(e)] = torch.tensor(e, dtype=torch.long)
    by_mask = _call(name, k, opts, preds=preds, target=target, mask=mask, empty_target_action=action,
                    ties=ties)
    by_exclude = _call(name, k, opts, preds=preds, target=target, exclude_ids=exclude_ids,
                       empty_target_action=action, ties=ties)
    _close(by_exclude, by_mask)
    # the same with the ids form of the ground truth (excluded relevant items do not count)
    ids, gains = _ids_form(target)
    _close(_call(name, k, opts, preds=preds, target_ids=ids, target_gains=gains, exclude_ids=exclude_ids,
                 empty_target_action=action, ties=ties), by_mask)


@given(data=batches(), config=configs, k=ks, ties=ties_modes)
@SETTINGS
def test_ranked_form_exclude_ids_equal_removing_them(data, config, k, ties):
    """ranked form: excluded ids are dropped from the list and from the ground truth."""
    preds, target, mask = data
    name, opts = config
    B, N = preds.shape
    full = torch.full((B, N), -1, dtype=torch.long)
    kept = torch.full((B, N), -1, dtype=torch.long)
    exclude_ids = torch.full((B, N + 1), -1, dtype=torch.long)
    for b in range(B):
        order = ref.rank(preds[b], target[b], ties=ties)
        full[b, :N] = torch.tensor(order, dtype=torch.long)
        valid = [i for i in order if mask[b, i]]
        kept[b, :len(valid)] = torch.tensor(valid, dtype=torch.long)
        excluded = [i for i in range(N) if not mask[b, i]]
        exclude_ids[b, :len(excluded)] = torch.tensor(excluded, dtype=torch.long)
    all_ids, all_gains = _ids_form(target)
    valid_ids, valid_gains = _ids_form(target, mask)
    got = _call(name, k, opts, ranked_ids=full, target_ids=all_ids, target_gains=all_gains,
                exclude_ids=exclude_ids, empty_target_action="neg")
    expected = _call(name, k, opts, ranked_ids=kept, target_ids=valid_ids, target_gains=valid_gains,
                     empty_target_action="neg")
    _close(got, expected)
    # and both are the dense result with the mask
    _close(expected, _call(name, k, opts, preds=preds, target=target, mask=mask, ties=ties,
                           empty_target_action="neg"))


@given(data=batches(), config=configs, groups=st.lists(st.integers(0, 2), min_size=6, max_size=6),
       action=actions)
@SETTINGS
def test_groups_equal_separate_metrics(data, config, groups, action):
    """num_groups=G: value g equals the metric computed on group g's queries alone (NaN if none)."""
    preds, target, mask = data
    name, opts = config
    B = preds.shape[0]
    groups = torch.tensor(groups[:B], dtype=torch.long)
    k = None if name == "rprecision" else 4
    cls = getattr(tre, CLASSES[name])
    grouped = cls(k=k, empty_target_action=action, num_groups=3, **opts)
    grouped.update(preds, target, mask=mask, groups=groups)
    out = grouped.compute()
    assert out.shape == (3,)
    for g in range(3):
        sel = groups == g
        single = cls(k=k, empty_target_action=action, **opts)
        if sel.any():
            single.update(preds[sel], target[sel], mask=mask[sel])
            _close(out[g], single.compute())
        else:
            assert math.isnan(out[g].item())
