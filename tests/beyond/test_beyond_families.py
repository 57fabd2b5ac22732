"""The beyond-accuracy families through the one harness (``tests/harness.py``), against the references of
``tests/reference/beyond.py`` on the top-k lists (distinct scores: one list per query); intra-list diversity
and serendipity in the dense, ids and ranked forms (short lists: padding anywhere)."""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import beyond as ref

NUM_ITEMS, K = 10, 3
POPULARITY = torch.tensor([9.0, 7.0, 5.0, 4.0, 3.0, 2.0, 1.0, 1.0, 6.0, 8.0])
GENRES = torch.tensor([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0],  # multi-hot: item 2 in two genres
                       [0, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0], [1, 0, 0]], dtype=torch.float64)
FAMILIES = {
    "coverage": (lambda: tre.Coverage(k=K, num_items=NUM_ITEMS), lambda lists: ref.coverage(lists, NUM_ITEMS)),
    "gini": (lambda: tre.GiniIndex(k=K, num_items=NUM_ITEMS), lambda lists: ref.gini(lists, NUM_ITEMS)),
    "exposure_gini": (lambda: tre.ExposureGini(k=K, num_items=NUM_ITEMS, patience=0.6),
                      lambda lists: ref.lenskit_exposure_gini(lists, NUM_ITEMS, 0.6)),
    "entropy": (lambda: tre.Entropy(k=K, num_items=NUM_ITEMS), lambda lists: ref.entropy(lists, NUM_ITEMS)),
    "inter_list_diversity": (lambda: tre.InterListDiversity(k=K, num_items=NUM_ITEMS), ref.inter_list_diversity),
    "novelty": (lambda: tre.Novelty(k=K, item_popularity=POPULARITY),
                lambda lists: ref.novelty(lists, POPULARITY.tolist())),
    "average_popularity": (lambda: tre.AveragePopularity(k=K, item_popularity=POPULARITY),
                           lambda lists: ref.average_popularity(lists, POPULARITY.tolist())),
    "category_entropy": (lambda: tre.CategoryEntropy(k=K, item_categories=GENRES),
                         lambda lists: ref.lenskit_entropy(lists, GENRES.tolist(), smoothing=0.0)),
    "rank_biased_entropy": (lambda: tre.RankBiasedEntropy(k=K, item_categories=GENRES, convention="lenskit"),
                            lambda lists: ref.lenskit_entropy(lists, GENRES.tolist(), patience=0.85)),
    "long_tail_share": (lambda: tre.LongTailShare(k=K, item_popularity=POPULARITY),
                        lambda lists: ref.long_tail_share(lists, ref.elliot_long_tail(POPULARITY.tolist()))),
    "long_tail_count": (lambda: tre.LongTailCount(k=K, item_popularity=POPULARITY, tail_ratio=0.3),
                        lambda lists: ref.long_tail_count(lists, ref.recbole_tail(POPULARITY.tolist(), 0.3))),
}
FEATURES = torch.cat([torch.rand(NUM_ITEMS - 1, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64),
                      torch.zeros(1, 4, dtype=torch.float64)])  # the last item has no features: similarity 0
# families whose reference reads each query's relevant items too: (make, reference(lists, relevant))
BY_RELEVANCE = {
    "intra_list_diversity": (lambda: tre.IntraListDiversity(k=K, item_features=FEATURES),
                             lambda lists, _: ref.intra_list_diversity(lists, features=FEATURES.tolist())),
    "serendipity": (lambda: tre.Serendipity(k=K, item_popularity=POPULARITY, baseline_size=4),
                    lambda lists, relevant: ref.serendipity(lists, relevant, POPULARITY.tolist(), K, baseline_size=4)),
}
FORMS = ("dense", "ids", "ranked")


def _batches(seed: int) -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for rows in (4, 1, 5):
        preds = torch.rand(rows, NUM_ITEMS, generator=gen).argsort(1).float()  # distinct scores per row
        target = (torch.rand(rows, NUM_ITEMS, generator=gen) < 0.3).long()
        target[:, 0] = 1
        batches.append({"preds": preds, "target": target})
    return batches


def _in_form(form: str, batch: dict[str, torch.Tensor], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """A dense batch as the ids form (its relevant columns, -1 padding) or the ranked form (the items by score,
    two in five of them replaced by padding: short lists)."""
    if form == "dense":
        return batch
    relevant = torch.where(batch["target"] > 0, torch.arange(NUM_ITEMS), NUM_ITEMS).sort(dim=1).values
    target_ids = torch.where(relevant < NUM_ITEMS, relevant, -1)
    if form == "ids":
        return {"preds": batch["preds"], "target_ids": target_ids}
    ranked = batch["preds"].argsort(dim=1, descending=True)[:, :K + 1]
    return {"ranked_ids": ranked.masked_fill(torch.rand(ranked.shape, generator=gen) < 0.4, -1), "target_ids": target_ids}


def _lists(batches: list[dict[str, torch.Tensor]]) -> list[list[int]]:
    """Each query's top-k list: the first k ranked ids (padding left out), or the k best scores."""
    if "ranked_ids" in batches[0]:
        ranked = torch.cat([b["ranked_ids"] for b in batches]).tolist()
        return [[item for item in row if item >= 0][:K] for row in ranked]
    return torch.cat([b["preds"] for b in batches]).argsort(dim=1, descending=True)[:, :K].tolist()


def build(name: str) -> MetricCase:
    """The case ``family`` (dense) or ``family/form`` (module level: spawned processes rebuild it by name)."""
    family, _, form = name.partition("/")
    dense = _batches(seed=len(family))
    if family in FAMILIES:
        make, reference = FAMILIES[family]
        return MetricCase(name=name, make=make, batches=dense,
                          expected={f"{family}@{K}": float(reference(_lists(dense)))})
    gen = torch.Generator().manual_seed(len(name))
    batches = [_in_form(form or "dense", batch, gen) for batch in dense]
    relevant = [{i for i, t in enumerate(row) if t} for row in torch.cat([b["target"] for b in dense]).tolist()]
    make, reference = BY_RELEVANCE[family]
    return MetricCase(name=name, make=make, batches=batches,
                      expected={f"{family}@{K}": float(reference(_lists(batches), relevant))})


CASES = sorted(FAMILIES) + [f"{family}/{form}" for family in BY_RELEVANCE for form in FORMS]


@pytest.mark.parametrize("family", CASES)
def test_family(family):
    check_metric(build(family))


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, CASES, str(tmp_path))


@pytest.mark.parametrize("seed", range(4))
def test_long_tail_against_elliot_and_recbole(seed):
    """The tail of random popularity tables with ties and cold items, by Elliot's short head and by each of
    RecBole's ``tail_ratio`` forms, and the share and count of it in short and empty lists."""
    from torchrec_eval.beyond.long_tail import long_tail

    gen = torch.Generator().manual_seed(seed)
    popularity = torch.randint(0, 6, (30,), generator=gen).double()
    ranked = torch.stack([torch.randperm(30, generator=gen)[:8] for _ in range(12)])
    ranked[torch.rand(12, 8, generator=gen) < 0.2] = -1  # padding anywhere: short lists
    ranked[0] = -1  # an empty list: left out
    lists = [[i for i in row if i >= 0] for row in ranked.tolist()]
    cases = [({"head_share": share}, ref.elliot_long_tail(popularity.tolist(), share)) for share in (0.5, 0.8, 1.0)]
    cases += [({"tail_ratio": ratio}, ref.recbole_tail(popularity.tolist(), ratio)) for ratio in (0.05, 0.3, 1, 2, 4.5)]
    for options, tail in cases:
        assert set(long_tail(popularity, **options).nonzero().flatten().tolist()) == tail, options
        for k in (3, 8):
            cut = [items[:k] for items in lists]  # the ranked form closes up its padding
            share = tre.LongTailShare(k=k, item_popularity=popularity, **options)
            count = tre.LongTailCount(k=k, item_popularity=popularity, **options)
            for metric in (share, count):
                metric.update(ranked_ids=ranked, target_ids=torch.zeros(12, 1, dtype=torch.long))
            assert share.compute().item() == pytest.approx(ref.long_tail_share(cut, tail), abs=1e-12)
            assert count.compute().item() == pytest.approx(ref.long_tail_count(cut, tail), abs=1e-12)
    assert lists[0] == []


@pytest.mark.parametrize(("options", "message"), [
    ({"head_share": 0.8, "tail_ratio": 0.2}, "at most one of `head_share` and `tail_ratio`"),
    ({"head_share": 1.5}, r"`head_share` must be a number in \[0, 1\], got 1.5"),
    ({"tail_ratio": 0}, r"`tail_ratio` must be a share in \(0, 1\] or a count > 1, got 0"),
    ({"tail_ratio": True}, "`tail_ratio` must be"),
])
def test_long_tail_refuses_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        tre.LongTailShare(k=3, item_popularity=POPULARITY, **options)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: tre.ExposureGini(k=3, num_items=NUM_ITEMS, patience=1.0),
     r"`patience` of exposure_gini must be a number in \(0, 1\)"),
    (lambda: tre.RankBiasedEntropy(k=3, item_categories=GENRES, patience=0), r"`patience` of rank_biased_entropy must be"),
    (lambda: tre.CategoryEntropy(k=3, item_categories=GENRES, smoothing=-1e-6), r"`smoothing` must be a number >= 0"),
    (lambda: tre.CategoryEntropy(k=3, item_categories=-GENRES), r"`item_categories` must be >= 0"),
])
def test_exposure_and_entropy_refuse_bad_options(make, message):
    with pytest.raises(ValueError, match=message):
        make()
