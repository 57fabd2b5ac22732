"""A misspelt keyword in a functional metric names the function the user called and what it takes.

It was ``TypeError: prepare_batch() got an unexpected keyword argument 'tie'``: an internal function's
name, no list of the accepted keywords. The classes already raise a ``ValueError`` (``lifecycle``).
"""

from __future__ import annotations

import pytest
import torch

import torchrec_eval as tre
from torchrec_eval.pipeline import INPUT_KEYWORDS

OVERLAP = ["intersection", "jaccard", "rbo"]  # two rankings, no target: the keywords of OverlapInputs
FUNCTIONS = sorted(set(tre.functional.__all__) - set(OVERLAP))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_misspelt_keyword_names_the_function_and_its_keywords(name):
    function = getattr(tre.functional, name)
    with pytest.raises(ValueError, match=rf"^{name}\(\) got an unexpected keyword argument 'tie'; it takes .*"
                                         r"'preds'.*'target_ids'"):
        function(torch.rand(2, 5), torch.rand(2, 5) < 0.5, tie="index")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_input_forms_keywords_still_pass(name):
    function = getattr(tre.functional, name)
    required = {"max_k": 3} if name == "precision_recall_curve" else {}  # the curve's length, no default
    if name in ("alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia", "p_ia", "strec", "ap_ia", "nrbp",
                "nnrbp"):  # the intents table, no default
        required = {"item_intents": torch.eye(5, 2)}
    if name == "weighted_rbp":  # LensKit's list weights, beside the scores
        required = {"item_weights": torch.rand(2, 5)}
    value = function(torch.rand(2, 5), target_ids=torch.tensor([[1, -1], [0, 3]]), mask=torch.ones(2, 5, dtype=torch.bool),
                     **required)
    values = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else [value]
    assert all(isinstance(v, torch.Tensor) for v in values)


@pytest.mark.parametrize("name", OVERLAP)
def test_a_misspelt_keyword_of_an_overlap_function_names_it_and_its_keywords(name):
    function = getattr(tre.functional, name)
    with pytest.raises(ValueError, match=rf"^{name}\(\) got an unexpected keyword argument 'target_ids'; it takes .*"
                                         r"'preds', 'reference_preds'.*'ranked_ids', 'reference_ids'"):
        function(torch.rand(2, 5), torch.rand(2, 5), target_ids=torch.tensor([[1], [0]]))
    value = function(torch.rand(2, 5), reference_ids=torch.tensor([[1, -1], [0, 3]]), exclude_ids=torch.tensor([[2], [4]]))
    assert isinstance(value, torch.Tensor)


def test_every_input_keyword_reaches_the_pipeline():
    """Each keyword the check lets through is a field of the pipeline's inputs record."""
    from torchrec_eval.pipeline import Inputs

    assert set(INPUT_KEYWORDS) <= set(Inputs.__dataclass_fields__)


def test_the_classes_take_every_input_keyword_of_the_pipeline():
    """``update`` and ``per_query`` take the input keywords through ``**inputs: Unpack[FormInputs]`` (written once,
    read by editors and type checkers); they must be the pipeline's (``Inputs``' fields): a form added there and
    forgotten in ``FormInputs`` fails, and so does a keyword a class writes out again."""
    import inspect

    from torchrec_eval import SampledMetrics
    from torchrec_eval.metrics.base import MemberMetric
    from torchrec_eval.metrics.lifecycle import keywords_of
    from torchrec_eval.pipeline import INPUT_NAMES

    for method, extra in ((MemberMetric.update, {"sample_weight"}), (MemberMetric.per_query, {"query_ids", "as_frame"}),
                          (SampledMetrics.update, {"sample_weight", "num_items", "negative_probabilities"})):
        assert set(keywords_of(method)) == {*INPUT_NAMES, *extra}, method
        written = [name for name in inspect.signature(method).parameters if name in INPUT_NAMES]
        assert written == ["preds", "target", "groups"], method  # the others come from FormInputs alone
