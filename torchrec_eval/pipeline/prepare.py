"""The input forms of a ranking metric, validated and normalised into one ranked representation.

Every top-k metric of the library is a pure function of :class:`RankedTargets`: the gains of the
top-``K`` items in rank order, their binary relevance, the number of relevant items ``R`` and the
number of candidates of each query. :func:`prepare_batch` is the only entry that ranks, and the
only one that validates user input, so a whole suite of metrics costs one ``torch.topk``.

Forms (exactly one per call; each lives in its own module of :mod:`torchrec_eval.pipeline.forms`):

* dense  -- ``preds`` [B, N] scores, ``target`` [B, N] relevance (bool, int or float, >= 0);
* ids    -- ``preds`` [B, N], ``target_ids`` [B, T] item indices into dim 1 (-1 = padding),
  optional ``target_gains`` [B, T];
* ranked -- ``ranked_ids`` [B, L] item ids in rank order (-1 = padding), ``target_ids`` [B, T];
* flat   -- 1-D ``preds``, ``target`` and ``indexes`` (torchmetrics.retrieval style); the queries come
  out in ascending ``indexes`` order. A metric object carries a query that continues into its next
  ``update`` (see :mod:`torchrec_eval.metrics.lifecycle`). This form needs a host sync (the number
  of queries is data dependent).

A score of ``-inf`` marks an item that is not a candidate, exactly like ``mask`` False; NaN and
``+inf`` are errors.

Ties (``ties=``): ``"index"`` orders equal scores by the lower item index first; ``"reverse_index"``
by the higher index first (trec_eval's docno order); ``"pessimistic"`` by the lower gain first, then
the lower index, so a model that outputs constant scores gets the worst ranking, not a lucky one;
``"optimistic"`` by the higher gain first; ``"average"`` yields the exact expected value of every
metric over all orderings of the tied items (McSherry & Najork, ECIR 2008). The order is the same on
every device and for every batch size (see :mod:`torchrec_eval.pipeline.topk`).

Where each job lives: validation in :mod:`~torchrec_eval.pipeline.validation`, the four forms (and
the checks of each) in :mod:`~torchrec_eval.pipeline.forms`, which items are candidates in
:mod:`~torchrec_eval.pipeline.forms.candidates`, the batch representation in
:mod:`~torchrec_eval.pipeline.batch`, ranking and tie order in :mod:`~torchrec_eval.pipeline.topk`,
``exclude_ids`` in :mod:`~torchrec_eval.pipeline.exclusion`, ``ties="average"`` in
:mod:`~torchrec_eval.pipeline.average_ties`, the records passed down in :mod:`~torchrec_eval.pipeline.inputs`.
This module has the call checked in full (which form it uses, and every check of that form:
:func:`~torchrec_eval.pipeline.validation.checked_inputs`) and hands it to its form (the table
:data:`FORM_TABLE`: a new form is one module, one entry here and its checks).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from torchrec_eval.pipeline.batch import Batch
from torchrec_eval.pipeline.forms.flat import flat_batch
from torchrec_eval.pipeline.forms.ranked import ranked_batch
from torchrec_eval.pipeline.forms.scored import scored_batch
from torchrec_eval.pipeline.inputs import INPUT_KEYWORDS, TIES, FormInputs, Inputs, Needs, Rules
from torchrec_eval.pipeline.validation import Notes, checked_inputs

__all__ = ["FORM_TABLE", "INPUT_KEYWORDS", "TIES", "input_keywords_checked", "keywords_checked_by", "prepare_batch"]

FormBatch = Callable[[Inputs, Needs, Rules, "Notes | None"], Batch]

#: the input forms (as :func:`~torchrec_eval.pipeline.validation.form_of` names them) and the function that makes
#: the batch of a checked call of each; dense and ids share the scored path
FORM_TABLE: dict[str, FormBatch] = {
    "ranked": ranked_batch,
    "flat": flat_batch,
    "ids": scored_batch,
    "dense": scored_batch,
}


F = TypeVar("F", bound=Callable[..., Any])


def keywords_checked_by(keywords: type) -> Callable[[F], F]:
    """A function whose ``**kwargs`` take the keys of the ``TypedDict`` ``keywords`` only: a misspelt keyword
    raises a ``ValueError`` that names the function the user called and the keywords it takes (it was a
    ``TypeError`` naming an internal function)."""

    def wrap(function: F) -> F:
        parameters = [name for name, parameter in inspect.signature(function).parameters.items()
                      if parameter.kind is not inspect.Parameter.VAR_KEYWORD]
        extra = sorted(getattr(keywords, "__required_keys__", frozenset())
                       | getattr(keywords, "__optional_keys__", frozenset()))
        accepted = set(parameters) | set(extra)

        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            unknown = sorted(set(kwargs) - accepted)
            if unknown:
                raise ValueError(f"{function.__name__}() got an unexpected keyword argument {unknown[0]!r}; it "
                                 f"takes {parameters} and {extra}")
            return function(*args, **kwargs)

        return cast(F, checked)

    return wrap


#: a functional metric whose ``**inputs`` take the input forms' keywords (:class:`FormInputs`) only
input_keywords_checked = keywords_checked_by(FormInputs)


def prepare_batch(inputs: Inputs, needs: Needs, rules: Rules) -> Batch:
    """Validate any input form; rank it to depth ``needs.depth`` and/or keep its full candidate view.

    Args:
        inputs: the tensors of the call (exactly one input form).
        needs: what the members need of the ranking (depth, ideal gains, candidates, ...).
        rules: the tie order, the relevance threshold, ``validate_args`` and the duplicates rule.

    Raises:
        ValueError: if no form or several forms are given, on any shape or dtype mismatch, and
            (with ``validate_args``) on NaN/inf scores, negative relevance, ids out of range or
            repeated ids (:func:`~torchrec_eval.pipeline.validation.checked_inputs`, in one host sync).
    """
    form, inputs, notes = checked_inputs(inputs, needs, rules)
    return FORM_TABLE[form](inputs, needs, rules, notes)
