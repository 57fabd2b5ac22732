"""Every public metric class of the package, built with what it needs, and a batch of its inputs."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torchmetrics import Metric

import torchrec_eval as tre
from tests.family_names import exported_families

NUM_ITEMS = 8
POPULARITY = torch.tensor([9.0, 7.0, 5.0, 4.0, 3.0, 2.0, 1.0, 1.0])
FEATURES = torch.randn(NUM_ITEMS, 4, generator=torch.Generator().manual_seed(0))

class ScoreWeightedRBP(tre.WeightedRBP):
    """WeightedRBP whose list weights are the items' sigmoid scores (LensKit's ``weight_field="score"``-like), so
    that the tables' plain ``update(preds, target)`` feeds it."""

    def update(self, preds=None, target=None, **inputs):  # noqa: ANN001, ANN003, ANN201 - update's own arguments
        super().update(preds, target, item_weights=preds.sigmoid(), **inputs)


# every public metric class -> a factory (the beyond-accuracy ones need their tables)
FACTORIES: dict[str, Callable[[], Metric]] = {
    # the top-k families: every class at k = 3 (below), but those that take no k or need an option
    "RPrecision": lambda: tre.RPrecision(), "NumRel": lambda: tre.NumRel(), "NumQ": lambda: tre.NumQ(),
    "IPrec": lambda: tre.IPrec(k=3, recall=0.5),
    "PrecisionRecallCurve": lambda: tre.PrecisionRecallCurve(3),
    "RecallAtFixedPrecision": lambda: tre.RecallAtFixedPrecision(0.2, 3),
    "AUC": lambda: tre.AUC(), "GAUC": lambda: tre.GAUC(), "MPR": lambda: tre.MPR(), "FCP": lambda: tre.FCP(),
    "PartialAUC": lambda: tre.PartialAUC(k=3),
    "CTR": lambda: tre.CTR(k=3),
    # every candidate logged (no ignore_index), Jurity's uniform propensity: a plain (preds, target) batch
    "OffPolicyCTR": lambda: tre.OffPolicyCTR(k=3),
    "WeightedRBP": lambda: ScoreWeightedRBP(k=3),
    "Coverage": lambda: tre.Coverage(k=3, num_items=NUM_ITEMS),
    "GiniIndex": lambda: tre.GiniIndex(k=3, num_items=NUM_ITEMS),
    "ExposureGini": lambda: tre.ExposureGini(k=3, num_items=NUM_ITEMS),
    "Entropy": lambda: tre.Entropy(k=3, num_items=NUM_ITEMS),
    "InterListDiversity": lambda: tre.InterListDiversity(k=3, num_items=NUM_ITEMS),
    "IntraListDiversity": lambda: tre.IntraListDiversity(k=3, item_features=FEATURES),
    "Novelty": lambda: tre.Novelty(k=3, item_popularity=POPULARITY),
    "Serendipity": lambda: tre.Serendipity(k=3, item_popularity=POPULARITY),
    "AveragePopularity": lambda: tre.AveragePopularity(k=3, item_popularity=POPULARITY),
    "CategoryEntropy": lambda: tre.CategoryEntropy(k=3, item_categories=torch.eye(NUM_ITEMS)[:, :3]),
    "RankBiasedEntropy": lambda: tre.RankBiasedEntropy(k=3, item_categories=torch.eye(NUM_ITEMS)[:, :3] + 0.5),
    "LongTailShare": lambda: tre.LongTailShare(k=3, item_popularity=POPULARITY),
    "LongTailCount": lambda: tre.LongTailCount(k=3, item_popularity=POPULARITY, tail_ratio=0.5),
    "PSP": lambda: tre.PSP(k=3, inverse_propensity=POPULARITY + 1),
    "PSnDCG": lambda: tre.PSnDCG(k=3, inverse_propensity=POPULARITY + 1),
    "AlphaNDCG": lambda: tre.AlphaNDCG(k=3, item_intents=FEATURES > 0),
    "ERRIA": lambda: tre.ERRIA(k=3, item_intents=FEATURES > 0),
    "AlphaDCG": lambda: tre.AlphaDCG(k=3, item_intents=FEATURES > 0),
    "NERRIA": lambda: tre.NERRIA(k=3, item_intents=FEATURES > 0, alpha=0.3),
    "PrecisionIA": lambda: tre.PrecisionIA(k=3, item_intents=FEATURES > 0),
    "AveragePrecisionIA": lambda: tre.AveragePrecisionIA(k=3, item_intents=FEATURES > 0),
    "NRBP": lambda: tre.NRBP(k=3, item_intents=FEATURES > 0, beta=0.8),
    "NNRBP": lambda: tre.NNRBP(k=3, item_intents=FEATURES > 0, alpha=0.3),
    "SubtopicRecall": lambda: tre.SubtopicRecall(k=3, item_intents=FEATURES > 0),
    "MAE": lambda: tre.MAE(), "MSE": lambda: tre.MSE(), "RMSE": lambda: tre.RMSE(),
    # the overlap of two models' lists: update(preds, reference_preds)
    "Intersection": lambda: tre.Intersection(k=3), "Jaccard": lambda: tre.Jaccard(k=3), "RBO": lambda: tre.RBO(k=3),
    # pointwise (one prediction per sample; suites and Windowed return dicts, like RankingMetrics)
    "NE": lambda: tre.NE(), "LogLoss": lambda: tre.LogLoss(), "Calibration": lambda: tre.Calibration(),
    "PointwiseCTR": lambda: tre.PointwiseCTR(), "PointwiseMSE": lambda: tre.PointwiseMSE(),
    "PointwiseRMSE": lambda: tre.PointwiseRMSE(), "PointwiseMAE": lambda: tre.PointwiseMAE(),
    "BinnedAUC": lambda: tre.BinnedAUC(bins=16), "BinnedAUPRC": lambda: tre.BinnedAUPRC(bins=16),
    "BinaryAUC": lambda: tre.BinaryAUC(), "BinaryAUPRC": lambda: tre.BinaryAUPRC(),
    # one relevant item per row against NUM_ITEMS - 1 sampled negatives, estimated for 100 items
    "SampledMetrics": lambda: tre.SampledMetrics(["ndcg@3"], num_items=100, num_negatives=NUM_ITEMS - 1,
                                                 estimator="naive"),
}
FACTORIES = {**{name: functools.partial(getattr(tre, name), k=3) for name, _ in exported_families().values()},
             **FACTORIES}
RATING = {"MAE", "MSE", "RMSE"}  # torchmetrics' own classes and plot
OVERLAP = {"Intersection", "Jaccard", "RBO"}  # two rankings per query, no target
POINTWISE = {"NE", "LogLoss", "Calibration", "PointwiseCTR", "PointwiseMSE", "PointwiseRMSE", "PointwiseMAE",
             "BinnedAUC", "BinnedAUPRC", "BinaryAUC", "BinaryAUPRC"}


def ranking_batch(seed: int, rows: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    preds = torch.randn(rows, NUM_ITEMS, generator=gen)
    target = (torch.rand(rows, NUM_ITEMS, generator=gen) < 0.3).long()
    target[:, 0] = 1  # every query has a relevant item and (almost surely) a non-relevant one
    return preds, target


def inputs(name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    if name in POINTWISE:  # probabilities [B] and 0/1 labels, both classes present
        gen = torch.Generator().manual_seed(seed)
        return torch.rand(10, generator=gen), torch.arange(10) % 2
    if name == "SampledMetrics":  # exactly one relevant item per row
        preds, _ = ranking_batch(seed)
        target = torch.zeros_like(preds, dtype=torch.long)
        target[:, seed % NUM_ITEMS] = 1
        return preds, target
    if name in RATING:
        gen = torch.Generator().manual_seed(seed)
        return torch.rand(10, generator=gen) * 5, torch.rand(10, generator=gen) * 5
    if name in OVERLAP:  # the model's scores and a reference model's
        gen = torch.Generator().manual_seed(seed)
        return torch.randn(6, NUM_ITEMS, generator=gen), torch.randn(6, NUM_ITEMS, generator=gen)
    return ranking_batch(seed)
