"""The public surface, golden: every name a user imports, every module path the README, the docs and
the examples import, the ``torchrec-eval`` entry point, and the state names (and shapes) inside
``persistent(True)`` checkpoints. A redesign may move code anywhere behind these; a change here is
a change of the public API (and, for the states, of every saved checkpoint) and needs a CHANGELOG line.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import torch  # noqa: F401  (the checkpoint cases construct with it)

import torchrec_eval
from torchrec_eval import *  # noqa: F403  (the names the checkpoint cases below construct)
from torchrec_eval.comparison.uncertainty import PairedComparison  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]

# module -> names it must provide (its ``__all__`` where it has one, exactly)
PUBLIC = {
    "torchrec_eval": [
        "ARHR",
        "AUC",
        "AlphaDCG",
        "AlphaNDCG",
        "AveragePopularity",
        "AveragePrecisionIA",
        "BPM",
        "BinaryAUC",
        "BinaryAUPRC",
        "BinnedAUC",
        "BinnedAUPRC",
        "Bpref",
        "CG",
        "CTR",
        "Calibration",
        "CategoryEntropy",
        "Compat",
        "Coverage",
        "DCG",
        "ERR",
        "ERRIA",
        "Entropy",
        "ExposureGini",
        "F1",
        "FCP",
        "FallOut",
        "GAUC",
        "GiniIndex",
        "HitRate",
        "INSQ",
        "INST",
        "IPrec",
        "InfAP",
        "InterListDiversity",
        "InterpolatedAP",
        "Intersection",
        "IntraListDiversity",
        "Jaccard",
        "Judged",
        "LogLoss",
        "LongTailCount",
        "LongTailShare",
        "MAE",
        "MAP",
        "MAR",
        "MPR",
        "MRR",
        "MSE",
        "ModelComparison",
        "NCRR",
        "NDCG",
        "NE",
        "NERR",
        "NERRIA",
        "NNRBP",
        "NRBP",
        "Novelty",
        "NumQ",
        "NumRel",
        "NumRelRet",
        "NumRet",
        "OffPolicyCTR",
        "PSP",
        "PSnDCG",
        "PartialAUC",
        "PointwiseCTR",
        "PointwiseMAE",
        "PointwiseMSE",
        "PointwiseMetrics",
        "PointwiseRMSE",
        "Precision",
        "PrecisionIA",
        "PrecisionRecallCurve",
        "RBO",
        "RBP",
        "RMSE",
        "RPrecision",
        "RankBiasedEntropy",
        "RankingMetrics",
        "Recall",
        "RecallAtFixedPrecision",
        "SDCG",
        "SampledMetrics",
        "Serendipity",
        "SetF",
        "SetMAP",
        "SubtopicRecall",
        "WeightedRBP",
        "Windowed",
        "functional",
        "pointwise",
    ],
    "torchrec_eval.comparison.report": ["ComparisonReport"],
    "torchrec_eval.functional": [
        "alpha_dcg",
        "alpha_ndcg",
        "ap_ia",
        "arhr",
        "auc",
        "bpm",
        "bpref",
        "cg",
        "compat",
        "ctr",
        "dcg",
        "err",
        "err_ia",
        "f1",
        "fallout",
        "fcp",
        "gauc",
        "hitrate",
        "infap",
        "insq",
        "inst",
        "interpolated_ap",
        "intersection",
        "iprec",
        "jaccard",
        "judged",
        "map",
        "mar",
        "mpr",
        "mrr",
        "ncrr",
        "ndcg",
        "nerr",
        "nerr_ia",
        "nnrbp",
        "nrbp",
        "num_q",
        "num_rel",
        "num_rel_ret",
        "num_ret",
        "off_policy_ctr",
        "p_ia",
        "partial_auc",
        "precision",
        "precision_recall_curve",
        "rbo",
        "rbp",
        "recall",
        "rprecision",
        "sdcg",
        "set_map",
        "setf",
        "strec",
        "weighted_rbp",
    ],
    "torchrec_eval.metrics": ["MemberMetric"],
    "torchrec_eval.ranking.families": ["REGISTRY"],
    "torchrec_eval.pointwise": [
        "BinaryAUC",
        "BinaryAUPRC",
        "BinnedAUC",
        "BinnedAUPRC",
        "Calibration",
        "LogLoss",
        "NE",
        "PointwiseCTR",
        "PointwiseMAE",
        "PointwiseMSE",
        "PointwiseMetrics",
        "PointwiseRMSE",
        "Windowed",
        "functional",
    ],
    "torchrec_eval.beyond": ["BeyondMember", "REGISTRY", "build_member", "cooccurrence_similarity",
                             "inverse_propensity"],
    "torchrec_eval.comparison.uncertainty": ["PairedComparison", "adjusted_p_values", "confidence_interval",
                                             "interval_from_moments", "t_quantile"],
    "torchrec_eval.data": [
        "CrossValidationResult",
        "FORMATS",
        "Interactions",
        "RankingInputs",
        "RatedInteractions",
        "Split",
        "UnpaddedDistributedSampler",
        "as_interactions",
        "cross_validate",
        "generate_interactions",
        "interaction_kfold",
        "interaction_matrix",
        "item_popularity",
        "leave_last_out",
        "load_movielens",
        "padded_item_lists",
        "random_split",
        "ranking_inputs",
        "temporal_split",
        "user_kfold",
    ],
    "torchrec_eval.data.splits": [
        "CrossValidationResult",
        "RankingInputs",
        "Split",
        "as_interactions",
        "cross_validate",
        "interaction_kfold",
        "leave_last_out",
        "mean_confidence_interval",
        "random_split",
        "ranking_inputs",
        "t_quantile",
        "temporal_split",
        "user_kfold",
    ],
    "torchrec_eval.data.frames": ["FRAME_TIES", "FrameBatch", "USERS", "evaluate", "to_batch"],
    "torchrec_eval.data.interactions": [
        "Interactions",
        "RatedInteractions",
        "generate_interactions",
        "interaction_matrix",
        "item_popularity",
        "padded_item_lists",
    ],
    "torchrec_eval.data.movielens": ["FORMATS", "load_movielens"],
    "torchrec_eval.demo": [
        "BPRMF",
        "DemoData",
        "METRICS",
        "evaluate",
        "prepare_data",
        "run_demo",
        "split_data",
        "train_epoch",
    ],
    "torchrec_eval.suites.config": ["ALLOWED_KEYS", "POINTWISE_KEYS", "SAMPLED_KEYS", "load_yaml", "pointwise_suite_kwargs",
                             "sampled_suite_kwargs", "suite_kwargs"],
    "torchrec_eval.syncs": ["host_reads_free", "simulate_accelerator"],
    "torchrec_eval.catalogue": ["CatalogueBatch"],
    "torchrec_eval.cli": ["CONVENTIONS", "main", "progress_factory"],
    "torchrec_eval.trec": [
        "Qrels",
        "Run",
        "TIES",
        "TrecRanked",
        "rank_judgements",
        "ranking_order",
        "read_qrels",
        "read_run",
        "to_ranked",
    ],
    "torchrec_eval.plotting": ["plot_metric", "plot_values"],
    "torchrec_eval.sampled": ["AuditBatch", "pooled_candidates", "sample_negatives"],
    "torchrec_eval.metrics.base": ["MemberMetric", "fingerprint"],
    "torchrec_eval.suites.ranking": ["RankingMetrics"],
    "torchrec_eval.data.sampler": ["UnpaddedDistributedSampler"],
    "torchrec_eval.conventions": ["PRESETS", "Preset", "preset"],
    "torchrec_eval.pointwise.functional": [],
}
HAS_ALL = [
    "torchrec_eval",
    "torchrec_eval.functional",
    "torchrec_eval.metrics",
    "torchrec_eval.ranking.families",
    "torchrec_eval.pointwise",
    "torchrec_eval.beyond",
    "torchrec_eval.comparison.uncertainty",
    "torchrec_eval.data",
    "torchrec_eval.data.splits",
    "torchrec_eval.data.frames",
    "torchrec_eval.data.interactions",
    "torchrec_eval.data.movielens",
    "torchrec_eval.demo",
    "torchrec_eval.suites.config",
    "torchrec_eval.syncs",
    "torchrec_eval.catalogue",
    "torchrec_eval.cli",
    "torchrec_eval.trec",
    "torchrec_eval.plotting",
    "torchrec_eval.sampled",
]

# (constructor, {state name: shape}) of a metric's ``persistent(True)`` state_dict
CHECKPOINT_STATES = [
    ("NDCG(k=10)", {"config_d0cb90ab3083": (0,), "stats": (1, 3)}),
    ("MAP(k=[5, 10])", {"config_68149f5700eb": (0,), "stats": (1, 5)}),
    ("RPrecision()", {"config_2fda265df29c": (0,), "stats": (1, 3)}),
    ("AUC()", {"config_fee452ffa99d": (0,), "pairwise_auc": (1, 3)}),
    ("GAUC()", {"config_288a9d730ded": (0,), "pairwise_gauc": (1, 3)}),
    ("MPR()", {"config_0d193f8f591c": (0,), "pairwise_mpr": (1, 3)}),
    ("FCP()", {"config_d009916157c8": (0,), "pairwise_fcp": (1, 3)}),
    ("CTR(k=5)", {"config_570caba9d62b": (0,), "pairwise_ctr_at_5": (1, 3)}),
    ("PartialAUC(k=[5, 10])", {"config_783282d6c797": (0,), "pairwise_pauc_at_5_pauc_at_10": (1, 6)}),
    (
        'RankingMetrics(["ndcg@5", "ndcg@10", "recall@10", "mrr@10", "auc"])',
        {"config_578e138d7ee5": (0,), "pairwise_auc": (1, 3), "stats": (1, 9)},
    ),
    ('PairedComparison(["ndcg@10", "recall@5"])', {"config_aa96a7d3bf13": (0,), "paired": (1, 10)}),
    ("Coverage(k=5, num_items=20)", {"beyond_items": (1, 1, 20), "config_fcf9f98c6ea8": (0,)}),
    ("Entropy(k=3, num_items=7)", {"beyond_items": (1, 1, 7), "config_73edfe0ff4d5": (0,)}),
    ("GiniIndex(k=3, num_items=7)", {"beyond_items": (1, 1, 7), "config_ec0913142d37": (0,)}),
    (
        "InterListDiversity(k=3, num_items=7)",
        {"beyond_items": (1, 3, 7), "beyond_stats": (1, 1), "config_af7467990666": (0,)},
    ),
    ("Novelty(k=3, item_popularity=torch.ones(7))", {"beyond_stats": (1, 3), "config_be40a8f496b9": (0,)}),
    ("AveragePopularity(k=3, item_popularity=torch.ones(7))", {"beyond_stats": (1, 3), "config_3e0ffb8d801a": (0,)}),
    ("Serendipity(k=3, item_popularity=torch.ones(7))", {"beyond_stats": (1, 3), "config_5ef3ba457705": (0,)}),
    ("IntraListDiversity(k=3, item_features=torch.eye(7))", {"beyond_stats": (1, 3), "config_8c288c85c43c": (0,)}),
    ("Intersection(k=10)", {"config_a8ece591adf3": (0,), "overlap_stats": (1, 3)}),
    ("Jaccard(k=[5, 10])", {"config_9d76de88f84b": (0,), "overlap_stats": (1, 6)}),
    ("RBO(k=10)", {"config_3db7f1a57c5d": (0,), "overlap_stats": (1, 3)}),
    ("NE()", {"stats_3827c289c704": (1, 1, 3)}),
    (
        "BinaryAUC()",
        {"sample_groups": "list", "sample_preds": "list", "sample_target": "list", "sample_weight": "list"},
    ),
    (
        "Windowed(NE(), window=3)",
        {
            "lifetime_stats_3827c289c704": (1, 1, 3),
            "ring_next": (),
            "ring_samples": (3,),
            "ring_stats_3827c289c704": (3, 1, 1, 3),
            "window_stats_3827c289c704": (1, 1, 3),
        },
    ),
    ('PointwiseMetrics(["ne", "auc"])', {"stats_d14f64561e20": (1, 1, 20003)}),
]


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_resolve(module):
    imported = importlib.import_module(module)
    missing = [name for name in PUBLIC[module] if not hasattr(imported, name)]
    assert not missing, f"{module} lost {missing}"


@pytest.mark.parametrize("module", HAS_ALL)
def test_all_is_unchanged(module):
    assert sorted(importlib.import_module(module).__all__) == PUBLIC[module]


# module paths beyond the modules above that the docs and tests may import (none: 0.1.0 keeps no
# re-export of an earlier layout)
OTHER_PATHS: set[str] = set()


def _documented_paths() -> set[str]:
    """Dotted paths imported, or auto-documented, by the README, the docs and the examples (not the
    contributors' ``docs/recipes.md``: it edits internals, and ``test_recipes.py`` keeps it true)."""
    found = set()
    pages = [page for page in ROOT.glob("docs/**/*.md") if page.name != "recipes.md"]
    for path in [ROOT / "README.md", *pages, *ROOT.glob("examples/*.py")]:
        text = path.read_text()
        found |= set(re.findall(r"(?:from|import) (torchrec_eval(?:\.\w+)*)", text))
        found |= set(re.findall(r"\.\. auto\w+:: (torchrec_eval[\w.]*)", text))
    return found


def test_every_documented_path_resolves_through_a_golden_module():
    for path in sorted(_documented_paths()):
        parts = path.split(".")
        # the longest importable prefix is the module; the rest are attributes of it
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            try:
                importlib.import_module(module)
                break
            except ImportError:
                continue
        assert module in set(PUBLIC) | OTHER_PATHS, f"{path}: its module {module} is not in the golden list"
        value = importlib.import_module(module)
        for name in parts[cut:]:
            value = getattr(value, name)


FIRST_IMPORTS = """
import importlib, sys
import torch  # loaded once: what matters is the order in which the package's own modules load
failed = []
for module in sys.argv[1:]:
    for name in [name for name in sys.modules if name == "torchrec_eval" or name.startswith("torchrec_eval.")]:
        del sys.modules[name]
    try:
        importlib.import_module(module)
    except Exception as error:  # noqa: BLE001
        failed.append(f"{module}: {type(error).__name__}: {error}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_public_module_imports_first():
    """A user's first import may be any public module (``import torchrec_eval.catalogue`` failed on an
    import cycle through the metrics' base): each is imported with none of the package loaded before it."""
    modules = sorted(set(PUBLIC) | OTHER_PATHS)
    result = subprocess.run([sys.executable, "-c", FIRST_IMPORTS, *modules], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]


def test_entry_point():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"torchrec-eval": "torchrec_eval.cli:main"}
    assert callable(torchrec_eval.cli.main)


@pytest.mark.parametrize(("constructor", "states"), CHECKPOINT_STATES, ids=[case[0] for case in CHECKPOINT_STATES])
def test_checkpoint_state_names(constructor, states):
    metric = eval(constructor)  # noqa: S307  (the golden constructors above)
    metric.persistent(True)
    got = {
        name: tuple(value.shape) if hasattr(value, "shape") else type(value).__name__
        for name, value in metric.state_dict().items()
    }
    assert got == states
