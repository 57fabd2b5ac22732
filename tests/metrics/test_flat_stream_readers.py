"""Every reader of a metric's state sees the flat form's held-back query (issue 24, part 3).

The flat form holds each call's last query back until the next call shows it complete. Before, only
``compute()`` counted it: ``confidence_interval``, ``merge_state`` and a persistent ``state_dict`` left it
out (the interval's mean was not ``compute()``'s). Each test splits a stream inside a query and compares
a reader with ``torchmetrics.retrieval`` (or a brute-force interval) fed the whole stream at once.
"""

from __future__ import annotations

import io
import math

import pytest
import torch
import torchmetrics
import torchmetrics.functional.retrieval as tmf
from torch import nn
from torchmetrics import MetricCollection
from torchmetrics.wrappers import Running

import torchrec_eval as tre
from torchrec_eval.comparison.uncertainty import PairedComparison, confidence_interval
from torchrec_eval.pointwise import NE, Windowed

K = 3
KINDS = ["ndcg", "suite", "paired"]


def stream(num_queries: int = 8, seed: int = 0) -> dict[str, torch.Tensor]:
    """A flat stream sorted by query; every query has a relevant and a non-relevant item (no empty query)."""
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.randint(3, 8, (num_queries,), generator=gen)
    indexes = torch.arange(num_queries).repeat_interleave(sizes)
    target = (torch.rand(indexes.numel(), generator=gen) < 0.4).long()
    starts = sizes.cumsum(0) - sizes
    target[starts], target[starts + 1] = 1, 0
    return {"preds": torch.rand(indexes.numel(), generator=gen, dtype=torch.float64),
            "preds_b": torch.rand(indexes.numel(), generator=gen, dtype=torch.float64),
            "target": target, "indexes": indexes}


def rows(data: dict[str, torch.Tensor], start: int, stop: int) -> dict[str, torch.Tensor]:
    return {name: column[start:stop] for name, column in data.items()}


def inside(data: dict[str, torch.Tensor], query: int) -> int:
    """A row position strictly inside ``query``: a cut there splits the query across two calls."""
    where = (data["indexes"] == query).nonzero().flatten()
    return int(where[0]) + 2


def make(kind: str):
    return {"ndcg": lambda: tre.NDCG(k=K),
            "suite": lambda: tre.RankingMetrics([f"ndcg@{K}", f"mrr@{K}"]),
            "paired": lambda: PairedComparison([f"ndcg@{K}", f"mrr@{K}"])}[kind]()


def feed(metric, data: dict[str, torch.Tensor], *bounds: int) -> None:
    """Update with the rows between consecutive ``bounds`` (one call each)."""
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        part = rows(data, start, stop)
        if isinstance(metric, PairedComparison):
            metric.update(part["preds"], part["preds_b"], part["target"], indexes=part["indexes"])
        else:
            metric.update(part["preds"], part["target"], indexes=part["indexes"])


def retrieval(data: dict[str, torch.Tensor], preds: str = "preds") -> dict[str, float]:
    """torchmetrics.retrieval on the whole (unsplit) data: the oracle."""
    out = {}
    for key, cls in ((f"ndcg@{K}", torchmetrics.retrieval.RetrievalNormalizedDCG),
                     (f"mrr@{K}", torchmetrics.retrieval.RetrievalMRR)):
        oracle = cls(top_k=K)
        oracle.update(data[preds], data["target"], indexes=data["indexes"])
        out[key] = float(oracle.compute())
    return out


def expected(kind: str, data: dict[str, torch.Tensor]) -> dict[str, float]:
    a = retrieval(data)
    if kind == "ndcg":
        return {"value": a[f"ndcg@{K}"]}
    if kind == "suite":
        return a
    b = retrieval(data, "preds_b")
    return {**{f"{key}/a": value for key, value in a.items()}, **{f"{key}/b": value for key, value in b.items()},
            **{f"{key}/diff": a[key] - b[key] for key in a}}


def assert_matches(result, oracle: dict[str, float]) -> None:
    result = result if isinstance(result, dict) else {"value": result}
    for key, value in oracle.items():
        assert float(result[key]) == pytest.approx(value, abs=1e-6), key


def states(metric) -> dict[str, torch.Tensor]:
    return {name: getattr(metric, name).clone() for name in metric._defaults}


def test_confidence_interval_counts_the_held_back_query():
    # Before: the interval's mean left the held-back query out (0.408 against compute()'s 0.556 here).
    data = stream(num_queries=4)
    metric = tre.NDCG(k=K)
    feed(metric, data, 0, inside(data, 1), len(data["indexes"]))  # query 1 split, query 3 held back
    mean, low, high = confidence_interval(metric)["ndcg@3"]
    per_query = torch.stack([tmf.retrieval_normalized_dcg(data["preds"][data["indexes"] == q],
                                                          data["target"][data["indexes"] == q], top_k=K)
                             for q in range(4)]).double()  # brute force, one query at a time
    scipy_stats = pytest.importorskip("scipy.stats")
    half = float(scipy_stats.t.ppf(0.975, 3)) * float(per_query.std()) / math.sqrt(4)
    assert float(mean) == pytest.approx(float(per_query.mean()), abs=1e-6)
    assert (float(low), float(high)) == pytest.approx((float(per_query.mean()) - half,
                                                       float(per_query.mean()) + half), abs=1e-5)
    assert float(metric.compute()) == pytest.approx(retrieval(data)[f"ndcg@{K}"], abs=1e-6)
    with pytest.raises(ValueError, match="query 3 arrives after query 3 was evaluated"):
        feed(metric, data, len(data["indexes"]) - 1, len(data["indexes"]))  # the interval evaluated query 3


def test_sync_context_reads_the_held_back_query():
    data = stream(num_queries=4)
    metric = tre.NDCG(k=K)
    feed(metric, data, 0, inside(data, 3))
    with metric.sync_context(should_sync=False, should_unsync=False):
        counted = float(metric.stats[0, -1])
    assert counted == 4  # the held-back query 3 (rows so far) is counted


@pytest.mark.parametrize("kind", KINDS)
def test_compute_counts_the_held_back_query(kind):
    data = stream()
    metric = make(kind)
    feed(metric, data, 0, inside(data, 2), inside(data, 5), len(data["indexes"]))
    assert_matches(metric.compute(), expected(kind, data))


def test_plot_draws_the_held_back_query():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = stream()
    metric = tre.RankingMetrics([f"ndcg@{K}", f"mrr@{K}"])
    feed(metric, data, 0, inside(data, 4), len(data["indexes"]))
    _, ax = metric.plot()
    heights = [float(bar.get_height()) for bar in ax.patches]
    plt.close("all")
    assert heights == pytest.approx(list(retrieval(data).values()), abs=1e-6)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("direction", ["first-receives", "second-receives"])
def test_merge_state_counts_the_held_back_queries_of_both(kind, direction):
    data = stream()
    split, end = int((data["indexes"] < 4).sum()), len(data["indexes"])
    halves = [(0, split), (split, end)]
    receiving, sending = halves if direction == "first-receives" else halves[::-1]
    receiver, sender = make(kind), make(kind)
    last = int(data["indexes"][receiving[1] - 1])
    cut = inside(data, last)
    feed(receiver, data, receiving[0], cut)  # its last query is incomplete and held back
    feed(sender, data, sending[0], inside(data, int(data["indexes"][sending[0]]) + 1), sending[1])
    receiver.merge_state(sender)
    feed(receiver, data, cut, receiving[1])  # the receiver's own held-back query goes on
    assert_matches(receiver.compute(), expected(kind, data))
    # the sender's held-back query was evaluated by the merge, as compute() does: it may not continue
    assert_matches(sender.compute(), expected(kind, rows(data, *sending)))
    sender_last = int(data["indexes"][sending[1] - 1])
    with pytest.raises(ValueError, match=f"query {sender_last} arrives after query {sender_last} was evaluated"):
        feed(sender, data, sending[1] - 1, sending[1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("source", ["metric_state", "state_dict"])
def test_merge_state_refuses_a_dict_that_would_lose_held_back_rows(kind, source):
    data = stream()
    split, end = int((data["indexes"] < 4).sum()), len(data["indexes"])
    receiver, sender = make(kind), make(kind)
    feed(receiver, data, 0, split)
    feed(sender, data, split, end)  # query 7 held back
    sender.persistent(True)
    before, flat = states(receiver), receiver._flat
    with pytest.raises(ValueError, match=r"`incoming_state` holds back rows of the flat form .*query 7"):
        receiver.merge_state(getattr(sender, source) if source == "metric_state" else sender.state_dict())
    assert all(torch.equal(getattr(receiver, name), value) for name, value in before.items())
    assert receiver._flat is flat
    sender.compute()  # evaluated: its states now hold every row, and a dict of them merges
    receiver.merge_state(sender.metric_state)
    assert_matches(receiver.compute(), expected(kind, data))


@pytest.mark.parametrize("kind", KINDS)
def test_a_checkpoint_taken_mid_query_resumes_to_the_uninterrupted_value(kind):
    data = stream()
    cut, end = inside(data, 3), len(data["indexes"])
    metric = make(kind)
    metric.persistent(True)
    feed(metric, data, 0, inside(data, 1), cut)  # query 3 is half fed when the checkpoint is taken
    buffer = io.BytesIO()
    torch.save(metric.state_dict(), buffer)
    assert any(key.startswith("_flat_stream_pending.") for key in metric.state_dict())
    resumed = make(kind)
    resumed.load_state_dict(torch.load(io.BytesIO(buffer.getvalue()), weights_only=True))
    feed(resumed, data, cut, end)
    assert_matches(resumed.compute(), expected(kind, data))
    feed(metric, data, cut, end)  # taking the checkpoint did not end the query
    assert_matches(metric.compute(), expected(kind, data))


def test_a_checkpoint_inside_a_module_loads_strictly_and_keeps_the_query_order():
    data = stream()
    cut, end = inside(data, 3), len(data["indexes"])
    holder = nn.Module()
    holder.metric = tre.NDCG(k=K)
    holder.metric.persistent(True)
    feed(holder.metric, data, 0, cut)
    state = holder.state_dict()
    resumed = nn.Module()
    resumed.metric = tre.NDCG(k=K)
    resumed.load_state_dict(state)  # strict: the stream's entries are the metric's own
    with pytest.raises(ValueError, match="query 2 arrives after query 3 was seen"):
        feed(resumed.metric, data, int((data["indexes"] < 2).sum()), end)  # ids still must increase
    feed(resumed.metric, data, cut, end)
    assert_matches(resumed.metric.compute(), expected("ndcg", data))


def test_old_and_non_persistent_checkpoints():
    data = stream()
    cut = inside(data, 3)
    metric = tre.NDCG(k=K)
    feed(metric, data, 0, cut)
    assert not any(key.startswith("_flat_stream_") for key in metric.state_dict())  # states not saved: nor rows
    metric.persistent(True)
    old = {key: value for key, value in metric.state_dict().items() if not key.startswith("_flat_stream_")}
    loaded = tre.NDCG(k=K)
    feed(loaded, data, 0, cut)
    loaded.load_state_dict(old)  # states without the stream: the held-back query ends as it stands in them
    assert loaded._flat.pending is None
    assert_matches(loaded.compute(), expected("ndcg", rows(data, 0, cut)))
    bad = {**metric.state_dict(), "_flat_stream_pending.preds": torch.zeros(2, 2)}
    with pytest.raises(ValueError, match=r"flat-form stream of a state_dict .*_flat_stream_pending.preds"):
        tre.NDCG(k=K).load_state_dict(bad)


def test_per_query_leaves_the_stream_and_agrees_with_the_whole():
    data = stream()
    cut, end = inside(data, 5), len(data["indexes"])
    suite = tre.RankingMetrics([f"ndcg@{K}", f"mrr@{K}"])
    feed(suite, data, 0, cut)
    flat = suite._flat
    values = suite.per_query(data["preds"], data["target"], indexes=data["indexes"])
    assert suite._flat is flat
    brute = torch.stack([tmf.retrieval_normalized_dcg(data["preds"][data["indexes"] == q],
                                                      data["target"][data["indexes"] == q], top_k=K)
                         for q in range(8)]).double()
    torch.testing.assert_close(values[f"ndcg@{K}"], brute, atol=1e-6, rtol=0)
    feed(suite, data, cut, end)
    result = suite.compute()
    assert_matches(result, retrieval(data))
    assert float(result[f"ndcg@{K}"]) == pytest.approx(float(values[f"ndcg@{K}"].mean()), abs=1e-12)


def test_forward_batch_value_and_the_held_back_query_of_an_earlier_update():
    data = stream()
    two, five, end = (int((data["indexes"] < q).sum()) for q in (2, 5, 8))
    metric = tre.NDCG(k=K)
    feed(metric, data, 0, two)  # query 1 held back
    batch = rows(data, two, five)
    value = metric(batch["preds"], batch["target"], indexes=batch["indexes"])
    assert float(value) == pytest.approx(expected("ndcg", batch)["value"], abs=1e-6)  # the batch alone
    assert_matches(metric.compute(), expected("ndcg", rows(data, 0, five)))  # with the held-back query 1
    feed(metric, data, five, inside(data, 6))
    before = states(metric)
    continued = rows(data, inside(data, 6), end)
    with pytest.raises(ValueError, match="query 6 arrives after query 6 was evaluated"):
        metric(continued["preds"], continued["target"], indexes=continued["indexes"])  # forward ends query 6
    assert all(torch.equal(getattr(metric, name), value) for name, value in before.items())


def test_metric_collection_counts_the_held_back_query():
    data = stream()
    collection = MetricCollection({"ndcg": tre.NDCG(k=K), "mrr": tre.MRR(k=K)})
    for start, stop in ((0, inside(data, 2)), (inside(data, 2), inside(data, 7)), (inside(data, 7), None)):
        part = rows(data, start, stop if stop is not None else len(data["indexes"]))
        collection.update(part["preds"], part["target"], indexes=part["indexes"])
    result, oracle = collection.compute(), retrieval(data)
    assert float(result["ndcg"]) == pytest.approx(oracle[f"ndcg@{K}"], abs=1e-6)
    assert float(result["mrr"]) == pytest.approx(oracle[f"mrr@{K}"], abs=1e-6)


def test_wrappers_without_a_flat_form_refuse_it_by_name():
    # no reader can omit held-back rows where no row is ever held back: Windowed and the pointwise metrics
    data = stream()
    windowed = Windowed(tre.NDCG(k=K), window=2)
    before = states(windowed)
    with pytest.raises(ValueError, match="`indexes`: a windowed metric does not take the flat form"):
        windowed.update(data["preds"], data["target"], indexes=data["indexes"])
    assert all(torch.equal(getattr(windowed, name), value) for name, value in before.items())
    with pytest.raises(ValueError, match="'indexes'"):
        NE().update(data["preds"].clamp(0.01, 0.99), data["target"].double(), indexes=data["indexes"])


def test_held_back_rows_follow_the_module_but_keep_their_dtype():
    data = stream()
    cut, end = inside(data, 3), len(data["indexes"])
    holder = nn.Module()
    holder.metric = tre.NDCG(k=K)
    feed(holder.metric, data, 0, cut)
    holder.half().to("cpu")  # a dtype cast of the module casts neither the states nor the held-back scores
    assert holder.metric._flat.pending["preds"].dtype == torch.float64
    feed(holder.metric, data, cut, end)
    assert_matches(holder.metric.compute(), expected("ndcg", data))


def test_running_forward_counts_each_call_and_a_reset_that_drops_rows_warns():
    data = stream()
    bounds = [int((data["indexes"] < q).sum()) for q in (0, 3, 5, 8)]
    running = Running(tre.NDCG(k=K), window=2)
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        batch = rows(data, start, stop)
        value = running(batch["preds"], batch["target"], indexes=batch["indexes"])
        assert float(value) == pytest.approx(expected("ndcg", batch)["value"], abs=1e-6)
    assert_matches(running.compute(), expected("ndcg", rows(data, bounds[1], bounds[-1])))
    with pytest.warns(UserWarning, match=r"reset\(\) drops \d+ rows of query 7 .* held back"):
        Running(tre.NDCG(k=K), window=2).update(data["preds"], data["target"], indexes=data["indexes"])


def test_a_checkpoints_held_back_increments_are_checked():
    """The held-back query's increments travel with its rows; rows without them, increments of a state the
    metric lacks or of another shape are refused by name, the metric unchanged."""
    data = stream()
    metric = tre.NDCG(k=K)
    metric.persistent(True)
    feed(metric, data, 0, inside(data, 3))
    saved = metric.state_dict()
    assert {key for key in saved if key.startswith("_flat_stream_tentative.")} == {"_flat_stream_tentative.stats"}
    target = tre.NDCG(k=K)
    target.persistent(True)
    before = {key: value.clone() for key, value in target.state_dict().items()}
    without = {key: value for key, value in saved.items() if not key.startswith("_flat_stream_tentative.")}
    foreign = {**saved, "_flat_stream_tentative.other": torch.zeros(1, 3, dtype=torch.float64)}
    reshaped = {**saved, "_flat_stream_tentative.stats": torch.zeros(2, 3, dtype=torch.float64)}
    for bad, match in ((without, "with them, `_flat_stream_tentative.<state>` increments"),
                       (foreign, r"name states this metric does not have: \['_flat_stream_tentative.other'\]"),
                       (reshaped, r"`_flat_stream_tentative.\*` increments holds state `stats` of")):
        with pytest.raises(ValueError, match=match):
            target.load_state_dict(bad)
        after = target.state_dict()
        assert after.keys() == before.keys() and all(torch.equal(after[key], before[key]) for key in before)
