"""The engine of :mod:`torchrec_eval.data.splits` (import the public names from there), one module per job:

* :mod:`~torchrec_eval.data.splitting.arguments` -- the argument checks and the seeded generator;
* :mod:`~torchrec_eval.data.splitting.interactions` -- :func:`as_interactions`, interactions from tensors;
* :mod:`~torchrec_eval.data.splitting.split` -- :class:`Split` and the per-user masks it is built from;
* :mod:`~torchrec_eval.data.splitting.holdout` -- leave-last-out, temporal and random hold-out splits;
* :mod:`~torchrec_eval.data.splitting.kfold` -- k-fold splits by user and by interaction;
* :mod:`~torchrec_eval.data.splitting.ranking_inputs` -- a split as ``users``, ``target_ids``, ``exclude_ids``;
* :mod:`~torchrec_eval.data.splitting.cross_validation` -- :func:`cross_validate` and its result.
"""
