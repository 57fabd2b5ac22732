"""The constrained correction's solver: the primal and dual active sets run side by side
(:mod:`torchrec_eval.sampled.constrained`), checked against scipy's NNLS and the posterior mean (numpy), and
for the work it does: a step per constraint that binds or per difference left free, whichever is fewer."""

from __future__ import annotations

import numpy as np
import pytest

from tests.reference import sampled as ref
from torchrec_eval.sampled import active_set
from torchrec_eval.sampled import estimators as E
from torchrec_eval.sampled.constrained import constrained_rows


def _objective(n, m, gamma, family, k):
    system, targets = E.correction_system([(family, k)], n, m, gamma)
    s, t = system.numpy(), targets.numpy()[:, 0]
    return lambda c: float(0.5 * c @ s @ c - c @ t)


@pytest.mark.parametrize("gamma", [0.001, 0.01, 0.3, 0.9])
@pytest.mark.parametrize(("family", "k"), [("ndcg", None), ("auc", None), ("mrr", None), ("recall", 20),
                                           ("ndcg", 10)])
def test_no_worse_than_scipys_nonnegative_least_squares_at_m_100(family, k, gamma):
    """Where most constraints bind (a cut-off) and where few do (no cut-off, the dual's case): the correction is
    non-increasing and >= 0, and its objective is scipy's optimum's or lower (scipy stops at its own
    tolerance)."""
    n, m = 2000, 100
    got = constrained_rows([(family, k)], n, m, gamma)[0].numpy()
    want = ref.constrained_nnls(ref.transition(n, m, True), ref.metric(family, np.arange(1, n + 1), k, n), gamma)
    objective = _objective(n, m, gamma, family, k)
    assert (np.diff(got) <= 0).all() and (got >= 0).all()
    assert objective(got) <= objective(want) + 1e-13 * abs(objective(want))
    np.testing.assert_allclose(got, want, atol=1e-7)


@pytest.mark.parametrize(("family", "k"), [("ndcg", 10), ("recall", 50), ("mrr", None)])
def test_gamma_one_is_the_posterior_mean_where_that_never_grows(family, k):
    """At gamma = 1 the objective is the posterior mean's, and where that is already non-increasing and >= 0 it
    is the constrained optimum itself. Its tail holds values near 1e-8 of its head; an active set from x = 0
    left them at 0 (6.7e-8 of the head off for NDCG@10 at m = 100), the dual finds that nothing binds."""
    n, m = 5000, 100
    a = ref.transition(n, m, True)
    mean = ref.posterior_mean(a, ref.metric(family, np.arange(1, n + 1), k, n))
    assert (np.diff(mean) <= 0).all() and (mean >= 0).all()
    got = constrained_rows([(family, k)], n, m, 1.0)[0].numpy()
    np.testing.assert_allclose(got, mean, rtol=1e-9, atol=1e-14 * mean.max())


@pytest.mark.parametrize(("family", "k", "most"), [("auc", None, 4), ("ndcg", None, 40), ("recall", 10, 8)])
def test_the_steps_follow_whichever_side_is_small(monkeypatch, family, k, most):
    """At m = 1000 AUC's correction leaves every difference free (the primal from 0 took 1,001 steps) and
    NDCG's leaves all but about 10 (991 steps); Recall@10's binds all but one. Each is found in a few steps of
    the primal's and the dual's active sets together."""
    steps = []
    original = active_set._settle

    def counted(*args):
        steps.append(1)
        return original(*args)

    monkeypatch.setattr(active_set, "_settle", counted)
    row = constrained_rows([(family, k)], 10**6, 1000, 0.01)[0]
    assert bool((row[:-1] >= row[1:]).all() and (row >= 0).all())
    assert len(steps) <= most
