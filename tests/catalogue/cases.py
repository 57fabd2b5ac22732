"""The catalogue tests' cases (shared with the distributed ones): suites over every family, and random
batches in the ids form with ties, ``-inf`` non-candidates, padding, graded gains, exclusions and groups."""

from __future__ import annotations

import torch

N = 23


TOPK = ["ndcg@5", "map@4", "recall@6", "precision@3", "mrr@7", "hitrate@2", "rprecision", "f1@4", "arhr@5",
        "dcg@3", "mar@5", "cg@4", "ctr@5"]


FULL = ["auc", "gauc", "mpr", "fcp", "pauc@4"]


BEYOND = ["coverage@5", "gini@4", "exposure_gini@5", "entropy@3", "inter_list_diversity@4", "intra_list_diversity@3",
          "novelty@5", "serendipity@3", "average_popularity@4", "long_tail_share@4", "long_tail_count@5",
          "rank_biased_entropy@4"]


def beyond_options(num_items: int) -> dict:
    generator = torch.Generator().manual_seed(3)
    popularity = torch.randint(0, 9, (num_items,), generator=generator)
    features = torch.rand(num_items, 4, generator=generator)
    return {
        "coverage": {"num_items": num_items}, "gini": {"num_items": num_items},
        "exposure_gini": {"num_items": num_items, "patience": 0.6},
        "entropy": {"num_items": num_items}, "inter_list_diversity": {"num_items": num_items},
        "intra_list_diversity": {"item_features": features}, "novelty": {"item_popularity": popularity},
        "serendipity": {"item_popularity": popularity}, "average_popularity": {"item_popularity": popularity},
        "long_tail_share": {"item_popularity": popularity}, "long_tail_count": {"item_popularity": popularity},
        "rank_biased_entropy": {"item_categories": features},
    }


def catalogue_batch(seed: int, rows: int = 7, tied: bool = True):
    generator = torch.Generator().manual_seed(seed)
    scores = (torch.randint(0, 4, (rows, N), generator=generator).float() if tied
              else torch.randn(rows, N, generator=generator))
    scores[torch.rand(rows, N, generator=generator) < 0.1] = float("-inf")
    target_ids = torch.stack([torch.randperm(N, generator=generator)[:6] for _ in range(rows)])
    target_ids[torch.rand(rows, 6, generator=generator) < 0.25] = -1
    target_ids[0] = -1  # a query without targets
    gains = torch.randint(0, 4, (rows, 6), generator=generator).float()
    exclude = torch.stack([torch.randperm(N, generator=generator)[:4] for _ in range(rows)])
    exclude[torch.rand(rows, 4, generator=generator) < 0.3] = -1
    groups = torch.randint(0, 3, (rows,), generator=generator)
    return scores, target_ids, gains, exclude, groups


def target_scores_of(scores: torch.Tensor, target_ids: torch.Tensor) -> torch.Tensor:
    return scores.gather(1, target_ids.clamp(min=0))
