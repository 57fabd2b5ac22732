"""A metric refuses sums that another configuration made: on ``load_state_dict``, ``merge_state`` and sync.

Each case here once went through without a word (or failed far from its cause): a strict load replaced
the state before raising, ``strict=False`` (Lightning's ``strict_loading=False``) adopted an NDCG@5
checkpoint as NDCG@10 or loaded into an ``IndexError`` at ``compute()``, and two ranks holding NDCG@5
and NDCG@10 returned one blended value. Now each raises a ``ValueError`` that names both
configurations, and the metric is left exactly as it was.
"""

from __future__ import annotations

import os
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torchrec_eval as tre
from tests.processes import FRESH_START_METHOD, free_port
from torchrec_eval.metrics import configuration_guard


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(6, 12, generator=gen), torch.rand(6, 12, generator=gen) < 0.3


def _persistent(metrics: list[str], **kwargs) -> tre.RankingMetrics:
    metric = tre.RankingMetrics(metrics, **kwargs)
    metric.persistent(True)
    return metric


def _checkpoint(metrics: list[str], **kwargs) -> dict[str, torch.Tensor]:
    metric = _persistent(metrics, **kwargs)
    groups = {"groups": torch.arange(6) % kwargs["num_groups"]} if "num_groups" in kwargs else {}
    metric.update(*_batch(), **groups)
    return metric.state_dict()


def _state(metric) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in metric.metric_state.items()}


def _assert_unchanged(metric, before: dict[str, torch.Tensor]) -> None:
    after = metric.metric_state
    assert after.keys() == before.keys()
    assert all(torch.equal(after[name], value) for name, value in before.items())


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("into", [["ndcg@5", "map@5"], ["ndcg@10", "auc"], ["ndcg@5"], ["ndcg@5", "auc", "mrr@5"]])
def test_a_checkpoint_of_another_suite_is_refused_and_nothing_changes(strict, into):
    saved = _checkpoint(["ndcg@5", "auc"])
    metric = _persistent(into)
    metric.update(*_batch(1))
    before = _state(metric)
    with pytest.raises(ValueError, match=r"not made by this metric's configuration.*config_.*RankingMetrics\("):
        metric.load_state_dict(saved, strict=strict)
    _assert_unchanged(metric, before)
    metric.update(*_batch(2))  # and it goes on
    metric.compute()


def test_a_checkpoint_of_the_same_suite_loads_and_computes_without_a_warning():
    saved = _persistent(["ndcg@5", "auc"])
    saved.update(*_batch())
    resumed = _persistent(["ndcg@5", "auc"])
    resumed.load_state_dict(saved.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "compute called before update" was raised here
        got = resumed.compute()
    want = saved.compute()
    assert all(torch.equal(got[key], want[key]) for key in want)


def test_a_checkpoint_of_other_groups_is_refused():
    saved = _checkpoint(["ndcg@5"], num_groups=2)
    metric = _persistent(["ndcg@5"], num_groups=3)
    before = _state(metric)
    with pytest.raises(ValueError, match=r"state `stats` of shape \(2, .*this metric's has shape \(3, .*num_groups"):
        metric.load_state_dict(saved, strict=False)
    _assert_unchanged(metric, before)


def test_states_without_a_configuration_are_refused():
    saved = {name: value for name, value in _checkpoint(["ndcg@5"]).items() if not name.startswith("config_")}
    metric = _persistent(["ndcg@10"])
    with pytest.raises(ValueError, match=r"names no configuration"):
        metric.load_state_dict(saved, strict=False)


def test_inside_a_module_the_prefix_is_checked_too():
    class Model(torch.nn.Module):
        def __init__(self, metrics: list[str]) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(2, 2)
            self.metric = _persistent(metrics)

    saved = Model(["ndcg@5"]).state_dict()
    model = Model(["precision@5"])
    with pytest.raises(ValueError, match="not made by this metric's configuration"):
        model.load_state_dict(saved, strict=False)
    Model(["ndcg@5"]).load_state_dict(saved)  # the same configuration loads


def test_merge_refuses_another_shape():
    metric = tre.RankingMetrics(["ndcg@5"], num_groups=3)
    other = tre.RankingMetrics(["ndcg@5"], num_groups=2)
    before = _state(metric)
    with pytest.raises(ValueError, match=r"`incoming_state` holds state `stats` of shape \(2,"):
        metric.merge_state(other.metric_state)
    with pytest.raises(ValueError, match=r"`incoming_state` holds state `stats` of shape \(2,"):
        metric.merge_state(other)
    _assert_unchanged(metric, before)


# ------------------------------------------------------------------------------------------- sync
class _Ranks:
    """torch.distributed as the guard sees it, with ranks whose metrics are ``others`` (this one is rank
    0): counts the collectives of the guard and of the sync (``dist_sync_fn``)."""

    def __init__(self, monkeypatch, *others) -> None:
        self.others, self.calls = others, 0
        monkeypatch.setattr(configuration_guard, "_distributed", lambda: True)
        monkeypatch.setattr(configuration_guard, "_gather_codes", self._codes)
        monkeypatch.setattr(configuration_guard, "_gather_texts", self._texts)

    def _codes(self, code: torch.Tensor, group=None) -> list[torch.Tensor]:
        self.calls += 1
        return [code, *(torch.tensor([_fingerprint(other)]) for other in self.others)]

    def _texts(self, text: torch.Tensor, group=None) -> list[torch.Tensor]:
        self.calls += 1
        return [text, *(torch.tensor(list(_description(other).encode()), dtype=torch.uint8) for other in self.others)]

    def __call__(self, tensor: torch.Tensor, group=None) -> list[torch.Tensor]:  # the states' dist_sync_fn
        self.calls += 1
        return [tensor] * (1 + len(self.others))


def _description(metric) -> str:
    return f"{metric._configuration_key()} {metric!r}"


def _fingerprint(metric) -> int:
    import hashlib

    return int(hashlib.sha1(metric._configuration_key().encode()).hexdigest()[:15], 16)


def test_ranks_of_another_configuration_raise_before_any_sum(monkeypatch):
    metric = tre.RankingMetrics(["ndcg@5"])
    metric.update(*_batch())
    ranks = _Ranks(monkeypatch, tre.RankingMetrics(["ndcg@10"]))
    with pytest.raises(ValueError, match=r"different configurations.*rank 0: .*ndcg@5.*rank 1: .*ndcg@10"):
        metric.sync(dist_sync_fn=ranks, distributed_available=lambda: True)
    assert ranks.calls == 2  # the fingerprints, then the descriptions: no state was gathered


def test_the_configuration_is_compared_once(monkeypatch):
    metric = tre.RankingMetrics(["ndcg@5", "auc"])
    metric.update(*_batch())
    ranks = _Ranks(monkeypatch, tre.RankingMetrics(["ndcg@5", "auc"]))
    states = sum(value.numel() > 0 for value in metric.metric_state.values())
    metric.sync(dist_sync_fn=ranks, distributed_available=lambda: True)
    metric.unsync()
    assert ranks.calls == 1 + states  # one more collective than the states, at the first sync
    metric.sync(dist_sync_fn=ranks, distributed_available=lambda: True)
    metric.unsync()
    assert ranks.calls == 1 + 2 * states  # and none the second time




def _rank_main(rank: int, port: int, suites: list[list[str]], out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        metric = tre.RankingMetrics(suites[rank])
        metric.update(*_batch(rank))
        try:
            result = {key: float(value) for key, value in metric.compute().items()}
        except ValueError as error:
            result = str(error)
        torch.save(result, os.path.join(out, f"{rank}.pt"))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.parametrize("suites", [
    [["ndcg@5"], ["ndcg@10"]],  # same state shape: the sums were blended
    [["ndcg@5", "map@5"], ["ndcg@5"]],  # other shapes: one rank failed in torch.stack, the other hung up
])
def test_two_processes_of_different_configurations_both_raise(tmp_path, suites):
    mp.start_processes(_rank_main, args=(free_port(), suites, str(tmp_path)), nprocs=2, join=True,
                       start_method=FRESH_START_METHOD)
    results = [torch.load(tmp_path / f"{rank}.pt") for rank in range(2)]
    assert all(isinstance(result, str) for result in results), results
    assert results[0] == results[1]  # every rank raises the same error
    assert "different configurations" in results[0] and repr(suites[0][0]).strip("'") in results[0]


@pytest.mark.parametrize("make", [
    lambda tasks: tre.PointwiseMetrics(["ne", "calibration"], tasks=tasks),
    lambda tasks: tre.NE(tasks=tasks),
])
def test_every_metric_refuses_sums_of_another_shape(monkeypatch, make):
    """Not only the ranking metrics: a pointwise metric of two tasks against one of three."""
    metric, other = make(["click", "buy"]), make(["click", "buy", "like"])
    metric.persistent(True)
    other.persistent(True)
    before = _state(metric)
    with pytest.raises(ValueError, match=r"The state_dict holds state `\w+` of shape \(1, 3,"):
        metric.load_state_dict(other.state_dict(), strict=False)
    with pytest.raises(ValueError, match=r"`incoming_state` holds state `\w+` of shape \(1, 3,"):
        metric.merge_state(other.metric_state)
    _assert_unchanged(metric, before)
    ranks = _Ranks(monkeypatch, other)
    with pytest.raises(ValueError, match="different configurations"):
        metric.sync(dist_sync_fn=ranks, distributed_available=lambda: True)
    assert ranks.calls == 2
