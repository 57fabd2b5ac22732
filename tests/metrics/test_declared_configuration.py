"""The configuration state's name hashes what each member declares (``configuration()``), never a class name
or an instance attribute: renaming a class or adding a cache to a member changes no checkpoint, and an
object that declares nothing cannot be hashed by accident."""

from __future__ import annotations

import copy

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.metrics.configuration import config_state_name, fingerprint


@pytest.mark.parametrize("make", [
    lambda: tre.NDCG(k=5),
    lambda: tre.AUC(),
    lambda: tre.Coverage(k=3, num_items=9),
    lambda: tre.RankingMetrics(["ndcg@5", "gauc", "novelty@3"], options={"novelty": {"item_popularity": torch.ones(9)}}),
])
def test_a_renamed_member_class_with_more_attributes_keeps_the_state_name(make):
    metric = make()
    renamed = []
    for member in metric.members:
        other = copy.copy(member)
        other.__class__ = type("Renamed" + type(member).__name__, (type(member),), {})
        other.scratch = torch.zeros(2)  # an attribute that is no configuration
        renamed.append(other)
    assert config_state_name(metric, renamed) == metric._config_state


def test_members_of_another_configuration_get_another_name():
    assert tre.NDCG(k=5)._config_state != tre.NDCG(k=6)._config_state
    assert tre.NDCG(k=5)._config_state != tre.NDCG(k=5, gain="exp")._config_state
    assert tre.Novelty(k=3, item_popularity=torch.ones(9))._config_state != \
        tre.Novelty(k=3, item_popularity=torch.arange(9.0))._config_state


def test_an_object_without_a_declared_configuration_is_refused():
    with pytest.raises(TypeError, match="object declares no configuration"):
        fingerprint([1, object()])
