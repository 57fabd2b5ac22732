"""A misspelt constructor keyword is a ``ValueError`` naming the class, the keyword, the closest valid one and
every keyword the class takes (torchmetrics' own message, "Unexpected keyword arguments: `tie`", names none)."""

from __future__ import annotations

import inspect

import pytest
import torch  # noqa: F401  (the constructors below)
from torchmetrics import Metric

import torchrec_eval
from torchrec_eval import *  # noqa: F403  (the constructors below)
from torchrec_eval.comparison.uncertainty import PairedComparison  # noqa: F401
from torchrec_eval.metrics.lifecycle import StatefulMetric, constructor_keywords

# (constructor with a misspelt keyword, the keyword, the one it is close to)
MISSPELT = [
    ("NDCG(k=5, tie='average')", "tie", "ties"),
    ("ERR(k=5, max_grad=4)", "max_grad", "max_grade"),
    ("RankingMetrics(['ndcg@5'], option={})", "option", "options"),
    ("SampledMetrics(['mrr'], num_items=100, num_negatives=9, estimater='em')", "estimater", "estimator"),
    ("ModelComparison(['ndcg@5'], models=['a', 'b'], replicate=10)", "replicate", "replicates"),
    ("PairedComparison(['ndcg@5'], levle=0.9)", "levle", "level"),
    ("ModelComparison(['ndcg@5'], models=['a', 'b'], tie='average')", "tie", "ties"),  # the compared suite's
    ("PairedComparison(['ndcg@5'], num_group=2)", "num_group", "num_groups"),
    ("RBO(patiense=0.9)", "patiense", "patience"),
    ("PointwiseMetrics(['ne'], task=['a'])", "task", "tasks"),
    ("Windowed(NE(), window=3, windw=4)", "windw", "window"),
    ("MAP(k=[5, 10], emtpy_target_action='skip')", "emtpy_target_action", "empty_target_action"),
    ("Coverage(k=5, num_items=20, num_group=2)", "num_group", "num_groups"),
    ("NE(task=['a'])", "task", "tasks"),
]


@pytest.mark.parametrize(("constructor", "keyword", "close"), MISSPELT, ids=[case[1] for case in MISSPELT])
def test_a_misspelt_keyword_names_the_class_and_what_it_takes(constructor, keyword, close):
    name = constructor.partition("(")[0]
    with pytest.raises(ValueError) as raised:
        eval(constructor)  # noqa: S307  (the constructors above)
    message = str(raised.value)
    assert message.startswith(f"{name}() got unexpected keyword argument(s) [{keyword!r}]"), message
    assert f"did you mean {close!r}" in message, message
    takes = message.partition("it takes: ")[2]
    assert close in takes and "compute_on_cpu" in takes and keyword not in eval(takes)  # noqa: S307


def test_every_keyword_listed_is_taken():
    """The listed keywords are the real ones: each builds the metric or fails on its value, never as unknown."""
    for constructor, _, _ in MISSPELT:
        name = constructor.partition("(")[0]
        with pytest.raises(ValueError) as raised:
            eval(constructor)  # noqa: S307
        for listed in eval(str(raised.value).partition("it takes: ")[2]):  # noqa: S307
            good = constructor.rsplit(",", 1)[0] + f", {listed}=object())"
            try:
                eval(good)  # noqa: S307
            except Exception as error:  # a bad value, or a required argument given twice: not an unknown keyword
                assert "unexpected keyword" not in str(error), (name, listed, error)


def test_every_public_class_can_list_its_keywords():
    """The message's list resolves for every public class of ours (its type hints included): the error path
    never fails itself; the torchmetrics-owned rating metrics are the only public ones outside the check."""
    classes = {name: value for name, value in vars(torchrec_eval).items()
               if isinstance(value, type) and issubclass(value, Metric)}
    stateful = {name: value for name, value in classes.items() if issubclass(value, StatefulMetric)}
    assert set(classes) - set(stateful) == {"MAE", "MSE", "RMSE"}
    for name, cls in stateful.items():
        listed = constructor_keywords(cls)
        own = [p for p in inspect.signature(cls.__init__).parameters.values()
               if p.kind is p.KEYWORD_ONLY and p.name != "self"]
        assert {p.name for p in own} <= set(listed) and "compute_with_cache" in listed, (name, listed)
