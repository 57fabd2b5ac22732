"""Splits, k-fold cross-validation, ranking inputs and the Student-t interval of torchrec_eval.data.splits."""

import math

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.comparison.statistics import mean_confidence_interval, t_quantile
from torchrec_eval.data import (
    Interactions,
    as_interactions,
    cross_validate,
    generate_interactions,
    interaction_kfold,
    item_popularity,
    leave_last_out,
    padded_item_lists,
    random_split,
    ranking_inputs,
    temporal_split,
    user_kfold,
)


@pytest.fixture(scope="module")
def data() -> Interactions:
    # a long tail of user activity, including users with a single interaction
    return generate_interactions(num_users=300, num_items=200, interactions_per_user=(1, 30), seed=3)


@pytest.fixture(scope="module")
def tied() -> Interactions:
    """Shuffled rows with many equal timestamps, and a user without interactions."""
    gen = torch.Generator().manual_seed(0)
    m = 400
    user = torch.randint(0, 30, (m,), generator=gen)
    user[user == 7] = 8
    item = torch.randint(0, 50, (m,), generator=gen)
    timestamp = torch.randint(0, 12, (m,), generator=gen)
    return as_interactions(user, item, timestamp, num_users=31, num_items=50)


def _rows(x: Interactions) -> torch.Tensor:
    return torch.stack([x.user, x.item, x.timestamp], dim=1)


def _check_partition(split, data: Interactions) -> None:
    """Each input row is in exactly one side, and each side's rows are the input's rows at its index."""
    both = torch.cat([split.train_index, split.test_index])
    assert torch.equal(torch.sort(both).values, torch.arange(len(data)))
    for part, index in ((split.train, split.train_index), (split.test, split.test_index)):
        assert torch.equal(_rows(part), _rows(data)[index])
        assert (part.num_users, part.num_items) == (data.num_users, data.num_items)
        # sorted by user, then time
        key = part.user * (int(data.timestamp.max()) + 1) + part.timestamp
        assert bool((key[1:] >= key[:-1]).all())


def _pairs(x: Interactions) -> set:
    return set(zip(x.user.tolist(), x.item.tolist(), strict=True))


def _per_user_time_order(split, num_users: int) -> None:
    """No test interaction of a user is earlier than one of their training interactions."""
    latest_train = torch.full((num_users,), -(2**62)).scatter_reduce(
        0, split.train.user, split.train.timestamp, "amax")
    earliest_test = torch.full((num_users,), 2**62).scatter_reduce(
        0, split.test.user, split.test.timestamp, "amin")
    assert bool((latest_train <= earliest_test).all())


def _all_splits(data: Interactions):
    yield "leave_last_out", leave_last_out(data)
    yield "leave_last_out3", leave_last_out(data, n=3)
    yield "temporal_user", temporal_split(data, 0.25)
    yield "temporal_global", temporal_split(data, 0.3, by="global")
    yield "random", random_split(data, 0.2, seed=1)
    yield "random_user", random_split(data, 0.2, per_user=True, seed=1)
    for f, split in enumerate(user_kfold(data, 4, seed=2)):
        yield f"user_kfold{f}", split
    for f, split in enumerate(interaction_kfold(data, 4, seed=2)):
        yield f"interaction_kfold{f}", split


# ------------------------------------------------------------------------------------------- leakage


@pytest.mark.parametrize("which", ["data", "tied"])
def test_every_split_is_a_partition_without_leakage(which, request):
    data = request.getfixturevalue(which)
    for name, split in _all_splits(data):
        _check_partition(split, data)
        if which == "data":  # the generator draws no repeated (user, item) pair: no pair on both sides
            assert not _pairs(split.train) & _pairs(split.test), name


@pytest.mark.parametrize("which", ["data", "tied"])
def test_temporal_splits_respect_time(which, request):
    data = request.getfixturevalue(which)
    for split in (leave_last_out(data), leave_last_out(data, n=4), temporal_split(data, 0.3),
                  *user_kfold(data, 3, seed=0)):
        _per_user_time_order(split, data.num_users)
    glob = temporal_split(data, 0.3, by="global")
    assert int(glob.train.timestamp.max()) < int(glob.test.timestamp.min())  # strict: no look-ahead


def test_splits_are_deterministic_and_seeded(data):
    def indices(splits):
        return [s.test_index for s in splits]

    makers = (
        lambda s: [random_split(data, 0.2, seed=s)],
        lambda s: [random_split(data, 0.3, per_user=True, seed=s)],
        lambda s: user_kfold(data, 5, seed=s),
        lambda s: user_kfold(data, 5, holdout="random", seed=s),
        lambda s: interaction_kfold(data, 5, seed=s),
    )
    for make in makers:
        same = zip(indices(make(7)), indices(make(7)), strict=True)
        assert all(torch.equal(a, b) for a, b in same)
        other = zip(indices(make(7)), indices(make(8)), strict=True)
        assert not all(a.shape == b.shape and torch.equal(a, b) for a, b in other)


def test_splits_keep_the_device_and_do_not_touch_the_global_rng(data):
    state = torch.random.get_rng_state()
    random_split(data, 0.2, seed=0)
    user_kfold(data, 3, holdout="random", seed=0)
    interaction_kfold(data, 3, seed=0)
    assert torch.equal(state, torch.random.get_rng_state())


# ------------------------------------------------------------------------------------ hold-out splits


def test_leave_last_out_counts_and_items(tied):
    counts = tied.user_counts()
    for n in (1, 2, 5):
        split = leave_last_out(tied, n=n)
        assert torch.equal(split.test.user_counts(), (counts - 1).clamp(min=0, max=n))
    # on a hand case: equal timestamps follow the input order
    data = as_interactions(torch.tensor([1, 0, 1, 1, 0, 2]), torch.tensor([5, 1, 6, 7, 2, 3]),
                           torch.tensor([3, 9, 3, 1, 2, 0]), num_users=4)
    train, test = leave_last_out(data)
    assert test.user.tolist() == [0, 1] and test.item.tolist() == [1, 6]
    assert train.item.tolist() == [2, 7, 5, 3]


def test_temporal_split_by_user_equals_a_loop_over_users(tied):
    """Brute force: each user's rows in (time, input position) order, the last round(n f) of them (at least
    one for f > 0, at most n - 1) in test."""
    for fraction in (0.0, 0.2, 0.5, 0.9):
        split = temporal_split(tied, fraction)
        want = set()
        for user in tied.user.unique().tolist():
            rows = sorted((t, i) for i, (u, t) in enumerate(zip(tied.user.tolist(), tied.timestamp.tolist(), strict=True))
                          if u == user)
            n = len(rows)
            n_test = min(max(round(n * fraction), 1 if fraction > 0 else 0), max(n - 1, 0))
            want |= {i for _, i in rows[n - n_test:]} if n_test else set()
        assert set(split.test_index.tolist()) == want


def test_temporal_split_global(data, tied):
    for d in (data, tied):
        for fraction in (0.1, 0.3, 0.5):
            split = temporal_split(d, fraction, by="global")
            n_test = round(len(d) * fraction)
            assert len(split.test) >= n_test  # ties at the cut go to test
            cut = int(split.test.timestamp.min())
            assert int((d.timestamp >= cut).sum()) == len(split.test)
            assert int((d.timestamp > cut).sum()) < n_test <= len(split.test)
    assert len(temporal_split(data, 0.0, by="global").test) == 0
    cutoff = int(data.timestamp.median())
    split = temporal_split(data, by="global", cutoff=cutoff)
    assert bool((split.test.timestamp >= cutoff).all()) and bool((split.train.timestamp < cutoff).all())


def test_random_split_sizes(data):
    for fraction in (0.0, 0.1, 0.37):
        assert len(random_split(data, fraction, seed=0).test) == round(len(data) * fraction)
    counts = data.user_counts()
    per_user = random_split(data, 0.3, per_user=True, seed=0).test.user_counts()
    expected = torch.round(counts.double() * 0.3).long().clamp(min=1)
    expected = torch.minimum(expected, (counts - 1).clamp(min=0))
    assert torch.equal(per_user, expected)


def test_random_per_user_is_not_temporal(data):
    """Random per-user test items are spread over each user's history, not only the latest ones."""
    rand = random_split(data, 0.3, per_user=True, seed=0)
    latest = temporal_split(data, 0.3)
    assert torch.equal(rand.test.user_counts(), latest.test.user_counts())
    assert not torch.equal(torch.sort(rand.test_index).values, torch.sort(latest.test_index).values)


def test_split_take_carries_ratings(data):
    ratings = torch.arange(len(data), dtype=torch.float32) / 7
    split = random_split(data, 0.25, seed=4)
    train_r, test_r = split.take(ratings)
    assert torch.equal(train_r, ratings[split.train_index]) and torch.equal(test_r, ratings[split.test_index])
    assert split.take(ratings.unsqueeze(1).expand(-1, 3))[1].shape == (len(split.test), 3)
    with pytest.raises(ValueError, match=r"`values`.*\(5,\)"):
        split.take(torch.zeros(5))


def test_as_interactions_without_timestamps_uses_row_order():
    data = as_interactions(torch.tensor([0, 1, 0, 0], dtype=torch.int32), torch.tensor([9, 8, 7, 6]))
    assert (data.num_users, data.num_items) == (2, 10) and data.user.dtype == torch.long
    assert leave_last_out(data, n=2).test.item.tolist() == [7, 6]


# --------------------------------------------------------------------------------------------- k-fold


def test_user_kfold_holds_out_each_user_once(data):
    k = 4
    folds = user_kfold(data, k, test_fraction=0.25, seed=5)
    counts = data.user_counts()
    held = [torch.unique(split.test.user) for split in folds]
    all_held = torch.cat(held)
    assert all_held.numel() == torch.unique(all_held).numel()  # disjoint
    assert torch.equal(torch.sort(all_held).values, torch.nonzero(counts >= 2).squeeze(1))
    reference = temporal_split(data, 0.25)
    # together the folds' test sets are exactly the per-user temporal test set
    assert torch.equal(torch.sort(torch.cat([s.test_index for s in folds])).values,
                       torch.sort(reference.test_index).values)
    # the folds deal the active users evenly (users with a single interaction have no test)
    active = int((counts > 0).sum())
    single = int((counts == 1).sum())
    assert all(len(h) >= active // k - single for h in held)
    for split in folds:
        assert len(split.train) + len(split.test) == len(data)
        # a held-out user keeps their earlier history in training
        assert bool((split.train.user_counts()[torch.unique(split.test.user)] >= 1).all())


def test_user_kfold_fold_sizes_balanced():
    data = generate_interactions(num_users=103, num_items=50, interactions_per_user=5, seed=0)
    sizes = [torch.unique(s.test.user).numel() for s in user_kfold(data, 5, seed=0)]
    assert sorted(sizes) == [20, 20, 21, 21, 21]
    for split in user_kfold(data, 5, holdout="random", seed=0):
        assert bool((split.test.user_counts()[torch.unique(split.test.user)] == 1).all())


def test_interaction_kfold_partitions_and_stratifies(data):
    k = 5
    folds = interaction_kfold(data, k, seed=1)
    tests = torch.cat([s.test_index for s in folds])
    assert torch.equal(torch.sort(tests).values, torch.arange(len(data)))  # each row tested exactly once
    counts = data.user_counts()
    per_fold = torch.stack([s.test.user_counts() for s in folds])  # [k, U]
    assert bool((per_fold >= counts // k).all()) and bool((per_fold <= (counts + k - 1) // k).all())
    sizes = torch.tensor([len(s.test) for s in folds])
    assert int(sizes.max() - sizes.min()) <= 0.1 * len(data) / k
    for split in folds:
        assert len(split.train) == len(data) - len(split.test)


# ------------------------------------------------------------------------------------- ranking inputs


def test_ranking_inputs_hand_case():
    data = as_interactions(torch.tensor([2, 0, 2, 2, 0, 0, 3]), torch.tensor([7, 4, 5, 6, 1, 3, 0]),
                           torch.tensor([30, 10, 10, 20, 5, 40, 1]), num_users=5, num_items=8)
    train, test = leave_last_out(data)
    users, target_ids, exclude_ids = ranking_inputs(train, test)
    assert users.tolist() == [0, 2]
    assert target_ids.tolist() == [[3], [7]]
    assert exclude_ids.tolist() == [[1, 4], [5, 6]]
    # explicit users, including one without test items and one without any interaction
    users, target_ids, exclude_ids = ranking_inputs(train, test, torch.tensor([3, 4, 2]))
    assert target_ids.tolist() == [[-1], [-1], [7]]
    assert exclude_ids.tolist() == [[0, -1], [-1, -1], [5, 6]]


def test_ranking_inputs_match_padded_item_lists(data):
    split = random_split(data, 0.3, per_user=True, seed=0)
    inputs = ranking_inputs(*split)
    assert torch.equal(inputs.users, torch.unique(split.test.user))
    full_targets = padded_item_lists(split.test)[inputs.users]
    full_excludes = padded_item_lists(split.train)[inputs.users]
    assert torch.equal(inputs.target_ids, full_targets[:, : inputs.target_ids.shape[1]])
    assert bool((full_targets[:, inputs.target_ids.shape[1]:] == -1).all())
    assert torch.equal(inputs.exclude_ids, full_excludes[:, : inputs.exclude_ids.shape[1]])
    batches = list(inputs.batches(64))
    assert [b.users.numel() for b in batches][:-1] == [64] * (len(batches) - 1)
    assert torch.equal(torch.cat([b.target_ids for b in batches]), inputs.target_ids)


def test_oracle_scores_are_perfect_through_ranking_inputs(data):
    """Scoring the test items first and a training item even higher: exclusion removes the latter."""
    train, test = leave_last_out(data, n=2)
    users, target_ids, exclude_ids = ranking_inputs(train, test)
    scores = torch.zeros(users.numel(), data.num_items + 1)  # the last column takes the -1 padding
    scores.scatter_(1, target_ids % (data.num_items + 1), 1.0)
    scores.scatter_(1, exclude_ids % (data.num_items + 1), 2.0)  # seen items ranked first unless excluded
    scores = scores[:, :-1]
    suite = tre.RankingMetrics(["ndcg@2", "recall@2", "hitrate@1"])
    suite.update(scores, target_ids=target_ids, exclude_ids=exclude_ids)
    assert all(float(v) == pytest.approx(1.0) for v in suite.compute().values())


# --------------------------------------------------------------------------------- t and the interval

# Student t quantiles t_{0.975, df} and t_{0.995, df} (standard tables, e.g. NIST/SEMATECH e-Handbook
# 1.3.6.7.2, to more digits)
T975 = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305, 4: 2.776445105, 5: 2.570581836,
        9: 2.262157163, 10: 2.228138852, 19: 2.093024054, 29: 2.045229642, 30: 2.042272456,
        100: 1.983971519}
T995 = {1: 63.656741162, 4: 4.604094871, 9: 3.249835542, 30: 2.749995654}


def test_t_quantile_against_tables():
    for df, value in T975.items():
        assert t_quantile(0.975, df) == pytest.approx(value, abs=1e-8)
        assert t_quantile(0.025, df) == pytest.approx(-value, abs=1e-8)
    for df, value in T995.items():
        assert t_quantile(0.995, df) == pytest.approx(value, abs=1e-8)
    assert t_quantile(0.5, 3) == 0.0
    assert t_quantile(0.975, 10_000) == pytest.approx(1.960201239, abs=1e-8)  # near the normal 1.959964


def test_t_quantile_closed_forms():
    for p in (0.51, 0.6, 0.8, 0.9, 0.99, 0.999, 0.3, 0.01):
        assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-10)  # Cauchy
        assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-10)


def test_t_quantile_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in range(1, 41):
        for p in (0.55, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-10, abs=1e-12)


def test_mean_confidence_interval_formula_and_coverage():
    values = torch.tensor([0.2, 0.25, 0.22, 0.3])
    mean, std, low, high = mean_confidence_interval(values, 0.9)
    s = math.sqrt(sum((v - 0.2425) ** 2 for v in values.tolist()) / 3)
    half = t_quantile(0.95, 3) * s / 2
    assert float(mean) == pytest.approx(0.2425) and float(std) == pytest.approx(s)
    assert (float(low), float(high)) == pytest.approx((0.2425 - half, 0.2425 + half))
    # coverage of the true mean by the 95% interval of 5 normal draws, over 40,000 repetitions
    gen = torch.Generator().manual_seed(0)
    draws = 3.0 + 2.0 * torch.randn(5, 40_000, generator=gen, dtype=torch.float64)
    _, _, low, high = mean_confidence_interval(draws, 0.95)
    coverage = float(((low <= 3.0) & (3.0 <= high)).double().mean())
    assert coverage == pytest.approx(0.95, abs=0.005)


# ------------------------------------------------------------------------------------ cross_validate


def _popularity(train, users):
    return item_popularity(train).double().expand(users.numel(), -1)


def test_cross_validate_matches_a_manual_loop(data):
    names = ["ndcg@10", "recall@20", "mrr@10"]
    result = cross_validate(4, _popularity, data, names, seed=9, batch_size=37)
    assert list(result.values) == names and result.n_folds == 4
    for f, split in enumerate(user_kfold(data, 4, seed=9)):
        users, target_ids, exclude_ids = ranking_inputs(*split)
        suite = tre.RankingMetrics(names)
        suite.update(_popularity(split.train, users), target_ids=target_ids, exclude_ids=exclude_ids)
        for name, value in suite.compute().items():
            assert float(result.values[name][f]) == pytest.approx(float(value), abs=1e-12)
        assert int(result.num_users[f]) == users.numel()
    for name in names:
        mean, std, low, high = mean_confidence_interval(result.values[name])
        assert torch.equal(result.mean[name], mean) and torch.equal(result.std[name], std)
        assert torch.equal(result.low[name], low) and torch.equal(result.high[name], high)
    assert "recall@20" in result.summary()


def test_cross_validate_passes_the_fold_and_accepts_a_scorer(data):
    """fit_and_score sees only the fold's training data; a scorer gives the scores of a tensor."""
    folds = interaction_kfold(data, 3, seed=1)
    calls = []

    def fit_and_score(train, users):
        calls.append((train, users))
        popularity = item_popularity(train).double()
        return lambda batch: popularity.expand(batch.numel(), -1)

    lazy = cross_validate(3, fit_and_score, data, ["ndcg@5", "map@5"], by="interaction", seed=1,
                          batch_size=16)
    eager = cross_validate(3, _popularity, data, ["ndcg@5", "map@5"], by="interaction", seed=1)
    for name in ("ndcg@5", "map@5"):
        assert torch.allclose(lazy.values[name], eager.values[name], rtol=0, atol=1e-12)
    assert len(calls) == 3
    for (train, users), split in zip(calls, folds, strict=True):
        assert torch.equal(_rows(train), _rows(split.train))
        assert torch.equal(users, torch.unique(split.test.user))


def test_cross_validate_oracle_and_metric_instance(data):
    """A model that knows the held-out items is perfect on every fold: std 0, a zero-width interval."""
    test_matrix = torch.zeros(data.num_users, data.num_items)
    for split in user_kfold(data, 5, seed=0):
        test_matrix[split.test.user, split.test.item] = 1.0

    result = cross_validate(5, lambda train, users: test_matrix[users], data, tre.NDCG(k=[5, 50]), seed=0)
    assert set(result.values) == {"ndcg@5", "ndcg@50"}
    assert torch.allclose(result.values["ndcg@50"], torch.ones(5, dtype=torch.float64))
    assert float(result.std["ndcg@50"]) == pytest.approx(0.0, abs=1e-12)
    assert float(result.high["ndcg@50"] - result.low["ndcg@50"]) == pytest.approx(0.0, abs=1e-12)

    single = cross_validate(5, lambda train, users: test_matrix[users], data, tre.HitRate(k=1), seed=0)
    assert list(single.values) == ["hitrate"] and float(single.mean["hitrate"]) == pytest.approx(1.0)


def test_cross_validate_fold_without_evaluated_users_is_nan_and_not_fitted():
    data = as_interactions(torch.tensor([0, 1, 2, 2, 2, 3, 3, 3]), torch.tensor([0, 1, 2, 3, 4, 0, 1, 2]),
                           num_items=6)
    fitted = []

    def fit_and_score(train, users):
        fitted.append(users.tolist())
        return _popularity(train, users)

    result = cross_validate(4, fit_and_score, data, ["ndcg@3"], seed=0)
    assert sorted(result.num_users.tolist()) == [0, 0, 1, 1] and len(fitted) == 2
    assert int(torch.isnan(result.values["ndcg@3"]).sum()) == 2
    assert math.isnan(float(result.mean["ndcg@3"]))


# -------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda d: leave_last_out(d, n=0), r"`n`.*0"),
        (lambda d: leave_last_out(d.user), r"`interactions`.*Tensor"),
        (lambda d: temporal_split(d, 1.0), r"`test_fraction`.*1\.0"),
        (lambda d: temporal_split(d, -0.1), r"`test_fraction`.*-0\.1"),
        (lambda d: temporal_split(d, 0.2, by="day"), r"`by`.*'day'"),
        (lambda d: temporal_split(d, by="user", cutoff=5), r"`cutoff`.*'user'"),
        (lambda d: temporal_split(d, by="global", cutoff=5.5), r"`cutoff`.*5\.5"),
        (lambda d: random_split(d, 0.2, seed="x"), r"`seed`.*'x'"),
        (lambda d: random_split(d, True), r"`test_fraction`.*True"),
        (lambda d: user_kfold(d, 1), r"`n_folds`.*1"),
        (lambda d: user_kfold(d, 10_000), r"`n_folds`.*10000"),
        (lambda d: user_kfold(d, 3, test_fraction=0.0), r"`test_fraction`.*0\.0"),
        (lambda d: user_kfold(d, 3, holdout="last"), r"`holdout`.*'last'"),
        (lambda d: interaction_kfold(d, 2.5), r"`n_folds`.*2\.5"),
        (lambda d: interaction_kfold(d, len(d) + 1), r"`n_folds`"),
        (lambda d: ranking_inputs(d, d, torch.tensor([0.5])), r"`users`.*float"),
        (lambda d: ranking_inputs(d, d, torch.tensor([d.num_users])), r"`users`.*300"),
        (lambda d: ranking_inputs(d, as_interactions(d.user, d.item, num_items=d.num_items + 1)),
         r"`train` and `test`"),
        (lambda d: t_quantile(1.0, 3), r"`p`.*1\.0"),
        (lambda d: t_quantile(0.9, 0), r"`df`.*0"),
        (lambda d: mean_confidence_interval(torch.tensor([1.0])), r"`values`.*\(1,\)"),
        (lambda d: mean_confidence_interval(torch.ones(3), confidence=95), r"`confidence`.*95"),
        (lambda d: cross_validate(3, _popularity, d, "ndcg@10"), r"`metrics`.*'ndcg@10'"),
        (lambda d: cross_validate(3, None, d), r"`fit_and_score`.*NoneType"),
        (lambda d: cross_validate(3, _popularity, d, by="item"), r"`by`.*'item'"),
        (lambda d: cross_validate(3, _popularity, d, batch_size=0), r"`batch_size`.*0"),
        (lambda d: cross_validate(3, lambda t, u: torch.zeros(2, 2), d), r"`fit_and_score`.*\(2, 2\)"),
        (lambda d: as_interactions(torch.tensor([0.0]), torch.tensor([1])), r"`user`.*float"),
        (lambda d: as_interactions(torch.tensor([0, 1]), torch.tensor([1])), r"same shape"),
        (lambda d: as_interactions(torch.tensor([0]), torch.tensor([4]), num_items=3), r"`num_items`.*3"),
        (lambda d: as_interactions(torch.tensor([-1]), torch.tensor([0])), r"`num_users`.*-1"),
    ],
)
def test_errors_name_the_argument_and_the_value(data, call, match):
    with pytest.raises(ValueError, match=match):
        call(data)
