"""Our classes inside torchmetrics' ``MetricCollection`` with keys that two members share (``ndcg@5`` in two
suites, a suite and a sampled suite, two comparisons): torchmetrics names each duplicated key after its member,
with or without ``compute_groups`` and a prefix, and each value is the member's value alone. (The harness,
``tests/harness.py``, puts every case of every family through the same collection of two copies.)"""

from __future__ import annotations

import pytest
import torch
from torchmetrics import MetricCollection

import torchrec_eval as tre
from torchrec_eval.comparison.uncertainty import PairedComparison


def _dense(seed: int, rows: int = 6, width: int = 11) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    target = torch.zeros(rows, width, dtype=torch.bool)
    target[:, 0] = True  # one held-out item per row, as sampled evaluation has it
    return torch.randn(rows, width, generator=gen), target


def _alone(make, batches, **extra):
    metric = make()
    for preds, target in batches:
        metric.update(preds, target, **extra)
    return metric.compute()


@pytest.mark.parametrize("groups", [True, False])
@pytest.mark.parametrize("prefix", [None, "val/"])
def test_two_suites_and_a_sampled_suite_sharing_keys(groups, prefix):
    makers = {
        "full": lambda: tre.RankingMetrics(["ndcg@5", "mrr@10"]),
        "named": lambda: tre.RankingMetrics(["ndcg@5", "recall@5"], prefix="x/"),
        "sampled": lambda: tre.SampledMetrics(["ndcg@5", "mrr"], num_items=1000, num_negatives=10),
    }
    batches = [_dense(0), _dense(1, rows=3)]
    collection = MetricCollection({name: make() for name, make in makers.items()}, prefix=prefix,
                                  compute_groups=groups)
    for preds, target in batches:
        collection.update(preds, target)
    got = collection.compute()
    # a key that two members give names every key after its member (torchmetrics' rule)
    want = {f"{prefix or ''}{name}_{key}": value for name, make in makers.items()
            for key, value in _alone(make, batches).items()}
    assert got.keys() == want.keys()
    for key, value in want.items():
        torch.testing.assert_close(got[key], value, rtol=0, atol=0, msg=key)


def test_two_paired_comparisons_sharing_keys():
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(8, 20, generator=gen), torch.randn(8, 20, generator=gen)
    target = torch.rand(8, 20, generator=gen) < 0.3
    makers = {"p": lambda: PairedComparison(["ndcg@5", "mrr@5"]), "q": lambda: PairedComparison(["ndcg@5"])}
    collection = MetricCollection({name: make() for name, make in makers.items()}, prefix="cmp/")
    collection.update(preds_a=a, preds_b=b, target=target)
    got = collection.compute()
    for name, make in makers.items():
        alone = make()
        alone.update(preds_a=a, preds_b=b, target=target)
        for key, value in alone.compute().items():
            torch.testing.assert_close(got[f"cmp/{name}_{key}"], value, rtol=0, atol=0)


def test_two_model_comparisons_sharing_keys():
    gen = torch.Generator().manual_seed(4)
    preds = [torch.randn(8, 20, generator=gen) for _ in range(3)]
    target = torch.rand(8, 20, generator=gen) < 0.3
    ids = torch.arange(8)
    makers = {"t": lambda: tre.ModelComparison(["ndcg@5"], models=["a", "b", "c"]),
              "f": lambda: tre.ModelComparison(["ndcg@5"], models=["a", "b", "c"], test="fisher", replicates=64)}
    collection = MetricCollection({name: make() for name, make in makers.items()})
    collection.update(preds=preds, target=target, query_ids=ids)
    got = collection.compute()
    for name, make in makers.items():
        alone = make()
        alone.update(preds=preds, target=target, query_ids=ids)
        for key, value in alone.compute().items():
            torch.testing.assert_close(got[f"{name}_{key}"], value, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("copy_state", [False, True])
def test_the_flat_form_across_calls_in_a_compute_group(copy_state):
    """The second member of a compute group reads the first one's states (shared, or copied when a user takes a
    member out): the query each call holds back is in them as it stands, never counted twice or lost."""
    gen = torch.Generator().manual_seed(0)
    indexes = torch.arange(10).repeat_interleave(6)
    preds, target = torch.randn(60, generator=gen), torch.rand(60, generator=gen) < 0.3

    def make():
        return tre.RankingMetrics(["recall@3", "ndcg@3"])

    collection = MetricCollection({"a": make(), "b": make()}, compute_groups=True)
    for rows in torch.arange(60).tensor_split(3):  # each cut inside a query
        collection.update(preds[rows], target[rows], indexes=indexes[rows])
    assert collection.compute_groups == {0: ["a", "b"]}
    got = ({name: member.compute() for name, member in collection.items(copy_state=True)} if copy_state else
           {name: {key: collection.compute()[f"{name}_{key}"] for key in ("recall@3", "ndcg@3")} for name in "ab"})
    alone = make()
    alone.update(preds, target, indexes=indexes)
    want = alone.compute()
    for name in "ab":
        for key, value in want.items():
            torch.testing.assert_close(got[name][key], value, rtol=0, atol=1e-12, msg=f"{name} {key}")
