"""RankingMetrics in lightning.Trainer on CPU: logged values equal a plain loop, also with ddp_spawn."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

L = pytest.importorskip("lightning")

import torchrec_eval as tre  # noqa: E402
from tests.lightning_models import (  # noqa: E402
    BATCH,
    SUITE,
    TRAINER_KWARGS,
    TinyMF,
    interaction_datasets,
    plain_loop,
)


class RecordLogged(L.Callback):
    def __init__(self) -> None:
        self.epochs: list[dict[str, float]] = []

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.epochs.append({key: float(value) for key, value in trainer.callback_metrics.items()})




def assert_same(got: dict[str, float], expected: dict[str, float], tol: float = 1e-12) -> None:
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=tol), key


@pytest.fixture(scope="module")
def data() -> tuple[DataLoader, DataLoader]:
    train, val = interaction_datasets()
    return DataLoader(train, batch_size=32, shuffle=True), DataLoader(val, batch_size=BATCH)


def test_validate_logs_the_plain_loop_values_and_resets(data):
    _, val_loader = data
    model = TinyMF()
    expected = plain_loop(model, val_loader)
    assert list(expected) == [
        "ndcg@5",
        "recall@10",
        "precision@5",
        "hitrate@5",
        "map@10",
        "mrr@10",
        "rprecision",
    ]
    trainer = L.Trainer(**TRAINER_KWARGS)
    first = trainer.validate(model, dataloaders=val_loader, verbose=False)[0]
    second = trainer.validate(model, dataloaders=val_loader, verbose=False)[0]
    assert_same(first, expected)
    assert_same(second, expected)  # the suite was reset, not accumulated over two runs
    assert float(model.suite.stats.abs().sum()) == 0.0  # left reset after the epoch


def test_fit_logs_each_epoch_from_a_fresh_state(data):
    train_loader, val_loader = data
    L.seed_everything(0, verbose=False)
    model, record = TinyMF(), RecordLogged()
    trainer = L.Trainer(max_epochs=2, limit_train_batches=3, callbacks=[record], **TRAINER_KWARGS)
    trainer.fit(model, train_dataloaders=train_loader, val_dataloaders=val_loader)
    assert len(record.epochs) == 2
    assert record.epochs[0] != record.epochs[1]  # the model trained between the two validations
    # The last epoch's values are those of the final weights alone: no state carried over from epoch 1.
    assert_same(record.epochs[1], plain_loop(model, val_loader))


def test_log_dict_of_the_suite_object(data):
    _, val_loader = data
    model = TinyMF(log_objects=True)
    expected = plain_loop(model, val_loader)
    trainer = L.Trainer(**TRAINER_KWARGS)
    assert_same(trainer.validate(model, dataloaders=val_loader, verbose=False)[0], expected)
    assert_same(
        trainer.validate(model, dataloaders=val_loader, verbose=False)[0], expected
    )  # Lightning reset it


def test_log_dict_of_the_suite_object_syncs_once_per_epoch(data):
    """Lightning computes each logged key; the suite syncs its state once for all of them."""
    _, val_loader = data
    synced: list[tuple[int, ...]] = []

    def counting_sync(tensor: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
        synced.append(tuple(tensor.shape))
        return [tensor]  # one process: the gathered list is this state alone

    model = TinyMF(log_objects=True)
    model.suite = tre.RankingMetrics(SUITE["metrics"], dist_sync_fn=counting_sync,
                                     distributed_available_fn=lambda: True)
    expected = plain_loop(model, val_loader)
    trainer = L.Trainer(**TRAINER_KWARGS)
    for epoch in (1, 2):
        assert_same(trainer.validate(model, dataloaders=val_loader, verbose=False)[0], expected)
        assert len(SUITE["metrics"]) == 7 and synced == [tuple(model.suite.stats.shape)] * epoch


@pytest.mark.slow
@pytest.mark.usefixtures("master_port")
def test_ddp_spawn_two_processes_log_the_same_values_as_one(data):
    _, val_loader = data
    model = TinyMF()
    single = L.Trainer(devices=1, **TRAINER_KWARGS).validate(model, dataloaders=val_loader, verbose=False)[0]
    # Each process validates half of the users (Lightning's DistributedSampler); the suite's compute()
    # sums the two states over gloo before the values are logged.
    trainer = L.Trainer(devices=2, strategy="ddp_spawn", **TRAINER_KWARGS)
    double = trainer.validate(model, dataloaders=val_loader, verbose=False)[0]
    assert_same(single, plain_loop(model, val_loader))
    assert_same(double, single)


class _ChunkedCatalogue(L.LightningModule):
    """validation_step scores a 1,000-item catalogue in chunks of 128 into ``metrics.catalogue``."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(5)
        self.users = nn.Parameter(torch.randn(40, 8, generator=gen))
        self.items = nn.Parameter(torch.randn(1_000, 8, generator=gen))
        self.metrics = tre.RankingMetrics(["ndcg@10", "recall@50", "auc", "mpr"])

    def validation_step(self, batch, batch_idx):
        users, targets = batch
        emb = self.users[users]
        target_scores = (emb.unsqueeze(1) * self.items[targets.clamp(min=0)]).sum(-1)
        with self.metrics.catalogue(1_000, target_ids=targets, target_scores=target_scores) as scored:
            for start in range(0, 1_000, 128):
                scored.add(emb @ self.items[start : start + 128].T, offset=start)
        self.log_dict(self.metrics, batch_size=len(users))


def test_catalogue_in_a_validation_step_logs_the_dense_values(tmp_path):
    gen = torch.Generator().manual_seed(6)
    targets = torch.randint(0, 1_000, (40, 3), generator=gen)
    targets[:, 1:] = torch.where(targets[:, 1:] == targets[:, :1], -1, targets[:, 1:])
    targets[:, 2] = torch.where(targets[:, 2] == targets[:, 1], -1, targets[:, 2])
    loader = DataLoader(TensorDataset(torch.arange(40), targets), batch_size=16)
    model = _ChunkedCatalogue()
    logged = L.Trainer(default_root_dir=tmp_path, **TRAINER_KWARGS).validate(model, loader, verbose=False)[0]
    dense = tre.RankingMetrics(["ndcg@10", "recall@50", "auc", "mpr"])
    with torch.no_grad():
        scores = model.users @ model.items.T
        rows = torch.arange(40).unsqueeze(1).expand_as(targets)
        present = targets >= 0
        own = (model.users.unsqueeze(1) * model.items[targets.clamp(min=0)]).sum(-1)
        scores[rows[present], targets[present]] = own[present]  # the target scores stand for these entries
        dense.update(scores, target_ids=targets)
    for key, value in dense.compute().items():
        assert logged[key] == pytest.approx(float(value), abs=1e-6), key  # logged values are float32


LONG_ITEMS, LONG_USERS = 20_000, 48  # rows long enough for the deeper read of coarse (bf16) scores
RELEVANT, JUDGED, POOLED = 5, 3, 3  # per user: relevant targets (gains 1..3), judged non-relevant (0), pooled (-1)
LONG_SUITE = ["ndcg@10", "recall@20", "mrr@10", "map@10", "err@10", "rbp@20", "sdcg@10", "ncrr@10", "setf@20",
              "interpolated_ap@20",  # the peers' families too: bf16 ties, a failed update, a checkpoint, 2 processes
              # issue 37's later families: every candidate (FallOut, pAUC), the judgments and the pool (bpref,
              # Judged, infAP), R alone, propensities (pooled ratios), intents (a greedy ideal per batch)
              "fallout@20", "pauc@20", "num_rel", "bpref@20", "judged@10", "infap@20", "psp@10", "psndcg@10",
              "alpha_ndcg@10", "alpha_dcg@10", "err_ia@10", "nerr_ia@10"]
OVERLAP = {"intersection@10": lambda: tre.Intersection(k=10), "jaccard@10": lambda: tre.Jaccard(k=10),
           "rbo@10": lambda: tre.RBO(k=10)}  # against a second model's bf16 lists
CURVE_K, MIN_PRECISION = 5, 0.05


def _long_tables() -> tuple[torch.Tensor, torch.Tensor]:
    """Each item's intents (4, multi-hot) and inverse propensity, seeded (the same in every process)."""
    gen = torch.Generator().manual_seed(11)
    return (torch.rand(LONG_ITEMS, 4, generator=gen) < 0.35).long(), 1 + 3 * torch.rand(LONG_ITEMS, generator=gen)


def _long_options() -> dict[str, dict[str, Any]]:
    intents, propensity = _long_tables()
    return {"psp": {"inverse_propensity": propensity}, "psndcg": {"inverse_propensity": propensity},
            **{family: {"item_intents": intents} for family in ("alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia")}}


class _Bf16Catalogue(L.LightningModule):
    """bf16 logits under autocast over 20,000 items; each validation step first makes a bad update
    (ids out of range: a ValueError the step catches), then the good one, into two suites logged the
    two ways: ``suite``'s values at the epoch's end, ``logged``'s objects at each step (Lightning computes,
    syncs and resets it itself), under ``obj/``; and the metrics outside a suite at the epoch's end: the
    overlap with a second model's lists, the precision-recall curve and the recall read off it."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(9)
        self.user = nn.Parameter(torch.randn(LONG_USERS, 8, generator=gen))
        self.item = nn.Parameter(torch.randn(LONG_ITEMS, 8, generator=gen))
        # the reference model's items, near the model's (lists that overlap in part); fixed: no parameter without a
        # gradient under DDP, rebuilt (not checkpointed)
        other = self.item.detach() + 0.3 * torch.randn(LONG_ITEMS, 8, generator=gen)
        self.register_buffer("other", other, persistent=False)
        self.suite = tre.RankingMetrics(LONG_SUITE, options=_long_options())
        self.logged = tre.RankingMetrics(LONG_SUITE, prefix="obj/", options=_long_options())
        self.overlap = nn.ModuleDict({name.replace("@", "_at_"): make() for name, make in OVERLAP.items()})
        self.curve = tre.PrecisionRecallCurve(max_k=CURVE_K)
        self.at_precision = tre.RecallAtFixedPrecision(MIN_PRECISION, max_k=20)
        self.dump_to: Any = None  # a folder: each step saves the logits the metric saw (the oracle's input)

    def forward(self, users: torch.Tensor) -> torch.Tensor:
        return self.user[users] @ self.item.T

    def training_step(self, batch, batch_idx):
        users, targets, _, _ = batch
        return nn.functional.cross_entropy(self(users).float(), targets[:, 0])

    def validation_step(self, batch, batch_idx):
        users, targets, gains, excluded = batch
        scores, others = self(users), self.user[users] @ self.other.T
        assert scores.dtype == others.dtype == torch.bfloat16  # the logits the metrics see are bf16, with many ties
        for suite in (self.suite, self.logged):
            with pytest.raises(ValueError, match="target_ids"):
                suite.update(scores, target_ids=targets + LONG_ITEMS, target_gains=gains, exclude_ids=excluded)
            suite.update(scores, target_ids=targets, target_gains=gains, exclude_ids=excluded)
        self.log_dict(self.logged, batch_size=len(users))
        for metric in self.overlap.values():
            metric.update(scores, others, exclude_ids=excluded)
        for metric in (self.curve, self.at_precision):  # (no judgment read: the relevant targets only)
            metric.update(scores, target_ids=targets[:, :RELEVANT], target_gains=gains[:, :RELEVANT],
                          exclude_ids=excluded)
        if self.dump_to is not None:
            torch.save((users, scores, others), self.dump_to / f"{self.global_rank}-{batch_idx}.pt")

    def on_validation_epoch_end(self):
        self.log_dict(self.suite.compute())
        self.suite.reset()
        for name, metric in zip(OVERLAP, self.overlap.values(), strict=True):
            self.log(name, metric.compute())
            metric.reset()
        precision, recall, _ = self.curve.compute()
        for k in range(1, CURVE_K + 1):
            self.log(f"curve/precision@{k}", precision[k - 1])
            self.log(f"curve/recall@{k}", recall[k - 1])
        best, cutoff = self.at_precision.compute()
        self.log_dict({"fixed_precision/recall": best, "fixed_precision/k": cutoff.double()})
        self.curve.reset()
        self.at_precision.reset()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


def _long_data() -> TensorDataset:
    """Targets and excluded items among each user's 60 best under the initial weights (lr = 0 keeps
    them), where bf16 ties at the cut-offs decide which of them are counted: 5 relevant (gains 1..3), 3 judged
    non-relevant (0) and 3 pooled but not judged (-1), 10 excluded."""
    users = torch.arange(LONG_USERS)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        best = _Bf16Catalogue()(users).float().topk(60).indices
    gen = torch.Generator().manual_seed(10)
    picked = best.gather(1, torch.stack([torch.randperm(60, generator=gen) for _ in users])[:, :15 + JUDGED + POOLED])
    targets = torch.cat([picked[:, :RELEVANT], picked[:, 15:]], dim=1)
    gains = torch.cat([torch.randint(1, 4, (LONG_USERS, RELEVANT), generator=gen), torch.zeros(LONG_USERS, JUDGED),
                       torch.full((LONG_USERS, POOLED), -1)], dim=1).double()
    return TensorDataset(users, targets, gains, picked[:, RELEVANT:15])


def _long_reference(scores: torch.Tensor, others: torch.Tensor, targets: torch.Tensor, gains: torch.Tensor,
                    excluded: torch.Tensor) -> dict[str, float]:
    """Every logged value, from the brute-force references of tests/reference on the bf16 logits: one sorted
    list per user (ties by the lower index, excluded items removed), and the peers' definitions on it."""
    from tests.reference import intents as ref_intents
    from tests.reference import overlap as ref_overlap
    from tests.reference import pairwise as ref_pairwise
    from tests.reference import ranking as ref

    keep = torch.ones(LONG_USERS, LONG_ITEMS, dtype=torch.bool).scatter_(1, excluded, False)
    relevance = torch.zeros(LONG_USERS, LONG_ITEMS, dtype=torch.float64).scatter_(1, targets, gains.clamp(min=0))
    lists = [ref.rank(scores[u], mask=keep[u]) for u in range(LONG_USERS)]
    other_lists = [ref.rank(others[u], mask=keep[u]) for u in range(LONG_USERS)]
    rows = relevance.tolist()
    queries = [([rows[u][i] for i in order], [rows[u][i] for i in order]) for u, order in enumerate(lists)]
    top = [order[:20] for order in lists]
    pooled = ref.ids_queries(top, targets, gains, pooled=True)
    judged = ref.ids_queries(top, targets, gains)  # a gain of -1 is no judgment to bpref and Judged
    relevant = [{int(i) for i, g in zip(targets[u], gains[u], strict=True) if g > 0} for u in range(LONG_USERS)]
    intents, weights = _long_tables()
    intent_sets = {i: set(row.nonzero().flatten().tolist()) for i, row in enumerate(intents)}
    expected = {}
    for key in LONG_SUITE:
        name, _, cut = key.partition("@")
        k = int(cut) if cut else None
        if name in ("bpref", "judged", "infap"):
            values = ref.evaluate_queries(name, pooled if name == "infap" else judged, k)
        elif name == "pauc":
            values = [ref_pairwise.partial_auc(scores[u][keep[u]], relevance[u][keep[u]], k) for u in range(LONG_USERS)]
            values = [math.nan if v is None else v for v in values]
        elif name in ("psp", "psndcg"):
            expected[key] = _propensity_scored(lists, relevant, weights.tolist(), k, discounted=name == "psndcg")
            continue
        elif name in ref_intents.MEASURES:
            expected[key] = ref_intents.mean(name, [order[:k] for order in lists], relevant, intent_sets, k)
            continue
        else:
            values = ref.evaluate_queries(name, queries, k)
        expected[key] = ref.mean(values)
    for key in OVERLAP:
        name, _, k = key.partition("@")
        measure = {"intersection": ref_overlap.rectools_intersection, "jaccard": ref_overlap.jaccard,
                   "rbo": ref_overlap.rbo}[name]
        expected[key] = ref_overlap.mean([measure(own, other, int(k)) for own, other in zip(lists, other_lists, strict=True)])
    # Precision@k and Recall@k for k <= 20 read the top 20 and R alone: the same references on each list's top 20
    # and its relevant gains (on the 20,000-item lists they took 15 of this oracle's 25 s)
    short = [(ranked[:20], [gain for gain in gains if gain > 0]) for ranked, gains in queries]
    curve = {(name, k): ref.mean(ref.evaluate_queries(name, short, k))
             for name in ("precision", "recall") for k in range(1, 21)}
    for k in range(1, CURVE_K + 1):
        expected[f"curve/precision@{k}"], expected[f"curve/recall@{k}"] = curve["precision", k], curve["recall", k]
    reached = [(curve["recall", k], k) for k in range(1, 21) if curve["precision", k] >= MIN_PRECISION]
    expected["fixed_precision/recall"], expected["fixed_precision/k"] = max(reached) if reached else (0.0, 20)
    return expected


def _propensity_scored(lists: list[list[int]], relevant: list[set[int]], weights: list[float], k: int,
                       discounted: bool) -> float:
    """pyxclib's PSP@k (PSnDCG@k with ``discounted``), pooled: the sum over users of the propensity weights of the
    relevant items in the top k (each over log2(rank + 1)), over the sum of the best the relevant items reach,
    each user's terms over its binary IDCG@min(R, k) (PSnDCG)."""
    found = best = 0.0
    for order, items in zip(lists, relevant, strict=True):
        share = [1 / math.log2(j + 2) if discounted else 1.0 for j in range(k)]
        norm = sum(share[: min(len(items), k)]) if discounted else 1.0
        found += sum(weights[i] * share[j] for j, i in enumerate(order[:k]) if i in items) / norm
        best += sum(w * share[j] for j, w in enumerate(sorted((weights[i] for i in items), reverse=True)[:k])) / norm
    return found / best


@pytest.mark.slow
@pytest.mark.usefixtures("master_port")
def test_bf16_logits_two_processes_checkpoint_and_a_failed_update(tmp_path):
    """A default Trainer (2 CPU processes, bf16-mixed) fits, checkpoints, and the reloaded model
    validated on 2 processes logs the brute-force values of its own bf16 logits (ties by index), both
    as values it computes and as metric objects Lightning computes: every top-k, full-ranking, judgment,
    propensity and intent family of the suite, the overlap with a second model, the precision-recall curve."""
    data = _long_data()  # once: its bf16 top-60 depends on the thread count, which Lightning may change
    loader = DataLoader(data, batch_size=8)
    kwargs = dict(accelerator="cpu", devices=2, strategy="ddp_spawn", precision="bf16-mixed",
                  enable_progress_bar=False, enable_model_summary=False, logger=False)
    trainer = L.Trainer(max_epochs=1, default_root_dir=tmp_path, **kwargs)
    trainer.fit(_Bf16Catalogue(), loader, loader)
    checkpoint = next((tmp_path / "checkpoints").glob("*.ckpt"))
    model = _Bf16Catalogue.load_from_checkpoint(checkpoint)
    model.dump_to = tmp_path
    logged = L.Trainer(**kwargs).validate(model, dataloaders=loader, verbose=False)[0]

    # the bf16 logits of every step, as each process computed them (a GEMM's rounding may depend on
    # which users share its batch)
    _, targets, gains, excluded = data.tensors
    scores, others, seen = torch.zeros(LONG_USERS, LONG_ITEMS), torch.zeros(LONG_USERS, LONG_ITEMS), []
    for path in tmp_path.glob("*-*.pt"):
        users, part, other = torch.load(path)
        scores[users], others[users] = part.float(), other.float()
        seen.append(users)
    assert torch.equal(torch.cat(seen).sort().values, torch.arange(LONG_USERS))  # every user once
    assert (scores.topk(21).values[:, :-1] == scores.topk(21).values[:, 1:]).any()  # ties in the lists
    expected = _long_reference(scores, others, targets, gains, excluded)
    for key in LONG_SUITE:
        assert logged[key] == pytest.approx(expected[key], abs=1e-6), key  # logged values are float32
        assert logged[f"obj/{key}"] == pytest.approx(expected[key], abs=1e-6), key
    for key in [*OVERLAP, *(f"curve/{name}@{k}" for k in range(1, CURVE_K + 1) for name in ("precision", "recall")),
                "fixed_precision/recall", "fixed_precision/k"]:
        assert logged[key] == pytest.approx(expected[key], abs=1e-6), key
    # the oracle saw values
    assert all(0 < expected[key] < 1 for key in [*LONG_SUITE, *OVERLAP, "fixed_precision/recall"] if key != "num_rel")
    assert expected["num_rel"] == RELEVANT


SAMPLED_USERS, SAMPLED_ITEMS, CANDIDATES, TARGETS = 48, 500, 101, 10
SAMPLED_SUITE = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@20", "num_ret@5"]


class _SampledCandidates(L.LightningModule):
    """Sampled evaluation in a validation step: each user's bf16 logits over 1 + 100 candidates and up to ten target
    columns among them, whose ranks are counted by integer keys with no top-k (pipeline/counted_ranks.py); a bad
    update (a column past the candidates) first, then the good one."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(12)
        self.user = nn.Parameter(torch.randn(SAMPLED_USERS, 4, generator=gen))
        self.item = nn.Parameter(torch.randn(SAMPLED_ITEMS, 4, generator=gen))
        self.suite = tre.RankingMetrics(SAMPLED_SUITE)
        self.dump_to: Any = None

    def forward(self, users: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bd,bcd->bc", self.user[users], self.item[candidates])

    def training_step(self, batch, batch_idx):
        users, candidates, columns = batch
        return nn.functional.cross_entropy(self(users, candidates).float(), columns[:, 0].clamp(min=0))

    def validation_step(self, batch, batch_idx):
        users, candidates, columns = batch
        scores = self(users, candidates)
        assert scores.dtype == torch.bfloat16
        with pytest.raises(ValueError, match="target_ids"):  # a column past the candidates: the state as it was
            self.suite.update(scores, target_ids=columns + CANDIDATES)
        self.suite.update(scores, target_ids=columns)
        if self.dump_to is not None:
            torch.save((users, scores), self.dump_to / f"{self.global_rank}-{batch_idx}.pt")

    def on_validation_epoch_end(self):
        self.log_dict(self.suite.compute())
        self.suite.reset()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


def _sampled_data() -> TensorDataset:
    """101 candidates a user and ten target columns among them, some padding; the first user has none."""
    gen = torch.Generator().manual_seed(13)
    candidates = torch.stack([torch.randperm(SAMPLED_ITEMS, generator=gen)[:CANDIDATES] for _ in range(SAMPLED_USERS)])
    columns = torch.stack([torch.randperm(CANDIDATES, generator=gen)[:TARGETS] for _ in range(SAMPLED_USERS)])
    columns[::3, -3:] = -1
    columns[0] = -1
    return TensorDataset(torch.arange(SAMPLED_USERS), candidates, columns)


@pytest.mark.slow
@pytest.mark.usefixtures("master_port")
def test_sampled_candidates_in_bf16_on_two_processes_after_a_checkpoint(tmp_path):
    """A default Trainer (2 CPU processes, ddp_spawn, bf16-mixed) fits and checkpoints; the reloaded model validated
    on 2 processes logs the brute-force values of its own bf16 logits over each user's candidates (ties by the
    lower column), with a user without a relevant item skipped."""
    from tests.reference import ranking as ref
    from torchrec_eval.pipeline.counted_ranks import counting_is_cheaper, counting_way

    assert counting_way(TARGETS, torch.bfloat16) == "keys" and counting_is_cheaper(TARGETS, CANDIDATES, 21, torch.bfloat16)
    data = _sampled_data()
    loader = DataLoader(data, batch_size=8)
    kwargs = dict(accelerator="cpu", devices=2, strategy="ddp_spawn", precision="bf16-mixed",
                  enable_progress_bar=False, enable_model_summary=False, logger=False)
    trainer = L.Trainer(max_epochs=1, default_root_dir=tmp_path, **kwargs)
    trainer.fit(_SampledCandidates(), loader, loader)
    model = _SampledCandidates.load_from_checkpoint(next((tmp_path / "checkpoints").glob("*.ckpt")))
    model.dump_to = tmp_path
    logged = L.Trainer(**kwargs).validate(model, dataloaders=loader, verbose=False)[0]

    scores, seen = torch.zeros(SAMPLED_USERS, CANDIDATES), []
    for path in tmp_path.glob("*-*.pt"):
        users, part = torch.load(path)
        scores[users] = part.float()
        seen.append(users)
    assert torch.equal(torch.cat(seen).sort().values, torch.arange(SAMPLED_USERS))  # every user once
    assert (scores.sort(1).values.diff(1) == 0).any()  # bf16 ties among the candidates
    columns = data.tensors[2]
    target = torch.zeros(SAMPLED_USERS, CANDIDATES + 1).scatter_(1, torch.where(columns < 0, CANDIDATES, columns), 1.0)
    for key in SAMPLED_SUITE:
        name, _, k = key.partition("@")
        expected = ref.mean(ref.evaluate_dense(name, scores, target[:, :CANDIDATES], int(k)))
        assert logged[key] == pytest.approx(expected, abs=1e-6), key  # logged values are float32
