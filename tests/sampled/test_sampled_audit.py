"""The exact audit of ``SampledMetrics`` against a brute force: each audited query's true rank counted one
catalogue item at a time in Python (ties by item id, pessimistic or averaged over the tie), its metric from
``tests/reference/sampled.py``, and the estimate on the audited queries' own sampled ranks; any chunking,
merges, groups, and bad chunks that change nothing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from tests.reference import sampled as ref

N, M = 60, 7
METRICS = [("recall", 5), ("ndcg", 10), ("mrr", None), ("ndcg", None), ("auc", None), ("map", 20)]
KEYS = [family if k is None else f"{family}@{k}" for family, k in METRICS]


def _users(seed: int, rows: int = 9) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Full catalogue scores with many ties, a held-out item per user and its row of m sampled negatives."""
    gen = torch.Generator().manual_seed(seed)
    full = torch.randint(0, 12, (rows, N), generator=gen).float()
    positives = torch.randint(0, N, (rows,), generator=gen)
    negatives = torch.stack([torch.randperm(N - 1, generator=gen)[:M] for _ in range(rows)])
    negatives += (negatives >= positives.unsqueeze(1)).long()  # any item but the held-out one
    columns = torch.cat([positives.unsqueeze(1), negatives], dim=1)
    preds = full.gather(1, columns)
    target = torch.zeros(rows, M + 1, dtype=torch.bool)
    target[:, 0] = True
    return full, positives, preds, target


def _true_ranks(full: torch.Tensor, positives: torch.Tensor, ties: str) -> list[list[int]]:
    """The ranks each held-out item may take in the whole catalogue (ties by item id), one item at a time."""
    return [ref.possible_ranks(scores, item, ties) for scores, item in zip(full.tolist(), positives.tolist(),
                                                                            strict=True)]


def _sampled_ranks(preds: torch.Tensor, ties: str) -> list[list[int]]:
    """The sampled ranks of each row's held-out item (column 0; "index" ranks it first among its ties)."""
    return [ref.possible_ranks(scores, 0, ties) for scores in preds.tolist()]


@pytest.mark.parametrize("ties", ["index", "pessimistic", "average"])
@pytest.mark.parametrize("estimator", ["naive", "bias_variance"])
def test_the_audit_is_the_brute_force_exact_value_and_the_estimate_on_the_same_queries(ties, estimator):
    full, positives, preds, target = _users(1)
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, estimator=estimator, ties=ties, audit=True)
    metric.update(preds, target)  # every batch is estimated ...
    full2, positives2, preds2, target2 = _users(2, rows=5)
    metric.update(preds2, target2)
    with metric.audit(preds2, target2, positive_ids=positives2) as catalogue:  # ... the second one audited
        for offset in (40, 0, 17):  # chunks of any sizes, in any order
            catalogue.add(full2[:, offset:{40: N, 0: 17, 17: 40}[offset]], offset)
    got = metric.compute()
    true_ranks, sampled = _true_ranks(full2, positives2, ties), _sampled_ranks(preds2, ties)
    a = ref.transition(N, M, True)
    for (family, k), key in zip(METRICS, KEYS, strict=True):
        exact = np.mean([np.mean(ref.metric(family, np.array(r), k, N)) for r in true_ranks])
        c = ref.metric(family, np.arange(1, M + 2), k, M + 1) if estimator == "naive" \
            else ref.bias_variance_lstsq(a, ref.metric(family, np.arange(1, N + 1), k, N), 0.01)
        estimate = np.mean([np.mean([c[s - 1] for s in row]) for row in sampled])
        assert float(got[f"audit/{key}/exact"]) == pytest.approx(exact, abs=1e-12)
        assert float(got[f"audit/{key}/estimate"]) == pytest.approx(estimate, abs=1e-6)
        assert float(got[f"audit/{key}/error"]) == pytest.approx(estimate - exact, abs=1e-6)
    assert float(got["audit/queries"]) == 5.0
    plain = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, estimator=estimator, ties=ties)
    plain.update(preds, target)
    plain.update(preds2, target2)
    assert {key: float(v) for key, v in plain.compute().items()} == \
        pytest.approx({key: float(got[key]) for key in KEYS}, abs=1e-12)  # the audit leaves the estimate alone


def test_em_audits_its_fit_of_the_audited_histogram():
    full, positives, preds, target = _users(3, rows=12)
    metric = tre.SampledMetrics(["ndcg@10", "mrr"], num_items=N, num_negatives=M, estimator="em", audit=True)
    metric.update(preds, target)
    with metric.audit(preds[:6], target[:6], positive_ids=positives[:6]) as catalogue:
        catalogue.add(full[:6], 0)
    histogram = np.zeros(M + 1)
    for row in _sampled_ranks(preds[:6], "index"):
        histogram[row[0] - 1] += 1
    pi = ref.em(histogram, ref.transition(N, M, True), iterations=200)
    got = metric.compute()
    for family, k, key in (("ndcg", 10, "ndcg@10"), ("mrr", None, "mrr")):
        assert float(got[f"audit/{key}/estimate"]) == pytest.approx(float(pi @ ref.metric(family, np.arange(1, N + 1),
                                                                                          k, N)), abs=1e-8)


def test_merges_and_groups_add_the_audit_exactly():
    full, positives, preds, target = _users(4, rows=10)
    groups = torch.arange(10) % 2
    whole = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True, num_groups=2)
    halves = [tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True, num_groups=2) for _ in range(2)]
    for metric, rows in ((whole, slice(0, 10)), (halves[0], slice(0, 4)), (halves[1], slice(4, 10))):
        metric.update(preds[rows], target[rows], groups=groups[rows])
        with metric.audit(preds[rows], target[rows], positive_ids=positives[rows], groups=groups[rows]) as catalogue:
            catalogue.add(full[rows], 0)
    halves[0].merge_state(halves[1])
    merged, one = halves[0].compute(), whole.compute()
    for key, value in one.items():
        torch.testing.assert_close(merged[key], value, rtol=0, atol=1e-12)
    for g in (0, 1):
        alone = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True)
        alone.update(preds[groups == g], target[groups == g])
        with alone.audit(preds[groups == g], target[groups == g], positive_ids=positives[groups == g]) as catalogue:
            catalogue.add(full[groups == g], 0)
        for key, value in alone.compute().items():
            assert float(one[key][g]) == pytest.approx(float(value), abs=1e-12)


@pytest.mark.parametrize(("chunks", "match"), [
    (lambda full: [(full[:, :30], 0)], "cover"),  # half the catalogue
    (lambda full: [(full[:, :40], 0), (full[:, 20:], 20)], "cover"),  # overlapping chunks
    (lambda full: [(full[:, :30], 0), (full[:, 30:].clone().fill_(float("nan")), 30)], "NaN"),
    (lambda full: [(full[:, :30], 35)], "offset"),
    (lambda full: [(full[:3], 0)], "scores"),
])
def test_bad_chunks_are_named_and_change_nothing(chunks, match):
    full, positives, preds, target = _users(5)
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True)
    metric.update(preds, target)
    before = {name: getattr(metric, name).clone() for name in ("sampled_ranks", "audit_sampled_ranks", "audit_exact")}
    with pytest.raises(ValueError, match=match):  # noqa: PT012 - the error may come from add or from close
        with metric.audit(preds, target, positive_ids=positives) as catalogue:
            for scores, offset in chunks(full):
                catalogue.add(scores, offset)
    for name, value in before.items():
        assert torch.equal(getattr(metric, name), value)


@pytest.mark.parametrize(("make", "call", "match"), [
    (lambda: tre.SampledMetrics(KEYS, num_items=N, num_negatives=M),
     lambda m, preds, target, ids: m.audit(preds, target, positive_ids=ids), "audit=True"),
    (lambda: tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True),
     lambda m, preds, target, ids: m.audit(preds, target, positive_ids=ids + N), "positive_ids"),
    (lambda: tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True),
     lambda m, preds, target, ids: m.audit(preds, target, positive_ids=ids.float()), "positive_ids"),
    (lambda: tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True),
     lambda m, preds, target, ids: m.audit(preds, target | True, positive_ids=ids), "exactly one relevant"),
    (lambda: tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit="yes"), None, "audit"),
])
def test_bad_audit_arguments_are_named(make, call, match):
    full, positives, preds, target = _users(6)
    if call is None:
        with pytest.raises(ValueError, match=match):
            make()
        return
    with pytest.raises(ValueError, match=match):
        call(make(), preds, target, positives)


def test_a_checkpoint_without_the_audit_does_not_load_into_an_audited_metric():
    source = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M)
    audited = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True)
    for metric in (source, audited):
        metric.persistent(True)
    with pytest.raises(ValueError, match="configuration"):
        audited.load_state_dict(source.state_dict())


def test_a_closed_audit_takes_no_more_chunks():
    full, positives, preds, target = _users(7)
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, audit=True)
    with metric.audit(preds, target, positive_ids=positives) as catalogue:
        catalogue.add(full, 0)
    before = metric.audit_exact.clone()
    with pytest.raises(ValueError, match="closed"):
        catalogue.add(full, 0)
    catalogue.close()  # closing again adds nothing
    assert torch.equal(metric.audit_exact, before) and float(metric.compute()["audit/queries"]) == 9.0


@pytest.mark.parametrize("ties", ["index", "average"])
def test_rows_of_several_held_out_items_are_audited_one_instance_each(ties):
    """A row of R held-out items (1 to 3 here; ``mask`` for the unused slots) is R instances, each ranked among
    the catalogue without the row's other held-out items (as among the negatives without them) and weighing
    1 / R; ``positive_ids`` [B, 3] gives their ids in column order, -1 in the unused slots."""
    gen = torch.Generator().manual_seed(4)
    rows, slots = 6, 3
    full = torch.randint(0, 12, (rows, N), generator=gen).float()
    counts = [1, 3, 2, 3, 1, 2]
    ids, columns = [], []
    for count in counts:
        order = torch.randperm(N, generator=gen)
        held, negatives = order[:count].tolist(), order[count:count + M].tolist()
        ids.append(held + [-1] * (slots - count))
        columns.append(held + [negatives[0]] * (slots - count) + negatives)  # unused slots: masked out
    columns_t, ids_t = torch.tensor(columns), torch.tensor(ids)
    preds = full.gather(1, columns_t)
    mask = torch.ones(rows, slots + M, dtype=torch.bool)
    target = torch.zeros(rows, slots + M, dtype=torch.bool)
    for row, count in enumerate(counts):
        target[row, :count] = True
        mask[row, count:slots] = False
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, estimator="naive", ties=ties, audit=True)
    with metric.audit(preds, target, positive_ids=ids_t, mask=mask) as catalogue:
        catalogue.add(full[:, 25:], 25)
        catalogue.add(full[:, :25], 0)
    got = metric.compute()
    for (family, k), key in zip(METRICS, KEYS, strict=True):
        exact, estimate = [], []
        for row, count in enumerate(counts):
            held = ids[row][:count]
            values, sampled = [], []
            for position, item in enumerate(held):
                kept = [i for i in range(N) if i == item or i not in held]  # the catalogue less the other held-out
                ranks = ref.possible_ranks([full[row, i].item() for i in kept], kept.index(item), ties)
                values.append(np.mean(ref.metric(family, np.array(ranks), k, N)))
                row_scores = [preds[row, position].item()] + preds[row, slots:].tolist()
                sampled.append(np.mean(ref.metric(family, np.array(ref.possible_ranks(row_scores, 0, ties)), k,
                                                  M + 1)))
            exact.append(np.mean(values))
            estimate.append(np.mean(sampled))
        assert float(got[f"audit/{key}/exact"]) == pytest.approx(np.mean(exact), abs=1e-12), key
        assert float(got[f"audit/{key}/estimate"]) == pytest.approx(np.mean(estimate), abs=1e-12), key
    assert float(got["audit/queries"]) == pytest.approx(rows, abs=1e-12)  # shares of 1/3 summed


def test_ids_that_do_not_match_the_held_out_slots_are_refused_and_change_nothing():
    preds = torch.tensor([[0.9, 0.8, 0.1, 0.2], [0.7, 0.0, 0.3, 0.4]])
    target = torch.tensor([[True, True, False, False], [True, False, False, False]])
    mask = torch.tensor([[True, True, True, True], [True, False, True, True]])
    metric = tre.SampledMetrics(["mrr"], num_items=10, num_negatives=2, estimator="naive", audit=True)
    for bad in (torch.tensor([1, 2]), torch.tensor([[1, 2], [3, 4]]), torch.tensor([[1, -1], [3, -1]]),
                torch.tensor([[1, 2], [10, -1]])):
        with pytest.raises(ValueError, match="`positive_ids` must"):
            metric.audit(preds, target, positive_ids=bad, mask=mask)
    assert float(metric.audit_sampled_ranks.sum()) == 0 and float(metric.audit_exact.sum()) == 0
    with metric.audit(preds, target, positive_ids=torch.tensor([[1, 2], [3, -1]]), mask=mask) as catalogue:
        catalogue.add(torch.rand(2, 10), 0)
    assert float(metric.audit_sampled_ranks.sum()) == 2
