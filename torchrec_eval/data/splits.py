r"""Hold-out splits, k-fold cross-validation and the inputs of a ranking evaluation, from interactions.

Recommender evaluation starts before the metric: which interactions a model may train on, and which
it must predict, decide what the numbers mean. This module splits an
:class:`~torchrec_eval.data.interactions.Interactions` set (user, item, timestamp tensors; see
:func:`as_interactions` for data without timestamps):

* :func:`leave_last_out` -- each user's latest ``n`` interactions are the test set (sequential
  recommendation);
* :func:`temporal_split` -- per user, the latest fraction of their interactions; or one global time
  cut, every training interaction strictly earlier than every test interaction;
* :func:`random_split` -- a random fraction of all interactions, or of each user's;
* :func:`user_kfold` -- cross-validation by user: the users are dealt into ``n_folds`` folds and, in
  fold ``f``, the users of fold ``f`` are held out: the latest (or a random) ``test_fraction`` of their
  interactions are the test set, the rest of their history is given to the model for training;
* :func:`interaction_kfold` -- cross-validation by interaction: each user's interactions are dealt
  round-robin, in random order, into the folds, and fold ``f`` is the test set of split ``f``.

Every split is a partition of the input: each interaction is in exactly one of ``train`` and
``test``, and the :class:`Split` it returns also gives the index of every output row in the input,
so that any per-interaction side tensor (ratings, weights, contexts) follows with
:meth:`Split.take`. Randomness comes from one seeded CPU :class:`torch.Generator`: a seed gives the
same split on every run, machine and device. Nothing loops over users in Python.

:func:`ranking_inputs` turns a split into the tensors the metrics take -- the held-out users, their
test items as ``target_ids`` and their training items as ``exclude_ids`` -- and
:func:`cross_validate` runs a user's ``fit_and_score`` function on every fold, evaluates a
:class:`~torchrec_eval.RankingMetrics` suite on the held-out users and reports the per-fold values
with their mean, standard deviation and Student-t confidence interval (:func:`t_quantile`, SciPy's
quantile).

The code lives in :mod:`torchrec_eval.data.splitting` (one module per job) and
:mod:`torchrec_eval.comparison.statistics` (the quantile and the interval); this module is their public face.
"""

from torchrec_eval.comparison.statistics import mean_confidence_interval, t_quantile
from torchrec_eval.data.splitting.cross_validation import CrossValidationResult, cross_validate
from torchrec_eval.data.splitting.holdout import leave_last_out, random_split, temporal_split
from torchrec_eval.data.splitting.interactions import as_interactions
from torchrec_eval.data.splitting.kfold import interaction_kfold, user_kfold
from torchrec_eval.data.splitting.ranking_inputs import RankingInputs, ranking_inputs
from torchrec_eval.data.splitting.split import Split

__all__ = [
    "CrossValidationResult",
    "RankingInputs",
    "Split",
    "as_interactions",
    "cross_validate",
    "interaction_kfold",
    "leave_last_out",
    "mean_confidence_interval",
    "random_split",
    "ranking_inputs",
    "t_quantile",
    "temporal_split",
    "user_kfold",
]
