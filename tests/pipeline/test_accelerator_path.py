"""The accelerator path, run on the CPU on every commit: ``update`` reads nothing on the host, and its
values are the CPU path's.

Most sessions have no GPU, so the CUDA half of ``tests/pipeline/test_devices.py`` rarely runs. Here
:func:`torchrec_eval.syncs.simulate_accelerator` sends CPU tensors down the branches ``update``
takes on CUDA (no host read to skip work: ties at the cut-off repaired on every row by masked work),
and :class:`~tests.reference.host_reads.NoHostReads` fails on every operation that reads tensor data
on the host (a scalar read, ``nonzero``, a bool-mask index, ``torch.tensor`` of Python data, ...).
With ``validate_args=False`` every family, input form, tie order, dtype and batch size passes,
except the documented ones (docs/host-syncs.md, "Host syncs"), which are asserted to read, by name.

The simulated values equal the plain CPU path's, tied scores included: no device's ``topk`` is
trusted with the items tied at the cut-off (CUDA's keeps neither the lowest nor the highest indices:
``tests/scripts/topk_tie_order.py``), so the accelerator path repairs them on every row.

Each case warms up first (as the CUDA test does): constants such as the cut-off rows are built on a
device once, from the host, then reused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch

import torchrec_eval as tre
from tests.reference.classes import FACTORIES, POINTWISE, RATING
from tests.reference.host_reads import HostRead, NoHostReads
from torchrec_eval import beyond
from torchrec_eval.pairwise.member import FAMILIES as PAIRWISE_FAMILIES
from torchrec_eval.pipeline import TIES
from torchrec_eval.ranking.families import REGISTRY
from torchrec_eval.syncs import host_reads_free, simulate_accelerator

N = 48  # items: per-row permutations of 0..N-1 are exact in bfloat16 (no accidental ties)
_GEN = torch.Generator().manual_seed(7)
POPULARITY, FEATURES = torch.randint(1, 9, (N,), generator=_GEN), torch.rand(N, 4, generator=_GEN)
OPTIONS = {"auc": {"tie_credit": 0.0},  # the pairs ordered strictly right: GAUC beside it keeps the mid-ranks
           "coverage": {"num_items": N}, "gini": {"num_items": N}, "entropy": {"num_items": N},
           "exposure_gini": {"num_items": N, "patience": 0.7},
           "inter_list_diversity": {"num_items": N}, "intra_list_diversity": {"item_features": FEATURES},
           "novelty": {"item_popularity": POPULARITY}, "serendipity": {"item_popularity": POPULARITY},
           "average_popularity": {"item_popularity": POPULARITY}, "long_tail_share": {"item_popularity": POPULARITY},
           "long_tail_count": {"item_popularity": POPULARITY, "tail_ratio": 0.3},
           "category_entropy": {"item_categories": FEATURES}, "rank_biased_entropy": {"item_categories": FEATURES},
           "psp": {"inverse_propensity": POPULARITY.double().reciprocal()},
           "psndcg": {"inverse_propensity": POPULARITY.double().reciprocal()},
           "alpha_ndcg": {"item_intents": FEATURES > 0.5}, "err_ia": {"item_intents": FEATURES > 0.5},
           "alpha_dcg": {"item_intents": FEATURES > 0.5, "alpha": 0.7},
           "nerr_ia": {"item_intents": FEATURES > 0.5, "alpha": 0.3},
           "p_ia": {"item_intents": FEATURES > 0.5}, "strec": {"item_intents": FEATURES > 0.5},
           "ap_ia": {"item_intents": FEATURES > 0.5}, "nrbp": {"item_intents": FEATURES > 0.5, "beta": 0.7},
           "nnrbp": {"item_intents": FEATURES > 0.5}}
CUTOFFS = {"ndcg": 10, "map": 10, "recall": 20, "mrr": 10}  # the others at 5
FAMILIES = {
    # rprecision@10: capped, no read; num_rel takes no cut-off
    "top-k": [name if spec.cutoff == "none" else f"{name}@{CUTOFFS.get(name, 5)}" for name, spec in REGISTRY.items()],
    "pairwise": [name if mode == "none" else f"{name}@5" for name, mode in PAIRWISE_FAMILIES.items()
                 if name != "fcp"],  # FCP reads its grade levels: a documented exception
    "beyond": [f"{name}@5" for name in beyond.REGISTRY],
}
_EXACT = REGISTRY["ndcg"]
FORMS = ("dense", "ids", "exclude_ids", "ranked")
DTYPES = (torch.float32, torch.bfloat16)
ROWS = (1, 1024)


@pytest.fixture(autouse=True)
def _one_thread():
    """Batches of at most 1024 x 48: a second intra-op thread only adds wake-ups (25x slower on a busy 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _suite(metrics: list[str], **kwargs: Any) -> tre.RankingMetrics:
    options = {family: value for family, value in OPTIONS.items() if any(m.startswith(family) for m in metrics)}
    return tre.RankingMetrics(metrics, options=options, validate_args=False, **kwargs)


def _scores(rows: int, dtype: torch.dtype, tied: bool, gen: torch.Generator) -> torch.Tensor:
    if tied:  # four score levels: ties inside every list and across every cut-off
        scores = torch.randint(0, 4, (rows, N), generator=gen).to(dtype)
    else:
        scores = torch.rand(rows, N, generator=gen).argsort(1).to(dtype)  # each row a permutation of 0..N-1
    return scores.masked_fill(torch.rand(rows, N, generator=gen) < 0.1, float("-inf"))  # not candidates


def _inputs(form: str, rows: int, dtype: torch.dtype, tied: bool, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    scores = _scores(rows, dtype, tied, gen)
    target_ids = torch.rand(rows, N, generator=gen).argsort(1)[:, :6]
    target_ids[:, -1] = -1  # padding
    if form == "dense":
        return {"preds": scores, "target": (torch.rand(rows, N, generator=gen) < 0.1).long(),
                "mask": torch.rand(rows, N, generator=gen) < 0.9}
    if form == "ranked":
        ranked = torch.argsort(scores.float(), dim=1, descending=True, stable=True)[:, :30]
        return {"ranked_ids": ranked, "target_ids": target_ids}
    inputs = {"preds": scores, "target_ids": target_ids, "target_gains": torch.rand(rows, 6, generator=gen) * 3}
    if form == "exclude_ids":
        inputs["exclude_ids"] = torch.rand(rows, N, generator=gen).argsort(1)[:, :5]
    return inputs


def _no_host_read(make: Callable[[], Any], call: Callable[[Any], Any]) -> Any:
    """``call(make())`` on the accelerator path, failing on any host read (after a warm-up call)."""
    with simulate_accelerator():
        call(make())  # first-call constants (cut-off rows, ranks) are built from the host once
        metric = make()
        with NoHostReads():
            call(metric)
    return metric


def _assert_values(got: dict, want: dict, keys: list[str]) -> None:
    for key in keys:
        torch.testing.assert_close(got[key], want[key], rtol=0, atol=1e-12, equal_nan=True, msg=key)


CASES = [(family, form) for family in FAMILIES for form in FORMS if (family, form) != ("pairwise", "ranked")]


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize(("family", "form"), CASES)
def test_update_reads_nothing_and_equals_the_cpu_path(family, form, ties, dtype, rows):
    # ERR refuses ties="average", FallOut the ranked form (tested in tests/ranking)
    specs = {name: REGISTRY.get(name.split("@")[0], _EXACT) for name in FAMILIES[family]}
    metrics = [name for name, spec in specs.items() if (ties != "average" or spec.exact_under_average_ties)
               and not (form == "ranked" and spec.reads_non_relevant)]
    batches = [_inputs(form, rows, dtype, tied) for tied in (False, True)]

    def update(metric):  # scores without ties count in group 0, tied scores in group 1
        for group, batch in enumerate(batches):
            metric.update(**batch, groups=torch.full((rows,), group))

    def make():
        return _suite(metrics, ties=ties, num_groups=2)

    # 6 target ids among 48 items: ranks counted over the rows (pipeline/counted_ranks.py), with no list to repair,
    # where no family reads the list's ids
    counted = form in ("ids", "exclude_ids") and family != "beyond"
    if form != "ranked" and (ties in ("pessimistic", "optimistic") or (ties == "reverse_index" and not counted)):
        # documented: a non-default tie order repairs the cut-off row by row (it reads which rows tie)
        with simulate_accelerator(), NoHostReads(), pytest.raises(HostRead, match="_local_scalar_dense"):
            update(make())
        return
    got = _no_host_read(make, update).compute()
    plain = make()
    update(plain)
    want = plain.compute()
    _assert_values(got, want, metrics)  # both groups: scores without ties and tied scores


@pytest.mark.parametrize("unlogged", ["drop", "rank"])
@pytest.mark.parametrize("ties", ["index", "average"])
def test_ctr_with_unlogged_items_reads_nothing_and_equals_the_cpu_path(unlogged, ties):
    """CTR's ``ignore_index`` items, dropped before the cut or ranked in it (``unlogged``, Jurity's cut)."""
    batches = []
    for tied in (False, True):
        gen = torch.Generator().manual_seed(3)
        scores = _scores(64, torch.float32, tied, gen)
        responses = torch.where(torch.rand(64, N, generator=gen) < 0.5, (torch.rand(64, N, generator=gen) < 0.3).long(), -1)
        batches.append({"preds": scores, "target": responses, "mask": torch.rand(64, N, generator=gen) < 0.9})

    def update(metric):
        for group, batch in enumerate(batches):
            metric.update(**batch, groups=torch.full((64,), group))

    def make():
        return tre.CTR(k=[1, 5], ignore_index=-1, unlogged=unlogged, ties=ties, validate_args=False, num_groups=2)

    got = _no_host_read(make, update).compute()
    plain = make()
    update(plain)
    want = plain.compute()
    _assert_values({k: v[0] for k, v in got.items()}, {k: v[0] for k, v in want.items()}, list(want))
    if ties == "average":
        _assert_values({k: v[1] for k, v in got.items()}, {k: v[1] for k, v in want.items()}, list(want))


# ------------------------------------------------------------------------------------ pointwise
POINTWISE_CASES = {
    **{name: FACTORIES[name] for name in sorted(POINTWISE | RATING)},
    "PointwiseMetrics tasks groups weights": lambda: tre.PointwiseMetrics(
        ["ne", "log_loss", "calibration", "ctr", "mse", "rmse", "mae", "auc", "auprc"], tasks=["click", "buy"],
        num_groups=3),
    "Windowed": lambda: tre.Windowed(tre.PointwiseMetrics(["ne", "calibration", "auc"]), window=2),
    "Windowed samples": lambda: tre.Windowed(tre.NE(), window=1500, unit="samples"),
}


def _pointwise(name: str) -> Any:
    metric = POINTWISE_CASES[name]()
    for one in (metric, getattr(metric, "metric", None)):  # a Windowed metric: the wrapped one checks
        if one is not None and hasattr(one, "validate_args"):
            one.validate_args = False
    return metric


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(POINTWISE_CASES))
def test_pointwise_update_reads_nothing_and_equals_the_cpu_path(name, dtype, rows):
    gen = torch.Generator().manual_seed(3)
    tasks = 2 if "tasks" in name else None
    shape = (rows,) if tasks is None else (rows, tasks)
    preds, target = torch.rand(shape, generator=gen).to(dtype), (torch.rand(shape, generator=gen) < 0.4).to(dtype)
    extra = {"sample_weight": torch.rand(rows, generator=gen), "groups": torch.randint(0, 3, (rows,), generator=gen)}

    def update(metric):
        for _ in range(3):  # a window fills and turns over
            metric.update(preds, target, **(extra if tasks else {}))

    got = _no_host_read(lambda: _pointwise(name), update).compute()
    plain = _pointwise(name)
    update(plain)
    want = plain.compute()
    if isinstance(want, dict):
        _assert_values(got, want, list(want))
    else:
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12, equal_nan=True)


# ------------------------------------------------------------------------------------ catalogue
CATALOGUE = {"top-k": FAMILIES["top-k"], "pairwise": FAMILIES["pairwise"], "beyond": FAMILIES["beyond"]}


def _stream(batch: dict[str, torch.Tensor]) -> Callable[[Any], None]:
    """Add ``batch`` to a metric as a catalogue scored in two chunks, out of order (each wider than the
    deepest cut-off: a chunk that fits in the list needs no cut-off of its own)."""
    scores, target_ids = batch["preds"], batch["target_ids"]
    target_scores = scores.gather(1, target_ids.clamp(min=0))

    def add(metric):
        with metric.catalogue(N, target_ids=target_ids, target_scores=target_scores,
                              exclude_ids=batch.get("exclude_ids")) as chunks:
            for start in (N // 2, 0):
                chunks.add(scores[:, start : start + N // 2], offset=start)

    return add


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ties", [ties for ties in TIES if ties != "average"])  # refused: needs whole tie groups
@pytest.mark.parametrize("family", list(CATALOGUE))
def test_catalogue_stream_reads_nothing_and_equals_the_cpu_path(family, ties, dtype, rows):
    metrics = CATALOGUE[family]
    streams = [_stream(_inputs("exclude_ids", rows, dtype, tied)) for tied in (False, True)]

    def make():
        return _suite(metrics, ties=ties)

    if ties == "reverse_index":  # documented: a non-default tie order at the cut-off (chunk_order keeps the
        with simulate_accelerator(), NoHostReads(), pytest.raises(HostRead, match="_local_scalar_dense"):
            streams[0](make())  # gain-aware orders as "index" inside the chunks: those read nothing)
        return
    results = []
    for stream in streams:
        got = _no_host_read(make, stream).compute()
        plain = make()
        stream(plain)
        results.append((got, plain.compute()))
    _assert_values(*results[0], metrics)
    _assert_values(*results[1], metrics)


# ------------------------------------------------------------------------------------ the documented exceptions
DENSE = {name: value for name, value in _inputs("dense", 64, torch.float32, True).items() if name != "mask"}
FLAT = {"preds": DENSE["preds"].reshape(-1), "target": DENSE["target"].reshape(-1),
        "indexes": torch.arange(64).repeat_interleave(N)}


def _update(batch: dict[str, torch.Tensor]) -> Callable[[Any], None]:
    return lambda metric: metric.update(**batch)


# docs/host-syncs.md, "Host syncs": these need the data to decide a shape, on every device
DOCUMENTED = {
    "flat form": (lambda: _suite(["ndcg@10", "auc"]), _update(FLAT), "_local_scalar_dense"),
    "fcp": (lambda: _suite(["fcp"]), _update(DENSE), "nonzero|bool mask"),
    "fcp in a catalogue": (lambda: _suite(["fcp"]), _stream(_inputs("ids", 64, torch.float32, True)),
                           "_local_scalar_dense|nonzero|bool mask"),
    "rprecision without a cut-off": (lambda: _suite(["rprecision"]), _update(DENSE),
                                     "_local_scalar_dense"),
    'empty_target_action="error"': (lambda: _suite(["ndcg@10"], empty_target_action="error"),
                                    _update(DENSE), "_local_scalar_dense"),
    **{f"ties={ties!r} at the cut-off": (lambda ties=ties: _suite(["ndcg@10"], ties=ties),
                                         _update(DENSE), "_local_scalar_dense")
       for ties in ("reverse_index", "pessimistic", "optimistic")},
    'convention="trec" (reverse_index ties)': (lambda: tre.RankingMetrics(["ndcg@10"], convention="trec",
                                                                          validate_args=False),
                                               _update(DENSE), "_local_scalar_dense"),
}


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_the_documented_exceptions_read_the_host(name):
    make, call, reads = DOCUMENTED[name]
    metric = make()
    with simulate_accelerator(), NoHostReads(), pytest.raises(HostRead, match=reads):
        call(metric)


# ------------------------------------------------------------------------------------ the harness itself
def test_the_switch_sends_cpu_tensors_down_the_accelerator_path():
    cpu = torch.zeros(2)
    assert host_reads_free(cpu)
    seen = []
    with simulate_accelerator():
        assert not host_reads_free(cpu)
        with simulate_accelerator():  # blocks nest
            assert not host_reads_free(cpu)
        assert not host_reads_free(cpu)
        thread = threading.Thread(target=lambda: seen.append(host_reads_free(cpu)))  # one switch per process
        thread.start()
        thread.join()
    assert seen == [False]
    with pytest.raises(KeyError), simulate_accelerator():
        raise KeyError("an error inside the block")
    assert host_reads_free(cpu)  # always switched back
    assert not host_reads_free(torch.zeros(2, device="meta"))


def test_without_the_switch_the_cpu_path_reads():
    """The CPU path reads on the host to skip work, so the simulation is what makes the checks pass;
    and with ``validate_args=True`` the checks themselves read, on every device."""
    batch = _inputs("dense", 64, torch.float32, True)  # (the ids form's counted ranks read nothing on any path)
    with NoHostReads(), pytest.raises(HostRead):
        _suite(["ndcg@10"]).update(**batch)
    checked = tre.RankingMetrics(["ndcg@10"])
    with simulate_accelerator(), NoHostReads(), pytest.raises(HostRead):
        checked.update(**batch)


_X, _REPEATS, _IDS = torch.tensor([1.0, 0.0, 2.0, 2.0]), torch.tensor([1, 2]), torch.tensor([0, 1, 1])
_MASK, _VALUES = _X > 0, torch.zeros(3)
# each listed host read, and the operation the mode must name for it
HOST_READS = {
    ".item()": (lambda: _X.sum().item(), "_local_scalar_dense"), ".tolist()": (lambda: _X.tolist(), "tolist"),
    "bool()": (lambda: bool(_MASK.any()), "_local_scalar_dense"), "int()": (lambda: int(_X[0]), "_local_scalar_dense"),
    "float()": (lambda: float(_X[0]), "_local_scalar_dense"), "if t:": (lambda: 1 if _X.any() else 0, "_local_scalar"),
    "nonzero": (lambda: _X.nonzero(), "nonzero"), "torch.where(mask)": (lambda: torch.where(_MASK), "nonzero"),
    "masked_select": (lambda: _X.masked_select(_MASK), "masked_select"), "unique": (lambda: _X.unique(), "unique"),
    "unique(dim)": (lambda: _X.view(2, 2).unique(dim=0), "unique"),
    "unique_consecutive": (lambda: _X.unique_consecutive(), "unique_consecutive"),
    "bool-mask index": (lambda: _X[_MASK], "index.Tensor: indexing with a bool mask"),
    "bool-mask assignment of a tensor": (lambda: _X.clone().index_put_((_MASK,), _VALUES), "index_put_"),
    "repeat_interleave": (lambda: torch.repeat_interleave(_REPEATS), "repeat_interleave"),
    "bincount": (lambda: torch.bincount(_IDS), "bincount"), "torch.equal": (lambda: torch.equal(_X, _X), "equal"),
    "torch.tensor(list)": (lambda: torch.tensor([1.0, 2.0]), "lift_fresh"), "list index": (lambda: _X[[0, 1]], "lift_fresh"),
}
NOT_HOST_READS = {
    "arithmetic": lambda: _X * 2 + 1, "masked_fill": lambda: _X.masked_fill(_MASK, 0),
    "torch.where(mask, a, b)": lambda: torch.where(_MASK, _X, 0.0), "long index": lambda: _X[_IDS],
    "bool-mask assignment of a scalar (masked_fill)": lambda: _X.clone().__setitem__(_MASK, 0.0),
    "repeat_interleave with output_size": lambda: torch.repeat_interleave(_REPEATS, output_size=3),
    "topk and sort": lambda: (_X.topk(2), _X.sort(stable=True)), "nonzero_static": lambda: _X.nonzero_static(size=4),
}


@pytest.mark.parametrize("name", list(HOST_READS))
def test_the_mode_rejects_every_listed_host_read(name):
    read, operation = HOST_READS[name]
    with NoHostReads(), pytest.raises(HostRead, match=operation):
        read()
    read()  # outside the mode it runs


@pytest.mark.parametrize("name", list(NOT_HOST_READS))
def test_the_mode_lets_device_work_run(name):
    with NoHostReads():
        NOT_HOST_READS[name]()


@pytest.mark.parametrize("form", ["dense", "ids", "exclude_ids", "ranked"])
def test_paired_comparison_reads_nothing_and_equals_the_cpu_path(form):
    """Its per-query columns were chosen with a Python list index: a host-to-device copy at every batch
    (6 syncs per update on an H200)."""
    from torchrec_eval.comparison.uncertainty import PairedComparison

    top_k = [name for name in FAMILIES["top-k"] if not (form == "ranked" and name.startswith("fallout"))
             and not REGISTRY[name.partition("@")[0]].total]  # a total (num_q) is not compared
    metrics = [*top_k, "novelty@5", "intra_list_diversity@5"]
    batches = [_inputs(form, 64, torch.float32, tied, seed=1) for tied in (False, True)]

    def make():
        return PairedComparison(lambda: _suite(metrics))

    def update(metric):
        for batch in batches:
            if form == "ranked":
                metric.update(ranked_ids_a=batch["ranked_ids"], ranked_ids_b=batch["ranked_ids"].flip(1),
                              target_ids=batch["target_ids"])
            else:
                inputs = {key: value for key, value in batch.items() if key != "preds"}
                metric.update(batch["preds"], batch["preds"].flip(1), **inputs)

    got = _no_host_read(make, update).compute()
    plain = make()
    update(plain)
    _assert_values(got, plain.compute(), list(got))
