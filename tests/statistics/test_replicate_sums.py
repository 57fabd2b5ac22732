"""The replicates' sums drawn in blocks: the draws of any block are those of one draw of all the replicates, the
blocked sums are those of one [B, R] product written out here (to the bit where the rows fit one block, to
rounding where they are split), and an update allocates no tensor beyond a block whatever B and R (a Fisher
test of 100,000 replicates on one 1024-row batch held 2.4 GB of [B, R] signs at once)."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

import torchrec_eval as tre
from torchrec_eval.comparison.statistics import replicate_sums
from torchrec_eval.comparison.statistics.replicate_sums import blocks, bootstrap_sums, fisher_sums, tukey_sums
from torchrec_eval.comparison.statistics.replicates import (
    enumerated_signs,
    permutations,
    poisson_weights,
    signs,
)

IDS = torch.tensor([5, 3, 10**12, 7, 0, 2**40 + 3, 11])


@pytest.mark.parametrize("draw", [
    lambda ids, count, start: signs(ids, count, 4, start),
    lambda ids, count, start: poisson_weights(ids, count, 4, start),
    lambda ids, count, start: permutations(ids, count, 3, 4, start),  # 16 bits a replicate, two a word
    lambda ids, count, start: permutations(ids, count, 7, 4, start),  # argsort of uniforms
    lambda ids, count, start: enumerated_signs(ids % 12, count, start),
])
@pytest.mark.parametrize(("start", "count"), [(0, 1), (1, 40), (31, 2), (32, 64), (33, 95), (63, 37)])
def test_a_block_draws_the_replicates_of_one_draw(draw, start, count):
    whole = draw(IDS, 160, 0)
    assert torch.equal(draw(IDS, count, start), whole[:, start:start + count])


def _one_product(test: str, values: torch.Tensor, counted: torch.Tensor, ids: torch.Tensor, replicates: int,
                 seed: int) -> dict[str, torch.Tensor]:
    """The sums as the update computed them before the blocks: every draw of the batch at once, one product."""
    if test == "fisher":
        return {"replicate_sums": torch.einsum("br,bkm->rkm", signs(ids, replicates, seed), values)}
    if test == "bootstrap":
        weights = poisson_weights(ids, replicates, seed)
        return {"replicate_sums": torch.einsum("br,bkm->rkm", weights, values),
                "replicate_counts": torch.einsum("br,bk->rk", weights, counted),
                "replicate_products": torch.einsum("br,bki,bkj->rkij", weights, values, values)}
    rows, keys, models = values.shape
    order = permutations(ids, replicates, models, seed)  # [B, R, M]: slot m of replicate r holds model order[b, r, m]
    index = order.unsqueeze(1).expand(rows, keys, replicates, models)
    slots = torch.gather(values.unsqueeze(2).expand(rows, keys, replicates, models), 3, index)  # [B, K, R, M]
    return {"replicate_sums": slots.sum(0).transpose(0, 1)}


def _blocked(test: str, values, counted, ids, replicates: int, seed: int) -> dict[str, torch.Tensor]:
    if test == "fisher":
        return {"replicate_sums": fisher_sums(values, ids, replicates, seed)}
    if test == "bootstrap":
        return bootstrap_sums(values, counted, ids, replicates, seed)
    return {"replicate_sums": tukey_sums(values, ids, replicates, seed)}


@pytest.mark.parametrize("test", ["fisher", "bootstrap", "tukey"])
@pytest.mark.parametrize(("cells", "split"), [(replicate_sums.BLOCK_CELLS, False), (3000, True)])
def test_the_blocked_sums_are_those_of_one_product(monkeypatch, test, cells, split):
    monkeypatch.setattr(replicate_sums, "BLOCK_CELLS", cells)
    gen = torch.Generator().manual_seed(0)
    rows, replicates = 300, 1003  # blocks of 32 replicates and a last partial one
    values = torch.rand(rows, 2, 3, generator=gen, dtype=torch.float64)
    counted = (torch.rand(rows, 2, generator=gen) < 0.9).to(torch.float64)
    values = values * counted.unsqueeze(2)
    ids = torch.randperm(10**6, generator=gen)[:rows]
    width = 3 if test == "tukey" else 1
    assert split == (len({part.start for part, _ in blocks(rows, replicates, width, 18, 18)}) > 1)
    got, want = _blocked(test, values, counted, ids, replicates, 7), _one_product(test, values, counted, ids,
                                                                                  replicates, 7)
    assert got.keys() == want.keys()
    for name, value in want.items():
        if split or test == "tukey" or name == "replicate_products":  # the same additions in another order
            torch.testing.assert_close(got[name], value, rtol=1e-12, atol=1e-12, msg=name)
        else:  # the rows whole: the update's product of before, to the bit
            assert torch.equal(got[name], value), name


def test_the_exact_test_in_blocks_is_every_sign_pattern(monkeypatch):
    monkeypatch.setattr(replicate_sums, "BLOCK_CELLS", 320)  # the 10 rows whole, blocks of 32 patterns
    values = torch.rand(10, 1, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = fisher_sums(values, torch.arange(10), 2**10, 0, exact=True)
    assert torch.equal(got, torch.einsum("br,bkm->rkm", enumerated_signs(torch.arange(10), 2**10), values))


class LargestOutput(TorchDispatchMode):
    """The bytes of the largest tensor any operation allocates (views of an input not counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {value.untyped_storage().data_ptr() for value in tree_leaves((args, kwargs))
                  if isinstance(value, torch.Tensor)}
        for value in tree_leaves(out):
            if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() not in inputs:
                self.largest = max(self.largest, value.numel() * value.element_size())
        return out


@pytest.mark.parametrize("test", ["fisher", "bootstrap", "tukey"])
def test_an_update_allocates_no_tensor_beyond_a_block(test):
    """R = 20,000 replicates of a 1024-row batch: [B, R] float64 draws are 164 MB (655 MB for Tukey's [B, R, M]
    int64 orders); the largest tensor of a blocked update is a block of 8-byte cells or the [R, K, M(, M)]
    increment of the state."""
    gen = torch.Generator().manual_seed(2)
    target = (torch.rand(1024, 30, generator=gen) < 0.1).long()
    preds = [torch.randn(1024, 30, generator=gen) for _ in range(4)]
    compare = tre.ModelComparison(["ndcg@10"], models=["a", "b", "c", "d"], test=test, replicates=20_000)
    with LargestOutput() as seen:
        compare.update(preds, target, query_ids=torch.arange(1024))
    increment = 8 * 20_000 * 4 * (4 if test == "bootstrap" else 1)  # [R, K, M] sums, or [R, K, M, M] products
    assert seen.largest <= max(8 * replicate_sums.BLOCK_CELLS, increment), seen.largest
