"""Every public metric class goes through the one harness (``tests/harness.py``): a class that no harness
case builds fails here, so that a new class cannot slip out of the checks every other one passes.

The cases are read off the test modules that use the harness, as pytest would run them: each test that
calls ``check_metric``, with each value it is parametrized with, through each case builder it calls (a
module-level function that returns a ``MetricCase``); a builder without a parameter is called once. A case's
class is the most derived public class of the metric its ``make()`` builds (a test's own subclass that feeds
another input form counts for the public class it derives from).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from torchmetrics import Metric

import torchrec_eval as tre

TESTS = Path(__file__).resolve().parents[1]
LEFT_TO_OTHERS = {"ModelComparison"}  # its harness case comes with the comparison's own work


def _public_classes() -> set[type]:
    return {value for name in tre.__all__ if isinstance(value := getattr(tre, name), type)
            and issubclass(value, Metric) and name not in LEFT_TO_OTHERS}


def _harness_modules() -> list[Any]:
    uses = re.compile(r"^from tests\.harness import", re.MULTILINE)
    paths = sorted(path for path in TESTS.rglob("test_*.py") if uses.search(path.read_text()))
    return [importlib.import_module(".".join(path.relative_to(TESTS.parent).with_suffix("").parts)) for path in paths]


def _parameter_values(test: Callable[..., Any]) -> list[tuple[Any, ...]]:
    """The argument tuples a test runs with: one per value of its (single-name) parametrization, or ()."""
    marks = [mark for mark in getattr(test, "pytestmark", []) if mark.name == "parametrize"]
    if not marks:
        return [()]
    assert len(marks) == 1 and "," not in marks[0].args[0], f"{test.__name__}: one parameter expected"
    return [tuple(getattr(value, "values", (value,))) for value in marks[0].args[1]]


def _cases(module: Any) -> Iterator[tuple[str, Any]]:
    """(what, case) for every case a harness test of ``module`` checks."""
    builders = {name: value for name, value in vars(module).items() if inspect.isfunction(value)
                and value.__module__ == module.__name__ and value.__annotations__.get("return") == "MetricCase"}
    for test_name, test in vars(module).items():
        if not (test_name.startswith("test_") and inspect.isfunction(test)
                and "check_metric" in test.__code__.co_names):
            continue
        for builder_name in set(test.__code__.co_names) & set(builders):
            builder = builders[builder_name]
            arity = len(inspect.signature(builder).parameters)
            for arguments in _parameter_values(test):
                if len(arguments) == arity:
                    yield f"{module.__name__}.{test_name}{list(arguments)}", builder(*arguments)


def _public_class_of(metric: Metric, public: set[type]) -> type | None:
    return next((cls for cls in type(metric).__mro__ if cls in public), None)


def test_every_public_metric_class_has_a_harness_case():
    public = _public_classes()
    covered: dict[type, list[str]] = {}
    for module in _harness_modules():
        found = [(what, _public_class_of(case.make(), public)) for what, case in _cases(module)]
        assert found, f"{module.__name__} uses the harness but no test case was found in it"
        for what, cls in found:
            assert cls is not None, f"{what} builds no public metric class"
            covered.setdefault(cls, []).append(what)
    missing = sorted(cls.__name__ for cls in public - set(covered))
    assert missing == [], f"public metric classes that no harness case builds: {missing}"


def test_the_reader_finds_the_cases_it_should():
    """The reader sees the cases of a parametrized test, of a test without parameters and of a test's own
    subclass (the sampled flat form), so an empty result above is never a reader that sees nothing."""
    modules = {module.__name__.rsplit(".", 1)[-1]: module for module in _harness_modules()}
    ranking = [what for what, _ in _cases(modules["test_ranking_families"])]
    assert any("test_every_family_in_one_suite[]" in what for what in ranking)
    assert sum("test_family[" in what for what in ranking) == len(tre.ranking.registry.REGISTRY)
    sampled = [case.make() for _, case in _cases(modules["test_sampled_metrics"])]
    assert any(type(metric) is not tre.SampledMetrics for metric in sampled)
    assert {_public_class_of(metric, _public_classes()) for metric in sampled} == {tre.SampledMetrics}
