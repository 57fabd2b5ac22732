"""The thin replay path of a compiled update (issue 53): once an input signature has compiled, a call of it runs
the kept graph without Dynamo's guards (``metrics/replay.py``), with the eager values; anything the signature
does not pin goes through Dynamo."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

import torchrec_eval as tre
from torchrec_eval.metrics.replay import ReplayedCompile, signature
from torchrec_eval.syncs import simulate_accelerator

KEYS = ["ndcg@10", "map@10", "recall@20", "precision@5", "mrr@10", "hitrate@5"]


def _batch(seed: int, rows: int = 8, items: int = 60) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {"preds": torch.randint(0, 5, (rows, items), generator=gen).float(),  # ties at the cut-off
            "target_ids": torch.randint(-1, items, (rows, 6), generator=gen)}


def _assert_same(got: dict, want: dict) -> None:
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=1e-12, atol=1e-12, msg=key)


def test_a_known_signature_replays_its_graph_with_the_eager_values():
    torch._dynamo.reset()
    compiled = tre.RankingMetrics(KEYS, validate_args=False).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(KEYS, validate_args=False)
    with simulate_accelerator():
        for seed in range(4):
            compiled.update(**_batch(seed))
            eager.update(**_batch(seed))
    assert compiled._compiled_step.replayed == 3  # the first call compiled; the three others replayed
    _assert_same(compiled.compute(), eager.compute())


def test_a_new_layout_goes_through_dynamo_and_then_replays_too():
    """Other rows (a dynamic graph after the second shape: its sizes are read from the call), a transposed
    (strided) score matrix, float64 scores and inference tensors each compile or find their own graph: the
    values are eager's for every one of them, in any order."""
    torch._dynamo.reset()
    compiled = tre.RankingMetrics(KEYS[:2], validate_args=False).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(KEYS[:2], validate_args=False)
    batches = [_batch(0), _batch(1, rows=5), _batch(2, rows=3), _batch(3)]
    strided = _batch(4)
    strided["preds"] = strided["preds"].t().contiguous().t()
    batches += [strided, {**_batch(5), "preds": _batch(5)["preds"].double()}]
    for batch in batches * 2:
        compiled.update(**batch)
        eager.update(**batch)
    with torch.inference_mode():
        inference = _batch(6)
    compiled.update(**inference)
    eager.update(**inference)
    assert compiled._compiled_step.replayed >= 4
    _assert_same(compiled.compute(), eager.compute())


def test_the_signature_pins_the_layout_and_the_global_state():
    preds = torch.zeros(4, 6)
    base = signature({"preds": preds, "target": None})
    assert signature({"preds": preds.clone(), "target": None}) == base  # values are no part of it
    assert signature({"preds": torch.zeros(4, 6).t().contiguous().t(), "target": None}) != base  # strides
    assert signature({"preds": preds.double(), "target": None}) != base
    assert signature({"preds": preds, "target": torch.zeros(4, 6)}) != base
    with torch.no_grad():
        assert signature({"preds": preds, "target": None}) != base
    with torch.autocast("cpu"):
        assert signature({"preds": preds, "target": None}) != base
    with torch.inference_mode():
        inference = torch.zeros(4, 6)
    assert signature({"preds": inference, "target": None}) != base
    assert signature({"preds": preds, "target": preds}) != signature({"preds": preds, "target": preds.clone()})
    assert signature({"preds": preds, "k": 3}) is None  # a Python value a graph may be specialised to


def test_a_tensor_passed_as_two_inputs_is_another_signature():
    """``update(x, x)`` compiles a graph with one input for both (Dynamo's): replayed for two distinct tensors
    of that layout it read the scores as the relevance too, NDCG 1.0 for 0.60 (a silent wrong number)."""
    compiled = tre.RankingMetrics(["ndcg@5", "map@5"], validate_args=False).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(["ndcg@5", "map@5"], validate_args=False)
    gen = torch.Generator().manual_seed(0)
    same = torch.rand(4, 20, generator=gen)
    batches = [(same, same)] + [(torch.rand(4, 20, generator=gen), (torch.rand(4, 20, generator=gen) > 0.7).float())
                                for _ in range(2)]
    for preds, target in batches:
        compiled.update(preds, target)
        eager.update(preds, target)
    assert compiled._compiled_step.replayed == 1
    _assert_same(compiled.compute(), eager.compute())


def test_a_graph_that_reads_more_than_its_call_is_never_replayed():
    """A graph with an input that is not the call's (a tensor the function closes over) goes through Dynamo at
    every call, so it sees that tensor change."""
    scale = torch.ones(3)
    scaled = ReplayedCompile(lambda owner, inputs: (inputs["x"] * scale,), None, {"backend": "aot_eager"})
    x = torch.arange(3.0)
    assert torch.equal(scaled({"x": x})[0], x)
    scale.mul_(2)
    assert torch.equal(scaled({"x": x})[0], 2 * x)
    assert scaled.replayed == 0


def test_a_compiled_update_inside_a_users_compiled_step_is_traced_into_it():
    """A ``compile_update``d metric updated in a user's compiled step: its update is part of the user's graph
    (building its own compiled function there broke the user's graph)."""
    torch._dynamo.reset()
    compiled = tre.RankingMetrics(KEYS[:3], validate_args=False).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(KEYS[:3], validate_args=False)

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step(batch):
        compiled.update(**batch)

    with simulate_accelerator():
        for seed in (0, 1):
            step(_batch(seed))
            eager.update(**_batch(seed))
    assert compiled._compiled_step is None  # no graph of its own: the user's holds the update
    _assert_same(compiled.compute(), eager.compute())


def test_a_graph_whose_direct_run_differs_from_dynamos_is_not_kept(monkeypatch):
    """The check on the call that compiled a graph: a direct run that gives other outputs (here swapped, as a
    graph whose outputs Dynamo reordered would) keeps nothing, and every call goes through Dynamo."""
    from torchrec_eval.metrics import replay

    direct = replay._Graph.run
    monkeypatch.setattr(replay._Graph, "run", lambda graph, inputs, owner: direct(graph, inputs, owner)[::-1])
    pair = ReplayedCompile(lambda owner, inputs: (inputs["x"] * 2, inputs["x"] + 1), None, {"backend": "aot_eager"})
    x = torch.arange(3.0)
    for _ in range(3):
        doubled, shifted = pair({"x": x})
        assert torch.equal(doubled, 2 * x) and torch.equal(shifted, x + 1)
    assert pair.replayed == 0


def test_a_second_metric_of_the_process_replays_too():
    """Dynamo's automatic dynamic shapes are kept by source name, so a first metric's changing batches (and its
    state of another width) made the second metric's state sizes symbols: its state became a graph input, and
    no graph of it was ever kept. Its states' sizes are static now."""
    torch._dynamo.reset()
    first = tre.RankingMetrics(KEYS[2:5], validate_args=False).compile_update(backend="aot_eager")
    for rows in (8, 5, 3):
        first.update(**_batch(rows, rows=rows))
    second = tre.RankingMetrics(["ndcg@5", "map@5"], validate_args=False).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(["ndcg@5", "map@5"], validate_args=False)
    for seed in range(3):
        second.update(**_batch(seed))
        eager.update(**_batch(seed))
    assert second._compiled_step.replayed == 2
    _assert_same(second.compute(), eager.compute())


def test_a_suite_with_tables_of_its_own_replays_and_reads_them_at_each_call():
    """Novelty's popularity and PSnDCG's propensities are the metric's buffers, inputs of its graph: a replay
    reads the current ones (a buffer replaced, as ``.to(device)`` replaces it, is the one the next update uses)."""
    torch._dynamo.reset()
    items = 60
    options = {"novelty": {"item_popularity": torch.arange(items) % 7},
               "psndcg": {"inverse_propensity": 1 + 1 / (1 + torch.arange(items) % 7)}}
    keys = ["novelty@5", "psndcg@5", "ndcg@5"]
    compiled = tre.RankingMetrics(keys, validate_args=False, options=options).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(keys, validate_args=False, options=options)
    for seed in range(3):
        compiled.update(**_batch(seed, items=items))
        eager.update(**_batch(seed, items=items))
    assert compiled._compiled_step.replayed == 2
    for metric in (compiled, eager):
        for name, buffer in list(metric._buffers.items()):
            if buffer is not None and buffer.is_floating_point():
                metric._buffers[name] = buffer.flip(0).contiguous()  # the same layout, other values
    compiled.update(**_batch(3, items=items))
    eager.update(**_batch(3, items=items))
    assert compiled._compiled_step.replayed == 3
    _assert_same(compiled.compute(), eager.compute())


def test_a_cuda_graph_replayed_without_dynamo_gives_the_cpu_values(device):
    """``compile_update(mode="reduce-overhead")`` on a GPU: the kept graph is the CUDA graph inductor built, and
    its replays (whose outputs the next replay overwrites: the update adds them at once) give the CPU's eager
    values, with no host sync (on a GPU only: the CPU has no CUDA graph)."""
    if device.type != "cuda":
        pytest.skip("CUDA graphs need a GPU")
    torch._dynamo.reset()
    compiled = tre.RankingMetrics(KEYS, validate_args=False).to(device).compile_update(mode="reduce-overhead")
    eager = tre.RankingMetrics(KEYS, validate_args=False)
    batches = [_batch(seed) for seed in range(6)]
    on_device = [{name: value.to(device) for name, value in batch.items()} for batch in batches]
    for batch, moved in zip(batches[:3], on_device[:3], strict=True):  # compiles; the CUDA graph trees record
        compiled.update(**moved)
        eager.update(**batch)
    torch.cuda.synchronize(device)
    torch.cuda.set_sync_debug_mode("error")
    try:
        for moved in on_device[3:]:
            compiled.update(**moved)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for batch in batches[3:]:
        eager.update(**batch)
    assert compiled._compiled_step.replayed == 5
    _assert_same({key: value.cpu() for key, value in compiled.compute().items()}, eager.compute())


def test_a_process_compiles_many_configurations_without_reaching_dynamos_recompile_limit():
    """Every compiled metric compiled through one wrapper of Dynamo's (a ``functools.partial``'s), whose entries
    Dynamo counts against its recompile limit of 8: the ninth configuration of a process gave up compiling (a
    warning, then eager updates), and, once each metric's backend was its own, the ninth metric of any
    configuration. Each has a code object of its own now."""
    for k in range(2, 11):  # nine configurations, one batch each
        compiled = tre.RankingMetrics([f"ndcg@{k}"], validate_args=False).compile_update(backend="aot_eager")
        eager = tre.RankingMetrics([f"ndcg@{k}"], validate_args=False)
        compiled.update(**_batch(k))
        eager.update(**_batch(k))
        assert compiled._compile_options is not None, k
        _assert_same(compiled.compute(), eager.compute())


def test_a_weighted_update_is_compiled_and_replayed_too():
    """``sample_weight`` (``weighted=True``) ran every update eagerly under ``compile_update``; its weights are an
    input of the graph now, with the eager values, and a bad weight still raises the eager path's error with the
    state and the graph kept."""
    torch._dynamo.reset()
    compiled = tre.RankingMetrics(KEYS, validate_args=False, weighted=True).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(KEYS, validate_args=False, weighted=True)
    gen = torch.Generator().manual_seed(3)
    for seed in range(3):
        weight = torch.rand(8, generator=gen) * 3
        compiled.update(**_batch(seed), sample_weight=weight)
        eager.update(**_batch(seed), sample_weight=weight)
    assert compiled._compiled_step.replayed == 2
    _assert_same(compiled.compute(), eager.compute())
    before = {name: value.clone() for name, value in compiled.metric_state.items()}
    with pytest.raises(ValueError, match="`sample_weight` must be a number tensor of shape"):
        compiled.update(**_batch(4), sample_weight=torch.ones(5))
    assert all(torch.equal(compiled.metric_state[name], value) for name, value in before.items())
    assert compiled._compile_options is not None


def test_bf16_tied_logits_and_a_failed_update_between_replays():
    """bf16 logits of an untrained model (few distinct values: ties at every cut-off), replayed, a bad batch in
    between that raises the eager path's error and leaves the state as it was, then replays again: the eager
    values."""
    torch._dynamo.reset()
    compiled = tre.RankingMetrics(KEYS, validate_args=False).compile_update(backend="aot_eager")
    eager = tre.RankingMetrics(KEYS, validate_args=False)
    batches = [{**batch, "preds": (batch["preds"] / 8).to(torch.bfloat16)} for batch in map(_batch, range(4))]
    for batch in batches[:2]:
        compiled.update(**batch)
        eager.update(**batch)
    before = {name: value.clone() for name, value in compiled.metric_state.items()}
    with pytest.raises(ValueError, match="`target_ids`"):
        compiled.update(preds=batches[2]["preds"], target_ids=batches[2]["target_ids"][:3])
    assert all(torch.equal(compiled.metric_state[name], value) for name, value in before.items())
    for batch in batches[2:]:
        compiled.update(**batch)
        eager.update(**batch)
    assert compiled._compiled_step.replayed == 3
    _assert_same(compiled.compute(), eager.compute())
