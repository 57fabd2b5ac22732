"""Beyond-accuracy metrics (torchrec_eval/beyond/) against the brute force of tests/reference/beyond.py.

Every metric on random top-k lists with padding (short and empty lists), several batches and
cut-offs; the dense form with masks (lists shorter than k); suites through RankingMetrics;
state merging (what a distributed sum-sync does) equal to one process; and the error messages.
"""

import math

import pytest
import torch

import torchrec_eval.beyond as beyond
from tests.reference import beyond as ref
from tests.reference import intents as ref_intents
from tests.reference import propensity as ref_propensity
from tests.reference import ranking as ref_ranking
from torchrec_eval import (
    AveragePopularity,
    Coverage,
    Entropy,
    GiniIndex,
    InterListDiversity,
    IntraListDiversity,
    Novelty,
    Serendipity,
)
from torchrec_eval.beyond import cooccurrence_similarity
from torchrec_eval.suites import ranking as collection

NUM_ITEMS = 15


@pytest.fixture
def suites():
    """RankingMetrics, which takes every beyond-accuracy family (torchrec_eval.metrics.families)."""
    return collection.RankingMetrics


def _close(actual, expected, tol=1e-9):
    actual = float(actual)
    if math.isnan(expected):
        assert math.isnan(actual), actual
    else:
        assert actual == pytest.approx(expected, rel=tol, abs=1e-12), (actual, expected)


def random_lists(generator, rows, width, num_items=NUM_ITEMS, pad=0.3):
    """[rows, width] ranked ids without repeats, -1 padding anywhere (short and empty lists)."""
    ids = torch.stack([torch.randperm(num_items, generator=generator)[:width] for _ in range(rows)])
    drop = torch.rand(rows, width, generator=generator) < pad
    drop[0] = True  # one empty list
    return ids.masked_fill(drop, -1)


def to_lists(ranked_ids, k):
    return [[i for i in row if i >= 0][:k] for row in ranked_ids.tolist()]


def make_batches(seed=0, sizes=(6, 1, 9), width=6, num_items=NUM_ITEMS):
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for rows in sizes:
        ranked = random_lists(generator, rows, width, num_items)
        target = random_lists(generator, rows, 4, num_items, pad=0.5)
        batches.append((ranked, target))
    return batches


def popularity_vector(seed=1, num_items=NUM_ITEMS, zeros=True):
    generator = torch.Generator().manual_seed(seed)
    pop = torch.randint(0, 20, (num_items,), generator=generator).to(torch.float64)
    if zeros:
        pop[3] = 0
    pop[0] = max(pop[0].item(), 1)
    return pop


def feed(metric, batches, **kwargs):
    for ranked, target in batches:
        metric.update(ranked_ids=ranked, target_ids=target, **kwargs)
    return metric


def all_lists(batches, k):
    return [items for ranked, _ in batches for items in to_lists(ranked, k)]


def all_relevant(batches):
    return [{i for i in row if i >= 0} for _, target in batches for row in target.tolist()]


# ----------------------------------------------------------------------------------------------
# each metric against the brute force
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_catalogue_metrics(seed):
    batches = make_batches(seed)
    ks = [1, 3, 6, 8]
    metrics = {
        "coverage": (Coverage(k=ks, num_items=NUM_ITEMS), lambda lists: ref.coverage(lists, NUM_ITEMS)),
        "gini": (GiniIndex(k=ks, num_items=NUM_ITEMS), lambda lists: ref.gini(lists, NUM_ITEMS)),
        "entropy": (Entropy(k=ks, num_items=NUM_ITEMS), lambda lists: ref.entropy(lists, NUM_ITEMS)),
        "entropy_e": (
            Entropy(k=ks, num_items=NUM_ITEMS, base=math.e, normalization="distinct"),
            lambda lists: ref.entropy(lists, NUM_ITEMS, base=math.e, normalization="distinct"),
        ),
        "entropy_max": (
            Entropy(k=ks, num_items=NUM_ITEMS, normalization="log_num_items"),
            lambda lists: ref.entropy(lists, NUM_ITEMS, normalization="log_num_items"),
        ),
        "inter_list_diversity": (InterListDiversity(k=ks, num_items=NUM_ITEMS), ref.inter_list_diversity),
    }
    for metric, oracle in metrics.values():
        result = feed(metric, batches).compute()
        for k in ks:
            key = f"{metric.value_keys[0].split('@')[0]}@{k}"
            _close(result[key], oracle(all_lists(batches, k)))


def test_inter_list_diversity_full_lists_is_the_count_formula():
    generator = torch.Generator().manual_seed(3)
    k, n = 4, 30
    ranked = torch.stack([torch.randperm(NUM_ITEMS, generator=generator)[:k] for _ in range(n)])
    metric = InterListDiversity(k=k, num_items=NUM_ITEMS)
    metric.update(ranked_ids=ranked, target_ids=ranked[:, :1])
    counts = torch.bincount(ranked.reshape(-1), minlength=NUM_ITEMS).double()
    expected = 1 - (counts * (counts - 1)).sum() / (k * n * (n - 1))
    _close(metric.compute(), float(expected))
    _close(metric.compute(), ref.inter_list_diversity(ranked.tolist()))


def test_inter_list_diversity_needs_two_lists():
    metric = InterListDiversity(k=3, num_items=5)
    metric.update(ranked_ids=torch.tensor([[0, 1, 2], [-1, -1, -1]]), target_ids=torch.tensor([[0], [1]]))
    assert torch.isnan(metric.compute())


@pytest.mark.parametrize("num_users", [None, 40])
def test_novelty_and_average_popularity(num_users):
    batches = make_batches(2)
    pop = popularity_vector()
    ks = [2, 5]
    novelty = feed(Novelty(k=ks, item_popularity=pop, num_users=num_users), batches).compute()
    average = feed(AveragePopularity(k=ks, item_popularity=pop), batches).compute()
    for k in ks:
        lists = all_lists(batches, k)
        _close(novelty[f"novelty@{k}"], ref.novelty(lists, pop.tolist(), num_users))
        _close(average[f"average_popularity@{k}"], ref.average_popularity(lists, pop.tolist()))


def test_novelty_accepts_probabilities():
    pop = popularity_vector(zeros=False)
    batches = make_batches(4)
    counts = feed(Novelty(k=3, item_popularity=pop), batches).compute()
    probabilities = feed(Novelty(k=3, item_popularity=pop / pop.sum()), batches).compute()
    _close(probabilities, float(counts))


def test_intra_list_diversity_features():
    generator = torch.Generator().manual_seed(5)
    features = torch.randn(NUM_ITEMS, 4, generator=generator)
    features[7] = 0  # a zero vector: similarity 0 to everything
    batches = make_batches(5)
    ks = [2, 4, 6]
    result = feed(IntraListDiversity(k=ks, item_features=features), batches).compute()
    for k in ks:
        _close(
            result[f"intra_list_diversity@{k}"],
            ref.intra_list_diversity(all_lists(batches, k), features=features.tolist()),
            tol=1e-7,
        )


def test_intra_list_diversity_cooccurrence():
    generator = torch.Generator().manual_seed(6)
    train = torch.rand(25, NUM_ITEMS, generator=generator) < 0.3
    train[:, 9] = False  # an item nobody interacted with
    similarity = cooccurrence_similarity(train)
    expected = ref.cooccurrence_similarity(train.int().tolist())
    assert torch.allclose(similarity, torch.tensor(expected, dtype=torch.float64), atol=1e-12)
    batches = make_batches(6)
    result = feed(IntraListDiversity(k=[3, 6], item_similarity=similarity), batches).compute()
    for k in (3, 6):
        _close(
            result[f"intra_list_diversity@{k}"],
            ref.intra_list_diversity(all_lists(batches, k), similarity=expected),
        )
    # cosine of the items' user vectors is the co-occurrence cosine
    by_features = feed(IntraListDiversity(k=[3, 6], item_features=train.T.double()), batches).compute()
    for key in result:
        _close(by_features[key], float(result[key]))


@pytest.mark.parametrize("action", ["skip", "neg", "pos"])
@pytest.mark.parametrize("baseline_size", [None, 0, 4])
def test_serendipity(action, baseline_size):
    batches = make_batches(7)
    pop = popularity_vector()
    ks = [2, 5]
    metric = Serendipity(k=ks, item_popularity=pop, baseline_size=baseline_size, empty_target_action=action)
    result = feed(metric, batches).compute()
    for k in ks:
        expected = ref.serendipity(
            all_lists(batches, k), all_relevant(batches), pop.tolist(), k, baseline_size, action
        )
        _close(result[f"serendipity@{k}"], expected)


def test_serendipity_relevance_threshold_dense_form():
    generator = torch.Generator().manual_seed(8)
    preds = torch.rand(10, NUM_ITEMS, generator=generator)
    target = torch.randint(0, 4, (10, NUM_ITEMS), generator=generator)
    pop = popularity_vector()
    k = 4
    metric = Serendipity(k=k, item_popularity=pop, relevance_threshold=2)
    metric.update(preds, target)
    lists = [ref_ranking.rank(p)[:k] for p in preds.tolist()]
    relevant = [{i for i, t in enumerate(row) if t >= 2} for row in target.tolist()]
    _close(metric.compute(), ref.serendipity(lists, relevant, pop.tolist(), k))


def test_dense_form_with_mask_gives_short_lists(suites):
    """mask leaves fewer than k candidates: lists are short, -1 past the list, every metric still exact."""
    generator = torch.Generator().manual_seed(9)
    preds = torch.rand(12, NUM_ITEMS, generator=generator)
    target = torch.rand(12, NUM_ITEMS, generator=generator) < 0.3
    mask = torch.rand(12, NUM_ITEMS, generator=generator) < 0.35
    mask[0] = False
    mask[1, :] = False
    mask[1, 2] = True  # one candidate
    pop = popularity_vector()
    features = torch.randn(NUM_ITEMS, 3, generator=generator)
    intents = features > 0.3  # multi-hot, some items without an intent
    k = 5
    suite = suites(
        [f"{f}@{k}" for f in beyond.REGISTRY] + ["precision@5"],
        options={
            "coverage": {"num_items": NUM_ITEMS},
            "gini": {"num_items": NUM_ITEMS},
            "exposure_gini": {"num_items": NUM_ITEMS},
            "entropy": {"num_items": NUM_ITEMS},
            "inter_list_diversity": {"num_items": NUM_ITEMS},
            "intra_list_diversity": {"item_features": features},
            "novelty": {"item_popularity": pop},
            "serendipity": {"item_popularity": pop},
            "average_popularity": {"item_popularity": pop},
            "long_tail_share": {"item_popularity": pop},
            "long_tail_count": {"item_popularity": pop, "tail_ratio": 3},
            "category_entropy": {"item_categories": features.abs()},
            "rank_biased_entropy": {"item_categories": features.abs(), "patience": 0.6},
            "psp": {"inverse_propensity": pop + 1},
            "psndcg": {"inverse_propensity": pop + 1},
            "alpha_ndcg": {"item_intents": intents, "alpha": 0.3},
            "err_ia": {"item_intents": intents},
            "alpha_dcg": {"item_intents": intents, "alpha": 0.3},
            "nerr_ia": {"item_intents": intents},
            "p_ia": {"item_intents": intents},
            "strec": {"item_intents": intents},
            "ap_ia": {"item_intents": intents},
            "nrbp": {"item_intents": intents, "alpha": 0.3, "beta": 0.8},
            "nnrbp": {"item_intents": intents, "beta": 0.9},
        },
    )
    suite.update(preds, target, mask=mask)
    result = suite.compute()
    scores, labels = preds.masked_fill(~mask, float("-inf")).numpy(), (target & mask).double().numpy()
    _close(result["psp@5"], ref_propensity.psprecision(scores, labels, (pop + 1).numpy(), k)[-1])
    _close(result["psndcg@5"], ref_propensity.psndcg(scores, labels, (pop + 1).numpy(), k)[-1])
    lists = [ref_ranking.rank(p, mask=m)[:k] for p, m in zip(preds.tolist(), mask.tolist(), strict=True)]
    relevant = [
        {i for i in range(NUM_ITEMS) if t[i] and m[i]}
        for t, m in zip(target.tolist(), mask.tolist(), strict=True)
    ]
    assert list(result) == [f"{f}@{k}" for f in beyond.REGISTRY] + ["precision@5"]
    _close(result["coverage@5"], ref.coverage(lists, NUM_ITEMS))
    _close(result["gini@5"], ref.gini(lists, NUM_ITEMS))
    _close(result["entropy@5"], ref.entropy(lists, NUM_ITEMS))
    _close(result["inter_list_diversity@5"], ref.inter_list_diversity(lists))
    _close(
        result["intra_list_diversity@5"],
        ref.intra_list_diversity(lists, features=features.tolist()),
        tol=1e-7,
    )
    _close(result["novelty@5"], ref.novelty(lists, pop.tolist()))
    _close(result["serendipity@5"], ref.serendipity(lists, relevant, pop.tolist(), k))
    _close(result["average_popularity@5"], ref.average_popularity(lists, pop.tolist()))
    _close(result["exposure_gini@5"], ref.lenskit_exposure_gini(lists, NUM_ITEMS))
    genres = features.abs().tolist()
    _close(result["category_entropy@5"], ref.lenskit_entropy(lists, genres, smoothing=0.0))
    _close(result["rank_biased_entropy@5"], ref.lenskit_entropy(lists, genres, patience=0.6, smoothing=0.0))
    _close(result["long_tail_share@5"], ref.long_tail_share(lists, ref.elliot_long_tail(pop.tolist())))
    _close(result["long_tail_count@5"], ref.long_tail_count(lists, ref.recbole_tail(pop.tolist(), 3)))
    item_intents = {item: {s for s in range(3) if intents[item, s]} for item in range(NUM_ITEMS)}
    for family, alpha in (("alpha_ndcg", 0.3), ("alpha_dcg", 0.3), ("err_ia", 0.5), ("nerr_ia", 0.5), ("p_ia", None),
                          ("strec", None), ("ap_ia", None)):
        _close(result[f"{family}@5"], ref_intents.mean(family, lists, relevant, item_intents, k, alpha))
    _close(result["nrbp@5"], ref_intents.mean("nrbp", lists, relevant, item_intents, k, 0.3, beta=0.8))
    _close(result["nnrbp@5"], ref_intents.mean("nnrbp", lists, relevant, item_intents, k, 0.5, beta=0.9))


# ----------------------------------------------------------------------------------------------
# suites, states, sync
# ----------------------------------------------------------------------------------------------
def test_suite_matches_classes(suites):
    batches = make_batches(10)
    pop = popularity_vector()
    suite = suites(
        ["ndcg@3", "coverage@3", "coverage@5", "novelty@5", "gini@5", "inter_list_diversity@3"],
        options={
            "coverage": {"num_items": NUM_ITEMS},
            "novelty": {"item_popularity": pop},
            "gini": {"num_items": NUM_ITEMS},
            "inter_list_diversity": {"num_items": NUM_ITEMS},
        },
    )
    result = feed(suite, batches).compute()
    assert list(result) == [
        "ndcg@3",
        "coverage@3",
        "coverage@5",
        "novelty@5",
        "gini@5",
        "inter_list_diversity@3",
    ]
    _close(result["coverage@5"], float(feed(Coverage(k=5, num_items=NUM_ITEMS), batches).compute()))
    _close(result["novelty@5"], float(feed(Novelty(k=5, item_popularity=pop), batches).compute()))
    _close(result["gini@5"], float(feed(GiniIndex(k=5, num_items=NUM_ITEMS), batches).compute()))
    _close(
        result["inter_list_diversity@3"],
        float(feed(InterListDiversity(k=3, num_items=NUM_ITEMS), batches).compute()),
    )
    # bare names with k
    bare = feed(
        suites(["coverage", "ndcg"], k=[2, 4], options={"coverage": {"num_items": NUM_ITEMS}}), batches
    )
    assert list(bare.compute()) == ["coverage@2", "coverage@4", "ndcg@2", "ndcg@4"]


def test_suite_errors(suites):
    with pytest.raises(ValueError, match="coverage needs `num_items`"):
        suites(["coverage@10"])
    with pytest.raises(ValueError, match="needs a cut-off"):
        suites(["coverage"], options={"coverage": {"num_items": 5}})
    with pytest.raises(ValueError, match="share one `num_items`"):
        suites(["coverage@2", "gini@2"], options={"coverage": {"num_items": 5}, "gini": {"num_items": 6}})
    with pytest.raises(ValueError, match="has no option 'items'"):
        suites(["coverage@2"], options={"coverage": {"items": 5}})


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"`num_items` of coverage must be an int >= 1, got 0"):
        Coverage(k=2, num_items=0)
    with pytest.raises(ValueError, match=r"`k` must be an int >= 1, got 0"):
        Coverage(k=0, num_items=3)
    with pytest.raises(ValueError, match="item_popularity.*min=-1"):
        Novelty(k=2, item_popularity=torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="item_popularity.*1-D"):
        Novelty(k=2, item_popularity=torch.ones(2, 2))
    with pytest.raises(ValueError, match="cannot exceed `num_users`=3"):
        Novelty(k=2, item_popularity=torch.tensor([5.0, 1.0]), num_users=3)
    with pytest.raises(ValueError, match="exactly one of `item_features`.*neither"):
        IntraListDiversity(k=2)
    with pytest.raises(ValueError, match="exactly one of `item_features`.*both"):
        IntraListDiversity(k=2, item_features=torch.ones(3, 2), item_similarity=torch.ones(3, 3))
    with pytest.raises(ValueError, match=r"item_similarity.*shape \(3, 2\)"):
        IntraListDiversity(k=2, item_similarity=torch.ones(3, 2))
    with pytest.raises(ValueError, match="`normalization` must be one of"):
        Entropy(k=2, num_items=3, normalization="max")
    with pytest.raises(ValueError, match="`base` must be"):
        Entropy(k=2, num_items=3, base=1)
    with pytest.raises(ValueError, match="`baseline_size` of serendipity must be an int >= 0, got -1"):
        Serendipity(k=2, item_popularity=torch.ones(3), baseline_size=-1)
    with pytest.raises(ValueError, match="non-empty sequence"):
        Coverage(k=[], num_items=3)


def test_item_id_out_of_range():
    metric = Coverage(k=2, num_items=4)
    with pytest.raises(ValueError, match=r"item id 7 is out of range for coverage: `num_items`=4"):
        metric.update(ranked_ids=torch.tensor([[0, 7]]), target_ids=torch.tensor([[0]]))
    metric = Novelty(k=2, item_popularity=torch.ones(3))
    with pytest.raises(ValueError, match="novelty: `item_popularity` length=3"):
        metric.update(torch.tensor([[0.1, 0.2, 0.3, 0.4, 0.5]]), torch.ones(1, 5))  # ranks items 4 and 3 first


def test_merged_states_equal_one_process():
    """States are sums: merging per-rank states (as the sum-sync does) gives the one-process value."""
    batches = make_batches(11, sizes=(5, 4, 7, 3))
    pop = popularity_vector()
    features = torch.randn(NUM_ITEMS, 3, generator=torch.Generator().manual_seed(0))

    def build():
        return [
            Coverage(k=[2, 4], num_items=NUM_ITEMS),
            GiniIndex(k=3, num_items=NUM_ITEMS),
            Entropy(k=3, num_items=NUM_ITEMS),
            InterListDiversity(k=[2, 4], num_items=NUM_ITEMS),
            IntraListDiversity(k=4, item_features=features),
            Novelty(k=3, item_popularity=pop),
            Serendipity(k=3, item_popularity=pop),
            AveragePopularity(k=3, item_popularity=pop),
        ]

    whole = [feed(m, batches) for m in build()]
    ranks = [
        [feed(m, batches[:1]) for m in build()],
        [feed(m, batches[1:3]) for m in build()],
        [feed(m, batches[3:]) for m in build()],
    ]
    for i, metric in enumerate(whole):
        merged = ranks[0][i]
        for other in ranks[1:]:
            merged.merge_state(other[i])
        expected, actual = metric.compute(), merged.compute()
        for key in expected if isinstance(expected, dict) else {"v": expected}:
            e = expected[key] if isinstance(expected, dict) else expected
            a = actual[key] if isinstance(actual, dict) else actual
            _close(a, float(e), tol=1e-12)


def test_states_are_float64_and_sized_by_catalogue():
    metric = InterListDiversity(k=[2, 3], num_items=7, num_groups=4)
    assert metric.beyond_items.shape == (4, 6, 7) and metric.beyond_items.dtype == torch.float64
    assert metric.beyond_stats.shape == (4, 2)
    assert Novelty(k=2, item_popularity=torch.ones(7)).beyond_stats.shape == (1, 3)
    # constructor tables are buffers: they follow .to(), and are not saved in the state_dict
    assert "beyond_novelty_table" not in Novelty(k=2, item_popularity=torch.ones(7)).state_dict()


def test_reset_and_validate_args_false():
    metric = Coverage(k=2, num_items=5, validate_args=False)
    metric.update(ranked_ids=torch.tensor([[0, 1]]), target_ids=torch.tensor([[0]]))
    metric.reset()
    metric.update(ranked_ids=torch.tensor([[2, -1]]), target_ids=torch.tensor([[0]]))
    _close(metric.compute(), 0.2)
