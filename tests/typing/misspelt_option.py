"""Must fail the type checkers, line by line: a misspelt tie order, an input keyword that does not exist,
a misspelt class argument, a misspelt reduction of a family without options of its own."""

from __future__ import annotations

import torch

import torchrec_eval as tre
from torchrec_eval.functional import mrr, ndcg

preds = torch.tensor([[0.9, 0.1, 0.5]])
ndcg(preds, torch.tensor([[0, 1, 1]]), k=2, ties="idnex")
ndcg(preds, target_id=torch.tensor([[1]]))
tre.NDCG(k=5, tie="index")
mrr(preds, torch.tensor([[0, 1, 1]]), k=2, reduction="mena")
