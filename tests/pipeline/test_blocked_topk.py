"""The blocked top-k of long CPU rows (``top_scores`` in pipeline/topk.py): the values of ``torch.topk``, and through
``top_indices`` the exact ranking of the brute-force reference, with ties at and inside the cut, ``-inf``,
rows whose length is no multiple of the block, half and double precision."""

from __future__ import annotations

import pytest
import torch

from tests.reference import ranking as ref
from torchrec_eval.pipeline import topk as blocked_topk
from torchrec_eval.pipeline.topk import top_indices, top_scores


def _scores(rows: int, items: int, kind: str, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    if kind == "distinct":
        scores = torch.randn(rows, items, generator=gen)
    elif kind == "ties":  # a few values: whole blocks tie with the cut
        scores = torch.randint(0, 5, (rows, items), generator=gen).float()
    elif kind == "constant":
        scores = torch.zeros(rows, items)
    else:  # -inf: most items are not candidates, one row has none
        scores = torch.randn(rows, items, generator=gen)
        scores[torch.rand(rows, items, generator=gen) < 0.97] = float("-inf")
        scores[0] = float("-inf")
    return scores.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("kind", ["distinct", "ties", "constant", "-inf"])
@pytest.mark.parametrize(("rows", "items", "take"), [(64, 1_000, 21), (40, 1_003, 11), (33, 16 * 64, 64)])
def test_the_blocked_values_are_the_topks(rows, items, take, kind, dtype):
    scores = _scores(rows, items, kind, seed=items + take, dtype=dtype)
    assert rows * items >= blocked_topk._MIN_ELEMENTS  # the blocked read, not torch.topk itself
    values, chosen = top_scores(scores, take)
    assert torch.equal(values, torch.topk(scores, take, dim=1).values)
    assert torch.equal(scores.gather(1, chosen), values)
    assert (chosen.sort(1).values.diff(1) > 0).all()  # distinct items


@pytest.mark.parametrize("ties", ["index", "reverse_index"])
@pytest.mark.parametrize("kind", ["distinct", "ties", "constant", "-inf"])
def test_the_ranking_is_the_references(kind, ties):
    scores = _scores(48, 997, kind, seed=3)
    k = 20
    got = top_indices(scores, k, ties).indices
    for row in range(scores.shape[0]):
        want = ref.rank(scores[row], ties=ties)[:k]
        finite = int((scores[row] > float("-inf")).sum())
        assert got[row, : min(k, finite)].tolist() == want[: min(k, finite)], row


def test_small_batches_short_rows_and_short_lists_take_torch_topk(monkeypatch):
    calls = []
    monkeypatch.setattr(blocked_topk.torch, "topk", lambda *args, **kwargs: calls.append(args[0].shape) or
                        torch.return_types.topk((torch.zeros(1), torch.zeros(1, dtype=torch.long))))
    top_scores(torch.zeros(4, 1_000), 21)  # 4,000 scores: a few dispatches more would cost more than they save
    top_scores(torch.zeros(1_000, 300), 21)  # rows shorter than 16 x take: no block to skip
    top_scores(torch.zeros(256, 5_000), 11)  # torch.topk's heap pass over a short list: as cheap as the maxima
    assert calls == [(4, 1_000), (1_000, 300), (256, 5_000)]
