"""``compile_update()``: every later update is one ``torch.compile(fullgraph=True)`` graph, equal to eager.

``fullgraph=True`` fails on any graph break, so these tests prove that the update path has none (no
host read) for every family and input form it accepts. Most cases trace with the ``aot_eager``
backend (the whole graph, functionalised, no code generation: fast); one runs the default inductor
backend for real.
"""

from __future__ import annotations

import copy
import operator
import pickle
import subprocess
import sys
import warnings

import pytest
import torch
import torch._dynamo
import torch.multiprocessing as mp

import torchrec_eval as tre
from torchrec_eval.syncs import simulate_accelerator

N = 120
SUITES = {
    "top-k": ["ndcg@10", "map@10", "recall@20", "precision@5", "mrr@10", "hitrate@5", "rprecision@10", "ctr@5"],
    "full ranking": ["auc", "gauc", "mpr", "pauc@3", "ndcg@5", "fallout@5"],  # FallOut reads every candidate too
    "beyond": ["coverage@5", "novelty@5", "recall@5", "psndcg@5"],
    "peers": ["err@5", "rbp@10", "sdcg@5", "ncrr@10", "setf@5", "num_ret@5", "num_rel_ret@5", "iprec@10",
              "interpolated_ap@10", "exposure_gini@5", "long_tail_share@5", "category_entropy@5", "bpref@10", "judged@5",
              "infap@10"],
}


def _suite(metrics: list[str], **kwargs) -> tre.RankingMetrics:
    options = {"coverage": {"num_items": N}, "novelty": {"item_popularity": torch.arange(N) % 7},
               "psndcg": {"inverse_propensity": 1 + 1 / (1 + torch.arange(N) % 7)},
               "exposure_gini": {"num_items": N}, "long_tail_share": {"item_popularity": torch.arange(N) % 7},
               "category_entropy": {"item_categories": torch.eye(N)[:, :6] + torch.eye(N)[:, 6:12]}}
    return tre.RankingMetrics(metrics, validate_args=False, num_groups=2,
                              options={k: v for k, v in options.items() if any(m.startswith(k) for m in metrics)},
                              **kwargs)


def _inputs(form: str, seed: int, rows: int = 16) -> dict:
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, 4, (rows, N), generator=gen).float()  # many ties at the cut-off
    target_ids = torch.stack([torch.randperm(N, generator=gen)[:5] for _ in range(rows)])
    target_ids[:, -1] = -1
    groups = torch.randint(0, 2, (rows,), generator=gen)
    if form == "dense":
        return {"preds": scores, "target": torch.rand(rows, N, generator=gen) < 0.05, "groups": groups}
    if form == "ids":
        return {"preds": scores, "target_ids": target_ids, "groups": groups}
    if form == "exclude_ids":
        seen = torch.stack([torch.randperm(N, generator=gen)[:8] for _ in range(rows)])
        return {"preds": scores, "target_ids": target_ids, "exclude_ids": seen, "groups": groups}
    ranked = torch.argsort(scores, dim=1, descending=True)[:, :30]
    return {"ranked_ids": ranked, "target_ids": target_ids, "groups": groups}


def _assert_same(compiled, eager) -> None:
    got, want = compiled.compute(), eager.compute()
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=1e-12, equal_nan=True, msg=key)


CASES = [
    *(("top-k", form, ties) for form in ("dense", "ids", "exclude_ids", "ranked")
       for ties in ("index", "reverse_index", "pessimistic", "average")),
    *(("full ranking", form, "index") for form in ("dense", "ids", "exclude_ids")),
    ("full ranking", "ids", "pessimistic"),
    *(("beyond", form, "index") for form in ("dense", "ids", "exclude_ids", "ranked")),
    *(("peers", form, "index") for form in ("ids", "ranked")),  # ERR and IPrec refuse averaged ties
]


@pytest.mark.parametrize(("suite", "form", "ties"), CASES)
@pytest.mark.filterwarnings("error:compile_update\\(\\):RuntimeWarning")  # a graph, never the eager fallback
def test_fullgraph_update_equals_eager(suite, form, ties):
    torch._dynamo.reset()
    compiled = _suite(SUITES[suite], ties=ties).compile_update(backend="aot_eager")
    eager = _suite(SUITES[suite], ties=ties)
    for seed in (0, 1):
        inputs = _inputs(form, seed)
        if suite == "peers":  # bpref, Judged and infAP read the judgments: graded, judged non-relevant, pooled (-1)
            ids = inputs["target_ids"]
            inputs["target_gains"] = torch.arange(ids.shape[1]).remainder(4).sub(1).expand_as(ids) * (ids >= 0)
        compiled.update(**inputs)
        eager.update(**inputs)
    _assert_same(compiled, eager)


@pytest.mark.slow
def test_inductor_graph_survives_reset_and_bad_input():
    torch._dynamo.reset()
    compiled = _suite(SUITES["top-k"]).compile_update()
    eager = _suite(SUITES["top-k"])
    inputs = _inputs("ids", 3)
    compiled.update(**inputs)
    compiled.reset()  # new state tensors: the pure graph does not depend on them
    frames = torch._dynamo.utils.counters["frames"]["ok"]
    for seed in (4, 5):
        inputs = _inputs("ids", seed)
        compiled.update(**inputs)
        eager.update(**inputs)
    assert torch._dynamo.utils.counters["frames"]["ok"] == frames  # no recompilation
    _assert_same(compiled, eager)
    before = {name: value.clone() for name, value in compiled.metric_state.items()}
    with pytest.raises(ValueError, match="`target_ids`"):
        compiled.update(preds=inputs["preds"], target_ids=inputs["target_ids"][:3], groups=inputs["groups"])
    assert all(torch.equal(compiled.metric_state[name], value) for name, value in before.items())


@pytest.mark.parametrize(
    "make",
    [
        lambda: tre.RankingMetrics(["ndcg@5"]),  # validate_args=True
        lambda: tre.RankingMetrics(["fcp"], validate_args=False),
        lambda: tre.RankingMetrics(["rprecision"], validate_args=False),
        lambda: tre.RankingMetrics(["ndcg@5"], validate_args=False, empty_target_action="error"),
    ],
)
def test_what_reads_the_host_is_refused(make):
    with pytest.raises(ValueError, match="compile_update"):
        make().compile_update()


def test_the_flat_form_stays_eager():
    compiled = tre.RankingMetrics(["ndcg@5"], validate_args=False).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(["ndcg@5"], validate_args=False)
    flat = (torch.rand(40), torch.rand(40) < 0.3, torch.arange(4).repeat_interleave(10))
    compiled.update(flat[0], flat[1], indexes=flat[2])
    eager.update(flat[0], flat[1], indexes=flat[2])
    _assert_same(compiled, eager)


COMPILE_ONCE = """
import warnings, torch, torchrec_eval as tre
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    # SDCG and RecTools' ideal (ndcg with ideal="k") read the discount sum, an lru_cache
    metric = tre.RankingMetrics(["ndcg@10", "rprecision@10", "sdcg@5"], validate_args=False,
                                options={"ndcg": {"gain": "binary", "ideal": "k"}}).compile_update(backend="aot_eager")
    metric.update(preds=torch.rand(4, 50), target=torch.rand(4, 50) < 0.2)
print([str(warning.message) for warning in seen])
"""


def test_a_compiled_update_warns_of_nothing():
    """Dynamo warns once per process of each cache wrapper it traces past (the count layout's did): a
    fresh process, as a user's first compile."""
    done = subprocess.run([sys.executable, "-c", COMPILE_ONCE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_a_graph_that_fails_is_given_up_once_and_said():
    """A compiled update that fails where the eager path takes the input (on an H200 every compiled
    update did: each one traced the graph again, failed, and ran eagerly, 3,800x a top-k, without a
    word) warns once with the cause and updates eagerly from then on, with the eager values."""
    torch._dynamo.reset()
    attempts = []

    def failing_backend(graph, example_inputs):
        attempts.append(1)
        raise RuntimeError("no kernel for this device")

    compiled = _suite(SUITES["top-k"]).compile_update(backend=failing_backend)
    eager = _suite(SUITES["top-k"])
    with pytest.warns(RuntimeWarning, match="compile_update\\(\\).*failed.*no kernel for this device.*eagerly"):
        compiled.update(**_inputs("ids", 1))
    eager.update(**_inputs("ids", 1))
    tried = len(attempts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        for seed in (2, 3):
            compiled.update(**_inputs("ids", seed))
            eager.update(**_inputs("ids", seed))
    assert tried >= 1 and len(attempts) == tried  # never compiled again
    _assert_same(compiled, eager)


def test_bad_input_to_a_compiled_update_keeps_the_graph():
    compiled = _suite(SUITES["top-k"]).compile_update(backend="aot_eager")
    inputs = _inputs("ids", 1)
    with pytest.raises(ValueError, match="`target_ids`"):
        compiled.update(preds=inputs["preds"], target_ids=inputs["target_ids"][:3], groups=inputs["groups"])
    assert compiled._compile_options is not None and compiled._compiled_step is not None


def test_a_compiled_metric_pickles_and_deep_copies():
    """``pickle.dumps`` failed on the graph's local lambda: ``mp.spawn``, ``ddp_spawn`` and
    ``torch.save(module)`` could not send a compiled metric. The copy builds its own graph."""
    compiled = _suite(SUITES["top-k"]).compile_update(backend="aot_eager")
    eager = _suite(SUITES["top-k"])
    compiled.update(**_inputs("ids", 1))  # the graph exists now
    eager.update(**_inputs("ids", 1))
    for copy_of in (pickle.loads(pickle.dumps(compiled)), copy.deepcopy(compiled)):
        assert copy_of._compile_options == {"backend": "aot_eager"} and copy_of._compiled_step is None
        copy_of.update(**_inputs("ids", 2))
        assert copy_of._compiled_step is not None and copy_of._compiled_step is not compiled._compiled_step
        expected = copy.deepcopy(eager)
        expected.update(**_inputs("ids", 2))
        _assert_same(copy_of, expected)


def _spawned_update(rank: int, metric, out: str) -> None:
    torch.set_num_threads(1)
    metric.update(**_inputs("ids", 5 + rank))
    torch.save({key: value for key, value in metric.compute().items()}, f"{out}/{rank}.pt")


@pytest.mark.slow
def test_a_compiled_metric_goes_through_mp_spawn(tmp_path):
    compiled = _suite(SUITES["top-k"][:3]).compile_update(backend="aot_eager")
    compiled.update(**_inputs("ids", 1))
    mp.spawn(_spawned_update, args=(compiled, str(tmp_path)), nprocs=2, join=True)
    for rank in range(2):
        eager = _suite(SUITES["top-k"][:3])
        eager.update(**_inputs("ids", 1))
        eager.update(**_inputs("ids", 5 + rank))
        got, want = torch.load(tmp_path / f"{rank}.pt"), eager.compute()
        for key in want:
            torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=1e-12, equal_nan=True, msg=key)


def test_the_traced_modules_call_no_dict_setdefault_no_vars_and_no_locals():
    """torch 2.11's dynamo cannot trace ``dict.setdefault`` on an instance's ``__dict__``, nor the items of
    ``vars()`` of a dataclass ("Unsupported method call"): on the H100 runs every compiled update gave up
    and ran eagerly, first for ``hit_counts``' cache, then for ``Inputs.given``. The modules an update
    traces read and write their caches with ``get`` and item assignment, and read fields by name."""
    import ast
    from pathlib import Path

    package = Path(tre.__file__).parent
    traced = [path for folder in ("pipeline", "ranking", "pairwise", "beyond", "members", "sampled")
              for path in (package / folder).rglob("*.py") if path.name != "ownership.py"]  # (unpickling)
    # a user's torch.compile of a step traces update itself: locals() failed there on torch 2.11 (H100 run)
    updates = [node for path in (package / "metrics").glob("*.py") for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.FunctionDef) and node.name in ("update", "_update_from", "checked")]
    assert len(updates) >= 3
    assert [node.lineno for update in updates for node in ast.walk(update)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "locals"] == []
    calls = [f"{path.relative_to(package)}:{node.lineno}" for path in traced
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and (
                 (isinstance(node.func, ast.Name) and node.func.id == "vars")
                 or (isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault"
                     and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "__dict__"))]
    assert calls == []


def _graph_of(metric, inputs: dict) -> list:
    """The nodes of the graph dynamo traces for one compiled update of ``metric`` on ``inputs``."""
    graphs = []

    def record(graph, example_inputs):
        graphs.append(graph)
        return graph.forward

    torch._dynamo.reset()
    metric.compile_update(backend=record)
    metric.update(**inputs)
    assert len(graphs) == 1
    return list(graphs[0].graph.nodes)


@pytest.mark.parametrize("ties", ["index", "reverse_index"])
@pytest.mark.parametrize("form", ["ids", "exclude_ids"])
def test_the_graph_ranks_with_the_librarys_operator_or_counts_and_works_on_k_columns(form, ties):
    """The top-k and its tie repair are the library's own kernel inside the graph (the operator
    ``torchrec_eval::top_indices``), not inductor's sort and top-k with a repair masked over every row
    (4x the scores' memory, 7.9x a top-k on 1024 x 20,000), and no traced op makes a [B, N] tensor but a
    one-byte map of list positions where rows are short (N <= 4 x T x K). Where
    rows hold few targets the ids form counts their ranks instead (pipeline/counted_ranks.py): no operator,
    and the only wide values are the [B, T, N] comparisons and the [B, N] flags of finite scores, which
    inductor sums in its loops (the benchmark measures no extra memory for them). (The gain-aware
    tie orders need every candidate's gain: the ids form then builds a dense target.)"""
    for items, targets in ((N, 5), (3_000, 5), (3_000, 64)):
        inputs = _inputs(form, 0)
        gen = torch.Generator().manual_seed(1)
        rows = inputs["preds"].shape[0]
        inputs["preds"] = torch.randint(0, 4, (rows, items), generator=gen).float()
        inputs["target_ids"] = torch.stack([torch.randperm(items, generator=gen)[:targets] for _ in range(rows)])
        nodes = _graph_of(_suite(SUITES["top-k"][:6], ties=ties), inputs)
        functions = [node for node in nodes if node.op == "call_function"]
        wide = [(node, value) for node in functions
                if isinstance(value := node.meta.get("example_value"), torch.Tensor) and value.numel() >= rows * items]
        counted = form == "ids" and targets == 5
        assert (torch.ops.torchrec_eval.top_indices.default in [node.target for node in functions]) != counted
        if counted:
            assert wide and all(value.shape in ((rows, targets, items), (rows, items)) and value.dtype == torch.bool
                                for _, value in wide)
        elif form == "ids":  # many targets on short rows (N <= 4 x T x K): a one-byte map of list positions
            assert [value.dtype for _, value in wide] == [torch.uint8]
        else:
            assert wide == []


@pytest.mark.parametrize("form", ["dense", "ids", "ranked"])
def test_the_graph_sums_over_ranks_without_a_matrix_product_and_keeps_binary_hits_in_float32(form):
    """Compiled, a sum over ranks is a product and a sum that inductor fuses (a matrix product is an extern kernel
    whose input is a [B, K] buffer), a binary target's 0/1 hits are float32 (exact), and the state adds the sums
    of its parts (values, squares, counts) with no [B, 2P + C] concatenation (a buffer of its own): what brings
    the compiled update's extra memory to 0.1-0.25x the scores on 1024 x 101 (benchmarks/bench_compile.py)."""
    inputs = _inputs(form, 0)
    rows = inputs.pop("groups").shape[0]  # (by group, the state adds its rows with one index_add_)
    nodes = _graph_of(tre.RankingMetrics(SUITES["top-k"][:6], validate_args=False), inputs)
    targets = [node.target for node in nodes if node.op == "call_function"]
    assert not {operator.matmul, torch.matmul, torch.mm} & set(targets)
    hits = [value for node in nodes if isinstance(value := node.meta.get("example_value"), torch.Tensor)
            and value.shape == (rows, 20) and value.is_floating_point()]  # the suite's depth: recall@20
    assert hits and {value.dtype for value in hits} == {torch.float32}
    values = len(SUITES["top-k"][:6])
    assert not [value for node in nodes if isinstance(value := node.meta.get("example_value"), torch.Tensor)
                and value.shape == (rows, 2 * values + 1)]


@pytest.mark.parametrize("gains", [False, True])
@pytest.mark.parametrize("form", ["ids", "ranked"])
def test_the_graph_compares_a_few_targets_one_column_at_a_time(form, gains):
    """Compiled, the list reads a row's few targets (at most 16) one target column at a time: one fused loop
    over [B, K], where inductor's CPU loop reducing a [B, K, T] comparison over its T elements cost 3.5x as much
    (benchmarks/bench_compile.py table 1c: 0.43 against 0.12 ms on 1024 x 20 x 10). Equal to eager
    with binary and graded targets."""
    inputs = _inputs(form, 3)
    rows = inputs.pop("groups").shape[0]
    if form == "ids":  # rows too long for the map of list positions, and to count ten targets over: the list reads them
        inputs["preds"] = torch.randn(rows, 20_000, generator=torch.Generator().manual_seed(5))
        inputs["target_ids"] = torch.stack([torch.randperm(20_000)[:10] for _ in range(rows)])
    if gains:
        inputs["target_gains"] = torch.randint(0, 4, inputs["target_ids"].shape,
                                               generator=torch.Generator().manual_seed(4)).float()
    metrics = ["ndcg@10", "map@10", "recall@20", "precision@5", "mrr@10", "hitrate@5"]
    nodes = _graph_of(tre.RankingMetrics(metrics, validate_args=False), inputs)
    targets = inputs["target_ids"].shape[1]
    assert not [value for node in nodes if isinstance(value := node.meta.get("example_value"), torch.Tensor)
                and value.ndim == 3 and value.shape[0] == rows and value.shape[2] == targets]
    torch._dynamo.reset()
    compiled = tre.RankingMetrics(metrics, validate_args=False).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(metrics, validate_args=False)
    for metric in (compiled, eager):
        metric.update(**inputs)
    _assert_same(compiled, eager)


@pytest.mark.parametrize("rows", [1, 2])
def test_a_batch_of_one_row_stays_compiled(rows):
    """The operator's outputs are slices of one top-k result; for a single row a slice is contiguous yet still a
    view, and torch refused the outputs as aliases: every compiled update of one query gave up and ran eagerly."""
    torch._dynamo.reset()
    compiled = _suite(SUITES["top-k"][:6]).compile_update(backend="aot_eager")
    eager = _suite(SUITES["top-k"][:6])
    inputs = {name: value[:rows] for name, value in _inputs("ids", 0).items()}
    inputs["preds"] = torch.rand(inputs["preds"].shape, generator=torch.Generator().manual_seed(0))  # no tie
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph given up warns
        compiled.update(**inputs)
    eager.update(**inputs)
    assert compiled._compiled_step is not None
    _assert_same(compiled, eager)


@pytest.mark.parametrize("form", ["ids", "dense"])
def test_a_users_own_fullgraph_compile_of_a_step_that_updates(form):
    """A user compiles the step that calls ``update`` (a LightningModule's ``validation_step`` under
    ``torch.compile``): the update traces into that graph with ``fullgraph=True``, no break, on the accelerator
    path (no host read), and the graph adds into the metric's own state tensors in place (issue 53: what a
    capture needs), with the eager values."""
    torch._dynamo.reset()
    eager, inside = _suite(SUITES["top-k"][:6]), _suite(SUITES["top-k"][:6])
    states = {name: getattr(inside, name) for name in inside._defaults}

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step(**inputs):
        inside.update(**inputs)

    with simulate_accelerator():
        for seed in (0, 1):
            step(**_inputs(form, seed))
            eager.update(**_inputs(form, seed))
    assert all(getattr(inside, name) is state for name, state in states.items())
    _assert_same(inside, eager)


def test_a_users_cuda_graph_capture_of_a_step_that_updates(device):
    """A user captures a validation step that calls ``update`` in a ``torch.cuda.graph`` (static input buffers)
    and replays it: each replay adds that batch into the states, in place, with the eager values (issue 53; on
    a GPU only: the CPU has no graph to capture)."""
    if device.type != "cuda":
        pytest.skip("CUDA graphs need a GPU")
    captured, eager = _suite(SUITES["top-k"][:6]).to(device), _suite(SUITES["top-k"][:6])
    batches = [_inputs("ids", seed) for seed in range(3)]
    static = {name: value.to(device).clone() for name, value in batches[0].items()}
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):  # warm-up: the constants a batch shape needs are built outside the capture
        captured.update(**static)
        captured.reset()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # records the kernels, runs none: the states stay zero
        captured.update(**static)
    states = {name: getattr(captured, name) for name in captured._defaults}
    for batch in batches:
        for name, value in batch.items():
            static[name].copy_(value)
        graph.replay()
        eager.update(**batch)
    torch.cuda.synchronize(device)
    assert all(getattr(captured, name) is state for name, state in states.items())
    _assert_same(captured, eager)


@pytest.mark.parametrize("ties", ["index", "reverse_index", "pessimistic"])
@pytest.mark.parametrize("form", ["dense", "ids", "exclude_ids"])
def test_a_compiled_update_gives_the_cpu_values_on_every_device_without_a_sync(device, form, ties):
    """On CUDA the compiled update (the operator included) reads nothing on the host for any tie order
    (``set_sync_debug_mode("error")``), and its values are the CPU's eager ones. (On the CPU two cases:
    ``test_fullgraph_update_equals_eager`` covers the rest there.)"""
    if device.type == "cpu" and (form, ties) not in (("ids", "index"), ("exclude_ids", "pessimistic")):
        pytest.skip("the CPU's compiled values: test_fullgraph_update_equals_eager")
    torch._dynamo.reset()
    compiled = _suite(SUITES["top-k"][:6], ties=ties).to(device).compile_update(backend="aot_eager")
    eager = _suite(SUITES["top-k"][:6], ties=ties)
    inputs = [_inputs(form, seed, rows=rows) for seed, rows in ((0, 16), (1, 16))]
    on_device = [{name: value.to(device) for name, value in batch.items()} for batch in inputs]
    compiled.update(**on_device[0])  # compiles
    eager.update(**inputs[0])
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.set_sync_debug_mode("error")
    try:
        compiled.update(**on_device[1])
    finally:
        if device.type == "cuda":
            torch.cuda.set_sync_debug_mode("default")
    eager.update(**inputs[1])
    got, want = compiled.compute(), eager.compute()
    for key in want:
        torch.testing.assert_close(got[key].cpu(), want[key], rtol=1e-12, atol=1e-12, equal_nan=True, msg=key)
