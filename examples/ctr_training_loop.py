"""Train a two-task CTR / conversion model and log NE, calibration and AUC per task, lifetime and window.

This is what TorchRec users log while training a click-through-rate model, with ``torchrec_eval``:

* **Data** (synthetic, made here): impressions of items to users with hidden tastes; a click happens
  with probability ``sigmoid(taste_u . taste_i + bias_i)`` and a click converts (a purchase) with a
  probability of its own. Impressions without a click are *down-sampled* (kept at rate ``r``, 0.25 by
  default), as large CTR systems do, and every kept negative carries the **sample weight** 1/r, in the
  loss and in the metrics: the weighted metrics then describe the full traffic, and the predictions
  stay calibrated (calibration near 1) although the model saw 4 times fewer negatives.
* **Model**: user and item embeddings, a shared layer and two heads (click, conversion), trained on one
  pass over the stream of impressions, one batch per step.
* **Metrics**: the ready-made suite ``torchrec_eval/suites/ctr.yaml``, loaded with
  ``tre.PointwiseMetrics.from_config("ctr", window=...)``: NE, log loss, calibration, label CTR and
  (binned) AUC for both tasks, each as a lifetime value and over the last ``--window`` updates. Each
  batch is scored *before* the model trains on it (progressive validation), so every logged value is
  out of sample. The table shows window values every ``--log-every`` steps; the ``final:`` line is the
  lifetime values, as ``self.log_dict(metrics.compute())`` would send them to a logger; ``held-out:``
  evaluates the trained model on fresh traffic (no down-sampling) with a second, unwindowed suite.

Run it::

    python examples/ctr_training_loop.py                   # 400 steps of 512 impressions, a few seconds
    python examples/ctr_training_loop.py --steps 1000 --window 200 --negative-rate 0.1
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch
from torch import nn

try:
    import torchrec_eval as tre
except ImportError:  # running from a source checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torchrec_eval as tre

TASKS = ["click", "conversion"]
SHOWN = ["ne", "calibration", "auc"]  # the window values in the table


class Traffic:
    """Impressions of random items to random users, with click and conversion labels from hidden tastes."""

    def __init__(self, users: int, items: int, dim: int, gen: torch.Generator) -> None:
        self.users, self.items, self.gen = users, items, gen
        self.user_taste = torch.randn(users, dim, generator=gen) / math.sqrt(dim) * 2.5
        self.item_taste = torch.randn(items, dim, generator=gen)
        self.item_bias = torch.randn(items, generator=gen) * 0.5 - 2.0  # a click rate of about 15%
        self.buy_taste = torch.randn(dim, generator=gen) / math.sqrt(dim)

    def sample(self, size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """[size] users and items, and [size, 2] labels (click, conversion)."""
        user = torch.randint(0, self.users, (size,), generator=self.gen)
        item = torch.randint(0, self.items, (size,), generator=self.gen)
        click_logit = (self.user_taste[user] * self.item_taste[item]).sum(1) + self.item_bias[item]
        click = torch.rand(size, generator=self.gen) < torch.sigmoid(click_logit)
        buy_logit = self.item_taste[item] @ self.buy_taste - 0.5
        conversion = click & (torch.rand(size, generator=self.gen) < torch.sigmoid(buy_logit))
        return user, item, torch.stack([click, conversion], dim=1).float()

    def downsampled(self, size: int, rate: float) -> tuple[torch.Tensor, ...]:
        """A training batch: negatives kept with probability ``rate`` and weighted 1 / rate."""
        user, item, labels = self.sample(size)
        clicked = labels[:, 0] > 0
        keep = clicked | (torch.rand(size, generator=self.gen) < rate)
        weight = torch.where(clicked, 1.0, 1.0 / rate)
        return user[keep], item[keep], labels[keep], weight[keep]


class TwoTaskModel(nn.Module):
    """Embeddings, one shared layer, a click head and a conversion head (logits)."""

    def __init__(self, users: int, items: int, dim: int = 16) -> None:
        super().__init__()
        self.user, self.item = nn.Embedding(users, dim), nn.Embedding(items, dim)
        self.shared = nn.Sequential(nn.Linear(3 * dim, 32), nn.ReLU())
        self.heads = nn.Linear(32, len(TASKS))

    def forward(self, user: torch.Tensor, item: torch.Tensor) -> torch.Tensor:
        u, v = self.user(user), self.item(item)
        return self.heads(self.shared(torch.cat([u, v, u * v], dim=1)))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400, help="training steps, one batch each (default 400)")
    parser.add_argument("--batch-size", type=int, default=512, help="impressions per step before down-sampling")
    parser.add_argument("--window", type=int, default=100, help="window of the window values, in updates")
    parser.add_argument("--log-every", type=int, default=50, help="print the window values every N steps")
    parser.add_argument("--negative-rate", type=float, default=0.25, help="share of negatives kept (weight 1/r)")
    parser.add_argument("--users", type=int, default=100, help="number of users (default 100)")
    parser.add_argument("--items", type=int, default=150, help="number of items (default 150)")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the model")
    args = parser.parse_args(argv)
    if min(args.steps, args.batch_size, args.window, args.log_every) < 1 or not 0 < args.negative_rate <= 1:
        parser.error("--steps, --batch-size, --window and --log-every must be >= 1, 0 < --negative-rate <= 1")
    return args


def _fmt(values: dict[str, torch.Tensor]) -> str:
    return " ".join(f"{key}={value.item():.4f}" for key, value in values.items())


def main(argv=None) -> dict:
    """Run the example; returns ``{"final": {key: float}, "held_out": {key: float}}``."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    traffic = Traffic(args.users, args.items, dim=8, gen=gen)
    model = TwoTaskModel(args.users, args.items)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    metrics = tre.PointwiseMetrics.from_config("ctr", tasks=TASKS, window=args.window)  # a tre.Windowed

    columns = [f"{task}/{name}" for task in TASKS for name in SHOWN]
    print("window values over the last", args.window, "updates")
    print(f"{'step':>6} " + " ".join(f"{column:>22}" for column in columns))
    for step in range(1, args.steps + 1):
        user, item, labels, weight = traffic.downsampled(args.batch_size, args.negative_rate)
        logits = model(user, item)
        # progressive validation: score the batch before training on it; weights as in the loss
        metrics.update(torch.sigmoid(logits.detach()), labels, sample_weight=weight)
        loss = nn.functional.binary_cross_entropy_with_logits(logits, labels, weight=weight.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % args.log_every == 0 or step == args.steps:
            values = metrics.compute()
            cells = [values[f"{task}/window_{name}"].item() for task in TASKS for name in SHOWN]
            print(f"{step:>6} " + " ".join(f"{value:>22.4f}" for value in cells), flush=True)

    results = metrics.compute()
    final = {key: value for key, value in results.items() if "/lifetime_" in key}
    print("final:", _fmt(final))

    held_out = tre.PointwiseMetrics(["ne", "calibration", "auc"], tasks=TASKS)  # fresh traffic, weight 1
    model.eval()
    with torch.no_grad():
        for _ in range(10):
            user, item, labels = traffic.sample(args.batch_size)
            held_out.update(torch.sigmoid(model(user, item)), labels)
    evaluation = held_out.compute()
    print("held-out:", _fmt(evaluation))
    return {"final": {k: v.item() for k, v in final.items()}, "held_out": {k: v.item() for k, v in evaluation.items()}}


if __name__ == "__main__":
    main()
