"""Metric suites from YAML files and dicts: config.suite_kwargs and RankingMetrics.from_config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.suites.config import ALLOWED_KEYS, suite_kwargs

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "torchrec_eval" / "suites"
SUITE_FILES = ["recsys.yaml", "trec.yaml"]  # the LightningCLI config is tested in test_lightning_example.py


def _batch(seed: int = 0, rows: int = 16, items: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(rows, items, generator=gen)
    target = torch.randint(0, 3, (rows, items), generator=gen) * (
        torch.rand(rows, items, generator=gen) < 0.2
    )
    return scores, target


def _values(suite: tre.RankingMetrics, *batch: torch.Tensor) -> dict[str, float]:
    suite.update(*batch)
    return {key: float(value) for key, value in suite.compute().items()}


def _write(tmp_path: Path, text: str, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the shipped configs -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SUITE_FILES)
def test_shipped_suites_load_from_str_and_path(name):
    path = CONFIGS / name
    batch = _batch()
    from_str = _values(tre.RankingMetrics.from_config(str(path)), *batch)
    from_path = _values(tre.RankingMetrics.from_config(path), *batch)
    direct = _values(tre.RankingMetrics(**suite_kwargs(path)), *batch)
    assert from_str == from_path == direct
    assert all(0.0 <= value <= 1.0 for value in from_str.values())


def test_recsys_suite_keys_and_values():
    suite = tre.RankingMetrics.from_config(CONFIGS / "recsys.yaml")
    families = ["ndcg", "recall", "precision", "hitrate", "map", "mrr"]
    assert suite.order == [f"{family}@{k}" for family in families for k in (10, 20)]
    batch = _batch(1)
    expected = _values(tre.RankingMetrics(families, k=[10, 20]), *batch)
    assert _values(suite, *batch) == expected


def test_trec_suite_matches_the_equivalent_constructor():
    suite = tre.RankingMetrics.from_config(CONFIGS / "trec.yaml")
    assert suite.order == [
        "map@1000",
        "precision@5",
        "precision@10",
        "recall@100",
        "recall@1000",
        "ndcg@10",
        "ndcg@20",
        "mrr@1000",
        "rprecision",
    ]
    scores, target = _batch(2)
    target[0] = 0  # a query with no relevant document: trec_eval scores it 0 and counts it
    got = _values(suite, scores, target)
    # trec_eval's map divides AP by all R relevant documents (here every relevant item is within depth 1000).
    ap = tre.functional.map(
        scores,
        target,
        k=1000,
        normalizer="r",
        relevance_threshold=1,
        empty_target_action="neg",
        ties="reverse_index",
    )
    assert got["map@1000"] == pytest.approx(float(ap), abs=1e-12)
    expected = _values(
        tre.RankingMetrics(suite.order, convention="trec", relevance_threshold=1), scores, target
    )
    assert got == expected


# --- dicts ----------------------------------------------------------------------------------------------


def test_dict_config_equals_constructor_and_is_not_mutated():
    config = {
        "metrics": ["ndcg", "map"],
        "k": [3, 5],
        "options": {"ndcg": {"gain": "exp"}},
        "empty_target_action": "neg",
        "relevance_threshold": 2,
        "ties": "pessimistic",
        "validate_args": True,
    }
    snapshot = {key: (dict(value) if isinstance(value, dict) else value) for key, value in config.items()}
    kwargs = suite_kwargs(config)
    assert kwargs == config and kwargs is not config
    kwargs["metrics"].append("mrr@5")
    kwargs["options"]["ndcg"]["gain"] = "linear"
    assert config == snapshot  # the result is a copy
    batch = _batch(3)
    direct = tre.RankingMetrics(
        ["ndcg", "map"],
        k=[3, 5],
        options={"ndcg": {"gain": "exp"}},
        empty_target_action="neg",
        relevance_threshold=2,
        ties="pessimistic",
    )
    assert _values(tre.RankingMetrics.from_config(config), *batch) == _values(direct, *batch)


def test_convention_key():
    config = {
        "metrics": ["ndcg@3", "map@3"],
        "convention": "recbole",
        "options": {"ndcg": {"gain": "linear"}},
    }
    assert suite_kwargs(config) == config
    batch = _batch(4)
    direct = tre.RankingMetrics(
        ["ndcg@3", "map@3"], convention="recbole", options={"ndcg": {"gain": "linear"}}
    )
    assert _values(tre.RankingMetrics.from_config(config), *batch) == _values(direct, *batch)
    with pytest.raises(ValueError, match="nonesuch"):
        tre.RankingMetrics.from_config({"metrics": ["ndcg@3"], "convention": "nonesuch"})


def test_null_values_fall_back_to_defaults():
    assert suite_kwargs({"metrics": ["mrr@5"], "k": None, "options": None, "ties": None}) == {
        "metrics": ["mrr@5"]
    }


def test_int_k_and_tuple_metrics():
    kwargs = suite_kwargs({"metrics": ("recall", "precision"), "k": 4})
    assert kwargs == {"metrics": ["recall", "precision"], "k": 4}
    assert tre.RankingMetrics.from_config(kwargs).order == ["recall@4", "precision@4"]


# --- errors name the bad key ------------------------------------------------------------------------------


def test_unknown_key_is_named_with_the_allowed_keys():
    with pytest.raises(ValueError, match="Unknown key 'cutoffs'") as info:
        suite_kwargs({"metrics": ["ndcg@10"], "cutoffs": [5]})
    for key in ALLOWED_KEYS:
        assert key in str(info.value)


def test_unknown_key_in_a_file_names_the_key_and_the_file(tmp_path):
    path = _write(tmp_path, "metrics: [ndcg@10]\nempty_target: skip\n")
    with pytest.raises(ValueError, match="Unknown key 'empty_target'") as info:
        tre.RankingMetrics.from_config(path)
    assert "suite.yaml" in str(info.value) and "empty_target_action" in str(info.value)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"k": 10}, "no `metrics` key"),
        ({"metrics": "ndcg@10"}, "`metrics`"),
        ({"metrics": []}, "`metrics`"),
        ({"metrics": ["ndcg@10", 5]}, "`metrics`"),
        ({"metrics": ["ndcg"], "k": "10"}, "`k`"),
        ({"metrics": ["ndcg"], "k": [10, 2.5]}, "`k`"),
        ({"metrics": ["ndcg"], "k": True}, "`k`"),
        ({"metrics": ["ndcg"], "k": []}, "`k`"),
        ({"metrics": ["ndcg@10"], "options": ["gain"]}, "`options`"),
        ({"metrics": ["ndcg@10"], "options": {"ndcg": "exp"}}, "`options.ndcg`"),
        ({"metrics": ["ndcg@10"], "empty_target_action": 0}, "`empty_target_action`"),
        ({"metrics": ["ndcg@10"], "ties": True}, "`ties`"),
        ({"metrics": ["ndcg@10"], "convention": ["trec"]}, "`convention`"),
        ({"metrics": ["ndcg@10"], "relevance_threshold": "1"}, "`relevance_threshold`"),
        ({"metrics": ["ndcg@10"], "relevance_threshold": True}, "`relevance_threshold`"),
        ({"metrics": ["ndcg@10"], "validate_args": "no"}, "`validate_args`"),
        (["ndcg@10"], "must be a mapping"),
        (None, "must be a mapping"),
    ],
)
def test_bad_values_name_their_key(config, message):
    with pytest.raises(ValueError, match=message):
        suite_kwargs(config)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"metrics": ["ndcg@10", "nDCGG@5"]}, "nDCGG@5"),  # unknown metric
        ({"metrics": ["ndcg@x"]}, "ndcg@x"),  # bad cut-off
        ({"metrics": ["ndcg@10"], "options": {"ndcg": {"gian": "exp"}}}, "gian"),  # unknown option
        ({"metrics": ["ndcg@10"], "options": {"map": {"normalizer": "r"}}}, "map"),  # family not in the suite
        ({"metrics": ["map@10"], "options": {"map": {"normalizer": "R"}}}, "normalizer"),  # bad option value
        ({"metrics": ["ndcg@10"], "empty_target_action": "drop"}, "empty_target_action"),
        ({"metrics": ["ndcg@10"], "ties": "sideways"}, "ties"),
    ],
)
def test_bad_suite_contents_are_named_by_the_constructor(config, named):
    with pytest.raises(ValueError, match=named):
        tre.RankingMetrics.from_config(config)


def test_yaml_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such_suite.yaml"):
        tre.RankingMetrics.from_config(tmp_path / "no_such_suite.yaml")
    with pytest.raises(FileNotFoundError, match="is not a file"):
        tre.RankingMetrics.from_config(tmp_path)
    with pytest.raises(ValueError, match="twice.*line 3"):
        suite_kwargs(_write(tmp_path, "metrics: [ndcg@10]\nk: 5\nmetrics: [map@10]\n", "twice.yaml"))
    with pytest.raises(ValueError, match="not valid YAML"):
        suite_kwargs(_write(tmp_path, "metrics: [ndcg@10\n", "broken.yaml"))
    with pytest.raises(ValueError, match="must be a mapping.*empty.yaml"):
        suite_kwargs(_write(tmp_path, "# nothing but a comment\n", "empty.yaml"))
    with pytest.raises(ValueError, match="must be a mapping"):
        suite_kwargs(_write(tmp_path, "- ndcg@10\n- map@10\n", "list.yaml"))


def test_yaml_types_and_aliases(tmp_path):
    path = _write(
        tmp_path, "metrics:\n  - hr@5\n  - r_precision\nrelevance_threshold: 1.5\nvalidate_args: false\n"
    )
    assert suite_kwargs(path) == {
        "metrics": ["hr@5", "r_precision"],
        "relevance_threshold": 1.5,
        "validate_args": False,
    }
    assert tre.RankingMetrics.from_config(path).order == ["hitrate@5", "rprecision"]


def test_missing_pyyaml_gives_a_clear_error_and_dicts_still_work(monkeypatch, tmp_path):
    path = _write(tmp_path, "metrics: [ndcg@10]\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` now raises ImportError
    with pytest.raises(ImportError, match="pip install pyyaml"):
        tre.RankingMetrics.from_config(path)
    assert tre.RankingMetrics.from_config({"metrics": ["ndcg@10"]}).order == ["ndcg@10"]


def test_importing_the_library_imports_neither_lightning_nor_yaml_nor_dynamo():
    """Counted beyond what torch and torchmetrics import themselves (some builds of torch import yaml:
    the CUDA image of the GPU machine does). torch._dynamo is a second of import time that only a compile
    needs (`torch.compiler.assume_constant_result` imported it)."""
    code = (
        "import sys, torch, torchmetrics\n"
        "roots = {'lightning', 'pytorch_lightning', 'yaml'}\n"
        "before = set(sys.modules)\n"
        "import torchrec_eval, torchrec_eval.suites.config\n"
        "suite = torchrec_eval.RankingMetrics.from_config({'metrics': ['ndcg@10']})\n"
        "suite.update(torch.rand(2, 5), torch.rand(2, 5) < 0.5); suite.compute()\n"
        "bad = sorted(m for m in set(sys.modules) - before\n"
        "             if m.split('.')[0] in roots or m.startswith('torch._dynamo'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_beyond_suite_matches_brute_force_catalogue_counts():
    suite = tre.RankingMetrics.from_config(CONFIGS / "beyond.yaml")
    assert suite.order == ["ndcg@10", "recall@10", "coverage@10", "gini@10", "entropy@10", "inter_list_diversity@10"]
    gen = torch.Generator().manual_seed(3)
    scores = torch.randn(64, 1000, generator=gen)
    target = torch.rand(64, 1000, generator=gen) < 0.02
    values = _values(suite, scores, target)
    lists = torch.topk(scores, 10, dim=1).indices  # distinct scores: no tie order involved
    counts = torch.bincount(lists.flatten(), minlength=1000).double()
    assert values["coverage@10"] == pytest.approx(float((counts > 0).double().mean()))
    shares = counts[counts > 0] / counts.sum()
    assert values["entropy@10"] == pytest.approx(float(-(shares * shares.log2()).sum()))
    assert values["ndcg@10"] == pytest.approx(float(tre.functional.ndcg(scores, target, k=10)))


def test_ready_made_suites_load_by_name_outside_a_clone(tmp_path):
    """``from_config("recsys")`` used to look for a file in the working directory (FileNotFoundError)."""
    script = "import torchrec_eval as tre; print(tre.RankingMetrics.from_config('recsys').keys()[:2])"
    env = {"PYTHONPATH": str(ROOT), "PATH": ""}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['ndcg@10', 'ndcg@20']"
    from torchrec_eval.suites.config import SUITES

    # ctr: a pointwise suite (test_pointwise_config.py); uni100: a sampled one (test_sampled_config.py)
    assert sorted(SUITES) == ["beyond", "ctr", "recsys", "trec", "uni100"]
    listed = r"ready-made suite of the package: \['beyond', 'ctr', 'recsys', 'trec', 'uni100'\]"
    with pytest.raises(FileNotFoundError, match=listed):
        tre.RankingMetrics.from_config("recsyss")
