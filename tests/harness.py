"""One harness for a metric's life, in the spirit of torchmetrics' ``MetricTester`` and torcheval's
``run_class_implementation_tests``: given a metric factory, an independent oracle and a few batches,
:func:`check_metric` checks in one call that

* the class over all batches equals the oracle (never the code under test);
* the functional form of one batch equals the class on that batch;
* any split of the rows into updates gives the same value (unless the case says the value depends on
  where the updates begin and end: ``split_invariant=False``);
* ``forward`` returns the batch's own value and adds the batch;
* a persistent ``state_dict``, ``merge_state`` of two halves, ``pickle`` and ``copy.deepcopy`` keep the
  value, and the copies go on updating (a case that refuses ``merge_state`` by design, ``merges=False``:
  the merge raises and changes neither metric);
* dtype moves (``.float()``, ``.half()``, ``.double()``, and ``.to(torch.bfloat16)`` / ``.to(torch.float16)``
  as Lightning's "bf16-true" and "16-true" cast a module) keep float64 states and the value;
* ``torch.inference_mode`` (Lightning's evaluation loops) in any order with normal mode: built, reset,
  updated and computed in one mode, updated in the other, the value is exact;
* two copies in torchmetrics' ``MetricCollection`` (a prefix, the same keys in both members, with and
  without ``compute_groups``, ``update`` and ``forward``) each give the value, states shared and copied;

and :func:`check_processes` that 2 gloo processes, each with its share of the batches, compute the
one-process value on every rank (or the value the case documents across processes: ``across_processes``).
A result that is not a tensor of one value or a dict of them (a curve's tuple, a [num_groups] tensor)
is read by the case's ``flatten`` into key -> float for every comparison. A family's tests give it
cases; no test module imports another's helpers.
"""

from __future__ import annotations

import copy
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torchmetrics import Metric, MetricCollection

from tests.processes import FRESH_START_METHOD, free_port

Batch = dict[str, torch.Tensor]


@dataclass
class MetricCase:
    """A metric under test.

    Attributes:
        name: for messages.
        make: builds a fresh metric.
        batches: keyword inputs of ``update``, one dict per batch (every tensor [B, ...] by row).
        expected: the oracle's values over all batches (key -> float; NaN allowed).
        functional: the functional form of one batch (keyword inputs -> value), if the metric has one.
        atol: the tolerance of every comparison (float64 sums).
        flatten: a result of ``compute``, ``forward`` or the functional form -> key -> float (the keys of
            ``expected``), for results that are neither a tensor of one value nor a dict of them: a
            curve's tuple of tensors, a [num_groups] tensor per key. None: :func:`values`.
        split_invariant: False for a metric whose value depends on where the updates begin and end
            (``Windowed``: the window holds the last W updates): the re-splits of the rows are left out,
            every other check runs on the batches as given.
        merges: False for a metric that refuses ``merge_state`` by design (``Windowed``: torchmetrics has no
            merge for a metric with ``full_state_update``, and two windows have no order to merge in): the
            harness checks that the merge raises and leaves both metrics as they were.
        across_processes: the oracle's values when the batches are dealt to processes (each rank's
            share, in order) for a metric whose synced value means something else than one process's
            (``Windowed``: the union of each rank's window); None: ``expected`` on every rank.
    """

    name: str
    make: Callable[[], Metric]
    batches: list[Batch]
    expected: dict[str, float]
    functional: Callable[..., Any] | None = None
    atol: float = 1e-12
    flatten: Callable[[Any], dict[str, float]] | None = None
    split_invariant: bool = True
    merges: bool = True
    across_processes: Callable[[list[list[Batch]]], dict[str, float]] | None = None

    def read(self, result: Any) -> dict[str, float]:
        """A result of this case's metric as key -> float: ``flatten``, or :func:`values`."""
        return self.flatten(result) if self.flatten is not None else values(result, list(self.expected))


def values(result: Any, keys: list[str] | None = None) -> dict[str, float]:
    """A ``compute()`` or ``forward()`` result as key -> float (a single tensor under ``keys[0]``)."""
    if isinstance(result, dict):
        return {key: float(value) for key, value in result.items()}
    return {(keys or ["value"])[0]: float(result)}


def assert_values(got: dict[str, float], want: dict[str, float], atol: float, what: str) -> None:
    assert got.keys() == want.keys(), (what, sorted(got), sorted(want))
    for key, value in want.items():
        torch.testing.assert_close(torch.tensor(got[key], dtype=torch.float64), torch.tensor(value, dtype=torch.float64),
                                   rtol=0, atol=atol, equal_nan=True, msg=f"{what}: {key}")


def concatenated(batches: list[Batch]) -> Batch:
    return {name: torch.cat([batch[name] for batch in batches]) for name in batches[0]}


def _rows(batch: Batch, rows: torch.Tensor) -> Batch:
    return {name: value[rows] for name, value in batch.items()}


def updated(case: MetricCase, batches: list[Batch]) -> Metric:
    metric = case.make()
    for batch in batches:
        metric.update(**batch)
    return metric


def check_metric(case: MetricCase) -> None:
    """Every single-process check of the module docstring, on ``case``."""
    want = case.expected
    assert_values(case.read(updated(case, case.batches).compute()), want, case.atol, f"{case.name} vs the oracle")
    _check_functional(case)
    _check_splits(case, want)
    _check_forward(case, want)
    _check_copies(case, want)
    _check_moves(case, want)
    _check_collection(case, want)
    _check_inference_mode(case, want)


def _check_functional(case: MetricCase) -> None:
    if case.functional is None:
        return
    for batch in case.batches:
        got = case.read(case.functional(**batch))
        assert_values(got, case.read(updated(case, [batch]).compute()), case.atol, f"{case.name} functional")


def _check_splits(case: MetricCase, want: dict[str, float]) -> None:
    if not case.split_invariant:
        return
    whole = concatenated(case.batches)
    rows = next(iter(whole.values())).shape[0]
    generator = torch.Generator().manual_seed(0)
    order = torch.randperm(rows, generator=generator)
    for parts in (1, 2, rows):
        batches = [_rows(whole, chunk) for chunk in order.tensor_split(parts)]
        assert_values(case.read(updated(case, batches).compute()), want, case.atol, f"{case.name} in {parts} parts")


def _check_forward(case: MetricCase, want: dict[str, float]) -> None:
    metric = case.make()
    for batch in case.batches:
        got = case.read(metric(**batch))
        assert_values(got, case.read(updated(case, [batch]).compute()), case.atol, f"{case.name} forward")
    assert_values(case.read(metric.compute()), want, case.atol, f"{case.name} after forward")


def _check_copies(case: MetricCase, want: dict[str, float]) -> None:
    first, rest = case.batches[:1], case.batches[1:]
    saved = updated(case, first)
    saved.persistent(True)
    loaded = case.make()
    loaded.persistent(True)
    loaded.load_state_dict(saved.state_dict())
    copies = {"state_dict": loaded, "pickle": pickle.loads(pickle.dumps(saved)), "deepcopy": copy.deepcopy(saved)}
    for how, metric in copies.items():
        for batch in rest:
            metric.update(**batch)
        assert_values(case.read(metric.compute()), want, case.atol, f"{case.name} through {how}")
    _check_merge(case, want)


def _check_merge(case: MetricCase, want: dict[str, float]) -> None:
    first, rest = case.batches[:1], case.batches[1:]
    halves = updated(case, rest)
    merged = updated(case, first)
    if case.merges:
        merged.merge_state(halves)
        assert_values(case.read(merged.compute()), want, case.atol, f"{case.name} merge_state")
        return
    states = [copy.deepcopy(metric.metric_state) for metric in (merged, halves)]
    try:
        merged.merge_state(halves)
    except (RuntimeError, ValueError):
        pass  # refused, as the case says; both metrics must be as they were
    else:
        raise AssertionError(f"{case.name}: merge_state was expected to be refused")
    for metric, before in zip((merged, halves), states, strict=True):
        for name, state in before.items():
            torch.testing.assert_close(metric.metric_state[name], state, rtol=0, atol=0,
                                       msg=f"{case.name}: {name} after a refused merge_state")
    assert_values(case.read(updated(case, first).compute()), case.read(merged.compute()), case.atol,
                  f"{case.name} after a refused merge_state")


def _check_moves(case: MetricCase, want: dict[str, float]) -> None:
    for move in (lambda m: m.float(), lambda m: m.half(), lambda m: m.double(), lambda m: m.to(torch.bfloat16),
                 lambda m: m.to(torch.float16)):
        metric = move(updated(case, case.batches))
        for name in metric._defaults:
            state = getattr(metric, name)
            if isinstance(state, torch.Tensor) and state.is_floating_point():
                assert state.dtype == torch.float64, (case.name, name, state.dtype)
        assert_values(case.read(metric.compute()), want, case.atol, f"{case.name} after a dtype move")


def _check_inference_mode(case: MetricCase, want: dict[str, float]) -> None:
    for first in (True, False):  # the first batch inside inference mode, then alternately, or the reverse
        with torch.inference_mode(first):
            metric = case.make()
            metric.reset()
        for i, batch in enumerate(case.batches):
            with torch.inference_mode(first == (i % 2 == 0)):
                metric.update(**batch)
                metric.compute()  # a value logged in the middle of the epoch
        with torch.inference_mode(not first):
            assert_values(case.read(metric.compute()), want, case.atol, f"{case.name} across inference mode")
            metric.reset()
        for batch in case.batches:  # reset in one mode, updated in the other
            metric.update(**batch)
        assert_values(case.read(metric.compute()), want, case.atol, f"{case.name} after an inference-mode reset")


def _check_collection(case: MetricCase, want: dict[str, float]) -> None:
    result = updated(case, case.batches[:1]).compute()
    keys = list(result) if isinstance(result, dict) else None  # the metric's own keys (not flattened ones)
    for groups in (True, False):  # a compute group shares one member's states with the other, by reference
        for call in ("update", "forward"):
            collection = MetricCollection({"a": case.make(), "b": case.make()}, prefix="val/", compute_groups=groups)
            for batch in case.batches:
                (collection.update if call == "update" else collection)(**batch)
            copies = {name: case.read(member.compute()) for name, member in collection.items(copy_state=True)}
            results = collection.compute()
            for member in ("a", "b"):  # torchmetrics' keys: the member's name before a key that both members give
                own = results[f"val/{member}"] if keys is None else {key: results[f"val/{member}_{key}"] for key in keys}
                what = f"{case.name} in a MetricCollection ({call}, groups={groups})"
                assert_values(case.read(own), want, case.atol, what)
                assert_values(copies[f"val/{member}"], want, case.atol, f"{what}, states copied")


# ------------------------------------------------------------------------------------------- processes


def _rank(rank: int, world: int, port: int, build: Callable[[str], MetricCase], names: list[str], out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        results = {}
        for name in names:
            case = build(name)
            metric = updated(case, case.batches[rank::world])  # a rank may get no batch at all
            results[name] = case.read(metric.compute())
        torch.save(results, os.path.join(out, f"{rank}.pt"))
    finally:
        dist.destroy_process_group()


def check_processes(build: Callable[[str], MetricCase], names: list[str], out: str, world: int = 2) -> None:
    """Run ``build(name)``'s metric on ``world`` gloo processes (batches dealt round robin) for every
    name in one start of the processes, and compare every rank's value with the oracle's (the case's
    ``across_processes`` of the ranks' shares, where it has one). ``build`` must be a module-level
    function (the start method, "forkserver" or "spawn", pickles it)."""
    mp.start_processes(_rank, args=(world, free_port(), build, names, out), nprocs=world, join=True,
                       start_method=FRESH_START_METHOD)
    for rank in range(world):
        results = torch.load(os.path.join(out, f"{rank}.pt"))
        for name in names:
            case = build(name)
            shares = [case.batches[r::world] for r in range(world)]
            want = case.expected if case.across_processes is None else case.across_processes(shares)
            assert_values(results[name], want, case.atol, f"{name} on rank {rank} of {world}")
