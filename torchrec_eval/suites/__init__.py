"""Suites: many metrics from one ranking, and the ready-made ones, a module per job:

* :mod:`~torchrec_eval.suites.ranking` -- :class:`~torchrec_eval.RankingMetrics`, a suite of top-k, full-ranking and
  beyond-accuracy metrics that share one top-k per batch;
* :mod:`~torchrec_eval.suites.config` -- suites from YAML files or dicts, and the shipped ones (the ``*.yaml``
  files of this folder: ``recsys``, ``trec``, ``beyond``, ``ctr``, ``uni100``).

This package's ``__init__`` imports nothing: the metric classes read :mod:`~torchrec_eval.suites.config`.
"""
