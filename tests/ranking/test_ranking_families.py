"""Every top-k family through the one harness (``tests/harness.py``): the class against the brute-force
reference of ``tests/reference/ranking.py``, the functional form, any split, ``forward``, checkpoints,
merges, copies, dtype moves, and 2 gloo processes equal to one."""

from __future__ import annotations

import math

import pytest
import torch

import torchrec_eval as tre
from tests.family_names import exported_families
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import ranking as ref
from torchrec_eval.ranking.families import REGISTRY

#: every family -> its class, as the root exports it
CLASSES = {family: cls for family, (cls, _) in exported_families().items()}
K = 4
# options beside the defaults: graded targets up to 3 need SDCG's top grade; RBP normalized, SetF with beta, NERR graded
OPTIONS = {"sdcg": {"max_grade": 3}, "rbp": {"p": 0.7, "normalize": True}, "setf": {"beta": 0.5}, "iprec": {"recall": 0.4},
           "nerr": {"equation": 11, "max_grade": 3, "T": 2.0}, "inst": {"T": 2.0, "max_grade": 3}, "insq": {"T": 0.5},
           "bpm": {"T": 1.5, "max_grade": 3}, "compat": {"p": 0.8}}


def _batches(seed: int) -> list[dict[str, torch.Tensor]]:
    """Three uneven batches of 12 items: graded targets, ties in the scores, a query without a relevant
    item (skipped by default)."""
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for rows in (5, 1, 7):
        preds = torch.randint(0, 6, (rows, 12), generator=gen).float() / 2  # ties at and across the cut
        target = torch.where(torch.rand(rows, 12, generator=gen) < 0.3, torch.randint(1, 4, (rows, 12), generator=gen), 0)
        target[0] = 0  # no relevant item
        batches.append({"preds": preds, "target": target})
    return batches


def build(family: str) -> MetricCase:
    """The case of one family (module level: spawned processes rebuild it by name)."""
    batches = _batches(seed=len(family))
    whole = {name: torch.cat([b[name] for b in batches]) for name in batches[0]}
    k = None if REGISTRY[family].optional_k else K  # R-Precision's cut at R, NumRel's none
    per_query = ref.evaluate_dense(family, whole["preds"].tolist(), whole["target"].tolist(), k,
                                   **OPTIONS.get(family, {}))
    expected = ref.summary(family, per_query)
    options = ({} if k is None else {"k": k}) | OPTIONS.get(family, {})
    key = family if k is None else f"{family}@{k}"

    def functional(**inputs):
        return getattr(tre.functional, family)(**inputs, **options)

    return MetricCase(name=family, make=lambda: getattr(tre, CLASSES[family])(**options), batches=batches,
                      expected={key: expected}, functional=functional, atol=1e-12)


def build_suite() -> MetricCase:
    """Every family in one ``RankingMetrics`` suite (one top-k), each against its own reference."""
    batches = _batches(seed=0)
    whole = {name: torch.cat([b[name] for b in batches]) for name in batches[0]}
    expected = {}
    for family in sorted(REGISTRY):
        k = None if REGISTRY[family].optional_k else K
        per_query = ref.evaluate_dense(family, whole["preds"].tolist(), whole["target"].tolist(), k,
                                       **OPTIONS.get(family, {}))
        expected[family if k is None else f"{family}@{k}"] = ref.summary(family, per_query)
    return MetricCase(name="suite", make=lambda: tre.RankingMetrics(list(expected), options=OPTIONS),
                      batches=batches, expected=expected, atol=1e-12)


def test_every_family_in_one_suite():
    check_metric(build_suite())


def test_every_family_has_a_case():
    assert set(CLASSES) == set(REGISTRY)


@pytest.mark.parametrize("family", sorted(REGISTRY))
def test_family(family):
    case = build(family)
    assert not math.isnan(next(iter(case.expected.values())))  # the oracle counted queries
    check_metric(case)


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, sorted(REGISTRY), str(tmp_path))


@pytest.mark.filterwarnings("ignore:The ``compute`` method")  # the broken metric resets its update count
def test_the_harness_fails_on_a_wrong_value_or_a_wrong_split():
    case = build("ndcg")
    wrong = MetricCase(case.name, case.make, case.batches, {key: value + 1e-6 for key, value in case.expected.items()},
                       case.functional)
    with pytest.raises(AssertionError, match="vs the oracle"):
        check_metric(wrong)

    class LastBatchOnly(tre.NDCG):  # forgets every batch but the last: right on one batch, wrong on two
        def update(self, *args, **kwargs):
            self.reset()
            super().update(*args, **kwargs)

    forgetful = MetricCase(case.name, lambda: LastBatchOnly(k=K), case.batches, case.expected)
    with pytest.raises(AssertionError):
        check_metric(forgetful)
