"""Comparisons of models and the uncertainty of a metric, a module per job:

* :mod:`~torchrec_eval.comparison.models` -- :class:`~torchrec_eval.ModelComparison`, M models compared pair by
  pair with a significance test (Student, Fisher's randomization, the bootstrap, Tukey's HSD);
* :mod:`~torchrec_eval.comparison.uncertainty` -- :func:`~torchrec_eval.comparison.uncertainty.confidence_interval`
  of a metric's mean and :class:`~torchrec_eval.comparison.uncertainty.PairedComparison` of two models;
* :mod:`~torchrec_eval.comparison.report` -- the comparison's table (text, Markdown, LaTeX, DataFrame);
* :mod:`~torchrec_eval.comparison.statistics` -- the statistics they share with sampled evaluation's bootstrap
  and the cross-validation: Student's t, intervals, multiple testing, replicates and their sums.

This package's ``__init__`` imports nothing: the statistics sit in the lowest layer of the house (the sampled
family reads them), the classes above the metrics.
"""
