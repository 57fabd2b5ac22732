"""A small recommender trained and evaluated end to end: the ``torchrec-eval demo`` command.

The pieces are shared with ``examples/train_loop.py``:

* :func:`prepare_data` draws the embedded synthetic interactions (:mod:`torchrec_eval.data.interactions`) and
  splits each user's history by time: the latest 20% are the test targets, the rest is training data
  whose items are excluded from the user's ranking;
* :class:`BPRMF` is BPR matrix factorisation (Rendle et al., 2009) with an item bias, trained by
  :func:`train_epoch` so that an observed item scores above a uniformly sampled one;
* :func:`evaluate` scores every user against every item, a batch of users at a time, and accumulates
  a :class:`torchrec_eval.RankingMetrics` suite (one top-k per batch for all its metrics).

:func:`run_demo` trains for a few epochs, prints one row of metrics per epoch, and draws the metrics
against the epoch and against the cut-off k into a PNG file when matplotlib is installed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from torch import Tensor, nn

from torchrec_eval.data.interactions import (
    Interactions,
    generate_interactions,
    item_popularity,
    padded_item_lists,
)
from torchrec_eval.data.movielens import load_movielens
from torchrec_eval.data.splits import temporal_split
from torchrec_eval.suites.ranking import RankingMetrics

__all__ = ["BPRMF", "DemoData", "METRICS", "evaluate", "prepare_data", "run_demo", "split_data", "train_epoch"]

METRICS = ["ndcg@10", "map@10", "recall@20", "precision@10", "mrr@10", "hitrate@10"]
CURVE_METRICS = ["ndcg", "recall", "precision", "hitrate"]
CURVE_KS = [1, 2, 3, 5, 10, 20, 50, 100]
PLOT_HINT = "plots need matplotlib: pip install 'torchrec_eval[cli]' (or pip install matplotlib)"


class ProgressBar(Protocol):
    """What :func:`run_demo`'s ``progress`` factory returns: a tqdm-like bar."""

    def update(self, n: int) -> object: ...

    def close(self) -> object: ...


class BPRMF(nn.Module):
    """Matrix factorisation with an item bias: ``score(u, i) = <p_u, q_i> + b_i``."""

    def __init__(self, num_users: int, num_items: int, dim: int) -> None:
        super().__init__()
        self.user = nn.Embedding(num_users, dim)
        self.item = nn.Embedding(num_items, dim)
        self.item_bias = nn.Embedding(num_items, 1)
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, users: Tensor, items: Tensor) -> Tensor:
        scores: Tensor = (self.user(users) * self.item(items)).sum(-1) + self.item_bias(items).squeeze(-1)
        return scores

    def score_all(self, users: Tensor) -> Tensor:
        """``[B, num_items]`` scores of the given users against every item."""
        scores: Tensor = self.user(users) @ self.item.weight.T + self.item_bias.weight.T
        return scores


@dataclass
class DemoData:
    """A time split of the synthetic data, with the id tensors the metrics take."""

    train: Interactions
    test: Interactions
    test_ids: Tensor  # [U, T] each user's test items (the targets), -1 padded
    train_ids: Tensor  # [U, S] each user's training items (excluded from the ranking), -1 padded
    popularity: Tensor  # [N] training interactions per item (the popularity baseline's scores)

    @property
    def num_users(self) -> int:
        return self.train.num_users

    @property
    def num_items(self) -> int:
        return self.train.num_items


def prepare_data(num_users: int = 500, num_items: int = 1000, seed: int = 0) -> DemoData:
    """Draw users with 10 to 40 interactions each (fewer if there are few items) and split them by time."""
    per_user = (min(10, num_items), min(40, num_items))
    return split_data(generate_interactions(num_users, num_items, per_user, seed=seed))


def split_data(data: Interactions) -> DemoData:
    """Each user's latest 20% of interactions are the test targets, the rest is training data."""
    train, test = temporal_split(data, 0.2)
    return DemoData(train, test, padded_item_lists(test), padded_item_lists(train),
                    item_popularity(train).float())


def train_epoch(
    model: BPRMF,
    optimizer: torch.optim.Optimizer,
    users: Tensor,
    items: Tensor,
    num_items: int,
    batch_size: int,
    weight_decay: float,
    generator: torch.Generator,
    on_batch: Callable[[int], object] | None = None,
) -> float:
    """One pass over the training interactions with one uniform negative per positive; mean BPR loss.

    ``on_batch`` is called with the number of interactions of each batch (for a progress bar).
    """
    model.train()
    order = torch.randperm(users.numel(), generator=generator)
    total, seen = 0.0, 0
    for start in range(0, order.numel(), batch_size):
        idx = order[start : start + batch_size]
        u, pos = users[idx], items[idx]
        neg = torch.randint(0, num_items, pos.shape, generator=generator)
        diff = model(u, pos) - model(u, neg)
        loss = -nn.functional.logsigmoid(diff).mean()
        squares = model.user(u).pow(2) + model.item(pos).pow(2) + model.item(neg).pow(2)
        reg = weight_decay * squares.sum(-1).mean()
        optimizer.zero_grad()
        (loss + reg).backward()
        optimizer.step()
        total += loss.item() * idx.numel()
        seen += idx.numel()
        if on_batch is not None:
            on_batch(idx.numel())
    return total / max(seen, 1)


@torch.no_grad()
def evaluate(score_fn: Callable[[Tensor], Tensor], suite: RankingMetrics, test_ids: Tensor, train_ids: Tensor,
             batch_size: int = 256) -> dict[str, float]:
    """Score every user against every item, a batch of users at a time, and compute the suite.

    The user's test items are the targets; the items seen in training are excluded from the ranking.
    """
    suite.reset()
    num_users = test_ids.shape[0]
    for start in range(0, num_users, batch_size):
        users = torch.arange(start, min(start + batch_size, num_users))
        scores = score_fn(users)  # [B, num_items]
        suite.update(scores, target_ids=test_ids[users], exclude_ids=train_ids[users])
    return {name: float(value) for name, value in suite.compute().items()}


def format_header(metrics: Sequence[str]) -> str:
    return f"{'epoch':>6} {'loss':>8} {'sec':>6} " + " ".join(f"{m:>12}" for m in metrics)


def format_row(label: str, loss: str, seconds: str, values: dict[str, float]) -> str:
    return f"{label:>6} {loss:>8} {seconds:>6} " + " ".join(f"{v:>12.4f}" for v in values.values())


def run_demo(
    *,
    epochs: int = 10,
    users: int = 2000,
    items: int = 2000,
    dim: int = 32,
    lr: float = 0.01,
    weight_decay: float = 1e-3,
    batch_size: int = 1024,
    eval_batch_size: int = 512,
    seed: int = 0,
    data: str | Path | None = None,
    plot: str | None = "torchrec_eval_demo.png",
    progress: Callable[..., ProgressBar] | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, object]:
    """Train BPR-MF on the synthetic data, evaluate after every epoch, and plot the result.

    Args:
        epochs, users, items, dim, lr, weight_decay, batch_size, eval_batch_size, seed: the run.
        data: a MovieLens or RecBole ratings file (:func:`torchrec_eval.data.movielens.load_movielens`;
            every rating is an interaction) instead of the synthetic data; ``users`` and ``items``
            then come from the file.
        plot: path of the PNG to write (metrics vs epoch, and metric vs k); ``None`` for no plot.
        progress: a factory ``progress(total=..., desc=..., unit=...)`` returning an object with
            ``update(n)`` and ``close()`` (a tqdm-like bar), or ``None`` for no bar.
        echo: where the table lines go (``print`` by default; a tqdm-aware writer with a bar).

    Returns:
        A dict with ``baseline`` (the popularity row), ``history`` (one dict per epoch with ``epoch``,
        ``loss`` and the metrics), ``curves`` (metric-by-k values of ``model`` and ``baseline``),
        ``plot`` (the PNG's path, or None) and ``seconds``.
    """
    begin = time.perf_counter()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    if data is None:
        source, name, split = "synthetic, torchrec_eval.data.interactions", "the synthetic data", prepare_data(users, items, seed)
    else:
        source, name, split = str(data), Path(data).name, split_data(load_movielens(data))
        users, items = split.num_users, split.num_items
    echo(f"data: {users} users, {items} items, {len(split.train)} train / {len(split.test)} test interactions "
         f"({source}); model: BPR-MF, dim {dim}")

    suite = RankingMetrics(METRICS)
    curve_suite = RankingMetrics(CURVE_METRICS, k=[k for k in CURVE_KS if k <= items])

    def popularity_scores(batch: Tensor) -> Tensor:
        return split.popularity.expand(batch.numel(), -1)

    baseline = evaluate(popularity_scores, suite, split.test_ids, split.train_ids, eval_batch_size)
    model = BPRMF(users, items, dim)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    echo(format_header(METRICS))
    echo(format_row("pop", "-", "-", baseline))
    history: list[dict[str, float]] = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        bar = progress(total=len(split.train), desc=f"epoch {epoch}/{epochs}", unit="pairs") if progress else None
        try:
            loss = train_epoch(model, optimizer, split.train.user, split.train.item, items, batch_size,
                               weight_decay, gen, on_batch=None if bar is None else bar.update)
        finally:
            if bar is not None:
                bar.close()
        model.eval()
        metrics = evaluate(model.score_all, suite, split.test_ids, split.train_ids, eval_batch_size)
        echo(format_row(str(epoch), f"{loss:.4f}", f"{time.perf_counter() - start:.2f}", metrics))
        history.append({"epoch": epoch, "loss": loss, **metrics})

    curves = {
        "model": evaluate(model.score_all, curve_suite, split.test_ids, split.train_ids, eval_batch_size),
        "baseline": evaluate(popularity_scores, curve_suite, split.test_ids, split.train_ids, eval_batch_size),
    }
    written = None
    if plot:
        written = plot_demo(baseline, history, curves, plot, name)
        echo(f"plot: {written}" if written else PLOT_HINT)
    seconds = time.perf_counter() - begin
    echo(f"done in {seconds:.1f} s")
    return {"baseline": baseline, "history": history, "curves": curves, "plot": written, "seconds": seconds}


def _curve(values: dict[str, float], family: str) -> tuple[list[int], list[float]]:
    points = [(int(key.split("@")[1]), value) for key, value in values.items() if key.split("@")[0] == family]
    return [k for k, _ in points], [v for _, v in points]


def plot_demo(baseline: dict[str, float], history: Iterable[dict[str, float]], curves: dict[str, dict[str, float]],
              path: str, data_name: str = "the synthetic data") -> str | None:
    """Write the two-panel PNG; returns ``path``, or ``None`` if matplotlib is not installed."""
    try:
        import matplotlib

        if "matplotlib.pyplot" not in sys.modules:
            matplotlib.use("Agg")  # files only; never needs a display
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    history = list(history)
    epochs = [row["epoch"] for row in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for color, name in zip(colors, METRICS, strict=False):
        left.plot(epochs, [row[name] for row in history], marker="o", color=color, label=name)
        left.axhline(baseline[name], color=color, linestyle=":", linewidth=1)
    left.set_xlabel("epoch")
    left.set_ylabel("metric")
    left.set_title(f"BPR-MF on {data_name} (dotted: popularity)")
    left.legend(fontsize="small")
    left.grid(alpha=0.3)
    for color, family in zip(colors, CURVE_METRICS, strict=False):
        ks, values = _curve(curves["model"], family)
        right.plot(ks, values, marker="o", color=color, label=f"{family}@k")
        ks, values = _curve(curves["baseline"], family)
        right.plot(ks, values, linestyle=":", color=color)
    right.set_xscale("log")
    right.set_xticks(CURVE_KS)
    right.set_xticklabels([str(k) for k in CURVE_KS])
    right.set_xlabel("k (cut-off)")
    right.set_title("after the last epoch, by cut-off (dotted: popularity)")
    right.legend(fontsize="small")
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
