"""Where a compiled update of this round's suites fails, if it does: the whole error of the compiled step
(``compile_update`` warns with its first 400 characters and falls back to eager). Run on a CUDA machine:
``python tests/scripts/compile_probe_issue37.py``."""

import traceback

import torch

import torchrec_eval as tre
from torchrec_eval.metrics.compiled import compiled_increments

CASES = {
    "issue 39's probe": (["ndcg@10", "rprecision@10", "sdcg@5"], {"ndcg": {"gain": "binary", "ideal": "k"}}),
    "issue 37's families": (["ndcg@10", "fallout@5", "auc", "map@10", "num_rel"],
                            {"auc": {"tie_credit": 0.0}, "map": {"tie_rank": "group_max"}}),
}

if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for name, (metrics, options) in CASES.items():
        metric = tre.RankingMetrics(metrics, validate_args=False, options=options).to(device)
        metric.compile_update(backend="aot_eager")
        preds, target = torch.rand(4, 50, device=device), torch.rand(4, 50, device=device) < 0.2
        try:
            compiled_increments(metric, {"preds": preds, "target": target})
            print("compiled:", name)
        except Exception:
            print("failed:", name)
            traceback.print_exc()
