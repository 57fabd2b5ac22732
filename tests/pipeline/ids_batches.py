"""Batches of the ids form with ties, -inf scores, padding and graded gains, and the same batch as a dense
target: shared by the tests of the ids form's target ranks."""

from __future__ import annotations

import torch


def ids_batch(rows: int, items: int, targets: int, scores: str, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    if scores == "distinct":
        preds = torch.randn(rows, items, generator=gen)
    elif scores == "signed":  # ties among negative scores, and zeros of both signs (equal scores)
        preds = torch.randint(-2, 3, (rows, items), generator=gen) * 0.5
        preds[(preds == 0) & (torch.rand(rows, items, generator=gen) < 0.5)] = -0.0
    else:  # few values: ties inside the list and at the cut
        preds = torch.randint(0, 3, (rows, items), generator=gen).float()
    if scores == "-inf":
        preds[torch.rand(rows, items, generator=gen) < 0.7] = float("-inf")
        preds[0] = float("-inf")  # a row without any candidate
    target_ids = torch.stack([torch.randperm(items, generator=gen)[:targets] for _ in range(rows)])
    target_ids[:, -2:] = -1  # padding
    gains = torch.randint(0, 4, target_ids.shape, generator=gen).float()
    return {"preds": preds, "target_ids": target_ids, "target_gains": gains}


def dense_form(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    rows, items = batch["preds"].shape
    ids_, gains = batch["target_ids"], batch["target_gains"]
    target = torch.zeros(rows, items + 1).scatter_(1, torch.where(ids_ < 0, items, ids_), gains)  # padding: column N
    return {"preds": batch["preds"], "target": target[:, :items]}
