"""``ComparisonReport``: the table of a comparison's results, checked on results written by hand."""

from __future__ import annotations

import math

import pytest
import torch

from torchrec_eval import ModelComparison
from torchrec_eval.comparison.report import ComparisonReport

MODELS = ["base_line", "new", "big"]


def _results(key: str, means: dict[str, float], p: dict[tuple[str, str], float]) -> dict[str, float]:
    out = {f"{key}/{model}": value for model, value in means.items()}
    for (a, b), value in p.items():
        out[f"{key}/{a}_vs_{b}/diff"] = means[a] - means[b]
        out[f"{key}/{a}_vs_{b}/p_value"] = value
    return out


def test_better_than_needs_a_small_p_and_the_better_direction():
    """MPR (a mean percentile rank) is better lower: the smaller mean wins its pairs and is the best."""
    results = {**_results("ndcg@10", {"base_line": 0.30, "new": 0.35, "big": 0.36},
                          {("base_line", "new"): 0.01, ("base_line", "big"): 0.001, ("new", "big"): 0.4}),
               **_results("mpr", {"base_line": 0.20, "new": 0.10, "big": 0.12},
                          {("base_line", "new"): 0.2, ("base_line", "big"): 0.03, ("new", "big"): 0.049})}
    report = ComparisonReport.from_results(results, models=MODELS, keys=["ndcg@10", "mpr"], alpha=0.05)
    assert report.better_than["ndcg@10"] == {"base_line": [], "new": ["base_line"], "big": ["base_line"]}
    assert report.better_than["mpr"] == {"base_line": [], "new": ["big"], "big": ["base_line"]}
    rows = report.to_markdown().splitlines()
    assert rows[2] == "| a | base_line | 0.300 | 0.200 |"
    assert rows[3] == "| b | new | 0.350<sup>a</sup> | **0.100**<sup>c</sup> |"
    assert rows[4] == "| c | big | **0.360**<sup>a</sup> | 0.120<sup>a</sup> |"
    assert str(report).splitlines()[3].split() == ["b", "new", "0.350ᵃ", "0.100ᶜ"]


def test_adjusted_p_values_decide_where_the_comparison_adjusts():
    results = _results("ndcg@10", {"base_line": 0.3, "new": 0.4, "big": 0.4}, {
        ("base_line", "new"): 0.01, ("base_line", "big"): 0.01, ("new", "big"): 1.0})
    results["ndcg@10/base_line_vs_new/p_adjusted"] = 0.06
    results["ndcg@10/base_line_vs_big/p_adjusted"] = 0.02
    results["ndcg@10/new_vs_big/p_adjusted"] = 1.0
    report = ComparisonReport.from_results(results, models=MODELS, keys=["ndcg@10"], alpha=0.05)
    assert report.better_than["ndcg@10"] == {"base_line": [], "new": [], "big": ["base_line"]}


def test_latex_escapes_names_and_the_dataframe_holds_values_and_labels():
    results = _results("map@10", {"base_line": 0.5, "new": math.nan, "big": 0.25},
                       {("base_line", "new"): 0.5, ("base_line", "big"): 0.001, ("new", "big"): 0.5})
    report = ComparisonReport.from_results(results, models=MODELS, keys=["map@10"], alpha=0.05, note="50% & more",
                                           digits=2)
    latex = report.to_latex()
    assert "a & base\\_line & \\textbf{0.50}$^{c}$ \\\\" in latex and "b & new & nan \\\\" in latex
    assert "\\caption{50\\% \\& more}" in latex
    frame = report.to_dataframe()
    assert frame.index.tolist() == MODELS and frame["label"].tolist() == ["a", "b", "c"]
    assert frame["map@10"].tolist()[0] == 0.5 and math.isnan(frame["map@10"].tolist()[1])
    assert frame["map@10 better than"].tolist() == ["c", "", ""]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"alpha": 1.0}, "alpha"),
    ({"digits": -1}, "digits"),
    ({"keys": ["recall@5"]}, "no 'recall@5/base_line'"),
])
def test_bad_arguments_raise_a_named_value_error(kwargs, message):
    results = _results("map@10", {"base_line": 0.5, "new": 0.4, "big": 0.25},
                       {("base_line", "new"): 0.5, ("base_line", "big"): 0.001, ("new", "big"): 0.5})
    arguments = {"models": MODELS, "keys": ["map@10"], "alpha": 0.05, **kwargs}
    with pytest.raises(ValueError, match=message):
        ComparisonReport.from_results(results, **arguments)


def test_a_comparisons_report_reads_its_results():
    gen = torch.Generator().manual_seed(0)
    target = torch.rand(64, 30, generator=gen) < 0.2
    good = target.float() + 0.3 * torch.rand(64, 30, generator=gen)
    other = torch.rand(64, 30, generator=gen)
    compare = ModelComparison(["ndcg@10", "mrr@10"], models=["good", "other"], correction="holm")
    compare.update([good, other], target, query_ids=torch.arange(64))
    report = compare.report()
    results = compare.compute()
    assert report.values["ndcg@10"]["good"] == pytest.approx(float(results["ndcg@10/good"]))
    assert report.better_than["ndcg@10"] == {"good": ["other"], "other": []}
    assert report.better_than["mrr@10"] == {"good": ["other"], "other": []}
    assert report.note.endswith("(student test, holm-adjusted, p < 0.05)")
