"""Tests of the synthetic data generator, the split by time and the padded id lists."""

import pytest
import torch

from torchrec_eval.data import (
    Interactions,
    generate_interactions,
    interaction_matrix,
    item_popularity,
    padded_item_lists,
    temporal_split,
)


@pytest.fixture(scope="module")
def data() -> Interactions:
    return generate_interactions(num_users=500, num_items=1000, interactions_per_user=(10, 40), seed=0)


@pytest.fixture(scope="module")
def split(data):
    return temporal_split(data, 0.2)


def _same(a: Interactions, b: Interactions) -> bool:
    return (
        a.num_users == b.num_users
        and a.num_items == b.num_items
        and torch.equal(a.user, b.user)
        and torch.equal(a.item, b.item)
        and torch.equal(a.timestamp, b.timestamp)
    )


def _keys(user: torch.Tensor, item: torch.Tensor, num_items: int) -> torch.Tensor:
    return user * num_items + item


# ----------------------------------------------------------------------------- generator


def test_same_seed_same_data(data):
    again = generate_interactions(num_users=500, num_items=1000, interactions_per_user=(10, 40), seed=0)
    assert _same(data, again)


def test_different_seed_different_data(data):
    other = generate_interactions(num_users=500, num_items=1000, interactions_per_user=(10, 40), seed=1)
    assert not _same(data, other)


def test_global_rng_untouched_and_ignored():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = generate_interactions(num_users=20, num_items=50, interactions_per_user=5, seed=7)
    assert torch.equal(torch.random.get_rng_state(), before)
    torch.manual_seed(999)
    b = generate_interactions(num_users=20, num_items=50, interactions_per_user=5, seed=7)
    assert _same(a, b)


def test_shapes_dtypes_and_ranges(data):
    assert isinstance(data, Interactions)
    assert data.num_users == 500 and data.num_items == 1000
    m = len(data)
    for t in (data.user, data.item, data.timestamp):
        assert t.shape == (m,) and t.dtype == torch.long
    assert int(data.user.min()) >= 0 and int(data.user.max()) < 500
    assert int(data.item.min()) >= 0 and int(data.item.max()) < 1000
    counts = data.user_counts()
    assert counts.shape == (500,)
    assert int(counts.min()) >= 10 and int(counts.max()) <= 40
    assert int(counts.sum()) == m
    # a spread of activity levels, not one count for all
    assert counts.unique().numel() > 10


def test_fixed_count_per_user():
    d = generate_interactions(num_users=30, num_items=60, interactions_per_user=7, seed=3)
    assert len(d) == 210
    assert torch.equal(d.user_counts(), torch.full((30,), 7))


def test_no_repeated_item_per_user(data):
    keys = _keys(data.user, data.item, data.num_items)
    assert keys.unique().numel() == keys.numel()


def test_sorted_by_user_then_time(data):
    assert bool((data.user[1:] >= data.user[:-1]).all())
    same_user = data.user[1:] == data.user[:-1]
    assert bool((data.timestamp[1:][same_user] > data.timestamp[:-1][same_user]).all())


def test_popularity_is_long_tailed(data):
    pop = item_popularity(data).sort(descending=True).values
    top_share = pop[: data.num_items // 10].sum().item() / pop.sum().item()
    assert top_share > 0.3
    # and the bottom half of the items carries little
    assert pop[data.num_items // 2 :].sum().item() / pop.sum().item() < 0.2


def test_no_popularity_bias_is_flatter(data):
    flat = generate_interactions(
        num_users=500, num_items=1000, interactions_per_user=(10, 40), popularity_exponent=0.0, seed=0
    )

    def share(d):
        pop = item_popularity(d).sort(descending=True).values
        return pop[:100].sum().item() / pop.sum().item()

    assert share(flat) < share(data)


def test_latent_structure_is_learnable():
    """Users' items share taste: item co-occurrence predicts held-out items far better than chance."""
    d = generate_interactions(
        num_users=400, num_items=200, interactions_per_user=20, popularity_exponent=0.0, seed=5
    )
    train, test = temporal_split(d, 0.25)
    x = interaction_matrix(train).float()
    # item-item co-occurrence scores, training items removed
    scores = x @ (x.T @ x)
    scores[x.bool()] = -float("inf")
    top = scores.topk(10, dim=1).indices
    hits = interaction_matrix(test).gather(1, top).float().sum(1)
    # a random item is a test item with probability ~5/180 -> ~0.28 hits in 10; the structure gives more
    assert hits.mean().item() > 3 * 10 * 5 / 180


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_users": 0}, "num_users"),
        ({"num_items": 2.5}, "num_items"),
        ({"interactions_per_user": 0}, "interactions_per_user"),
        ({"num_items": 10, "interactions_per_user": 11}, "interactions_per_user"),
        ({"interactions_per_user": (5, 3)}, "interactions_per_user"),
        ({"interactions_per_user": "many"}, "interactions_per_user"),
        ({"seed": 1.5}, "seed"),
        ({"dim": 0}, "dim"),
    ],
)
def test_generator_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        generate_interactions(**kwargs)


def test_interactions_validates_fields():
    with pytest.raises(ValueError, match="item"):
        Interactions(
            user=torch.tensor([0]),
            item=torch.tensor([0.0]),
            timestamp=torch.tensor([0]),
            num_users=1,
            num_items=9,
        )
    with pytest.raises(ValueError, match="same shape"):
        Interactions(
            user=torch.tensor([0, 1]),
            item=torch.tensor([0]),
            timestamp=torch.tensor([0]),
            num_users=2,
            num_items=1,
        )


# ----------------------------------------------------------------------------- split


def test_split_partitions_the_data(data, split):
    train, test = split
    assert len(train) + len(test) == len(data)
    both = torch.cat([_keys(train.user, train.item, 1000), _keys(test.user, test.item, 1000)])
    assert torch.equal(both.sort().values, _keys(data.user, data.item, 1000).sort().values)
    assert train.num_users == test.num_users == 500
    assert train.num_items == test.num_items == 1000


def test_split_sizes_per_user(data, split):
    train, test = split
    counts = data.user_counts()
    expected = torch.round(counts.double() * 0.2).long().clamp(min=1)
    assert torch.equal(test.user_counts(), expected)
    assert torch.equal(train.user_counts(), counts - expected)
    assert int(train.user_counts().min()) >= 1


def test_no_test_item_in_train(split):
    train, test = split
    train_keys = _keys(train.user, train.item, 1000)
    test_keys = _keys(test.user, test.item, 1000)
    assert not bool(torch.isin(test_keys, train_keys).any())


def test_test_is_later_than_train_per_user(split):
    train, test = split
    last_train = torch.full((500,), torch.iinfo(torch.long).min).scatter_reduce(
        0, train.user, train.timestamp, reduce="amax"
    )
    first_test = torch.full((500,), torch.iinfo(torch.long).max).scatter_reduce(
        0, test.user, test.timestamp, reduce="amin"
    )
    assert bool((first_test > last_train).all())


def test_split_hand_checked():
    # user 0: times 5, 1, 3, 9, 7 -> by time items 11, 12, 10, 14, 13; 40% -> the last two (14, 13) are test
    # user 1: a single interaction stays in train; user 2: two interactions -> one each
    data = Interactions(
        user=torch.tensor([0, 0, 0, 0, 0, 1, 2, 2]),
        item=torch.tensor([10, 11, 12, 13, 14, 15, 16, 17]),
        timestamp=torch.tensor([5, 1, 3, 9, 7, 4, 8, 2]),
        num_users=4,
        num_items=20,
    )
    train, test = temporal_split(data, 0.4)
    assert train.user.tolist() == [0, 0, 0, 1, 2]
    assert train.item.tolist() == [11, 12, 10, 15, 17]
    assert test.user.tolist() == [0, 0, 2]
    assert test.item.tolist() == [14, 13, 16]
    assert test.timestamp.tolist() == [7, 9, 8]


def test_split_zero_fraction_keeps_all_in_train(data):
    train, test = temporal_split(data, 0.0)
    assert len(test) == 0 and _same(train, data)


@pytest.mark.parametrize("fraction", [-0.1, 1.0, 2, "0.2", True])
def test_split_rejects_bad_fraction(data, fraction):
    with pytest.raises(ValueError, match="test_fraction"):
        temporal_split(data, fraction)


# ----------------------------------------------------------------------------- padded lists


def test_padded_item_lists_hand_checked():
    data = Interactions(
        user=torch.tensor([3, 1, 3, 1, 3]),
        item=torch.tensor([9, 2, 8, 0, 7]),
        timestamp=torch.tensor([30, 5, 10, 1, 20]),
        num_users=5,
        num_items=10,
    )
    expected = torch.tensor(
        [
            [-1, -1, -1],
            [0, 2, -1],
            [-1, -1, -1],
            [8, 7, 9],
            [-1, -1, -1],
        ]
    )
    out = padded_item_lists(data)
    assert out.dtype == torch.long
    assert torch.equal(out, expected)
    assert torch.equal(padded_item_lists(data, num_users=4), expected[:4])
    assert torch.equal(padded_item_lists(data, pad_value=-7), torch.where(expected < 0, -7, expected))


def test_padded_item_lists_empty():
    empty = Interactions(
        user=torch.zeros(0, dtype=torch.long),
        item=torch.zeros(0, dtype=torch.long),
        timestamp=torch.zeros(0, dtype=torch.long),
        num_users=3,
        num_items=4,
    )
    assert padded_item_lists(empty).shape == (3, 0)


def test_padded_item_lists_rejects_too_few_rows():
    data = Interactions(
        user=torch.tensor([0, 4]),
        item=torch.tensor([1, 2]),
        timestamp=torch.tensor([0, 0]),
        num_users=5,
        num_items=3,
    )
    with pytest.raises(ValueError, match="num_users"):
        padded_item_lists(data, num_users=4)


def test_padded_item_lists_match_split(split):
    train, test = split
    test_ids = padded_item_lists(test)
    train_ids = padded_item_lists(train)
    assert test_ids.shape == (500, int(test.user_counts().max()))
    assert train_ids.shape == (500, int(train.user_counts().max()))
    # same multiset of (user, item) pairs as the interactions
    for ids, part in ((test_ids, test), (train_ids, train)):
        rows = torch.arange(500).unsqueeze(1).expand_as(ids)
        valid = ids >= 0
        assert torch.equal((ids >= 0).sum(1), part.user_counts())
        assert torch.equal(
            _keys(rows[valid], ids[valid], 1000).sort().values,
            _keys(part.user, part.item, 1000).sort().values,
        )
        # padding only at the end of a row
        assert bool((valid[:, 1:] <= valid[:, :-1]).all())
    # per row: no test id among the train ids
    clash = (test_ids.unsqueeze(2) == train_ids.unsqueeze(1)) & (test_ids >= 0).unsqueeze(2)
    assert not bool(clash.any())


def test_interaction_matrix_and_popularity(data):
    x = interaction_matrix(data)
    assert x.shape == (500, 1000) and x.dtype == torch.bool
    assert int(x.sum()) == len(data)
    assert torch.equal(x.sum(0), item_popularity(data))
