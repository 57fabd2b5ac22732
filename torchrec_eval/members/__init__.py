"""What every member of a :class:`~torchrec_eval.metrics.base.MemberMetric` shares, below the families that
implement it (``ranking/``, ``pairwise/``, ``beyond/``) and the stateful classes above them:

* :mod:`~torchrec_eval.members.interface` -- the :class:`~torchrec_eval.members.interface.Member` protocol;
* :mod:`~torchrec_eval.members.steps` -- check the common arguments, rank a batch once for every
  member, add per-query rows into a state;
* :mod:`~torchrec_eval.members.steps` -- ``empty_target_action`` for queries without a relevant item.
"""
