"""``SampledMetrics`` through the one harness (``tests/harness.py``): its value against a brute force over the
rows (each row's sampled rank counted in Python, the metric of ``tests/reference/sampled.py``, the
corrections solved by ``numpy.linalg.lstsq``, EM in plain numpy), any split of the batches, ``forward``,
checkpoints, merges, pickles, dtype moves and 2 gloo processes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchrec_eval as tre
from tests.harness import MetricCase, check_metric, check_processes
from tests.reference import sampled as ref

N, M = 200, 9  # a catalogue of 200 items, 9 sampled negatives per query
METRICS = [("recall", 3), ("ndcg", 5), ("mrr", None), ("precision", 2), ("auc", None)]
KEYS = [family if k is None else f"{family}@{k}" for family, k in METRICS]


def _batches(seed: int) -> list[dict[str, torch.Tensor]]:
    """Uneven batches of rows of 1 + M scores, the relevant item in a random column, with ties."""
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for rows in (5, 1, 8):
        preds = torch.randint(0, 6, (rows, M + 1), generator=gen).float()
        target = torch.zeros(rows, M + 1, dtype=torch.bool)
        target[torch.arange(rows), torch.randint(0, M + 1, (rows,), generator=gen)] = True
        preds[target] += 1.5 * torch.rand(rows, generator=gen).round()  # some relevant items above, some tied
        batches.append({"preds": preds, "target": target})
    return batches


def _sampled_ranks(batches: list[dict[str, torch.Tensor]], ties: str) -> list[list[float]]:
    """Per row, the sampled ranks it may take, counted one score at a time."""
    return [ref.possible_ranks(scores, target.index(True), ties)
            for batch in batches for scores, target in zip(batch["preds"].tolist(), batch["target"].tolist(),
                                                           strict=True)]


def _expected(estimator: str, ties: str, batches: list[dict[str, torch.Tensor]]) -> dict[str, float]:
    ranks = _sampled_ranks(batches, ties)
    a = ref.transition(N, M, True)
    out = {}
    for (family, k), key in zip(METRICS, KEYS, strict=True):
        if estimator == "naive":
            c = ref.metric(family, np.arange(1, M + 2), k, M + 1)
        elif estimator == "bias_variance":
            c = ref.bias_variance_lstsq(a, ref.metric(family, np.arange(1, N + 1), k, N), 0.25)
        elif estimator == "constrained":
            c = ref.constrained_nnls(a, ref.metric(family, np.arange(1, N + 1), k, N), 0.25)
        else:  # em
            histogram = np.zeros(M + 1)
            for row in ranks:
                for s in row:
                    histogram[s - 1] += 1 / len(row)
            pi = ref.em(histogram, a, iterations=200)
            out[key] = float(pi @ ref.metric(family, np.arange(1, N + 1), k, N))
            continue
        out[key] = float(np.mean([np.mean([c[s - 1] for s in row]) for row in ranks]))
    return out


_NEXT_QUERY = [0]  # the flat form's query ids: increasing over every update of the process


class FlatSampledMetrics(tre.SampledMetrics):
    """``SampledMetrics`` fed the flat form: each update's rows (``mask`` False: an entry not listed) sent as
    1-D ``preds``, ``target`` and ``indexes``. ``indexes`` [B] is each row's query id; the flat form's ids must
    increase from call to call while the harness splits and reorders the rows, so they are sent renumbered
    after every query sent before, in their order."""

    def update(self, preds, target, indexes, mask=None):
        listed = torch.ones_like(target) if mask is None else mask
        ids = _NEXT_QUERY[0] + indexes.argsort().argsort()
        _NEXT_QUERY[0] += preds.shape[0]
        super().update(preds[listed], target[listed], indexes=ids.unsqueeze(1).expand_as(preds)[listed])


def _in_form(form: str, batches: list[dict[str, torch.Tensor]]) -> list[dict[str, torch.Tensor]]:
    """The dense batches in another input form: ``ids`` (each row's held-out columns, -1 padding after them,
    one more column of padding than the widest row needs) or ``flat`` (with each row's query id, for
    :class:`FlatSampledMetrics`)."""
    if form == "dense":
        return batches
    if form == "flat":
        starts = np.cumsum([0] + [len(batch["preds"]) for batch in batches])
        return [batch | {"indexes": int(start) + torch.arange(len(batch["preds"]))}
                for batch, start in zip(batches, starts, strict=False)]
    width = max(int(batch["target"].sum(1).max()) for batch in batches) + 1
    out = []
    for batch in batches:
        target = batch["target"] & batch.get("mask", torch.ones_like(batch["target"]))
        columns = torch.arange(target.shape[1]).expand_as(target)
        ranked = torch.where(target, columns, target.shape[1]).sort(1).values[:, :width]  # held-out columns first
        ids = torch.where(ranked < target.shape[1], ranked, -1)
        out.append({"preds": batch["preds"], "target_ids": ids} | ({"mask": batch["mask"]} if "mask" in batch else {}))
    return out


def build(name: str) -> MetricCase:
    """``[form:]estimator/ties`` on rows of one held-out item, ``[form:]several/estimator/ties`` on rows of up
    to 3; ``form``: ``dense`` (the default), ``ids`` or ``flat``, every form checked against the dense rows'
    brute force."""
    form, _, name = name.rpartition(":")
    form = form or "dense"
    if name.startswith("several/"):
        _, estimator, ties = name.split("/")
        batches, expected = _multi_batches(11), _multi_expected
    else:
        estimator, ties = name.split("/")
        batches, expected = _batches(7), _expected
    kind = FlatSampledMetrics if form == "flat" else tre.SampledMetrics
    return MetricCase(
        name=f"{form}:{name}",
        make=lambda: kind(KEYS, num_items=N, num_negatives=M, estimator=estimator, gamma=0.25, ties=ties),
        batches=_in_form(form, batches),
        expected=expected(estimator, ties, batches),
        atol=1e-6 if estimator in ("bias_variance", "constrained") else 1e-9,
    )


@pytest.mark.parametrize("name", ["naive/index", "naive/pessimistic", "naive/average", "bias_variance/average",
                                  "constrained/index", "em/index"])
def test_the_metric_against_a_brute_force(name):
    check_metric(build(name))


@pytest.mark.parametrize("name", ["ids:naive/index", "ids:naive/average", "ids:bias_variance/pessimistic",
                                  "ids:em/index", "flat:naive/index", "flat:naive/average", "flat:constrained/index",
                                  "ids:several/naive/index", "ids:several/bias_variance/average",
                                  "flat:several/naive/index", "flat:several/naive/average"])
def test_the_ids_and_flat_forms_against_the_dense_rows_brute_force(name):
    check_metric(build(name))


@pytest.mark.parametrize("validate_args", [True, False])
@pytest.mark.parametrize("ties", ["index", "average", "pessimistic"])
def test_target_ids_name_the_held_out_columns_not_the_row(validate_args, ties):
    """The issue's rows: the held-out items at columns 0 and 2 rank 2nd each (0.9 above the first, 0.9 and 0.8
    above the second), MRR 1/2; the ids [[0], [2]] were read as the whole row (MRR 1, or "[0] negatives")."""
    preds = torch.tensor([[0.5, 0.9, 0.1, 0.3, 0.2], [0.1, 0.9, 0.8, 0.3, 0.2]])
    metric = tre.SampledMetrics(["mrr", "ndcg@2"], num_items=50, num_negatives=4, estimator="naive", ties=ties,
                                validate_args=validate_args)
    metric.update(preds, target_ids=torch.tensor([[0, -1], [2, -1]]))
    assert {key: float(value) for key, value in metric.compute().items()} == pytest.approx(
        {"mrr": 0.5, "ndcg@2": 1 / np.log2(3)}, abs=1e-12)


def test_the_ranked_form_is_refused_by_name_and_changes_nothing():
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M)
    batch = _batches(4)[0]
    metric.update(**batch)
    before = metric.sampled_ranks.clone()
    ranked = batch["preds"].argsort(1, descending=True)
    with pytest.raises(ValueError, match=r"`ranked_ids`: sampled evaluation .* got `ranked_ids` of shape \(5, 10\)"):
        metric.update(ranked_ids=ranked, target_ids=batch["target"].int().argmax(1, keepdim=True))
    assert torch.equal(metric.sampled_ranks, before)


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    check_processes(build, ["naive/average", "bias_variance/index", "ids:naive/index", "flat:naive/average"],
                    str(tmp_path))


def test_groups_are_estimated_apart():
    batches = _batches(3)
    preds = torch.cat([b["preds"] for b in batches])
    target = torch.cat([b["target"] for b in batches])
    groups = torch.arange(preds.shape[0]) % 2
    grouped = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, num_groups=2)
    grouped.update(preds, target, groups=groups)
    values = grouped.compute()
    for g in (0, 1):
        alone = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M)
        alone.update(preds[groups == g], target[groups == g])
        for key, value in alone.compute().items():
            assert float(values[key][g]) == pytest.approx(float(value), abs=1e-12)


@pytest.mark.parametrize(("make", "update", "match"), [
    (lambda: tre.SampledMetrics(["ndcg@10"], num_items=10, num_negatives=10), None, "num_negatives"),
    (lambda: tre.SampledMetrics(["coverage@10"], num_items=100, num_negatives=9), None, "coverage"),
    (lambda: tre.SampledMetrics(["ndcg@10"], num_items=100, num_negatives=9, estimator="mean"), None, "estimator"),
    (lambda: tre.SampledMetrics(["ndcg@10"], num_items=100, num_negatives=9, gamma=2.0), None, "gamma"),
    (lambda: tre.SampledMetrics(["ndcg@10"], num_items=100, num_negatives=9),
     lambda m: m.update(torch.rand(2, 8), torch.eye(2, 8, dtype=torch.bool)), "preds"),
    (lambda: tre.SampledMetrics(["ndcg@10"], num_items=100, num_negatives=9),
     lambda m: m.update(torch.rand(2, 10), torch.ones(2, 10, dtype=torch.bool)), "exactly one relevant"),
])
def test_bad_input_is_named_and_changes_nothing(make, update, match):
    if update is None:
        with pytest.raises(ValueError, match=match):
            make()
        return
    metric = make()
    before = metric.sampled_ranks.clone()
    with pytest.raises(ValueError, match=match):
        update(metric)
    assert torch.equal(metric.sampled_ranks, before)


def test_the_confidence_interval_is_scipys_t_interval_of_the_per_query_estimates():
    """A linear estimate is a mean of per-query values (each query's c[s]): its interval is the Student-t
    interval of those values, as scipy computes it from ``per_query``'s output. (Under ``ties="average"``
    a query is a mixture of ranks and the histogram's second moment bounds the per-query one from above:
    the interval is wider, never narrower.)"""
    from scipy import stats

    from torchrec_eval.comparison.uncertainty import confidence_interval

    batches = _batches(11)
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, ties="index")
    values = {key: [] for key in KEYS}
    for batch in batches:
        metric.update(**batch)
        for key, per_query in metric.per_query(**batch).items():
            values[key] += per_query.tolist()
    intervals = confidence_interval(metric, level=0.9)
    for key in KEYS:
        sample = np.array(values[key])
        low, high = stats.t.interval(0.9, len(sample) - 1, loc=sample.mean(), scale=stats.sem(sample))
        mean, got_low, got_high = (float(v) for v in intervals[key])
        assert (mean, got_low, got_high) == pytest.approx((sample.mean(), low, high), abs=1e-9)


def test_em_has_no_per_query_value_and_no_interval():
    metric = tre.SampledMetrics(["ndcg@10"], num_items=N, num_negatives=M, estimator="em")
    batch = _batches(2)[0]
    metric.update(**batch)
    with pytest.raises(ValueError):
        metric.per_query(**batch)


def test_a_checkpoint_or_merge_of_another_m_or_n_is_refused_and_changes_nothing():
    batch = _batches(4)[0]
    source = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M)
    source.update(**batch)
    source.persistent(True)
    for other in (tre.SampledMetrics(KEYS, num_items=N + 1, num_negatives=M),
                  tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, estimator="naive")):
        other.persistent(True)
        before = other.sampled_ranks.clone()
        with pytest.raises(ValueError, match="configuration"):
            other.load_state_dict(source.state_dict())
        with pytest.raises(ValueError):
            other.merge_state(source)
        assert torch.equal(other.sampled_ranks, before)
    wider = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M + 1)
    with pytest.raises(ValueError):
        wider.load_state_dict(source.state_dict())


def test_nan_scores_are_refused():
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M)
    batch = _batches(4)[0]
    preds = batch["preds"].clone()
    preds[0, 1] = float("nan")
    with pytest.raises(ValueError, match="preds"):
        metric.update(preds, batch["target"])
    assert float(metric.sampled_ranks.sum()) == 0.0


def test_plot_shows_each_estimate():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, estimator="naive")
    for batch in _batches(8):
        metric.update(**batch)
    fig, ax = metric.plot()
    try:
        assert [float(bar.get_height()) for bar in ax.patches] == pytest.approx(
            [float(v) for v in metric.compute().values()], abs=1e-12)
        assert [tick.get_text() for tick in ax.get_xticklabels()] == KEYS
    finally:
        plt.close(fig)


@pytest.mark.parametrize("ties", ["average", "index"])
def test_bf16_scores_rank_as_their_float32_values_ties_included(ties):
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(64, M + 1, generator=gen).to(torch.bfloat16) * 0.01  # bf16 rounding makes many ties
    target = torch.zeros(64, M + 1, dtype=torch.bool)
    target[torch.arange(64), torch.randint(0, M + 1, (64,), generator=gen)] = True
    rows = [(logits[i].float().tolist(), target[i].tolist()) for i in range(64)]
    assert any(len(set(scores)) < M + 1 for scores, _ in rows)  # the case is one of ties
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M, estimator="naive", ties=ties)
    metric.update(logits, target)
    expected = _expected("naive", ties, [{"preds": logits.float(), "target": target}])
    for key, value in metric.compute().items():
        assert float(value) == pytest.approx(expected[key], abs=1e-12)


def test_a_failed_update_then_a_good_one_counts_only_the_good_one():
    batch = _batches(5)[0]
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M)
    with pytest.raises(ValueError, match="exactly one relevant"):
        metric.update(batch["preds"], torch.ones_like(batch["target"]))
    metric.update(**batch)
    alone = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M)
    alone.update(**batch)
    for key, value in alone.compute().items():
        assert float(metric.compute()[key]) == float(value)


def _multi_batches(seed: int) -> list[dict[str, torch.Tensor]]:
    """Rows of up to 3 held-out items and M negatives: padded by ``mask`` where a row holds fewer, ties."""
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for rows in (4, 1, 6):
        preds = torch.randint(0, 6, (rows, M + 3), generator=gen).float()
        target = torch.zeros(rows, M + 3, dtype=torch.bool)
        mask = torch.ones(rows, M + 3, dtype=torch.bool)
        for i in range(rows):
            columns = torch.randperm(M + 3, generator=gen)
            held_out = 1 + int(torch.randint(0, 3, (1,), generator=gen))
            target[i, columns[:held_out]] = True
            mask[i, columns[held_out:3]] = False  # the unused slots
        batches.append({"preds": preds, "target": target, "mask": mask})
    return batches


def _multi_expected(estimator: str, ties: str, batches: list[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Each held-out item ranked against its row's negatives alone (the other held-out items set aside), its
    value weighted 1 / R so that every row counts once."""
    a = ref.transition(N, M, True)
    out = {}
    for (family, k), key in zip(METRICS, KEYS, strict=True):
        c = ref.metric(family, np.arange(1, M + 2), k, M + 1) if estimator == "naive" \
            else ref.bias_variance_lstsq(a, ref.metric(family, np.arange(1, N + 1), k, N), 0.25)
        per_row = []
        for batch in batches:
            for scores, target, mask in zip(*(batch[name].tolist() for name in ("preds", "target", "mask")),
                                            strict=True):
                negatives = [v for v, t, keep in zip(scores, target, mask, strict=True) if keep and not t]
                items = [j for j, (t, keep) in enumerate(zip(target, mask, strict=True)) if t and keep]
                values = []
                for j in items:
                    # the row without the other held-out items, the item keeping its place among the negatives
                    row = [(v, i) for i, (v, t, keep) in enumerate(zip(scores, target, mask, strict=True))
                           if keep and (not t or i == j)]
                    ranks = ref.possible_ranks([v for v, _ in row], [i for _, i in row].index(j), ties)
                    values.append(np.mean([c[s - 1] for s in ranks]))
                assert len(negatives) == M
                per_row.append(np.mean(values))
        out[key] = float(np.mean(per_row))
    return out


@pytest.mark.parametrize("name", ["several/naive/index", "several/naive/average", "several/bias_variance/pessimistic"])
def test_rows_of_several_held_out_items_against_a_brute_force(name):
    check_metric(build(name))


@pytest.mark.slow
def test_three_processes_equal_one(tmp_path):
    check_processes(build, ["constrained/index", "em/average", "several/bias_variance/pessimistic"], str(tmp_path),
                    world=3)


@pytest.mark.parametrize(("change", "match"), [
    (lambda b: b["target"].fill_(False), "at least one relevant"),
    (lambda b: b["mask"][:, -1].fill_(False), "negatives"),
])
def test_rows_of_several_held_out_items_need_one_and_m_negatives(change, match):
    batch = {name: value.clone() for name, value in _multi_batches(12)[0].items()}
    change(batch)
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=M)
    with pytest.raises(ValueError, match=match):
        metric.update(**batch)
    assert float(metric.sampled_ranks.sum()) == 0.0


def _em_values(histogram: np.ndarray, n: int, m: int) -> dict[str, float]:
    """numpy's EM on a histogram of sampled ranks, then each metric over the fitted ranks."""
    pi = ref.em(histogram, ref.transition(n, m, True), iterations=200)
    return {key: float(pi @ ref.metric(family, np.arange(1, n + 1), k, n)) for (family, k), key in zip(METRICS, KEYS,
                                                                                                       strict=True)}


def _rows_at(ranks: list[tuple[int, int]], m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of m + 1 scores, the held-out item in column 0 at 1.0, with (negatives above, negatives tied)."""
    preds = torch.zeros(len(ranks), m + 1)
    preds[:, 0] = 1.0
    for i, (above, tied) in enumerate(ranks):
        preds[i, 1:1 + above] = 2.0
        preds[i, 1 + above:1 + above + tied] = 1.0
    target = torch.zeros(len(ranks), m + 1, dtype=torch.bool)
    target[:, 0] = True
    return preds, target


def test_em_of_weighted_rows_is_numpys_em_of_their_weighted_histogram():
    """Weights 0.7, 0.1 and 0.2 at sampled ranks 1, 2 and 3 (m = 4): the edges' cumulative sum left -2.8e-17 at
    ranks 4 and 5, which EM refused. The histogram is now each rank's own sum (0 where no query is), and EM's
    values are numpy's EM of the weighted counts, summed here one row at a time (and for random float64
    weights)."""
    m = 4
    preds, target = _rows_at([(0, 0), (1, 0), (2, 0)], m)
    gen = torch.Generator().manual_seed(5)
    more = torch.randn(40, m + 1, generator=gen)
    preds, target = torch.cat([preds, more]), torch.cat([target, torch.eye(1, m + 1, dtype=torch.bool).expand(40, -1)])
    weights = torch.cat([torch.tensor([0.7, 0.1, 0.2], dtype=torch.float64),
                         torch.rand(40, generator=gen, dtype=torch.float64)])
    for rows in (slice(0, 3), slice(0, 43)):
        histogram = np.zeros(m + 1)
        for scores, weight in zip(preds[rows].tolist(), weights[rows].tolist(), strict=True):
            histogram[sum(1 for v in scores[1:] if v > scores[0])] += weight
        metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=m, estimator="em", weighted=True)
        metric.update(preds[rows], target[rows], sample_weight=weights[rows])
        state = metric.sampled_ranks[0].numpy()
        assert (state[histogram == 0] == 0).all() and (state >= 0).all()
        np.testing.assert_allclose(state, histogram, rtol=1e-15, atol=0)
        if rows.stop == 3:  # one query per rank: each rank's count is its weight, exactly
            assert state.tolist() == [0.7, 0.1, 0.2, 0.0, 0.0]
        assert {key: float(value) for key, value in metric.compute().items()} == pytest.approx(
            _em_values(histogram, N, m), abs=1e-9)


@pytest.mark.parametrize("first", range(5))
@pytest.mark.parametrize("second", range(5))
def test_em_under_average_ties_is_numpys_em_of_the_exact_spread(first, second):
    """25 tie patterns (m = 10): one query with ``first`` negatives tied with its held-out item, one with
    ``second`` tied and 2 above; each spreads over its ranks in equal shares (1/3 each for two tied). The
    cumulative sum of +1/3 and -1/3 left -5.6e-17 at the ranks past the spans (5 of these 25 refused by EM).
    The histogram is now the exact spread to 1 ulp, exactly 0 where no span reaches."""
    from fractions import Fraction

    m = 10
    preds, target = _rows_at([(0, first), (2, second)], m)
    exact = [Fraction(0)] * (m + 1)
    for above, tied in ((0, first), (2, second)):
        for s in range(above, above + tied + 1):
            exact[s] += Fraction(1, tied + 1)
    histogram = np.array([float(value) for value in exact])
    metric = tre.SampledMetrics(KEYS, num_items=N, num_negatives=m, estimator="em", ties="average")
    metric.update(preds, target)
    state = metric.sampled_ranks[0].numpy()
    assert (state[histogram == 0] == 0).all()
    np.testing.assert_allclose(state, histogram, rtol=4e-16, atol=0)
    assert {key: float(value) for key, value in metric.compute().items()} == pytest.approx(
        _em_values(histogram, N, m), abs=1e-9)
