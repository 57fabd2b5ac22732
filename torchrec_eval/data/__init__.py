"""Data for evaluation: interactions, real data sets, splits and the sampler of exact distributed evaluation.

One package for everything that comes before the metric, a module per job:

* :mod:`~torchrec_eval.data.interactions` -- :class:`Interactions` and seeded synthetic interactions with real
  structure (:func:`generate_interactions`), padded id lists, interaction matrices, item popularity;
* :mod:`~torchrec_eval.data.movielens` -- MovieLens rating files and RecBole's ``.inter`` files
  (:func:`load_movielens`);
* :mod:`~torchrec_eval.data.splits` -- hold-out splits, k-fold cross-validation and the inputs of a ranking
  evaluation (its engine: :mod:`~torchrec_eval.data.splitting`);
* :mod:`~torchrec_eval.data.sampler` -- :class:`UnpaddedDistributedSampler`, every query on exactly one rank;
* :mod:`~torchrec_eval.data.frames` -- pandas DataFrames of recommendations and relevance as metric inputs
  (import it from there: it needs pandas).

Example:
    >>> from torchrec_eval.data import generate_interactions, padded_item_lists, temporal_split
    >>> train, test = temporal_split(generate_interactions(num_users=20, num_items=50, seed=0), 0.2)
    >>> tuple(padded_item_lists(test, 20).shape)[0]
    20
"""

from torchrec_eval.data.interactions import (
    Interactions,
    RatedInteractions,
    generate_interactions,
    interaction_matrix,
    item_popularity,
    padded_item_lists,
)
from torchrec_eval.data.movielens import FORMATS, load_movielens
from torchrec_eval.data.sampler import UnpaddedDistributedSampler
from torchrec_eval.data.splits import (
    CrossValidationResult,
    RankingInputs,
    Split,
    as_interactions,
    cross_validate,
    interaction_kfold,
    leave_last_out,
    random_split,
    ranking_inputs,
    temporal_split,
    user_kfold,
)

__all__ = [
    "CrossValidationResult",
    "FORMATS",
    "Interactions",
    "RankingInputs",
    "RatedInteractions",
    "Split",
    "UnpaddedDistributedSampler",
    "as_interactions",
    "cross_validate",
    "generate_interactions",
    "interaction_kfold",
    "interaction_matrix",
    "item_popularity",
    "leave_last_out",
    "load_movielens",
    "padded_item_lists",
    "random_split",
    "ranking_inputs",
    "temporal_split",
    "user_kfold",
]
