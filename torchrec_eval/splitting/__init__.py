"""The engine of :mod:`torchrec_eval.splits` (import the public names from there), one module per job:

* :mod:`~torchrec_eval.splitting.arguments` -- the argument checks and the seeded generator;
* :mod:`~torchrec_eval.splitting.interactions` -- :func:`as_interactions`, interactions from tensors;
* :mod:`~torchrec_eval.splitting.split` -- :class:`Split` and the per-user masks it is built from;
* :mod:`~torchrec_eval.splitting.holdout` -- leave-last-out, temporal and random hold-out splits;
* :mod:`~torchrec_eval.splitting.kfold` -- k-fold splits by user and by interaction;
* :mod:`~torchrec_eval.splitting.ranking_inputs` -- a split as ``users``, ``target_ids``, ``exclude_ids``;
* :mod:`~torchrec_eval.splitting.cross_validation` -- :func:`cross_validate` and its result.
"""
